"""KLUE-STS: sentence-pair regression on `real-label` (0-5) over the [CLS] token, squared-error loss as in
the official baseline; the metric derives F1 by thresholding at 3.0."""

from __future__ import annotations

from typing import Any

from klue.models.sequence import SequenceAdapter
from klue.tasks.base import Task


def make_adapter(task: Task[Any, Any]) -> SequenceAdapter:
    return SequenceAdapter(task, text_a=lambda record: record.sentence1, text_b=lambda record: record.sentence2,
                           regression=True)
