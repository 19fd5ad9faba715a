"""The value every task's metric computation returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

MetricMode = Literal["official", "corrected"]
METRIC_MODES: tuple[MetricMode, ...] = ("official", "corrected")


@dataclass(frozen=True)
class ConfusionMatrix:
    """Rows are gold labels, columns predicted labels, both in `labels` order."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class MetricReport:
    """Scores on the 0-100 scale under stable names, plus the breakdowns users ask for.

    `scores` holds the task's official metric names (SPEC section 2) and, in `corrected` mode or as
    extras, other clearly named metrics. `breakdown` maps a breakdown name (``"f1_per_class"``,
    ``"f1_per_type"``, ``"per_question_type"``, ``"per_domain"``) to name -> value.
    """

    task: str
    mode: MetricMode
    scores: dict[str, float]
    breakdown: dict[str, dict[str, float]] = field(default_factory=dict)
    confusion: ConfusionMatrix | None = None
    n_examples: int = 0
