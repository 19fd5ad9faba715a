"""Models fitted on frozen embeddings, on the protocol's training part only.

- Classification: a multinomial logistic regression (scikit-learn, lbfgs, L2 with C = 1 as MTEB's
  classification tasks use it) on the embedding, or on the pair features (u, v, |u - v|, u * v) of two
  embeddings (InferSent's and Sentence-BERT's features). It gives a probability for every label seen in
  training, 0 for a label the training part lacks.
- Similarity: the cosine similarity of the two embeddings, mapped to the task's scale by a line fitted on the
  training pairs (`Calibration`: the least-squares slope, through the cosine that gives the best F1 at the
  task's binary cut) and clipped to the scale. Pearson r is unchanged by the line where nothing is clipped;
  F1 is decided by where the line crosses the cut. The cosine's own Spearman correlation, as MTEB reports
  it, is kept beside, with a bootstrap interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from klue.errors import DataError

C = 1.0
MAX_ITER = 1000
SPEARMAN_RESAMPLES = 1000


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.hstack([u, v, np.abs(u - v), u * v]).astype(np.float32)


def cosines(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of unit vectors (float64)."""
    return np.einsum("ij,ij->i", u.astype(np.float64), v.astype(np.float64))


@dataclass
class LabelModel:
    """A fitted logistic regression and the label set its probabilities are spread over."""

    labels: tuple[str, ...]  # the task's labels, in order
    model: object
    seen: tuple[str, ...]  # the labels the training part holds, in the model's column order

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """(n, len(labels)): a column per task label, 0 for a label never seen in training."""
        known = self.model.predict_proba(features)  # type: ignore[attr-defined]
        out = np.zeros((len(features), len(self.labels)), dtype=np.float64)
        column = {label: i for i, label in enumerate(self.labels)}
        for j, label in enumerate(self.seen):
            out[:, column[label]] = known[:, j]
        return out


def fit_labels(features: np.ndarray, gold: Sequence[str], labels: Sequence[str], seed: int) -> LabelModel:
    """A logistic regression of `gold` on `features`; DataError when the training part cannot train one."""
    from sklearn.linear_model import LogisticRegression

    unknown = sorted(set(gold) - set(labels))
    if unknown:
        raise DataError(f"training labels outside the task's label set: {unknown[:5]}")
    seen = sorted(set(gold), key=list(labels).index)
    if len(seen) < 2:
        raise DataError(f"the training part holds {len(seen)} label(s); a classifier needs two or more")
    model = LogisticRegression(C=C, max_iter=MAX_ITER, random_state=seed)
    model.fit(features, np.asarray(gold))
    order = [str(c) for c in model.classes_]
    return LabelModel(tuple(labels), model, tuple(order))


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
