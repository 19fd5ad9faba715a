"""Every CPU baseline on the protocol `klue benchmark --protocol auto` picks, in one process.

Prints and optionally writes (--json) a table: task, protocol, n_train, n_eval, metric values, fit and
predict seconds, peak RSS of this process after the task. Targets of issue 6 are printed beside the key
metric. Usage:

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_baselines.py [--tasks ner,dp] [--json out.json]

Data comes from KLUE_DATA_DIR / KLUE_EXTRA_DATA_DIR (or --data-dir / --extra-data-dir).
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from klue import registry
from klue.baselines import available_baselines, run
from klue.benchmark.cells import choose_protocol
from klue.io.locate import roots_from
from klue.protocols import resolve
from klue.scoring import RunRequest

# Issue 6's targets on this machine: (metric, floor).
TARGETS: dict[str, tuple[str, float]] = {
    "ynat": ("macro_f1", 80.0), "ner": ("entity_macro_f1", 78.0), "nli": ("accuracy", 55.0),
    "sts": ("pearsonr", 60.0), "dp": ("uas", 70.0), "re": ("micro_f1", 45.0),
}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_task(name: str, roots: Any, seed: int, out: Path) -> dict[str, Any]:
    task = registry.get(name)
    protocol = choose_protocol(task, "auto", roots)
    load_start = time.perf_counter()
    data = resolve(task, protocol, roots)
    load_s = time.perf_counter() - load_start
    results = run(RunRequest(task, "classic", data, seed, out / name))
    predict_s = results.wall_time_s - (results.train_time_s or 0.0)
    row = {"task": name, "protocol": protocol, "n_train": results.n_train, "n_eval": results.n_eval,
           "scores": results.scores, "model": results.recipe, "load_s": load_s, "fit_s": results.train_time_s,
           "predict_and_score_s": predict_s, "peak_rss_mb": peak_rss_mb()}
    if name in TARGETS:
        metric, floor = TARGETS[name]
        row["target"] = {"metric": metric, "floor": floor, "met": results.scores[metric] >= floor}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="all", help="comma-separated task names (default: every baseline)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data-dir")
    parser.add_argument("--extra-data-dir")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    roots = roots_from(args.data_dir, args.extra_data_dir)
    names = available_baselines(registry.all_tasks()) if args.tasks == "all" else [registry.get(t).name for t in args.tasks.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            row = bench_task(name, roots, args.seed, Path(tmp))
            rows.append(row)
            scores = ", ".join(f"{k} {v:.2f}" for k, v in row["scores"].items())
            target = row.get("target")
            verdict = "" if target is None else (f"  target {target['metric']} >= {target['floor']:g}: "
                                                 f"{'met' if target['met'] else 'MISSED'}")
            print(f"{name:5s} {row['protocol']:22s} train {row['n_train']:>6,} eval {row['n_eval']:>6,} "
                  f"fit {row['fit_s']:6.1f}s predict {row['predict_and_score_s']:6.1f}s "
                  f"rss {row['peak_rss_mb']:6.0f}MB | {scores}{verdict}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
