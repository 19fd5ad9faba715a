"""Paired comparison of two runs (or two models of benchmark directories, seeds combined) on the same
evaluation set: per metric A, B, the difference with its bootstrap interval, p-values and a verdict.

Where the numbers come from: the per-example statistics the judge stored in each run directory
(`statistics.npz`, klue.results.read_statistics), never the gold data, so comparing needs only the two
directories. The statistics of a run scored before they were kept are missing; the error says so.
The resampling and both tests are klue.metrics.resampling (docs/statistics.md).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from klue.errors import DataError
from klue.io.threads import single_threaded_numerics
from klue.metrics.resampling import DEFAULT_RESAMPLES, DEFAULT_SEED, LEVEL, Difference, Side, Units, compare
from klue.results import RESULTS_FILE, STATISTICS_FILE, Results, RunStatistics, read_results, read_statistics

MODEL_SEPARATOR = "::"  # BENCHDIR::MODEL names a model's runs in a benchmark directory
ALPHA = 0.05


@dataclass(frozen=True)
class Run:
    """One scored run: its results file, results and per-example statistics."""

    path: Path
    results: Results
    statistics: RunStatistics


@dataclass
class RunGroup:
    """The runs (seeds) of one side for one task, on one evaluation set and metric mode."""

    task: str
    runs: list[Run] = field(default_factory=list)

    @property
    def mode(self) -> str:
        return self.runs[0].results.metric_mode

    @property
    def seeds(self) -> list[int]:
        return [r.results.seed for r in self.runs]


def read_run(results_path: Path) -> Run:
    """A run from its results.json, with its statistics; DataError when it failed or has none."""
    results = read_results(results_path)
    if results.status != "ok":
        raise DataError(f"the run failed ({results.error}); there is nothing to compare", results_path)
    stats_path = results_path.parent / (results.statistics_file or STATISTICS_FILE)
    if not stats_path.is_file():
        raise DataError(f"the run has no per-example statistics ({STATISTICS_FILE}): it was scored before klue "
                        "kept them; run it again (a benchmark reruns a cell whose directory is removed)",
                        results_path)
    statistics = read_statistics(stats_path)
    if statistics.task != results.task or statistics.metric_mode != results.metric_mode:
        raise DataError(f"{STATISTICS_FILE} is of {statistics.task} ({statistics.metric_mode} metrics), the results "
                        f"of {results.task} ({results.metric_mode})", stats_path)
    return Run(results_path, results, statistics)


def resolve(spec: str) -> dict[str, RunGroup]:
    """`RUN_DIR` (or its results.json), or `BENCHDIR::MODEL`: task -> the runs to compare. In a benchmark
    directory a model's row per task is the leaderboard's choice (the official protocol when present,
    else the one with most seeds) and its seeds are combined."""
    path_text, sep, model = spec.partition(MODEL_SEPARATOR)
    path = Path(path_text)
    if not sep:
        results_path = path if path.is_file() else path / RESULTS_FILE
        if results_path.is_file():
            run = read_run(results_path)
            return {run.results.task: RunGroup(run.results.task, [run])}
        if path.is_dir() and any(path.rglob(RESULTS_FILE)):
            models = sorted({read_results(p).model for p in path.rglob(RESULTS_FILE)})
            raise DataError(f"{path} is a benchmark directory: name a model as {path}{MODEL_SEPARATOR}MODEL "
                            f"(models: {', '.join(models)})")
        raise DataError(f"{path} holds no {RESULTS_FILE} (a run directory or BENCHDIR{MODEL_SEPARATOR}MODEL)")
    if not path.is_dir():
        raise DataError(f"{path} is not a benchmark directory")
    rows: dict[tuple[str, str, str], list[Path]] = defaultdict(list)
    seen_models: set[str] = set()
    for results_path in sorted(path.rglob(RESULTS_FILE)):
        results = read_results(results_path)
        seen_models.add(results.model)
        if results.model == model and results.status == "ok":
            key = (results.task, results.protocol, results.metric_mode)
            rows[key].append(results_path)
    if not rows:
        raise DataError(f"no successful run of model {model!r} in {path} (models: {', '.join(sorted(seen_models))})")
    by_task: dict[str, list[tuple[str, str, list[Path]]]] = defaultdict(list)
    for (task, protocol, mode), paths in rows.items():
        by_task[task].append((protocol, mode, paths))
    out: dict[str, RunGroup] = {}
    for task, candidates in by_task.items():
        protocol, mode, paths = min(candidates, key=lambda c: (c[0] != "official", -len(c[2]), c[0], c[1]))
        runs = sorted((read_run(p) for p in paths), key=lambda r: r.results.seed)
        out[task] = RunGroup(task, runs)
    return out


def _eval_hashes(results: Results) -> set[str]:
    return {s.sha256 for s in results.data_sources if s.used_as.startswith("eval") and s.sha256}


def _aligned(group: RunGroup, guids: tuple[str, ...], units: Units, what: str) -> list[Any]:
    """The group's statistics in the order of `guids`; DataError when it is another evaluation set."""
    out = []
    for run in group.runs:
        stats = run.statistics
        if stats.guids != guids:
            if sorted(stats.guids) != sorted(guids):
                mine, theirs = set(stats.guids), set(guids)
                raise DataError(f"{group.task}: {what} and the first run are on different evaluation sets "
                                f"({len(mine - theirs)} examples only in one, {len(theirs - mine)} only in the "
                                f"other; {len(stats.guids)} vs {len(guids)} examples): refusing to compare")
            order = {g: i for i, g in enumerate(stats.guids)}
            permutation = np.fromiter((order[g] for g in guids), dtype=np.int64, count=len(guids))
            matrix, unit_index = stats.statistics.matrix[permutation], stats.units[permutation]
            stats = RunStatistics(stats.task, stats.task_version, stats.metric_mode, guids, unit_index,
                                  type(stats.statistics)(stats.statistics.columns, matrix, stats.statistics.formulas))
        if not Units.of(stats.units.tolist()).same_partition(units):
            raise DataError(f"{group.task}: {what} groups the examples differently (another evaluation set or "
                            "task version): refusing to compare")
        out.append(stats.statistics)
    return out


@dataclass(frozen=True)
class TaskComparison:
    task: str
    mode: str
    n_examples: int
    n_units: int
    a_seeds: list[int]
    b_seeds: list[int]
    differences: list[Difference]


def compare_groups(a: RunGroup, b: RunGroup, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                   level: float = LEVEL) -> TaskComparison:
    """A's runs against B's on one task; DataError (refusal) on different metric modes or evaluation sets."""
    modes = {r.results.metric_mode for r in a.runs + b.runs}
    if len(modes) > 1:
        raise DataError(f"{a.task}: the runs use different metric modes (A {a.mode}, B {b.mode}): refusing to "
                        "compare")
    hashes = [_eval_hashes(r.results) for r in a.runs + b.runs]
    known = [h for h in hashes if h]
    if known and any(h != known[0] for h in known):
        raise DataError(f"{a.task}: the runs were scored on evaluation files with different contents (sha256 "
                        "of data_sources): refusing to compare")
    versions: dict[str, set[str]] = defaultdict(set)
    for run in a.runs + b.runs:
        for name, version in run.results.metric_versions.items():
            versions[name].add(version)
    changed = sorted(name for name, found in versions.items() if len(found) > 1)
    if changed:
        raise DataError(f"{a.task}: the runs were scored with different definitions of {', '.join(changed)} "
                        "(metric_versions): refusing to compare; score them again with one klue")
    first = a.runs[0].statistics
    units = Units.of(first.units.tolist())
    side_a = Side(_aligned(a, first.guids, units, "a run of A"), units)
    side_b = Side(_aligned(b, first.guids, units, "a run of B"), units)
    with single_threaded_numerics():  # the same p-values for any thread count (klue.io.threads)
        differences = compare(side_a, side_b, n_resamples, seed, level)
    return TaskComparison(a.task, a.mode, len(first.guids), units.n_units, a.seeds, b.seeds, differences)


def compare_specs(spec_a: str, spec_b: str, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                  level: float = LEVEL) -> list[TaskComparison]:
    """Every task both sides have, in the registry's order."""
    from klue import registry

    sides_a, sides_b = resolve(spec_a), resolve(spec_b)
    common = [t.name for t in registry.all_tasks() if t.name in sides_a and t.name in sides_b]
    if not common:
        raise DataError(f"A ({', '.join(sorted(sides_a))}) and B ({', '.join(sorted(sides_b))}) share no task")
    return [compare_groups(sides_a[t], sides_b[t], n_resamples, seed, level) for t in common]


def metric_info(task: str, metric: str) -> tuple[str, bool]:
    """The metric's label and whether higher is better (its spec)."""
    from klue import registry

    spec = registry.get(task).metric_spec(metric)
    return spec.label, spec.higher_is_better


def format_p(p: float) -> str:
    if math.isnan(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def verdict(task: str, difference: Difference, alpha: float = ALPHA) -> str:
    """`A is better on entity macro F1 (p=0.003)` or `no significant difference (p=0.41)`."""
    label, higher_is_better = metric_info(task, difference.metric)
    p = difference.p_value
    if math.isnan(p) or math.isnan(difference.difference):
        return f"not comparable on {label} (undefined)"
    shown = "p<0.001" if p < 0.001 else f"p={p:.3f}"
    if p >= alpha or difference.difference == 0:
        return f"no significant difference on {label} ({shown})"
    winner = "A" if (difference.difference > 0) == higher_is_better else "B"
    return f"{winner} is better on {label} ({shown})"


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def to_json(spec_a: str, spec_b: str, comparisons: list[TaskComparison], n_resamples: int, seed: int,
            level: float, alpha: float) -> dict[str, Any]:
    """The machine-readable comparison (`klue compare --json`; docs/statistics.md)."""
    tasks = []
    for c in comparisons:
        metrics = []
        for d in c.differences:
            label, higher = metric_info(c.task, d.metric)
            metrics.append({
                "metric": d.metric, "label": label, "higher_is_better": higher,
                "a": {"value": _number(d.a.value), "interval": [_number(d.a.low), _number(d.a.high)]},
                "b": {"value": _number(d.b.value), "interval": [_number(d.b.low), _number(d.b.high)]},
                "difference": _number(d.difference), "interval": [_number(d.low), _number(d.high)],
                "p_value": _number(d.p_value), "p_bootstrap": _number(d.p_bootstrap),
                "p_randomization": _number(d.p_randomization), "significant": bool(d.p_value < alpha),
                "verdict": verdict(c.task, d, alpha),
            })
        tasks.append({"task": c.task, "metric_mode": c.mode, "n_examples": c.n_examples, "n_units": c.n_units,
                      "a_seeds": c.a_seeds, "b_seeds": c.b_seeds, "metrics": metrics})
    return {"a": spec_a, "b": spec_b, "resamples": n_resamples, "seed": seed, "level": level, "alpha": alpha,
            "p_value": "approximate randomisation (two-sided); p_bootstrap: paired bootstrap",
            "interval": "percentile bootstrap", "tasks": tasks}
