"""Run directories with per-example statistics, built without a model or gold files: single-label
predictions of a chosen accuracy on a synthetic evaluation set, scored into results.json and
statistics.npz as the judge writes them (for `klue compare` and the report's intervals)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from klue import registry
from klue.metrics.resampling import Units
from klue.metrics.statistics import single_label_statistics
from klue.results import STATISTICS_FILE, Results, RunStatistics, write_results, write_statistics

TASK = "nli"  # a single-label task: its statistics come from labels alone


def write_run(run_dir: Path, model: str, seed: int, accuracy: float, n: int = 300, group: int = 3,
              mode: str = "official", guid_prefix: str = "ex", data_seed: int = 0) -> Results:
    """`n` examples in groups of `group` (units), gold labels fixed by `data_seed`; predictions right with
    probability `accuracy` (drawn with `seed` and the model name)."""
    task = registry.get(TASK)
    labels = list(task.labels)
    data_rng = np.random.default_rng(data_seed)
    gold = [labels[i] for i in data_rng.integers(0, len(labels), n)]
    rng = np.random.default_rng([seed, sum(map(ord, model))])
    pred = [g if rng.random() < accuracy else labels[int(rng.integers(0, len(labels)))] for g in gold]
    stats = single_label_statistics(gold, pred, labels, [s.name for s in task.metric_specs.values()])
    guids = tuple(f"{guid_prefix}-{i}" for i in range(n))
    units = Units.of([i // group for i in range(n)]).index
    write_statistics(run_dir / STATISTICS_FILE, RunStatistics(task.name, task.version, mode, guids, units, stats))
    results = Results(task=task.name, task_version=task.version, model=model, model_family="fake", seed=seed,
                      protocol="official", protocol_official=True, protocol_description="synthetic",
                      metric_mode=mode, scores=stats.totals(), n_eval=n, statistics_file=STATISTICS_FILE,
                      metric_versions={name: "1" for name in stats.metrics})
    write_results(run_dir / "results.json", results)
    return results
