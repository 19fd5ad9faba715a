"""Models fitted on frozen embeddings, on the protocol's training part only.

- Classification: a multinomial logistic regression (scikit-learn, lbfgs, L2) on the embedding, or on the
  pair features (u, v, |u - v|, u * v) of two embeddings (InferSent's and Sentence-BERT's features), each
  feature standardised on the training part, its L2 strength C chosen among `C_GRID` by 3-fold
  cross-validated accuracy on the training part (stratified, unshuffled: the same folds every run). MTEB's
  fixed C = 1 on raw unit vectors regularises so hard that a 30-class task leans on its majority label;
  standardising makes one grid serve every model's scale. The model gives a probability for every
  label seen in training, 0 for a label the training part lacks.
- Similarity: the cosine similarity of the two embeddings, mapped to the task's scale by a line fitted on the
  training pairs (`Calibration`: the least-squares slope, through the cosine that gives the best F1 at the
  task's binary cut) and clipped to the scale. Pearson r is unchanged by the line where nothing is clipped;
  F1 is decided by where the line crosses the cut. The cosine's own Spearman correlation, as MTEB reports
  it, is kept beside, with a bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from klue.errors import DataError

C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)
CV_FOLDS = 3
MAX_ITER = 1000
SPEARMAN_RESAMPLES = 1000


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.hstack([u, v, np.abs(u - v), u * v]).astype(np.float32)


def cosines(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of unit vectors (float64)."""
    return np.einsum("ij,ij->i", u.astype(np.float64), v.astype(np.float64))


@dataclass
class LabelModel:
    """A fitted logistic regression (after its standardisation) and the label set its probabilities cover."""

    labels: tuple[str, ...]  # the task's labels, in order
    model: Any  # a fitted scikit-learn pipeline: StandardScaler, LogisticRegressionCV (sklearn has no types)
    seen: tuple[str, ...]  # the labels the training part holds, in the model's column order
    c: float  # the C that cross-validation chose

    def describe(self, features: str) -> str:
        return (f"logistic regression (lbfgs) on {features}, standardised; C = {self.c:g}, chosen among "
                f"{', '.join(f'{c:g}' for c in C_GRID)} by {CV_FOLDS}-fold cross-validation on the training part")

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(n, len(labels)): a column per task label, 0 for a label never seen in training."""
        known = self.model.predict_proba(features)
        out = np.zeros((len(features), len(self.labels)), dtype=np.float64)
        column = {label: i for i, label in enumerate(self.labels)}
        for j, label in enumerate(self.seen):
            out[:, column[label]] = known[:, j]
        return out


def fit_labels(features: np.ndarray, gold: Sequence[str], labels: Sequence[str], seed: int) -> LabelModel:
    """A logistic regression of `gold` on `features` (see the module docstring); DataError when the training
    part cannot train one."""
    import warnings

    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    unknown = sorted(set(gold) - set(labels))
    if unknown:
        raise DataError(f"training labels outside the task's label set: {unknown[:5]}")
    seen = sorted(set(gold), key=list(labels).index)
    if len(seen) < 2:
        raise DataError(f"the training part holds {len(seen)} label(s); a classifier needs two or more")
    regression = LogisticRegressionCV(Cs=list(C_GRID), cv=CV_FOLDS, scoring="accuracy", max_iter=MAX_ITER,
                                      random_state=seed)
    model = make_pipeline(StandardScaler(), regression)
    with warnings.catch_warnings():
        # a label with fewer examples than folds: scikit-learn says so, and the folds are still usable
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        # scikit-learn 1.9 announces new defaults (an L2 penalty spelt as l1_ratios=(0,), which older versions
        # do not take) and attribute shapes (C_ is read below in a way both shapes give)
        for announced in ("The fitted attributes of LogisticRegressionCV", "The default value for l1_ratios"):
            warnings.filterwarnings("ignore", message=announced, category=FutureWarning)
        model.fit(features, np.asarray(gold))
    order = [str(c) for c in regression.classes_]
    return LabelModel(tuple(labels), model, tuple(order), float(np.ravel(regression.C_)[0]))


@dataclass(frozen=True)
class Calibration:
    """score = clip(anchor + slope * (cosine - threshold), low, high): a line through (threshold, anchor).

    `threshold` is the cosine that best splits the training pairs at the task's binary cut (`anchor`, 3.0 for
    STS) by F1, so the calibrated score crosses the cut there: the threshold alone decides F1. `slope` is the
    least-squares slope of the training scores on the training cosines, lowered where needed so that no
    training cosine lands outside the scale: a line with a positive slope leaves Pearson r as the cosine's
    wherever nothing is clipped, and clipping a whole tail would cost Pearson r for nothing."""

    slope: float
    threshold: float
    anchor: float
    low: float
    high: float

    def __call__(self, cosine: np.ndarray) -> np.ndarray:
        return np.clip(self.anchor + self.slope * (cosine - self.threshold), self.low, self.high)

    def describe(self) -> str:
        return (f"score = clip({self.anchor:g} + {self.slope:.4f} x (cosine - {self.threshold:.4f}), {self.low:g}, "
                f"{self.high:g}): least-squares slope, and the cosine that gives the best F1 at {self.anchor:g} on "
                "the training pairs")


def fit_calibration(cosine: np.ndarray, gold: Sequence[float], scale: tuple[float, float],
                    anchor: float) -> Calibration:
    """The calibration of `cosine` to `gold`'s scale, fitted on training pairs (see `Calibration`)."""
    y = np.asarray(gold, dtype=np.float64)
    if len(cosine) < 2 or float(np.ptp(cosine)) == 0.0:
        raise DataError("the calibration needs two or more training pairs with different cosines")
    slope = float(np.polyfit(cosine, y, 1)[0])
    if slope <= 0:
        raise DataError(f"on the training pairs the gold score falls as the cosine rises (slope {slope:.4f}): the "
                        "embeddings carry no usable similarity")
    low, high = float(scale[0]), float(scale[1])
    threshold = best_f1_threshold(cosine, y >= anchor)
    top, bottom = float(np.max(cosine)), float(np.min(cosine))
    if top > threshold:
        slope = min(slope, (high - anchor) / (top - threshold))
    if bottom < threshold:
        slope = min(slope, (anchor - low) / (threshold - bottom))
    return Calibration(slope, threshold, float(anchor), low, high)


def best_f1_threshold(score: np.ndarray, positive: np.ndarray) -> float:
    """The cut t (predict positive when score >= t) with the best F1 on these pairs: halfway between the
    k-th and (k+1)-th highest distinct score for the best k (the smallest such k on a tie)."""
    order = np.argsort(-score, kind="stable")
    ranked, hits = score[order], positive[order].astype(np.float64)
    ends = np.flatnonzero(np.append(ranked[1:] != ranked[:-1], True))  # the last index of each run of ties
    predicted = ends + 1
    true_positives = np.cumsum(hits)[ends]
    f1 = 2 * true_positives / (predicted + hits.sum())
    best = int(np.argmax(f1))
    k = ends[best]
    return float(ranked[k] if k + 1 == len(ranked) else (ranked[k] + ranked[k + 1]) / 2)


@dataclass(frozen=True)
class Correlation:
    value: float  # 0-100
    low: float  # 95% percentile bootstrap interval
    high: float


def spearman(x: np.ndarray, y: Sequence[float], seed: int, resamples: int = SPEARMAN_RESAMPLES) -> Correlation:
    """Spearman's rho x 100 of x and y, with a 95% percentile bootstrap interval over the pairs (seeded)."""
    from scipy.stats import rankdata

    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    value = _pearson(rankdata(a), rankdata(b))
    generator = np.random.default_rng(seed)
    draws = generator.integers(0, len(a), size=(resamples, len(a)))
    values = [_pearson(rankdata(a[d]), rankdata(b[d])) for d in draws]
    finite = np.asarray([v for v in values if np.isfinite(v)])
    low, high = (np.percentile(finite, [2.5, 97.5]) if len(finite) else (np.nan, np.nan))
    return Correlation(value, float(low), float(high))


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    xm, ym = x - x.mean(), y - y.mean()
    denominator = float(np.sqrt((xm @ xm) * (ym @ ym)))
    return 100.0 * float(xm @ ym) / denominator if denominator > 0 else float("nan")
