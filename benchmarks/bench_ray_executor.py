"""`klue benchmark` with the local executor and with `--executor ray`, interleaved: wall time of each, and
whether the two leave the same scores and byte-identical predictions.

Each repeat runs the same classic benchmark twice from the command line into fresh directories,
`--executor local --jobs J` and `--executor ray --jobs J` (a local Ray started by klue with J CPUs, its
start-up included: what a user waits for), local first in even repeats and Ray first in odd ones. Usage:

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_ray_executor.py --tasks sts,nli --seeds 1,2 \
        [--first 0] [--jobs 2] [--repeats 1] [--json out.json]

`--first N` keeps the first N records (JSON) or sentences (TSV) of each task's dev file, in a scratch copy
of the official layout; 0 uses the files as they are. Data: KLUE_DATA_DIR (or --data-dir). Protocol
local:dev-80-20 (the dev file is all this data has).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

KLUE = [sys.executable, "-c", "from klue.cli import main; main()"]


def sliced_copy(source: Path, tasks: list[str], first: int, root: Path) -> Path:
    """The official layout with each task's dev file cut to its first `first` records or sentences."""
    from klue import registry

    for name in tasks:
        dev = registry.get(name).file("dev")
        assert dev is not None, name
        target = root / dev.path
        target.parent.mkdir(parents=True, exist_ok=True)
        text = (source / dev.path).read_text(encoding="utf-8")
        if dev.path.endswith(".json"):
            target.write_text(json.dumps(json.loads(text)[:first], ensure_ascii=False), encoding="utf-8")
        else:
            target.write_text("\n\n".join(text.split("\n\n")[:first]) + "\n\n", encoding="utf-8")
    return root


def run(executor: str, tasks: str, seeds: str, jobs: int, data: Path, out: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run([*KLUE, "benchmark", "--model", "classic", "--tasks", tasks, "--seeds", seeds, "--protocol",
                           "local:dev-80-20", "--jobs", str(jobs), "--executor", executor, "--data-dir", str(data),
                           "--out", str(out)], capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"klue benchmark --executor {executor} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - start


def same_results(a: Path, b: Path) -> bool:
    cells = sorted(p.parent.relative_to(a) for p in a.rglob("results.json"))
    if cells != sorted(p.parent.relative_to(b) for p in b.rglob("results.json")):
        return False
    for cell in cells:
        if json.loads((a / cell / "results.json").read_text())["scores"] != json.loads(
                (b / cell / "results.json").read_text())["scores"]:
            return False
        if (a / cell / "predictions.jsonl").read_bytes() != (b / cell / "predictions.jsonl").read_bytes():
            return False
    return bool(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="sts,nli")
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--data-dir", default=os.environ.get("KLUE_DATA_DIR"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.data_dir:
        sys.exit("give --data-dir or set KLUE_DATA_DIR")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        data = Path(args.data_dir) if not args.first else sliced_copy(
            Path(args.data_dir), args.tasks.split(","), args.first, root / "data")
        for repeat in range(args.repeats):
            order = ("local", "ray") if repeat % 2 == 0 else ("ray", "local")  # neither always goes first
            outs = {e: root / f"{e}{repeat}" for e in order}
            seconds = {e: run(e, args.tasks, args.seeds, args.jobs, data, out) for e, out in outs.items()}
            row = {"repeat": repeat, "first": order[0], "local_s": round(seconds["local"], 1), "ray_s": round(seconds["ray"], 1),
                   "ray_over_local": round(seconds["ray"] / seconds["local"], 2),
                   "identical": same_results(outs["local"], outs["ray"])}
            rows.append(row)
            print(json.dumps(row), flush=True)
    summary = {"tasks": args.tasks, "seeds": args.seeds, "first": args.first, "jobs": args.jobs,
               "cpus": os.cpu_count(), "load_avg_1m_at_end": os.getloadavg()[0], "rows": rows}
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
