"""CPU seconds per optimizer step of `klue train` on a real encoder, fp32 against bf16 autocast (issue 27,
item 4): the measurement behind what `mixed_precision=auto` does on a CPU (klue.training.engine).

One setting per process (accelerate keeps one mixed-precision state per process): 64 training examples, the
paper recipe's max_len, batch 8, 3 steps, no evaluation before the last step, no checkpoint. The figure is the
process's CPU time (`time.process_time`, all threads) per step over steps 2 and 3 (step 1 warms up), with the
wall time and the logged losses. One JSON line on stdout.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_cpu_bf16.py --task ynat --precision bf16 \\
        --model /root/.cache/klue-real-models/me5-small --ynat-file ynat500_train.json --out /tmp/bf16-runs
YNAT reads `--ynat-file` (ynat-resplit format); NER reads the official dev file under KLUE_DATA_DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from klue.scoring import RunRequest

N_EXAMPLES = 64
STEPS = 3


def training_records(task_name: str, ynat_file: Path | None) -> list[Any]:
    from klue import registry
    from klue.errors import ProblemLog

    task = registry.get(task_name)
    if task_name == "ynat":
        if ynat_file is None:
            raise SystemExit("--ynat-file is needed for YNAT")
        path, reader = ynat_file, task.other_readers["ynat-resplit"]
    else:
        entry = task.file("dev")
        assert entry is not None
        path, reader = Path(os.environ["KLUE_DATA_DIR"]) / entry.path, task.read
    log = ProblemLog(str(path))
    records = reader(path, log)
    log.raise_if_errors()
    return list(records[:N_EXAMPLES])


def main() -> None:
    import torch

    import klue.training
    from klue import registry
    from klue.protocols import ProtocolData

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=("ynat", "ner"), required=True)
    parser.add_argument("--precision", choices=("no", "bf16"), required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--ynat-file", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(2)
    records = training_records(args.task, args.ynat_file)
    data = ProtocolData("local:speed", False, f"{len(records)} examples", records, records[:8], None, ())
    marks: list[tuple[float, float]] = []

    def mark(step: int) -> None:
        marks.append((time.process_time(), time.perf_counter()))

    results = klue.training.run(
        RunRequest(registry.get(args.task), args.model, data, 1, args.out / f"{args.task}-{args.precision}"),
        {"max_steps": STEPS, "batch_size": 8, "evals_per_epoch": 0, "save_checkpoints": False, "progress": False,
         "mixed_precision": args.precision, "resume": False, "logging_steps": 1}, on_step=mark)
    steps = list(pairwise(marks))
    print(json.dumps({
        "task": args.task, "mixed_precision": args.precision,
        "used": results.training.mixed_precision_used if results.training else None,
        "max_len": results.hyperparameters["max_len"],
        "cpu_s_per_step": sum(b[0] - a[0] for a, b in steps) / len(steps),
        "wall_s_per_step": sum(b[1] - a[1] for a, b in steps) / len(steps),
        "losses": [p.loss for p in results.learning_curve if p.loss is not None], "load": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
