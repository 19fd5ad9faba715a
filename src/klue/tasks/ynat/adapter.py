"""YNAT: topic classification of a news title over the [CLS] token (7 classes)."""

from __future__ import annotations

from typing import Any

from klue.models.sequence import SequenceAdapter
from klue.tasks.base import Task


def make_adapter(task: Task[Any, Any]) -> SequenceAdapter:
    return SequenceAdapter(task, text_a=lambda record: record.title)
