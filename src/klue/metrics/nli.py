"""KLUE-NLI (entailment / contradiction / neutral): accuracy."""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics.classification import LabelCounts, check_aligned, check_mode, confusion_matrix
from klue.metrics.report import MetricMode, MetricReport

TASK_NAME = "nli"


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
    check_mode(mode)
    check_aligned(gold, pred, "labels")
    counts = LabelCounts.of(gold, pred)
    present = set(counts.labels)
    ordered = [x for x in labels if x in present] + [x for x in counts.labels if x not in set(labels)]
    return MetricReport(
        task=TASK_NAME,
        mode=mode,
        scores={"accuracy": counts.accuracy(), "macro_f1": counts.macro_f1()},
        breakdown={"f1_per_class": {str(k): v for k, v in counts.f1_per_label(ordered).items()}},
        confusion=confusion_matrix(gold, pred, labels),
        n_examples=len(gold),
    )
