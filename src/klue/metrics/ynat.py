"""KLUE-YNAT (topic classification of news headlines): macro F1 over the 7 topics."""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics.classification import LabelCounts, check_aligned, check_mode, confusion_matrix
from klue.metrics.report import MetricMode, MetricReport

TASK_NAME = "ynat"


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
    check_mode(mode)
    check_aligned(gold, pred, "labels")
    counts = LabelCounts.of(gold, pred)
    present = set(counts.labels)
    ordered = [x for x in labels if x in present] + [x for x in counts.labels if x not in set(labels)]
    return MetricReport(
        task=TASK_NAME,
        mode=mode,
        scores={"macro_f1": counts.macro_f1(), "accuracy": counts.accuracy()},
        breakdown={"f1_per_class": {str(k): v for k, v in counts.f1_per_label(ordered).items()}},
        confusion=confusion_matrix(gold, pred, labels),
        n_examples=len(gold),
    )
