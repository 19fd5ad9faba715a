"""A tiny fake model family and cell runners for the runner tests (module-level: workers unpickle them).

`counting_cell` stands for a whole cell (no data, no model): it logs each call to a file, so tests can
count calls across processes, and raises KeyboardInterrupt or an error on request through marker files.
`oracle_family` is a real, if trivial, model family: it predicts each evaluation record's gold answer,
writes predictions.jsonl and lets the judge score it, as every producer does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from klue.benchmark.cells import CellSpec
from klue.errors import DataError
from klue.predictions import write_predictions
from klue.results import PREDICTIONS_FILE, Results
from klue.scoring import ProducerReport, RunRequest

INTERRUPT_MARK = "interrupt-at"  # file in the benchmark dir holding "<task>/seed<k>"
FAIL_MARK = "fail-task"  # file in the benchmark dir holding a task name


def benchmark_dir(spec: CellSpec) -> Path:
    return spec.path.parents[2]


def calls(out: Path) -> list[str]:
    return sorted(p.read_text() for p in (out / "calls").glob("*"))


def counting_cell(spec: CellSpec) -> Results:
    out = benchmark_dir(spec)
    interrupt = out / INTERRUPT_MARK
    if interrupt.is_file() and interrupt.read_text() == f"{spec.task}/seed{spec.seed}":
        raise KeyboardInterrupt
    (out / "calls").mkdir(exist_ok=True)
    (out / "calls" / uuid.uuid4().hex).write_text(f"{spec.task}/{spec.model}/seed{spec.seed}")
    fail = out / FAIL_MARK
    if fail.is_file() and fail.read_text() == spec.task:
        raise DataError(f"{spec.task}: the dev file is not in {out}")
    time.sleep(0.05)
    (spec.path / "predictions.jsonl").write_text('{"guid": "x"}\n')
    return Results(task=spec.task, task_version="1", model=spec.model, model_family="fake", seed=spec.seed,
                   protocol="local:dev-80-20", protocol_official=False, protocol_description="fake cell",
                   metric_mode=spec.mode, scores={"score": 50.0 + spec.seed}, predictions_file="predictions.jsonl")


def oracle_family(request: RunRequest, overrides: Mapping[str, Any]) -> Results:
    started = time.perf_counter()
    task, data = request.task, request.protocol_data
    predictions = [task.gold_prediction(r) for r in data.eval]
    write_predictions(request.out_dir / PREDICTIONS_FILE, task, data.eval, predictions, "the oracle")
    producer = ProducerReport(model=request.model_spec, model_family="oracle", seed=request.seed, started=started,
                              recipe="gold answers")
    return request.judge(data, producer)


def device_cell(spec: CellSpec) -> Results:
    """Records which process ran the cell and which GPU it was given."""
    import os

    out = benchmark_dir(spec)
    (out / "calls").mkdir(exist_ok=True)
    (out / "calls" / uuid.uuid4().hex).write_text(f"{os.getpid()} {os.environ.get('CUDA_VISIBLE_DEVICES')}")
    time.sleep(0.3)  # long enough that both workers take cells
    return Results(task=spec.task, task_version="1", model=spec.model, model_family="fake", seed=spec.seed,
                   protocol="local:dev-80-20", protocol_official=False, protocol_description="fake cell",
                   metric_mode=spec.mode, scores={"score": 1.0})


KILL_MARK = "kill-at"  # file in the benchmark dir holding "<task>/seed<k>": that cell's worker is killed


def killing_cell(spec: CellSpec) -> Results:
    """`counting_cell`, except that the marked cell kills its own worker process (as the OOM killer does)."""
    import os
    import signal

    kill = benchmark_dir(spec) / KILL_MARK
    if kill.is_file() and kill.read_text() == f"{spec.task}/seed{spec.seed}":
        os.kill(os.getpid(), signal.SIGKILL)
    return counting_cell(spec)


SLOW_MARK = "slow-at"  # file in the benchmark dir holding "<task>/seed<k>": that cell hangs, its pid in slow-pid


def slow_cell(spec: CellSpec) -> Results:
    """`counting_cell`, except that the marked cell first writes its process id and hangs (a long cell that an
    interrupted benchmark leaves unfinished): it never counts as a call."""
    import os

    out = benchmark_dir(spec)
    slow = out / SLOW_MARK
    if slow.is_file() and slow.read_text() == f"{spec.task}/seed{spec.seed}":
        (out / "slow-pid").write_text(str(os.getpid()))
        time.sleep(120)
    return counting_cell(spec)
