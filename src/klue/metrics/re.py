"""KLUE-RE (relation extraction, 30 relations, index 0 `no_relation`): micro F1 and AUPRC."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from klue.metrics.classification import LabelCounts, check_aligned, check_mode
from klue.metrics.report import MetricMode, MetricReport, MetricSpec
from klue.metrics.statistics import ExampleStatistics, Formula, column, combine, label_codes

TASK_NAME = "re"
MICRO_F1 = MetricSpec("micro_f1", "micro F1")
AUPRC = MetricSpec("auprc", "AUPRC")
SPECS = (MICRO_F1, AUPRC)
NO_RELATION = "no_relation"


def _check_relations(relations: Sequence[str]) -> None:
    if NO_RELATION not in relations:
        raise ValueError(f"the relation list must contain {NO_RELATION!r}")
    if len(set(relations)) != len(relations):
        raise ValueError("the relation list names a relation twice")


def _check_labels(labels: Sequence[str], relations: Sequence[str], what: str) -> None:
    known = set(relations)
    unknown = sorted({x for x in labels if x not in known})
    if unknown:
        raise ValueError(f"{what} labels not in the relation list: {unknown[:5]}")


def micro_f1(gold: Sequence[str], pred: Sequence[str], relations: Sequence[str]) -> float:
    """KLUE-RE `micro_f1` (0-100): micro F1 over the relation classes EXCLUDING `no_relation`.

    TP = pred == gold != no_relation; #pred = pred != no_relation; #gold = gold != no_relation;
    F1 = 2 TP / (#pred + #gold), 0 when both are 0 (official: sklearn `f1_score(average="micro",
    labels=all indices but no_relation's)`). Same in both modes.

    >>> rels = ["no_relation", "per:title", "org:members"]
    >>> micro_f1(["per:title", "no_relation", "org:members"], ["per:title", "per:title", "no_relation"], rels)
    50.0
    """
    check_aligned(gold, pred, "labels")
    _check_relations(relations)
    _check_labels(gold, relations, "gold")
    _check_labels(pred, relations, "predicted")
    return LabelCounts.of(gold, pred).micro_f1([r for r in relations if r != NO_RELATION])


def _probability_matrix(probs: Sequence[Sequence[float]], n_rows: int, n_classes: int) -> np.ndarray:
    matrix = np.asarray(probs, dtype=np.float64)
    if matrix.shape != (n_rows, n_classes):
        raise ValueError(f"probabilities must be {n_rows} rows of {n_classes} numbers, got shape {matrix.shape}")
    bad = ~np.all(np.isfinite(matrix), axis=1)
    if bad.any():
        raise ValueError(f"{int(bad.sum())} rows of probabilities hold values that are not finite numbers, "
                         f"first at rows {np.flatnonzero(bad)[:5].tolist()}")
    return matrix


def _pr_curve_area(is_positive: np.ndarray, scores: np.ndarray) -> float:
    """Trapezoid area under the precision-recall curve of one class, as sklearn's
    `auc(*precision_recall_curve(y, s)[1::-1])` computes it (sklearn >= 1.1): one point per distinct score
    (ties grouped), plus the end point (recall 0, precision 1); with no positive at all the recall is set
    to 1 everywhere, which gives 0.5."""
    order = np.argsort(-scores, kind="stable")
    sorted_scores = scores[order]
    sorted_positive = is_positive[order]
    thresholds = np.r_[np.flatnonzero(np.diff(sorted_scores)), len(scores) - 1]
    tps = np.cumsum(sorted_positive, dtype=np.float64)[thresholds]
    fps = 1.0 + thresholds - tps
    precision = tps / (tps + fps)
    recall = np.ones_like(tps) if tps[-1] == 0 else tps / tps[-1]
    precision = np.r_[precision[::-1], 1.0]
    recall = np.r_[recall[::-1], 0.0]
    # recall decreases along the curve, so the area is minus the trapezoid integral over it.
    return float(-(np.diff(recall) * (precision[1:] + precision[:-1]) / 2.0).sum())


def auprc_per_class(gold: Sequence[str], probs: Sequence[Sequence[float]], relations: Sequence[str]) -> (
        dict[str, float]):
    """Area under the one-vs-rest precision-recall curve of each relation (0-100), in `relations` order."""
    _check_relations(relations)
    _check_labels(gold, relations, "gold")
    index = {r: i for i, r in enumerate(relations)}
    gold_codes = np.fromiter((index[g] for g in gold), dtype=np.int64, count=len(gold))
    matrix = _probability_matrix(probs, len(gold), len(relations))
    if len(gold) == 0:
        return {r: math.nan for r in relations}
    return {r: 100.0 * _pr_curve_area(gold_codes == c, matrix[:, c]) for c, r in enumerate(relations)}


def auprc(gold: Sequence[str], probs: Sequence[Sequence[float]], relations: Sequence[str],
          mode: MetricMode = "official") -> float:
    """KLUE-RE `auprc` (0-100): mean over ALL classes (no_relation included) of the area under each
    class's one-vs-rest precision-recall curve.

    Official (sklearn `precision_recall_curve` + `auc` per class, `np.average` over the 30): the curve has
    one point per distinct probability (ties grouped) plus the (recall 0, precision 1) end point; the area
    is by the trapezoid rule, NOT average precision (reading it as AP is +1.9 points on real cases).
    Quirk: a class with no gold example has no curve; current sklearn sets its recall to 1 and the area
    comes out 0.5 (the 2021 sklearn gave NaN). Corrected: the mean runs over the classes with at least
    one gold example only. Ties between probabilities are one threshold: a tie of a positive and a
    negative is a single point, not two.

    >>> rels = ["no_relation", "per:title"]
    >>> gold = ["per:title", "no_relation", "per:title", "no_relation"]
    >>> probs = [[0.2, 0.8], [0.6, 0.4], [0.6, 0.4], [0.9, 0.1]]
    >>> round(auprc(gold, probs, rels), 6)  # both classes 11/12
    91.666667
    """
    check_mode(mode)
    per_class = auprc_per_class(gold, probs, relations)
    if mode == "corrected":
        present = set(gold)
        values = [v for r, v in per_class.items() if r in present]
    else:
        values = list(per_class.values())
    return float(np.average(values)) if values else math.nan


def compute(gold: Sequence[str], pred: Sequence[str], probs: Sequence[Sequence[float]], relations: Sequence[str],
            mode: MetricMode = "official") -> MetricReport:
    """Scores `micro_f1` and `auprc`; breakdowns `f1_per_relation` (every relation present in gold or
    prediction, no_relation included) and `auprc_per_relation`."""
    check_mode(mode)
    check_aligned(gold, pred, "labels")
    per_class_area = auprc_per_class(gold, probs, relations)
    counts = LabelCounts.of(gold, pred)
    _check_labels(pred, relations, "predicted")
    if mode == "corrected":
        present = set(gold)
        areas = [v for r, v in per_class_area.items() if r in present]
    else:
        areas = list(per_class_area.values())
    present_labels = set(counts.labels)
    return MetricReport(
        task=TASK_NAME,
        mode=mode,
        scores={
            "micro_f1": counts.micro_f1([r for r in relations if r != NO_RELATION]),
            "auprc": float(np.average(areas)) if areas else math.nan,
        },
        breakdown={
            "f1_per_relation": {str(k): v for k, v in counts.f1_per_label(
                [r for r in relations if r in present_labels]).items()},
            "auprc_per_relation": per_class_area,
        },
        n_examples=len(gold),
    )


def statistics(gold: Sequence[str], pred: Sequence[str], probs: Sequence[Sequence[float]] | None,
               relations: Sequence[str], mode: MetricMode = "official") -> ExampleStatistics:
    """Per-example statistics of `compute`'s scores: micro F1's tp / predicted / gold relations (not
    no_relation), and for AUPRC (not decomposable) the example's probability of each relation (`prob:R`)
    and its gold class (`gold:R`, 0/1), from which AUPRC is computed under any example weights. Without
    `probs` (a run that has none) only `micro_f1`."""
    check_mode(mode)
    check_aligned(gold, pred, "labels")
    _check_relations(relations)
    _check_labels(gold, relations, "gold")
    _check_labels(pred, relations, "predicted")
    g, p = label_codes(gold, relations), label_codes(pred, relations)
    none = relations.index(NO_RELATION)
    parts = [column("mic.tp", (g == p) & (g != none)), column("mic.pred", p != none), column("mic.gold", g != none)]
    formulas = [Formula("micro_f1", "f1", {"tp": "mic.tp", "pred": "mic.pred", "gold": "mic.gold"})]
    if probs is not None:
        matrix = _probability_matrix(probs, len(gold), len(relations))
        parts += [([f"prob:{r}" for r in relations], matrix),
                  ([f"gold:{r}" for r in relations], (g[:, None] == np.arange(len(relations))[None, :]))]
        formulas.append(Formula("auprc", "auprc", {"labels": list(relations), "mode": mode}))
    return combine(parts, formulas)
