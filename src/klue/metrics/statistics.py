"""Per-example sufficient statistics of the official metrics, and the metrics back from their sums.

Each metric module builds, beside its metric functions, an `ExampleStatistics`: one row of numbers per
evaluation example (a sentence's entity tp / predicted / gold per type, a sentence pair's centred
products, a question's exact match, ...) and one `Formula` per metric that turns the column sums back into
the metric. Every formula is evaluated on many weight vectors at once: `values(weights)` takes an R x n
matrix of example weights (bootstrap counts, swap indicators) and returns R values per metric, through a
single matrix product `weights @ matrix` for the decomposable metrics. With all weights 1 a formula gives
the official metric of the whole set (tested for every task, to 1e-9).

The one non-decomposable metric, AUPRC (relation extraction), keeps each example's probability vector and gold class in
columns and is computed from the weights directly (`_weighted_pr_area`): a weight-k example is k copies.

Formulas are data (`kind` + JSON-able arguments), so a run directory stores them beside the matrix
(klue.results.write_statistics) and `klue compare` and the report evaluate them without gold or task code.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

FORMULA_KINDS = ("ratio", "f1", "macro_f1", "pearson", "auprc")


@dataclass(frozen=True)
class Formula:
    """How one metric comes from column sums (or, for `auprc`, from the example weights).

    - `ratio`: 100 * sum(num) / sum(den); `empty` when sum(den) is 0 (args: num, den, empty).
    - `f1`: 100 * 2 sum(tp) / (sum(pred) + sum(gold)); `zero_division` when both are 0.
    - `macro_f1`: per label of group `prefix` (columns `prefix.tp:L`, `prefix.pred:L`, `prefix.gold:L`),
      F1 = 2tp / (pred + gold); mean over `labels` (F1 0/0 = `zero_division`), or when `labels` is None
      over the labels present (pred + gold > 0) in that sum, NaN when none is.
    - `pearson`: r x 100 from the sums of n, x, y, x^2, y^2, xy (values centred on the full-set means).
    - `auprc`: the relation-extraction AUPRC over `labels` from columns `prob:L` and `gold:L` (`mode` official/corrected).
    """

    metric: str
    kind: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"metric": self.metric, "kind": self.kind, "args": dict(self.args)}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Formula:
        if obj.get("kind") not in FORMULA_KINDS:
            raise ValueError(f"unknown statistics formula kind {obj.get('kind')!r}")
        return cls(str(obj["metric"]), str(obj["kind"]), dict(obj.get("args") or {}))


@dataclass(frozen=True)
class ExampleStatistics:
    """Rows = examples (in gold order), columns = named statistics, and the formulas of the metrics."""

    columns: tuple[str, ...]
    matrix: np.ndarray  # float64, n_examples x n_columns
    formulas: tuple[Formula, ...]

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or self.matrix.shape[1] != len(self.columns):
            raise ValueError(f"a statistics matrix of shape {self.matrix.shape} for {len(self.columns)} columns")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError("a statistics column is named twice")

    @property
    def n_examples(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(f.metric for f in self.formulas)

    def only(self, metrics: Iterable[str]) -> ExampleStatistics:
        """The same statistics with the formulas of `metrics` only (in their order here)."""
        keep = set(metrics)
        return ExampleStatistics(self.columns, self.matrix, tuple(f for f in self.formulas if f.metric in keep))

    def with_columns(self, columns: Sequence[str]) -> ExampleStatistics:
        """The statistics over `columns` (a superset of its own): a column it lacks is all zeros. Two runs
        whose data made different label columns (a head index only one parser predicted) line up so."""
        missing = set(self.columns) - set(columns)
        if missing:
            raise ValueError(f"columns {sorted(missing)[:5]} would be dropped")
        index = {c: i for i, c in enumerate(self.columns)}
        matrix = np.zeros((self.n_examples, len(columns)))
        for j, column in enumerate(columns):
            if column in index:
                matrix[:, j] = self.matrix[:, index[column]]
        return ExampleStatistics(tuple(columns), matrix, self.formulas)

    @cached_property
    def summed(self) -> tuple[str, ...]:
        """The columns whose sums the formulas read (in column order): not the per-example ones of AUPRC."""
        needed = set().union(*(summed_columns(f, self.columns) for f in self.formulas)) if self.formulas else set()
        return tuple(c for c in self.columns if c in needed)

    def summed_matrix(self) -> np.ndarray:
        """The matrix restricted to `summed`: what `values_from` needs the sums of."""
        index = {c: i for i, c in enumerate(self.columns)}
        return self.matrix[:, [index[c] for c in self.summed]]

    @property
    def needs_weights(self) -> bool:
        """Whether a formula needs the example weights, not only the column sums (AUPRC)."""
        return any(f.kind == "auprc" for f in self.formulas)

    def totals(self) -> dict[str, float]:
        """Each metric on the whole set (all weights 1): the official values."""
        values = self.values(np.ones((1, self.n_examples)))
        return {name: float(v[0]) for name, v in values.items()}

    def values(self, weights: np.ndarray) -> dict[str, np.ndarray]:
        """Each metric under each row of `weights` (R x n example weights): name -> R values."""
        weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if weights.shape[1] != self.n_examples:
            raise ValueError(f"{weights.shape[1]} weights per row for {self.n_examples} examples")
        return self.values_from(weights @ self.summed_matrix(), weights)

    def values_from(self, sums: np.ndarray, weights: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Each metric from R rows of sums of the `summed` columns (`weights @ summed_matrix()`, however
        obtained); the example `weights` only where `needs_weights`."""
        summed = self.summed
        return {f.metric: evaluate(f, summed, sums, weights, self.columns, self.matrix) for f in self.formulas}


def summed_columns(formula: Formula, columns: Sequence[str]) -> set[str]:
    """The columns whose sums `formula` reads."""
    args = formula.args
    if formula.kind == "ratio":
        return {args["num"], args["den"]}
    if formula.kind == "f1":
        return {args["tp"], args["pred"], args["gold"]}
    if formula.kind == "pearson":
        return {args[k] for k in ("n", "x", "y", "xx", "yy", "xy")}
    if formula.kind == "macro_f1":
        return {c for c in columns if c.startswith(f"{args['prefix']}.")}
    return set()


def evaluate(formula: Formula, summed: Sequence[str], sums: np.ndarray, weights: np.ndarray | None = None,
             columns: Sequence[str] = (), matrix: np.ndarray | None = None) -> np.ndarray:
    """One formula over R rows of sums of the `summed` columns (for `auprc`: the R x n example weights and
    the per-example `matrix` of `columns`)."""
    index = {c: i for i, c in enumerate(summed)}
    args = formula.args

    def col(name: str) -> np.ndarray:
        return sums[:, index[name]]

    with np.errstate(divide="ignore", invalid="ignore"):
        if formula.kind == "ratio":
            num, den = col(args["num"]), col(args["den"])
            return np.where(den > 0, 100.0 * num / np.where(den > 0, den, 1.0), _empty(args.get("empty")))
        if formula.kind == "f1":
            return f1_values(col(args["tp"]), col(args["pred"]), col(args["gold"]),
                             float(args.get("zero_division", 0.0)))
        if formula.kind == "macro_f1":
            return _macro_f1(formula, index, sums)
        if formula.kind == "pearson":
            return _pearson(*(col(args[k]) for k in ("n", "x", "y", "xx", "yy", "xy")))
        if formula.kind == "auprc":
            if matrix is None or weights is None:
                raise ValueError("auprc needs the example weights")
            return _auprc(formula, {c: i for i, c in enumerate(columns)}, matrix, weights)
    raise ValueError(f"unknown statistics formula kind {formula.kind!r}")


def _empty(value: Any) -> float:
    return math.nan if value is None else float(value)


def f1_values(tp: np.ndarray, pred: np.ndarray, gold: np.ndarray, zero_division: float = 0.0) -> np.ndarray:
    """100 * 2tp / (pred + gold), elementwise; `zero_division` (0-1) where pred + gold is 0."""
    den = pred + gold
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100.0 * np.where(den > 0, 2.0 * tp / np.where(den > 0, den, 1.0), zero_division)


def group_labels(columns: Iterable[str], prefix: str) -> list[str]:
    """The labels of group `prefix`, in column order (from its `prefix.tp:L` columns)."""
    head = f"{prefix}.tp:"
    return [c[len(head):] for c in columns if c.startswith(head)]


def _macro_f1(formula: Formula, index: Mapping[str, int], sums: np.ndarray) -> np.ndarray:
    prefix = formula.args["prefix"]
    fixed = formula.args.get("labels")
    labels = list(fixed) if fixed is not None else group_labels(index, prefix)
    if not labels:
        return np.full(len(sums), math.nan)

    def block(part: str) -> np.ndarray:
        return sums[:, [index[f"{prefix}.{part}:{label}"] for label in labels]]

    tp, pred, gold = block("tp"), block("pred"), block("gold")
    per_label = f1_values(tp, pred, gold, float(formula.args.get("zero_division", 0.0)))
    if fixed is not None:
        return per_label.mean(axis=1)
    present = (pred + gold) > 0
    counted = present.sum(axis=1)
    total = np.where(present, per_label, 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counted > 0, total / np.maximum(counted, 1), math.nan)


def _pearson(n: np.ndarray, x: np.ndarray, y: np.ndarray, xx: np.ndarray, yy: np.ndarray, xy: np.ndarray) -> (
        np.ndarray):
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_n = np.where(n > 0, n, 1.0)
        var_x = xx - x * x / safe_n
        var_y = yy - y * y / safe_n
        cov = xy - x * y / safe_n
        r = cov / (np.sqrt(np.maximum(var_x, 0.0)) * np.sqrt(np.maximum(var_y, 0.0)))
        # A side whose values are all equal has no correlation (scipy: NaN); from sums its variance is 0
        # up to rounding, so "constant" is a variance below 1e-12 of the sum of squares.
        constant = (var_x <= 1e-12 * np.maximum(xx, 1e-300)) | (var_y <= 1e-12 * np.maximum(yy, 1e-300))
        return np.where((n < 2) | constant, math.nan, 100.0 * np.clip(r, -1.0, 1.0))


def _auprc(formula: Formula, index: Mapping[str, int], matrix: np.ndarray, weights: np.ndarray) -> np.ndarray:
    labels = list(formula.args["labels"])
    # Counts (bootstrap) and 0/1 swaps are whole numbers, whose sums float32 holds exactly below 2**24:
    # half the memory traffic of the per-class cumulative sums, the bulk of the work.
    if weights.sum(axis=1).max() < 2**24 and np.array_equal(weights, np.round(weights)):
        weights = weights.astype(np.float32)
    areas = np.empty((len(weights), len(labels)))
    golds = np.empty((len(weights), len(labels)))
    for j, label in enumerate(labels):
        is_positive = matrix[:, index[f"gold:{label}"]] > 0
        areas[:, j] = _weighted_pr_area(is_positive, matrix[:, index[f"prob:{label}"]], weights)
        golds[:, j] = weights @ is_positive.astype(weights.dtype)
    if formula.args.get("mode", "official") == "corrected":  # classes with a gold example only
        present = golds > 0
        counted = present.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(counted > 0, np.where(present, areas, 0.0).sum(axis=1) / np.maximum(counted, 1),
                            math.nan)
    return areas.mean(axis=1)


def _weighted_pr_area(is_positive: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """`klue.metrics.re._pr_curve_area` x 100 for R weightings of the examples at once (R x n weights), as
    if each example were repeated by its weight (a weight-0 example absent).

    The curve runs from the end point (recall 0, precision 1) through one point per distinct score (ties
    grouped), by decreasing score; recall only grows at a threshold holding positives, so the trapezoid
    area is the sum over those thresholds j of tp_j / P * (precision_j + precision_before_j) / 2, where
    the precisions come from the cumulative weights up to j and up to the threshold before j (precision 1
    before any weighted example: the end point). With no positive weight at all, recall is 1 everywhere
    and the area 0.5 (the official quirk). Only examples scored at least as high as the lowest positive
    enter a cumulative, so the rest are never touched. Hand-written: sklearn has no vectorised form over
    weightings, and this is one gather and one cumulative sum per class."""
    n_rows = len(weights)
    if not is_positive.any():
        return np.full(n_rows, 50.0)
    order = np.argsort(-scores, kind="stable")
    sorted_scores, sorted_positive = scores[order], is_positive[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_scores)) + 1]
    ends = np.r_[starts[1:], len(sorted_scores)]
    group_of = np.repeat(np.arange(len(starts)), ends - starts)
    positives = np.flatnonzero(sorted_positive)
    positive_groups = group_of[positives]
    first_of_group = np.flatnonzero(np.r_[True, np.diff(positive_groups) != 0])
    groups = positive_groups[first_of_group]
    kept = weights[:, order[:ends[groups[-1]]]]
    cumulative = np.concatenate([np.zeros((n_rows, 1), dtype=kept.dtype), np.cumsum(kept, axis=1)], axis=1)
    totals, totals_before = cumulative[:, ends[groups]], cumulative[:, starts[groups]]
    totals, totals_before = totals.astype(np.float64), totals_before.astype(np.float64)
    tp = np.add.reduceat(kept[:, positives], first_of_group, axis=1).astype(np.float64)
    tps = np.cumsum(tp, axis=1)
    tps_before = tps - tp
    all_positive = tps[:, -1]
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(totals > 0, tps / np.where(totals > 0, totals, 1.0), 0.0)
        before = np.where(totals_before > 0, tps_before / np.where(totals_before > 0, totals_before, 1.0), 1.0)
        area = (tp * (precision + before)).sum(axis=1) / 2.0 / np.where(all_positive > 0, all_positive, 1.0)
    return 100.0 * np.where(all_positive > 0, area, 0.5)


# ------------------------------------------------------------------------------------- building blocks


def label_count_columns(prefix: str, labels: Sequence[str], example_of: np.ndarray, gold: np.ndarray,
                        pred: np.ndarray, n_examples: int, correct: np.ndarray | None = None) -> (
        tuple[list[str], np.ndarray]):
    """Columns `prefix.tp:L`, `prefix.pred:L`, `prefix.gold:L` of items (words, characters, pairs) with
    integer label codes `gold` and `pred` (index into `labels`; a negative code counts nowhere) that
    belong to examples `example_of`. An item is a tp of its gold label when `correct` (default: pred ==
    gold). Returns the column names and the n_examples x 3L counts."""
    k = len(labels)
    correct = gold == pred if correct is None else correct

    def counts(codes: np.ndarray, mask: np.ndarray) -> np.ndarray:
        keep = mask & (codes >= 0)
        flat = np.bincount(example_of[keep] * k + codes[keep], minlength=n_examples * k)
        return flat.reshape(n_examples, k)

    everything = np.ones(len(gold), dtype=bool)
    block = np.concatenate([counts(gold, correct), counts(pred, everything), counts(gold, everything)], axis=1)
    names = [f"{prefix}.{part}:{label}" for part in ("tp", "pred", "gold") for label in labels]
    return names, block.astype(np.float64)


def combine(parts: Sequence[tuple[Sequence[str], np.ndarray]], formulas: Sequence[Formula]) -> ExampleStatistics:
    """One `ExampleStatistics` from blocks of named columns (same rows) and the formulas."""
    columns = [c for names, _ in parts for c in names]
    n = parts[0][1].shape[0] if parts else 0
    matrix = np.concatenate([np.asarray(block, dtype=np.float64).reshape(n, -1) for _, block in parts], axis=1)
    return ExampleStatistics(tuple(columns), matrix, tuple(formulas))


def column(name: str, values: Sequence[float] | np.ndarray) -> tuple[list[str], np.ndarray]:
    """One named column as a block for `combine`."""
    return [name], np.asarray(values, dtype=np.float64).reshape(-1, 1)


def label_codes(values: Sequence[object], labels: Sequence[str]) -> np.ndarray:
    """Index of each value in `labels` (all of them must be there)."""
    index = {label: i for i, label in enumerate(labels)}
    return np.fromiter((index[str(v)] for v in values), dtype=np.int64, count=len(values))


def ordered_labels(known: Sequence[str], *seen: Iterable[object]) -> list[str]:
    """`known` then any other value seen, as strings, in order of appearance."""
    out = dict.fromkeys(str(x) for x in known)
    for values in seen:
        out.update(dict.fromkeys(str(v) for v in values))
    return list(out)


def single_label_statistics(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str],
                            metrics: Sequence[str]) -> ExampleStatistics:
    """Statistics of a single-label classification (`accuracy`, `macro_f1` over present labels): one
    item per example."""
    names = ordered_labels(labels, gold, pred)
    gold_codes, pred_codes = label_codes(gold, names), label_codes(pred, names)
    n = len(gold_codes)
    f1_block = label_count_columns("f1", names, np.arange(n), gold_codes, pred_codes, n)
    formulas = {"accuracy": Formula("accuracy", "ratio", {"num": "correct", "den": "n"}),
                "macro_f1": Formula("macro_f1", "macro_f1", {"prefix": "f1"})}
    return combine([column("correct", gold_codes == pred_codes), column("n", np.ones(n)), f1_block],
                   [formulas[m] for m in metrics])
