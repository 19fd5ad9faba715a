"""What every metric computation returns (`MetricReport`), and what every metric declares (`MetricSpec`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

MetricMode = Literal["official", "corrected"]
METRIC_MODES: tuple[MetricMode, ...] = ("official", "corrected")
OFFICIAL_MODE: MetricMode = METRIC_MODES[0]  # reproduces the KLUE baseline code, quirks included


@dataclass(frozen=True)
class MetricSpec:
    """A metric's identity, declared beside its function: the stable name it has in results files, how
    people write it, which way is better, and a version that changes whenever its definition does (every
    results.json records the versions of the metrics it holds)."""

    name: str  # "entity_macro_f1"
    label: str  # "entity macro F1"
    higher_is_better: bool = True
    version: str = "1"


def spec_map(*groups: tuple[MetricSpec, ...]) -> dict[str, MetricSpec]:
    """Name -> spec over several spec tuples; a name declared twice with different specs is an error."""
    out: dict[str, MetricSpec] = {}
    for group in groups:
        for spec in group:
            if out.setdefault(spec.name, spec) != spec:
                raise ValueError(f"metric {spec.name!r} is declared twice with different specs")
    return out


@dataclass(frozen=True)
class ConfusionMatrix:
    """Rows are gold labels, columns predicted labels, both in `labels` order."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class MetricReport:
    """Scores on the 0-100 scale under stable names, plus the breakdowns users ask for.

    `scores` holds the task's official metric names (docs/metrics.md) and, in `corrected` mode or as
    extras, other clearly named metrics. `breakdown` maps a breakdown name (``"f1_per_class"``,
    ``"f1_per_type"``, ``"per_question_type"``, ``"per_domain"``) to name -> value.
    """

    task: str
    mode: MetricMode
    scores: dict[str, float]
    breakdown: dict[str, dict[str, float]] = field(default_factory=dict)
    confusion: ConfusionMatrix | None = None
    n_examples: int = 0
