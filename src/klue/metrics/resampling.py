"""Bootstrap confidence intervals and paired significance tests over per-example statistics.

Definitions (docs/statistics.md says the same for users):

- **Units.** Examples are resampled in the units that belong together (a task's `group_key`: a premise's
  pairs, a context's questions, a dialogue's turns; one example where a task declares no group).
- **Bootstrap.** Each resample draws `n_units` units with replacement (`Generator.integers`); a unit drawn k
  times weighs k. Every metric of every resample comes from the column sums `counts @ unit_matrix`, one
  matrix product for all resamples of a block (AUPRC from the weights themselves).
- **Interval.** The percentile interval: the 2.5th and 97.5th percentiles of the resampled values.
- **Seeds combined.** A side with several runs (seeds) on the same set: under each resample the metric
  is the mean over its runs, every run weighted by the same counts.
- **Paired bootstrap.** Both sides under the same counts; the difference A - B per resample gives the
  interval of the difference, and the two-sided p-value `(1 + #{|d* - d| >= |d|}) / (R + 1)` (the resampled
  differences centred on the observed one stand for the null distribution).
- **Approximate randomisation.** Each unit's statistics are swapped between A and B with probability 1/2
  (the runs of the two sides are paired in seed order, cycling the shorter side);
  p = `(1 + #{|d_r| >= |d|}) / (R + 1)`.
- Both tests give p = 1 for a run compared with itself. Differences within 1e-9 of 0 count as 0 (sums
  of the same numbers in another order).

Random streams: one `numpy.random.SeedSequence(seed)` spawns the bootstrap's and the randomisation's
generators, so a result is reproduced from its recorded seed; `bootstrap_indices` and `swap_masks` are the
streams themselves (tests recompute the official metrics on them).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from klue.metrics.statistics import ExampleStatistics

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
LEVEL = 0.95
TOLERANCE = 1e-9  # |difference| below this is no difference (floating-point sums in another order)
_BLOCK_ELEMENTS = 4_000_000  # resamples are drawn in blocks of about this many unit draws (memory)


@dataclass(frozen=True)
class Units:
    """The resampling unit of each example: `index[i]` is example i's unit, units numbered 0..n_units-1 in
    order of first appearance."""

    index: np.ndarray
    n_units: int

    @classmethod
    def of(cls, keys: Sequence[Hashable]) -> Units:
        numbers: dict[Hashable, int] = {}
        index = np.fromiter((numbers.setdefault(k, len(numbers)) for k in keys), dtype=np.int64, count=len(keys))
        return cls(index, len(numbers))

    @classmethod
    def single(cls, n: int) -> Units:
        return cls(np.arange(n, dtype=np.int64), n)

    @property
    def n_examples(self) -> int:
        return len(self.index)

    def same_partition(self, other: Units) -> bool:
        """Whether both group the same examples together (numbering aside)."""
        if len(self.index) != len(other.index) or self.n_units != other.n_units:
            return False
        pairs = np.unique(np.stack([self.index, other.index]), axis=1)
        return pairs.shape[1] == self.n_units


def streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """The bootstrap's and the approximate randomisation's generators for `seed`."""
    boot, swap = np.random.SeedSequence(seed).spawn(2)
    return np.random.default_rng(boot), np.random.default_rng(swap)


def _block_rows(n_units: int) -> int:
    return max(1, _BLOCK_ELEMENTS // max(n_units, 1))


def bootstrap_indices(rng: np.random.Generator, n_units: int, n_resamples: int) -> Iterator[np.ndarray]:
    """Blocks of resamples: each row the `n_units` unit indices drawn with replacement."""
    block = _block_rows(n_units)
    for start in range(0, n_resamples, block):
        yield rng.integers(0, n_units, size=(min(block, n_resamples - start), n_units))


def swap_masks(rng: np.random.Generator, n_units: int, n_resamples: int) -> Iterator[np.ndarray]:
    """Blocks of approximate-randomisation draws: each row one 0/1 per unit, 1 = swap A and B."""
    block = _block_rows(n_units)
    for start in range(0, n_resamples, block):
        yield rng.integers(0, 2, size=(min(block, n_resamples - start), n_units))


def counts_of(indices: np.ndarray, n_units: int) -> np.ndarray:
    """Rows of unit indices -> rows of how often each unit was drawn (float32: whole numbers, exact)."""
    rows = len(indices)
    flat = indices + (np.arange(rows, dtype=np.int64) * n_units)[:, None]
    return np.bincount(flat.ravel(), minlength=rows * n_units).reshape(rows, n_units).astype(np.float32)


def _compact(unit_matrix: np.ndarray) -> np.ndarray:
    """float32 when every entry is a whole number and no sum under weights that add up to at most the
    number of units (bootstrap counts, 0/1 swaps) can pass 2**24: float32 then holds every product and
    sum exactly, and counts, the bulk of the statistics, multiply twice as fast."""
    bound = float(np.abs(unit_matrix).max(initial=0.0)) * max(len(unit_matrix), 1)
    if bound < 2**24 and np.array_equal(unit_matrix, np.round(unit_matrix)):
        return unit_matrix.astype(np.float32)
    return unit_matrix


def _product(weights: np.ndarray, unit_matrix: np.ndarray) -> np.ndarray:
    """weights @ unit_matrix as float64 (exact where both are float32 whole numbers: see `_compact`)."""
    return (weights.astype(unit_matrix.dtype, copy=False) @ unit_matrix).astype(np.float64, copy=False)


class Side:
    """One side of a comparison: the runs (seeds) of one model on one evaluation set, with their
    statistics summed per unit once, so each resample costs one product per run."""

    def __init__(self, runs: Sequence[ExampleStatistics], units: Units) -> None:
        if not runs:
            raise ValueError("a side needs at least one run")
        for run in runs:
            if run.n_examples != units.n_examples:
                raise ValueError(f"{run.n_examples} examples of statistics for {units.n_examples} units' examples")
        self.units = units
        common = [f.metric for f in runs[0].formulas if all(f.metric in r.metrics for r in runs)]
        self.runs = [run.only(common) for run in runs]
        self.unit_matrices = [_compact(unit_sums(run.summed_matrix(), units)) for run in self.runs]
        self.metrics = common

    def values(self, unit_weights: np.ndarray) -> dict[str, np.ndarray]:
        """Each metric (mean over the runs) under each row of unit weights (R x n_units)."""
        total: dict[str, np.ndarray] = {}
        for run, unit_matrix in zip(self.runs, self.unit_matrices):
            weights = unit_weights[:, self.units.index] if run.needs_weights else None
            values = run.values_from(_product(unit_weights, unit_matrix), weights)
            for name, v in values.items():
                total[name] = total[name] + v if name in total else v
        return {name: v / len(self.runs) for name, v in total.items()}

    def totals(self) -> dict[str, float]:
        return {k: float(v[0]) for k, v in self.values(np.ones((1, self.units.n_units))).items()}

    def swapped(self, other: Side, masks: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Both sides' metrics when the units of each row of `masks` (1 = swap) trade statistics. Run i of
        one side is paired with run i of the other, the shorter side cycled; each side's value is the mean
        over the pairs (with no swap at all: the seed means, when the sides have equally many runs)."""
        n_pairs = max(len(self.runs), len(other.runs))
        metrics = [m for m in self.metrics if m in other.metrics]
        keep = 1.0 - masks
        a_total: dict[str, np.ndarray] = {}
        b_total: dict[str, np.ndarray] = {}
        for i in range(n_pairs):
            a_run, b_run = self.runs[i % len(self.runs)], other.runs[i % len(other.runs)]
            a_units, b_units = self.unit_matrices[i % len(self.runs)], other.unit_matrices[i % len(other.runs)]
            if a_run.columns != b_run.columns or metrics != self.metrics or metrics != other.metrics:
                # label columns only one of them has (zeros in the other), or fewer metrics in common
                columns = union_columns([a_run, b_run])
                a_run, b_run = a_run.with_columns(columns).only(metrics), b_run.with_columns(columns).only(metrics)
                a_units = unit_sums(a_run.summed_matrix(), self.units)
                b_units = unit_sums(b_run.summed_matrix(), other.units)
            stacked = ExampleStatistics(a_run.columns, np.vstack([a_run.matrix, b_run.matrix]), a_run.formulas)
            for (from_a, from_b), total in (((keep, masks), a_total), ((masks, keep), b_total)):
                sums = _product(from_a, a_units) + _product(from_b, b_units)
                weights = None
                if stacked.needs_weights:
                    weights = np.hstack([from_a[:, self.units.index], from_b[:, other.units.index]])
                for name, v in stacked.values_from(sums, weights).items():
                    total[name] = total[name] + v if name in total else v
        return ({k: v / n_pairs for k, v in a_total.items()}, {k: v / n_pairs for k, v in b_total.items()})


def union_columns(runs: Sequence[ExampleStatistics]) -> tuple[str, ...]:
    """Every column of `runs`, in first-seen order."""
    out: dict[str, None] = {}
    for run in runs:
        out.update(dict.fromkeys(run.columns))
    return tuple(out)


def unit_sums(matrix: np.ndarray, units: Units) -> np.ndarray:
    """The rows of `matrix` summed per unit (n_units x columns)."""
    if units.n_units == len(units.index) and np.array_equal(units.index, np.arange(units.n_units)):
        return matrix
    out = np.zeros((units.n_units, matrix.shape[1]))
    np.add.at(out, units.index, matrix)
    return out


def interval(values: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval of resampled values (NaN resamples, a metric undefined there, left out)."""
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return (float("nan"), float("nan"))
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return (float(low), float(high))


@dataclass(frozen=True)
class Estimate:
    """A metric of one side on the whole set, and its bootstrap interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class Difference:
    """A - B for one metric: the values, the difference, its interval, the two p-values."""

    metric: str
    a: Estimate
    b: Estimate
    difference: float
    low: float
    high: float
    p_bootstrap: float
    p_randomization: float

    @property
    def p_value(self) -> float:
        """The p-value the verdict uses: approximate randomisation's (it needs no assumption about the
        shape of the difference's distribution)."""
        return self.p_randomization


def bootstrap(sides: Sequence[Side], n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> (
        list[dict[str, np.ndarray]]):
    """Every side's metrics under the same `n_resamples` bootstrap resamples (paired when several):
    per side, metric -> R values."""
    units = sides[0].units
    rng, _ = streams(seed)
    blocks: list[list[dict[str, np.ndarray]]] = [[] for _ in sides]
    for indices in bootstrap_indices(rng, units.n_units, n_resamples):
        counts = counts_of(indices, units.n_units)
        for out, side in zip(blocks, sides):
            out.append(side.values(counts))
    return [{name: np.concatenate([b[name] for b in side_blocks]) for name in side_blocks[0]}
            if side_blocks else {} for side_blocks in blocks]


def estimates(side: Side, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
              level: float = LEVEL) -> dict[str, Estimate]:
    """Each metric of one side on the whole set with its bootstrap interval."""
    totals = side.totals()
    resampled = bootstrap([side], n_resamples, seed)[0]
    return {name: Estimate(totals[name], *interval(resampled[name], level)) for name in side.metrics}


def compare(a: Side, b: Side, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
            level: float = LEVEL) -> list[Difference]:
    """A against B on the same units, metric by metric (those both have): values with their intervals,
    the difference with its paired-bootstrap interval, and both tests' p-values."""
    if not a.units.same_partition(b.units):
        raise ValueError("the two sides are not on the same evaluation units")
    metrics = [m for m in a.metrics if m in b.metrics]
    a_totals, b_totals = a.totals(), b.totals()
    a_boot, b_boot = bootstrap([a, b], n_resamples, seed)
    _, swap_rng = streams(seed)
    a_swaps: list[dict[str, np.ndarray]] = []
    b_swaps: list[dict[str, np.ndarray]] = []
    for masks in swap_masks(swap_rng, a.units.n_units, n_resamples):
        a_values, b_values = a.swapped(b, masks.astype(np.float32))
        a_swaps.append(a_values)
        b_swaps.append(b_values)
    a_plain, b_plain = a.swapped(b, np.zeros((1, a.units.n_units)))  # the randomisation's observed statistic
    out = []
    for name in metrics:
        observed = _clean(a_totals[name] - b_totals[name])
        resampled = a_boot[name] - b_boot[name]
        swapped = np.concatenate([x[name] for x in a_swaps]) - np.concatenate([x[name] for x in b_swaps])
        paired_observed = _clean(float(a_plain[name][0] - b_plain[name][0]))
        out.append(Difference(
            name, Estimate(a_totals[name], *interval(a_boot[name], level)),
            Estimate(b_totals[name], *interval(b_boot[name], level)), observed, *interval(resampled, level),
            _p_value(np.abs(resampled - observed), observed), _p_value(np.abs(swapped), paired_observed)))
    return out


def _clean(value: float) -> float:
    return 0.0 if abs(value) < TOLERANCE else value


def _p_value(null_magnitudes: np.ndarray, observed: float) -> float:
    """(1 + #{null >= |observed|}) / (R + 1), over the finite draws; NaN when the observed value is."""
    finite = null_magnitudes[np.isfinite(null_magnitudes)]
    if not np.isfinite(observed) or len(finite) == 0:
        return float("nan")
    extreme = int(np.sum(finite >= abs(observed) - TOLERANCE))
    return (1 + extreme) / (len(finite) + 1)
