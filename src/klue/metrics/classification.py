"""Counts shared by the classification-style metrics: per-label tp/fp/fn, macro/micro F1, accuracy, confusion;
and the metrics of the single-label tasks (YNAT, NLI: `SingleLabelMetrics`).

Hand-written over numpy instead of calling `sklearn.metrics.f1_score`: importing sklearn alone costs
about a second on a cold start, and `klue score` must finish in under two. The definitions follow
sklearn exactly (and are tested against it): per-label F1 = 2tp / (2tp + fp + fn); a macro average runs
over the labels present in gold or prediction unless a label list is given; a label whose F1 is 0/0 gets
`zero_division`.

Counts are mergeable: ``LabelCounts.of(g1, p1) + LabelCounts.of(g2, p2) == LabelCounts.of(g1 + g2, p1 + p2)``,
so shards of an evaluation set combine to the whole-set value exactly.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from klue.metrics.report import METRIC_MODES, ConfusionMatrix, MetricMode, MetricReport, MetricSpec
from klue.metrics.statistics import ExampleStatistics, single_label_statistics

Label = Hashable

ACCURACY = MetricSpec("accuracy", "accuracy")
MACRO_F1 = MetricSpec("macro_f1", "macro F1")


def check_mode(mode: str) -> MetricMode:
    """`mode` itself if it is a metric mode, else ValueError (no silent fallback to "official")."""
    if mode not in METRIC_MODES:
        raise ValueError(f"unknown metric mode {mode!r}; modes are {', '.join(METRIC_MODES)}")
    return mode


def check_aligned(gold: Sequence[object], pred: Sequence[object], what: str = "items") -> None:
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold {what} but {len(pred)} predicted {what}")


def encode(gold: Iterable[Label], pred: Iterable[Label], labels: Sequence[Label] = ()) -> tuple[
        np.ndarray, np.ndarray, list[Label]]:
    """Integer codes for gold and prediction: codes of `labels` first (in order), then new values in order
    of appearance. Returns (gold codes, predicted codes, the label of each code)."""
    index: dict[Label, int] = {label: i for i, label in enumerate(labels)}
    # dict.setdefault in a comprehension: one pass, about 10x faster than np.unique on strings.
    gold_codes = np.fromiter((index.setdefault(x, len(index)) for x in gold), dtype=np.int64)
    pred_codes = np.fromiter((index.setdefault(x, len(index)) for x in pred), dtype=np.int64)
    if len(gold_codes) != len(pred_codes):
        raise ValueError(f"{len(gold_codes)} gold items but {len(pred_codes)} predicted items")
    return gold_codes, pred_codes, list(index)


def confusion_counts(gold_codes: np.ndarray, pred_codes: np.ndarray, n_labels: int) -> np.ndarray:
    """`n_labels` x `n_labels` matrix of counts, rows gold, columns prediction."""
    flat = np.bincount(gold_codes * n_labels + pred_codes, minlength=n_labels * n_labels)
    return flat.reshape(n_labels, n_labels)


def f1_ratio(tp: int, n_pred: int, n_gold: int, zero_division: float = 0.0) -> float:
    """F1 as a fraction: 2tp / (n_pred + n_gold); `zero_division` when nothing was predicted or expected.

    >>> f1_ratio(2, 3, 4)
    0.5714285714285714
    >>> f1_ratio(0, 0, 0, zero_division=1.0)
    1.0
    """
    denominator = n_pred + n_gold
    return zero_division if denominator == 0 else 2.0 * tp / denominator


@dataclass(frozen=True)
class LabelCounts:
    """Per-label tp / fp / fn of a single-label classification and the number of items; add with `+`.

    >>> counts = LabelCounts.of(["a", "b", "b", "c"], ["a", "b", "c", "c"])
    >>> counts.accuracy()
    75.0
    >>> round(counts.macro_f1(), 6)  # F1: a 1, b 2/3, c 2/3
    77.777778
    >>> (LabelCounts.of(["a", "b"], ["a", "b"]) + LabelCounts.of(["b", "c"], ["c", "c"])) == counts
    True
    """

    tp: Mapping[Label, int] = field(default_factory=dict)
    fp: Mapping[Label, int] = field(default_factory=dict)
    fn: Mapping[Label, int] = field(default_factory=dict)
    n: int = 0

    @classmethod
    def of(cls, gold: Sequence[Label], pred: Sequence[Label]) -> LabelCounts:
        check_aligned(gold, pred)
        gold_codes, pred_codes, labels = encode(gold, pred)
        return cls.from_confusion(confusion_counts(gold_codes, pred_codes, len(labels)), labels)

    @classmethod
    def from_confusion(cls, matrix: np.ndarray, labels: Sequence[Label]) -> LabelCounts:
        tp = np.diag(matrix)
        fp = matrix.sum(axis=0) - tp
        fn = matrix.sum(axis=1) - tp
        return cls(
            tp={label: int(v) for label, v in zip(labels, tp) if v},
            fp={label: int(v) for label, v in zip(labels, fp) if v},
            fn={label: int(v) for label, v in zip(labels, fn) if v},
            n=int(matrix.sum()),
        )

    def __add__(self, other: LabelCounts) -> LabelCounts:
        return LabelCounts(_add(self.tp, other.tp), _add(self.fp, other.fp), _add(self.fn, other.fn),
                           self.n + other.n)

    @property
    def labels(self) -> list[Label]:
        """Labels present in gold or prediction, sorted (sklearn's `unique_labels` order)."""
        return _sorted_labels(set(self.tp) | set(self.fp) | set(self.fn))

    def f1(self, label: Label, zero_division: float = 0.0) -> float:
        """F1 of one label as a fraction (0-1)."""
        tp = self.tp.get(label, 0)
        return f1_ratio(tp, tp + self.fp.get(label, 0), tp + self.fn.get(label, 0), zero_division)

    def f1_per_label(self, labels: Sequence[Label] | None = None, zero_division: float = 0.0) -> dict[
            Label, float]:
        """Per-label F1 on the 0-100 scale, for `labels` (default: those present)."""
        chosen = self.labels if labels is None else labels
        return {label: 100.0 * self.f1(label, zero_division) for label in chosen}

    def macro_f1(self, labels: Sequence[Label] | None = None, zero_division: float = 0.0) -> float:
        """Unweighted mean of per-label F1 (0-100) over `labels` (default: present labels); NaN if none."""
        chosen = self.labels if labels is None else list(labels)
        if not chosen:
            return math.nan
        return 100.0 * float(np.mean([self.f1(label, zero_division) for label in chosen]))

    def micro_f1(self, labels: Sequence[Label] | None = None) -> float:
        """F1 of the pooled counts over `labels` (default: all, where it equals accuracy), 0-100."""
        chosen = self.labels if labels is None else labels
        tp = sum(self.tp.get(label, 0) for label in chosen)
        fp = sum(self.fp.get(label, 0) for label in chosen)
        fn = sum(self.fn.get(label, 0) for label in chosen)
        return 100.0 * f1_ratio(tp, tp + fp, tp + fn)

    def accuracy(self) -> float:
        """Share of items whose prediction equals gold, 0-100; NaN for no items."""
        return math.nan if self.n == 0 else 100.0 * sum(self.tp.values()) / self.n


def _add(a: Mapping[Label, int], b: Mapping[Label, int]) -> dict[Label, int]:
    total = dict(a)
    for key, value in b.items():
        total[key] = total.get(key, 0) + value
    return total


def _sorted_labels(labels: Iterable[Label]) -> list[Label]:
    items = list(labels)
    try:
        return sorted(items)  # type: ignore[type-var]  # Hashable labels may not order: TypeError below
    except TypeError:  # mixed types: a stable, deterministic order anyway
        return sorted(items, key=lambda x: (type(x).__name__, repr(x)))


def macro_f1(gold: Sequence[Label], pred: Sequence[Label], labels: Sequence[Label] | None = None,
             zero_division: float = 0.0) -> float:
    """Macro F1 (0-100), sklearn `f1_score(gold, pred, average="macro")`.

    Per-label F1 = 2tp / (2tp + fp + fn), averaged without weights over `labels`, by default the union
    of labels present in gold or prediction (a label only predicted counts with F1 0; a label in
    neither does not exist). A label whose F1 is 0/0 (only possible with an explicit `labels`) gets
    `zero_division`.

    >>> macro_f1(["a", "a", "b"], ["a", "b", "b"])
    66.66666666666666
    >>> macro_f1(["a", "a"], ["a", "c"])  # c is only predicted: F1(a) = 2/3, F1(c) = 0
    33.33333333333333
    """
    return LabelCounts.of(gold, pred).macro_f1(labels, zero_division)


def micro_f1(gold: Sequence[Label], pred: Sequence[Label], labels: Sequence[Label] | None = None) -> float:
    """Micro F1 (0-100) over `labels`: 2 sum(tp) / (2 sum(tp) + sum(fp) + sum(fn)); over all labels
    it is accuracy. sklearn `f1_score(gold, pred, average="micro", labels=labels)`.

    >>> micro_f1(["x", "a", "b"], ["a", "a", "x"], labels=["a", "b"])  # tp 1, fp 1, fn 1
    50.0
    """
    return LabelCounts.of(gold, pred).micro_f1(labels)


def accuracy(gold: Sequence[Label], pred: Sequence[Label]) -> float:
    """Share of positions where prediction equals gold (0-100).

    >>> accuracy(["a", "b", "c", "d"], ["a", "b", "c", "x"])
    75.0
    """
    check_aligned(gold, pred)
    if not gold:
        return math.nan
    return 100.0 * sum(g == p for g, p in zip(gold, pred)) / len(gold)


def confusion_matrix(gold: Sequence[Label], pred: Sequence[Label], labels: Sequence[str]) -> ConfusionMatrix:
    """Counts with rows = gold and columns = prediction over `labels`, then any other label seen (gold or
    predicted) in order of appearance.

    >>> confusion_matrix(["a", "b"], ["a", "z"], labels=["a", "b"]).counts
    ((1, 0, 0), (0, 0, 1), (0, 0, 0))
    """
    check_aligned(gold, pred)
    gold_codes, pred_codes, all_labels = encode(gold, pred, labels)
    matrix = confusion_counts(gold_codes, pred_codes, len(all_labels))
    return ConfusionMatrix(tuple(str(x) for x in all_labels), tuple(tuple(int(v) for v in row) for row in matrix))


def single_label_report(task: str, gold: Sequence[str], pred: Sequence[str], labels: Sequence[str],
                        order: Sequence[MetricSpec], mode: MetricMode = "official") -> MetricReport:
    """The report of a single-label classification task (YNAT, NLI): `accuracy` and `macro_f1`, in the
    task's `order` (its key metric first); breakdown `f1_per_class` over the present labels, the task's
    own first; confusion over `labels` (+ any other label seen). Same in both modes: no quirks."""
    check_mode(mode)
    check_aligned(gold, pred, "labels")
    counts = LabelCounts.of(gold, pred)
    values = {ACCURACY.name: counts.accuracy, MACRO_F1.name: counts.macro_f1}
    present = set(counts.labels)
    ordered = [x for x in labels if x in present] + [x for x in counts.labels if x not in set(labels)]
    return MetricReport(
        task=task,
        mode=mode,
        scores={spec.name: values[spec.name]() for spec in order},
        breakdown={"f1_per_class": {str(k): v for k, v in counts.f1_per_label(ordered).items()}},
        confusion=confusion_matrix(gold, pred, labels),
        n_examples=len(gold),
    )


@dataclass(frozen=True)
class SingleLabelMetrics:
    """The metrics of one single-label classification task (YNAT, NLI): its name in reports and the specs
    it reports, in order (its key metric first). Its `compute` and `statistics` are the task's metric
    functions, so the task's metric module holds only these facts and its documented definitions."""

    task: str
    specs: tuple[MetricSpec, ...]

    def compute(self, gold: Sequence[str], pred: Sequence[str], labels: Sequence[str],
                mode: MetricMode = "official") -> MetricReport:
        """Scores `specs`; breakdown `f1_per_class`; confusion over `labels` (`single_label_report`)."""
        return single_label_report(self.task, gold, pred, labels, self.specs, mode)

    def statistics(self, gold: Sequence[str], pred: Sequence[str], labels: Sequence[str],
                   mode: MetricMode = "official") -> ExampleStatistics:
        """Per-example statistics of `compute`'s scores (same in both modes): correct, per-label counts."""
        return single_label_statistics(gold, pred, labels, [spec.name for spec in self.specs])
