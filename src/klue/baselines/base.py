"""The CPU baseline framework: one module per task, one protocol, one shared `run`.

How a baseline is declared
--------------------------
A task's baseline lives in ``klue/baselines/<task.name>.py`` (``ynat.py``, ``ner.py``, ...) and defines::

    def make_baseline(seed: int) -> Baseline: ...

that returns an object following the `Baseline` protocol below:

- ``name: str`` -- a short, stable model name, e.g. ``"char-crf"`` or ``"tfidf-logreg"``; it is the
  results file's ``recipe``.
- ``hyperparameters: dict[str, Any]`` -- JSON-serialisable; copied into ``results.json`` as they are.
- ``fit(train, selection) -> None`` -- train on the task's records (``task.record_type``);
  ``selection`` is the protocol's model-selection set, or None (then the baseline must not peek at the
  evaluation set: it selects on a slice of ``train`` or not at all).
- ``predict(records) -> list[prediction]`` -- one ``task.prediction_type`` per record, in the same order,
  carrying that record's guid (``task.guid(record)``).
- optionally ``attach_data(protocol_data) -> None`` -- called before ``fit`` when defined, for a baseline
  that needs a task resource the records do not carry (WoS reads ``ontology.json`` from the data roots).

Rules every baseline keeps: deterministic for a seed (no global random state; nothing depends on
``hash()`` of strings, which Python randomises per process; no set iteration feeding a model), CPU only,
at most 2 threads (``n_jobs`` <= 2), no pretrained model, no downloads, a few minutes at most on the full
local data. Libraries: numpy, scipy, scikit-learn, kiwipiepy, python-crfsuite (the ``baselines`` extra).

`run` (exposed as ``klue.baselines.run``) finds the module by ``importlib`` from ``task.name`` -- there
is no list of task names here -- fits on ``protocol_data.train`` (selection = ``protocol_data.selection``),
predicts ``protocol_data.eval``, writes ``<out_dir>/predictions.jsonl`` (``task.prediction_to_json``),
scores with ``task.evaluate`` (the official metrics) and writes ``<out_dir>/results.json`` with
``klue.reporting.schema.write_results``.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from klue.errors import DataError
from klue.metrics.report import MetricMode
from klue.provenance import git_revision, library_versions, utc_now
from klue.reporting.schema import Results, metric_fields, write_results
from klue.tasks.base import ProtocolData, Task

MODEL_NAME = "classic"  # Results.model and Results.model_family for every CPU baseline
PREDICTIONS_FILE = "predictions.jsonl"
RESULTS_FILE = "results.json"
_NOT_TASK_MODULES = frozenset({"base"})


@runtime_checkable
class Baseline(Protocol):
    """A model that trains from scratch on a task's records and predicts in the task's schema."""

    name: str
    hyperparameters: dict[str, Any]

    def fit(self, train: list[Any], selection: list[Any] | None) -> None: ...

    def predict(self, records: list[Any]) -> list[Any]: ...


class NoBaselineError(LookupError):
    """The task has no module under `klue.baselines`."""

    def __init__(self, task_name: str, available: Sequence[str]) -> None:
        self.message = (f"task {task_name!r} has no CPU baseline: there is no module "
                        f"klue/baselines/{task_name}.py defining make_baseline(seed); baselines exist for: "
                        f"{', '.join(available) or 'none'}")
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def available_baselines() -> list[str]:
    """Task names that have a baseline module (discovered from the package, not listed)."""
    import klue.baselines as package

    return sorted(m.name for m in pkgutil.iter_modules(package.__path__)
                  if not m.name.startswith("_") and m.name not in _NOT_TASK_MODULES)


def baseline_module(task: Task[Any, Any]) -> ModuleType:
    """The module `klue.baselines.<task.name>`; `NoBaselineError` when there is none."""
    if task.name.startswith("_") or task.name in _NOT_TASK_MODULES:
        raise NoBaselineError(task.name, available_baselines())
    module_name = f"klue.baselines.{task.name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:  # the module exists but one of its imports is missing: say that
            raise
        raise NoBaselineError(task.name, available_baselines()) from None
    if not callable(getattr(module, "make_baseline", None)):
        raise NoBaselineError(task.name, available_baselines())
    return module


def make_baseline(task: Task[Any, Any], seed: int) -> Baseline:
    baseline = baseline_module(task).make_baseline(seed)
    if not isinstance(baseline, Baseline):
        raise TypeError(f"klue.baselines.{task.name}.make_baseline returned {type(baseline).__name__}, "
                        "which lacks name/hyperparameters/fit/predict")
    return baseline


def check_predictions(task: Task[Any, Any], records: Sequence[Any], predictions: Sequence[Any],
                      baseline_name: str) -> list[dict[str, Any]]:
    """The predictions as JSON objects, after checking one per record, in order, with its guid."""
    if len(predictions) != len(records):
        raise RuntimeError(f"baseline {baseline_name!r} for {task.name} returned {len(predictions)} "
                           f"predictions for {len(records)} records")
    objects = []
    for index, (record, prediction) in enumerate(zip(records, predictions, strict=True)):
        obj = task.prediction_to_json(prediction)
        if obj.get("guid") != task.guid(record):
            raise RuntimeError(f"baseline {baseline_name!r} for {task.name}: prediction {index} has guid "
                               f"{obj.get('guid')!r}, the record has {task.guid(record)!r}")
        objects.append(obj)
    return objects


def write_jsonl_atomic(path: Path, objects: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for obj in objects:
                handle.write(json.dumps(obj, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _per_second(count: int, seconds: float) -> float | None:
    return count / seconds if seconds > 0 else None


def run(task: Task[Any, Any], protocol_data: ProtocolData[Any], seed: int, out_dir: Path,
        mode: MetricMode = "official") -> Results:
    """Train the task's baseline on `protocol_data.train`, predict and score `protocol_data.eval`.

    Writes `out_dir/predictions.jsonl` and `out_dir/results.json`; returns the Results it wrote.
    """
    if not protocol_data.train:
        raise DataError(f"{task.name}: protocol {protocol_data.protocol!r} gives no training records")
    if not protocol_data.eval:
        raise DataError(f"{task.name}: protocol {protocol_data.protocol!r} gives no evaluation records")
    out_dir = Path(out_dir)
    started = time.perf_counter()
    baseline = make_baseline(task, seed)
    attach = getattr(baseline, "attach_data", None)
    if callable(attach):
        attach(protocol_data)

    fit_start = time.perf_counter()
    baseline.fit(list(protocol_data.train), None if protocol_data.selection is None
                 else list(protocol_data.selection))
    train_time = time.perf_counter() - fit_start

    predict_start = time.perf_counter()
    predictions = baseline.predict(list(protocol_data.eval))
    predict_time = time.perf_counter() - predict_start

    objects = check_predictions(task, protocol_data.eval, predictions, baseline.name)
    write_jsonl_atomic(out_dir / PREDICTIONS_FILE, objects)
    report = task.evaluate(protocol_data.eval, predictions, mode)

    results = Results(
        task=task.name,
        task_version=task.version,
        model=MODEL_NAME,
        model_family=MODEL_NAME,
        seed=seed,
        protocol=protocol_data.protocol,
        protocol_official=protocol_data.official,
        protocol_description=protocol_data.description,
        metric_mode=mode,
        **{**metric_fields(report), "n_eval": len(protocol_data.eval)},
        n_train=len(protocol_data.train),
        data_sources=[asdict(source) for source in protocol_data.sources],
        recipe=baseline.name,
        hyperparameters={**baseline.hyperparameters, "seed": seed},
        wall_time_s=time.perf_counter() - started,
        train_time_s=train_time,
        train_examples_per_s=_per_second(len(protocol_data.train), train_time),
        eval_examples_per_s=_per_second(len(protocol_data.eval), predict_time),
        predictions_file=PREDICTIONS_FILE,
        library_versions=library_versions(),
        git_revision=git_revision(),
        created_at=utc_now(),
    )
    write_results(out_dir / RESULTS_FILE, results)
    return results
