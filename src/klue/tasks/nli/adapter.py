"""KLUE-NLI: premise / hypothesis pair classification over the [CLS] token (3 classes)."""

from __future__ import annotations

from typing import Any

from klue.models.sequence import SequenceAdapter
from klue.tasks.base import Task


def make_adapter(task: Task[Any, Any]) -> SequenceAdapter:
    return SequenceAdapter(task, text_a=lambda record: record.premise, text_b=lambda record: record.hypothesis)
