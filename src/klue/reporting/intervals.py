"""Bootstrap intervals for the report: every row's metrics and task score, every model's KLUE score, and
paired tests between neighbouring rows (docs/statistics.md).

Per task, the rows evaluated on the same examples (same guids: one evaluation set) are resampled
together: one draw of bootstrap counts per task and evaluation set, shared by every row on it, so two rows
on the same set are compared pairwise (the difference under each resample). Seeds are combined as in
`klue compare` (under each resample, the mean over the row's seeds). A model's KLUE score under resample r
is the mean over tasks of its task scores under resample r (tasks are resampled independently, so this
is a bootstrap of the mean). Runs without stored statistics (scored before klue kept them) leave their
row without an interval; the report says so.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from klue.io.threads import single_threaded_numerics
from klue.metrics.resampling import LEVEL, Estimate, Side, Units, bootstrap, interval
from klue.reporting.aggregate import Aggregate, Entry, Row, TaskInfo
from klue.results import STATISTICS_FILE, RunStatistics, read_statistics

REPORT_RESAMPLES = 500  # enough for a 95% percentile interval to two digits; `klue compare` for tests
ALPHA = 0.05


@dataclass
class RowInterval:
    """One row's resampled values: per metric (seed means) and its task score."""

    eval_set: int  # rows with the same number share their resamples (one evaluation set of one task)
    values: dict[str, np.ndarray]
    task_score: np.ndarray | None
    estimates: dict[str, Estimate]
    task_estimate: Estimate | None


@dataclass(frozen=True)
class Test:
    """A paired bootstrap test of `first` against the next row: difference, its interval, p."""

    difference: float
    low: float
    high: float
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA

    def text(self) -> str:
        p = "p<0.001" if self.p_value < 0.001 else f"p={self.p_value:.3f}"
        return f"{self.difference:+.2f} ({p}){' *' if self.significant else ''}"


@dataclass
class Intervals:
    """Everything the leaderboard and the task sections show about uncertainty."""

    n_resamples: int
    seed: int
    rows: dict[int, RowInterval] = field(default_factory=dict)  # id(row) -> its intervals
    without_statistics: list[Path] = field(default_factory=list)  # runs whose row has no interval
    klue_scores: dict[tuple[str, str], Estimate] = field(default_factory=dict)  # (model, mode) -> score
    entry_tests: dict[tuple[str, str], Test] = field(default_factory=dict)  # entry vs the next ranked one
    row_tests: dict[int, Test] = field(default_factory=dict)  # id(row) -> vs the next row of its task table

    def of(self, row: Row) -> RowInterval | None:
        return self.rows.get(id(row))


def row_statistics(row: Row) -> list[RunStatistics] | None:
    """The per-example statistics of each of the row's runs, or None where a run has none (scored before klue
    kept them)."""
    out = []
    for path, results in row.runs:
        stats_path = path.parent / (results.statistics_file or STATISTICS_FILE)
        if not stats_path.is_file():
            return None
        out.append(read_statistics(stats_path))
    return out


def _task_score(values: dict[str, np.ndarray], counted: tuple[str, ...]) -> np.ndarray | None:
    """The resampled task score: the mean of the row's counted main metrics (`Row.counted_metrics`)."""
    if not counted or not all(m in values for m in counted):
        return None
    return np.mean([values[m] for m in counted], axis=0)


def paired_test(a: np.ndarray, b: np.ndarray, observed: float) -> Test:
    """The paired bootstrap test of A - B from both sides' values under the same resamples (`observed`: the
    difference on the whole set); the leaderboard service uses it too (its groups and its ladder)."""
    resampled = a - b
    finite = resampled[np.isfinite(resampled)]
    low, high = interval(resampled)
    if not math.isfinite(observed) or len(finite) == 0:
        return Test(observed, low, high, math.nan)
    p = (1 + int(np.sum(np.abs(finite - observed) >= abs(observed) - 1e-9))) / (len(finite) + 1)
    return Test(observed, low, high, p)


def compute_intervals(agg: Aggregate, n_resamples: int = REPORT_RESAMPLES, seed: int = 0) -> Intervals:
    """Intervals and neighbour tests of every row and leaderboard entry of `agg`."""
    out = Intervals(n_resamples, seed)
    if n_resamples < 1:
        return out
    eval_sets: dict[tuple[str, tuple[str, ...]], int] = {}
    for task, info in agg.tasks.items():
        groups: dict[int, list[tuple[Row, list[RunStatistics]]]] = {}
        for row in agg.rows_for(task):
            loaded = row_statistics(row)
            if loaded is None or any(s.guids != loaded[0].guids for s in loaded):
                out.without_statistics += [p for p, _ in row.runs]
                continue
            key = eval_sets.setdefault((task, loaded[0].guids), len(eval_sets))
            groups.setdefault(key, []).append((row, loaded))
        for key, members in groups.items():
            units = Units.of(members[0][1][0].units.tolist())
            sides = [Side([s.statistics for s in loaded], units) for _, loaded in members]
            with single_threaded_numerics():  # the same intervals for any thread count (klue.io.threads)
                resampled = bootstrap(sides, n_resamples, seed)
            for (row, _), side, values in zip(members, sides, resampled):
                totals = side.totals()
                task_values = _task_score(values, row.counted_metrics(info.main_metrics))
                task_stat = row.task_score(info.main_metrics)
                out.rows[id(row)] = RowInterval(
                    key, values, task_values,
                    {m: Estimate(totals[m], *interval(v, LEVEL)) for m, v in values.items()},
                    None if task_values is None or task_stat is None else Estimate(task_stat.mean,
                                                                                  *interval(task_values)))
        _row_tests(agg, task, out)
    _entry_intervals(agg, out)
    return out


def _row_tests(agg: Aggregate, task: str, out: Intervals) -> None:
    """Each row against the next one of its task table (task score order) on the same evaluation set, when
    both task scores count the same metrics (a row with a main metric not applicable scores another mean)."""
    info = agg.tasks[task]
    scored = [(r, score.mean, resampled) for r in agg.rows_for(task) if out.of(r) is not None
              and (resampled := out.rows[id(r)].task_score) is not None
              and (score := r.task_score(info.main_metrics)) is not None]
    scored.sort(key=lambda row: -row[1])
    for (first, first_mean, a), (second, second_mean, b) in itertools.pairwise(scored):
        if out.rows[id(first)].eval_set != out.rows[id(second)].eval_set or (
                first.counted_metrics(info.main_metrics) != second.counted_metrics(info.main_metrics)):
            continue
        out.row_tests[id(first)] = paired_test(a, b, first_mean - second_mean)


def _entry_resamples(entry: Entry, out: Intervals,
                     tasks: dict[str, TaskInfo]) -> tuple[np.ndarray, dict[str, tuple[int, tuple[str, ...]]]] | None:
    """The entry's KLUE (or partial) score under each resample, and per task the evaluation set and the
    metrics its task score counts (two entries are tested only where both agree)."""
    per_task, sets = [], {}
    for task in entry.task_scores:
        row_interval = out.of(entry.rows[task])
        if row_interval is None or row_interval.task_score is None:
            return None
        per_task.append(row_interval.task_score)
        sets[task] = (row_interval.eval_set, entry.rows[task].counted_metrics(tasks[task].main_metrics))
    if not per_task:
        return None
    return np.mean(per_task, axis=0), sets


def _entry_intervals(agg: Aggregate, out: Intervals) -> None:
    resampled = {(e.model, e.metric_mode): _entry_resamples(e, out, agg.tasks) for e in agg.entries}
    for entry in agg.entries:
        found = resampled[(entry.model, entry.metric_mode)]
        score = entry.klue_score if entry.klue_score is not None else entry.partial_score
        if found is not None and score is not None:
            out.klue_scores[(entry.model, entry.metric_mode)] = Estimate(score, *interval(found[0]))
    # Neighbours in the leaderboard's order: complete models, then partial ones; a pair is tested when both
    # are scored on the same tasks' same evaluation sets (so their scores are means over the same tasks).
    for first, second in itertools.pairwise(agg.entries):
        a, b = resampled[(first.model, first.metric_mode)], resampled[(second.model, second.metric_mode)]
        if a is None or b is None or a[1] != b[1] or (first.klue_score is None) != (second.klue_score is None):
            continue
        observed = _entry_score(first) - _entry_score(second)
        out.entry_tests[(first.model, first.metric_mode)] = paired_test(a[0], b[0], observed)


def _entry_score(entry: Entry) -> float:
    score = entry.klue_score if entry.klue_score is not None else entry.partial_score
    assert score is not None
    return score


def interval_text(estimate: Estimate | None, digits: int = 2) -> str:
    """`[82.51, 83.90]`, or "" without an interval."""
    if estimate is None or not (math.isfinite(estimate.low) and math.isfinite(estimate.high)):
        return ""
    return f"[{estimate.low:.{digits}f}, {estimate.high:.{digits}f}]"
