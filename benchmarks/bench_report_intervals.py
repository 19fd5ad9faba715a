"""Time of `klue report` with bootstrap intervals on a full-size benchmark: every task x 3 models x 3 seeds.

Builds a benchmark directory without training anything: for each task, the evaluation set of its
default local protocol (real data), and for each "model" and seed predictions that are the gold ones with
a share of them (10%, 20%, 30% by model, different examples per seed) replaced by the gold prediction of
another example of the same shape; each run is judged (results.json + statistics.npz) as a real cell is.
Then times building the Markdown leaderboard and the HTML report (intervals + neighbour tests, the
default resamples, and with intervals off), best of --repeat, interleaved.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_report_intervals.py [--out DIR] [--repeat 3]

Data: KLUE_DATA_DIR and KLUE_EXTRA_DATA_DIR (the default local protocols' files).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from klue import protocols, registry
from klue.io.locate import DataRoots
from klue.predictions import write_predictions
from klue.reporting.aggregate import load_aggregate
from klue.reporting.html import write_report
from klue.reporting.intervals import REPORT_RESAMPLES
from klue.reporting.leaderboard import build_leaderboard, to_markdown
from klue.results import PREDICTIONS_FILE
from klue.scoring import ProducerReport, judge
from klue.tasks.base import Task

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
MODELS = {"model-a": 0.1, "model-b": 0.2, "model-c": 0.3}
SEEDS = (1, 2, 3)


def _shape(task: Task[Any, Any], prediction: Any) -> tuple[Any, ...]:
    obj = task.prediction_to_json(prediction)
    return tuple((k, len(v)) for k, v in obj.items() if isinstance(v, list) and k != "probs")


def corrupted(task: Task[Any, Any], records: list[Any], rate: float, seed: int) -> list[Any]:
    golds = [task.gold_prediction(r) for r in records]
    by_shape: dict[tuple[Any, ...], list[int]] = {}
    for i, p in enumerate(golds):
        by_shape.setdefault(_shape(task, p), []).append(i)
    rng = random.Random(seed)
    out = []
    for record, gold in zip(records, golds):
        donors = by_shape[_shape(task, gold)]
        if rng.random() < rate and len(donors) > 1:
            out.append(dataclasses.replace(golds[rng.choice(donors)], guid=task.guid(record)))
        else:
            out.append(gold)
    return out


def build(out: Path) -> int:
    roots = DataRoots(Path(os.environ.get("KLUE_DATA_DIR") or SHARED / "klue"),
                      Path(os.environ.get("KLUE_EXTRA_DATA_DIR") or SHARED))
    n_runs = 0
    for task in registry.all_tasks():
        if protocols.missing(task, task.default_local_protocol, roots):
            print(f"{task.name}: {task.default_local_protocol} files absent, skipped")
            continue
        data = protocols.resolve(task, task.default_local_protocol, roots)
        for model, rate in MODELS.items():
            for seed in SEEDS:
                run_dir = out / task.name / model / f"seed{seed}"
                run_dir.mkdir(parents=True, exist_ok=True)
                predictions = corrupted(task, data.eval, rate, seed)
                write_predictions(run_dir / PREDICTIONS_FILE, task, data.eval, predictions, model)
                judge(task, data, run_dir, "official", ProducerReport(model, "fake", seed, time.perf_counter()))
                n_runs += 1
        print(f"{task.name}: {len(data.eval):,} evaluation examples, {len(MODELS) * len(SEEDS)} runs")
    return n_runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="benchmark directory (default: a temporary one)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="klue-bench-report-"))
    if not any(out.rglob("results.json")):
        start = time.perf_counter()
        n = build(out)
        print(f"built {n} runs in {out} ({time.perf_counter() - start:.1f} s)")
    timings: dict[str, float] = {}
    for _ in range(args.repeat):
        for name, resamples in (("intervals off", 0), (f"{REPORT_RESAMPLES} resamples", REPORT_RESAMPLES)):
            start = time.perf_counter()
            agg = load_aggregate(out)
            to_markdown(build_leaderboard(agg, resamples))
            write_report(agg, out / "report.html", resamples)
            elapsed = time.perf_counter() - start
            timings[name] = min(timings.get(name, float("inf")), elapsed)
    for name, seconds in timings.items():
        print(f"report (Markdown + HTML), {name}: {seconds:.2f} s (best of {args.repeat})")


if __name__ == "__main__":
    main()
