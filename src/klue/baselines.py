"""The CPU-baseline producer: train a task's baseline, write its predictions, let the judge score them.

A task's baseline lives in its package (`klue/tasks/<name>/baseline.py`) and is declared in the task as a
lazy reference (`baseline=".baseline:make_baseline"`): `make_baseline(seed)` returns an object following
`klue.tasks.base.Baseline` (`name`, `hyperparameters`, `fit(train, selection)`, `predict(records)`, and
optionally `attach_data(roots)`, called before `fit` for a task resource such as the WoS ontology).

Rules every baseline keeps: deterministic for a seed (no global random state; nothing depends on
`hash()` of strings, which Python randomises per process; no set iteration feeding a model), CPU only,
at most 2 threads (`n_jobs` <= 2), no pretrained model, no downloads, a few minutes at most on the full
local data. Libraries: numpy, scipy, scikit-learn, kiwipiepy, python-crfsuite (the `baselines` extra).
`run` fits and predicts with BLAS and OpenMP single-threaded (`klue.io.threads`), so the predictions are
the same for any thread count, executor or machine.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.io.threads import BASELINE_LIBRARIES, single_threaded_numerics
from klue.predictions import write_predictions
from klue.results import CLASSIC, PREDICTIONS_FILE, Results
from klue.scoring import ProducerReport, RunRequest
from klue.tasks.base import Baseline, Task

MODEL_NAME = CLASSIC  # Results.model and Results.model_family for every CPU baseline


class NoBaselineError(LookupError):
    """The task declares no CPU baseline."""

    def __init__(self, task_name: str, available: Sequence[str]) -> None:
        self.message = (f"task {task_name!r} has no CPU baseline: its declaration names no `baseline`; "
                        f"baselines exist for: {', '.join(available) or 'none'}")
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def available_baselines(tasks: Sequence[Task[Any, Any]]) -> list[str]:
    """The names of the tasks (of those given) that declare a baseline."""
    return sorted(t.name for t in tasks if t.baseline is not None)


def make_baseline(task: Task[Any, Any], seed: int) -> Baseline:
    if task.baseline is None:
        from klue import registry

        raise NoBaselineError(task.name, available_baselines(registry.all_tasks()))
    baseline = task.make_baseline(seed)
    missing = [name for name in ("name", "hyperparameters", "fit", "predict") if not hasattr(baseline, name)]
    if missing:
        raise TypeError(f"the baseline of {task.name} ({task.baseline}) returned {type(baseline).__name__}, "
                        f"which lacks {', '.join(missing)}")
    return baseline


def _per_second(count: int, seconds: float) -> float | None:
    return count / seconds if seconds > 0 else None


def run(request: RunRequest) -> Results:
    """Train the task's baseline on the protocol data's training part, predict its evaluation part, write
    `out_dir/predictions.jsonl`, and return the judge's Results (also written to `out_dir/results.json`)."""
    task, protocol_data, seed = request.task, request.protocol_data, request.seed
    if not protocol_data.train:
        raise DataError(f"{task.name}: protocol {protocol_data.protocol!r} gives no training records")
    if not protocol_data.eval:
        raise DataError(f"{task.name}: protocol {protocol_data.protocol!r} gives no evaluation records")
    out_dir = Path(request.out_dir)
    started = time.perf_counter()
    baseline = make_baseline(task, seed)
    attach = getattr(baseline, "attach_data", None)
    if callable(attach):
        attach(protocol_data.roots)

    with single_threaded_numerics(BASELINE_LIBRARIES):  # the same predictions for any thread count
        fit_start = time.perf_counter()
        baseline.fit(list(protocol_data.train), None if protocol_data.selection is None
                     else list(protocol_data.selection))
        train_time = time.perf_counter() - fit_start

        predict_start = time.perf_counter()
        predictions = baseline.predict(list(protocol_data.eval))
        predict_time = time.perf_counter() - predict_start

    write_predictions(out_dir / PREDICTIONS_FILE, task, protocol_data.eval, predictions, f"baseline {baseline.name!r}")
    producer = ProducerReport(
        model=MODEL_NAME, model_family=MODEL_NAME, seed=seed, started=started, recipe=baseline.name,
        hyperparameters={**baseline.hyperparameters, "seed": seed}, train_time_s=train_time,
        train_examples_per_s=_per_second(len(protocol_data.train), train_time),
        eval_examples_per_s=_per_second(len(protocol_data.eval), predict_time))
    return request.judge(protocol_data, producer)
