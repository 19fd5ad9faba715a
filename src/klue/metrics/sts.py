"""KLUE-STS (semantic textual similarity, 0-5): Pearson r and binary F1 at the 3.0 threshold."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from klue.metrics.classification import LabelCounts, check_aligned, check_mode
from klue.metrics.report import MetricMode, MetricReport, MetricSpec
from klue.metrics.statistics import ExampleStatistics, Formula, column, combine

TASK_NAME = "sts"
PEARSONR = MetricSpec("pearsonr", "Pearson r")
F1 = MetricSpec("f1", "F1")  # binary F1 after thresholding at THRESHOLD
SPECS = (PEARSONR, F1)
THRESHOLD = 3.0  # official: a pair is "similar" (binary label 1) when its score is >= 3.0


def _as_float_array(values: Sequence[float], what: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{what} must be a flat sequence of numbers")
    if not np.all(np.isfinite(array)):
        bad = np.flatnonzero(~np.isfinite(array))
        raise ValueError(f"{what} holds {len(bad)} values that are not finite numbers, at positions "
                         f"{bad[:5].tolist()}")
    return array


def pearsonr(gold: Sequence[float], pred: Sequence[float]) -> float:
    """KLUE-STS `pearsonr` (0-100): Pearson correlation of predictions with `labels.real-label`.

    r = sum((x - mean x)(y - mean y)) / sqrt(sum((x - mean x)^2) sum((y - mean y)^2)), float64, clipped to
    [-1, 1] as `scipy.stats.pearsonr` does (which the official code calls); NaN when either side is
    exactly constant (r is undefined; scipy also returns NaN). Hand-written with numpy because importing
    scipy.stats costs more than the whole computation. Same in both modes.

    >>> round(pearsonr([0.0, 1.0, 2.0, 3.0], [0.5, 1.0, 2.5, 2.5]), 6)
    93.933644
    """
    check_aligned(gold, pred, "scores")
    x = _as_float_array(pred, "predicted scores")
    y = _as_float_array(gold, "gold scores")
    # scipy's order of operations: an exactly constant side is NaN; deviations are scaled by their largest
    # magnitude before the norm (no underflow for tiny values).
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    xm = x - x.mean()
    ym = y - y.mean()
    x_scale = float(np.max(np.abs(xm)))
    y_scale = float(np.max(np.abs(ym)))
    x_norm = x_scale * float(np.linalg.norm(xm / x_scale))
    y_norm = y_scale * float(np.linalg.norm(ym / y_scale))
    return 100.0 * max(-1.0, min(1.0, float(np.dot(xm / x_norm, ym / y_norm))))


def f1(gold: Sequence[float], pred: Sequence[float]) -> float:
    """KLUE-STS `f1` (0-100): binary F1 of class 1 after thresholding both sides at `>= 3.0`.

    Official: `np.where(x >= 3, 1, 0)` on predictions and real labels, then sklearn binary F1 with
    pos_label 1 (0 when neither side has a positive). A prediction of exactly 3.0 is positive; using
    `>` instead of `>=` is a known misreading (-1.0 point on real cases). Same in both modes.

    >>> f1([3.0, 4.0, 1.0, 2.0], [3.0, 2.9, 3.5, 0.0])  # tp 1, fp 1, fn 1
    50.0
    """
    return 100.0 * binary_counts(gold, pred).f1(True)


def binary_counts(gold: Sequence[float], pred: Sequence[float]) -> LabelCounts:
    """The counts of the thresholded binary task (labels True and False), mergeable with `+`."""
    check_aligned(gold, pred, "scores")
    return LabelCounts.of(_positive(gold, "gold scores").tolist(), _positive(pred, "predicted scores").tolist())


def _positive(scores: Sequence[float], what: str) -> np.ndarray:
    """Whether each score is at least `THRESHOLD` (the binary label 1)."""
    return _as_float_array(scores, what) >= THRESHOLD


@dataclass(frozen=True)
class PearsonStats:
    """Sufficient statistics for Pearson r (count, means, centred second moments); add with `+`.

    Merging uses the pairwise update of Chan et al. (stable, no sum-of-squares cancellation), so shards
    give the whole-set r to about 1e-12.

    >>> a = PearsonStats.of([0.0, 1.0], [0.5, 1.0]); b = PearsonStats.of([2.0, 3.0], [2.5, 2.5])
    >>> round((a + b).r(), 6)
    93.933644
    """

    n: int = 0
    mean_gold: float = 0.0
    mean_pred: float = 0.0
    m2_gold: float = 0.0
    m2_pred: float = 0.0
    co_moment: float = 0.0

    @classmethod
    def of(cls, gold: Sequence[float], pred: Sequence[float]) -> PearsonStats:
        check_aligned(gold, pred, "scores")
        y = _as_float_array(gold, "gold scores")
        x = _as_float_array(pred, "predicted scores")
        if len(x) == 0:
            return cls()
        ym, xm = y - y.mean(), x - x.mean()
        return cls(len(x), float(y.mean()), float(x.mean()), float(ym @ ym), float(xm @ xm), float(ym @ xm))

    def __add__(self, other: PearsonStats) -> PearsonStats:
        if self.n == 0:
            return other
        if other.n == 0:
            return self
        n = self.n + other.n
        dg = other.mean_gold - self.mean_gold
        dp = other.mean_pred - self.mean_pred
        w = self.n * other.n / n
        return PearsonStats(
            n,
            self.mean_gold + dg * other.n / n,
            self.mean_pred + dp * other.n / n,
            self.m2_gold + other.m2_gold + dg * dg * w,
            self.m2_pred + other.m2_pred + dp * dp * w,
            self.co_moment + other.co_moment + dg * dp * w,
        )

    def r(self) -> float:
        """Pearson r x 100 (NaN when undefined)."""
        denominator = math.sqrt(self.m2_gold) * math.sqrt(self.m2_pred)
        if self.n < 2 or denominator == 0.0:
            return math.nan
        return 100.0 * max(-1.0, min(1.0, self.co_moment / denominator))


def compute(gold: Sequence[float], pred: Sequence[float], mode: MetricMode = "official") -> MetricReport:
    """Scores `pearsonr` and `f1` (identical in both modes: STS has no quirk to correct)."""
    check_mode(mode)
    return MetricReport(
        task=TASK_NAME,
        mode=mode,
        scores={"pearsonr": pearsonr(gold, pred), "f1": f1(gold, pred)},
        n_examples=len(gold),
    )


def statistics(gold: Sequence[float], pred: Sequence[float], mode: MetricMode = "official") -> ExampleStatistics:
    """Per-pair statistics of `compute`'s scores (same in both modes): 1, x, y, x^2, y^2, xy of the
    prediction x and the gold y, both centred on their whole-set means (r does not change under a shift,
    and centring keeps the sums of squares free of cancellation), and the thresholded tp / predicted /
    gold positives of `f1`."""
    check_mode(mode)
    check_aligned(gold, pred, "scores")
    y = _as_float_array(gold, "gold scores")
    x = _as_float_array(pred, "predicted scores")
    if len(x):
        x, y = x - x.mean(), y - y.mean()
    g, p = _positive(gold, "gold scores"), _positive(pred, "predicted scores")
    formulas = {
        "pearsonr": Formula("pearsonr", "pearson", {k: k for k in ("n", "x", "y", "xx", "yy", "xy")}),
        "f1": Formula("f1", "f1", {"tp": "bin.tp", "pred": "bin.pred", "gold": "bin.gold"}),
    }
    return combine([column("n", np.ones(len(x))), column("x", x), column("y", y), column("xx", x * x),
                    column("yy", y * y), column("xy", x * y), column("bin.tp", g & p), column("bin.pred", p),
                    column("bin.gold", g)], [formulas[spec.name] for spec in SPECS])
