"""KLUE-NLI (entailment / contradiction / neutral): accuracy, the key metric, and macro F1 as an extra."""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics.classification import ACCURACY, MACRO_F1, LabelCounts, single_label_report
from klue.metrics.report import MetricMode, MetricReport
from klue.metrics.statistics import ExampleStatistics, single_label_statistics

TASK_NAME = "nli"
SPECS = (ACCURACY, MACRO_F1)  # the order of the report's scores


def accuracy(gold: Sequence[str], pred: Sequence[str]) -> float:
    """KLUE-NLI `accuracy` (0-100): share of pairs whose predicted label equals the gold label.

    Official: `(preds == targets).mean() * 100`. No quirks; same in both modes.

    >>> accuracy(["entailment", "neutral", "contradiction", "neutral"],
    ...          ["entailment", "neutral", "neutral", "neutral"])
    75.0
    """
    return LabelCounts.of(gold, pred).accuracy()


def compute(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str],
            mode: MetricMode = "official") -> MetricReport:
    """Scores `accuracy` (+ `macro_f1` as an extra); breakdown `f1_per_class`; confusion over `labels`."""
    return single_label_report(TASK_NAME, gold, pred, labels, SPECS, mode)


def statistics(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str],
               mode: MetricMode = "official") -> ExampleStatistics:
    """Per-pair statistics of `compute`'s scores (same in both modes): correct, and per-label counts."""
    return single_label_statistics(gold, pred, labels, [spec.name for spec in SPECS])
