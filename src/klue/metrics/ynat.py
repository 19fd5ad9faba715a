"""KLUE-YNAT (topic classification of news headlines): macro F1 over the 7 topics, and accuracy."""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics.classification import ACCURACY, MACRO_F1, LabelCounts, single_label_report
from klue.metrics.report import MetricMode, MetricReport
from klue.metrics.statistics import ExampleStatistics, single_label_statistics

TASK_NAME = "ynat"
SPECS = (MACRO_F1, ACCURACY)  # the order of the report's scores


def macro_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    """KLUE-YNAT `macro_f1` (0-100): sklearn macro F1 over the union of classes in gold or prediction.

    Official definition (`sklearn.metrics.f1_score(targets, preds, average="macro")`): a class that is
    only predicted counts with F1 0 and pulls the average down; a class in neither gold nor prediction
    does not exist (it is not averaged as 0). Same in both modes.

    >>> round(macro_f1(["정치", "경제", "경제"], ["정치", "경제", "사회"]), 6)  # 사회 only predicted: F1 0
    55.555556
    """
    return LabelCounts.of(gold, pred).macro_f1()


def compute(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str],
            mode: MetricMode = "official") -> MetricReport:
    """Scores `macro_f1` and `accuracy`; breakdown `f1_per_class`; confusion over `labels` (+ extras)."""
    return single_label_report(TASK_NAME, gold, pred, labels, SPECS, mode)


def statistics(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str],
               mode: MetricMode = "official") -> ExampleStatistics:
    """Per-headline statistics of `compute`'s scores (same in both modes): correct, per-label counts."""
    return single_label_statistics(gold, pred, labels, [spec.name for spec in SPECS])
