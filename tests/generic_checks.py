"""Checks every task must pass, written once: the registry tests run them on every registered task, and
the ninth-task test runs them on a task package copied under a new name (tests/test_registry.py)."""

from __future__ import annotations

import dataclasses
from importlib import resources
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from klue import protocols
from klue.errors import ProblemLog
from klue.io.locate import DataRoots
from klue.predictions import write_predictions
from klue.scoring import score_predictions
from klue.tasks.base import DECLARATION_FILE, REFERENCE_SOURCES, Task, resolve_ref

BASE_CONFIG = SimpleNamespace(hidden_size=768)
LARGE_CONFIG = SimpleNamespace(hidden_size=1024)


def check_declaration(task: Task[Any, Any]) -> None:
    """What a task declares is complete and agrees with itself (no data, no heavy import)."""
    from klue.training.recipes import resolve

    assert isinstance(task, Task) and task.name == task.name.lower() and task.name.isidentifier(), task.name
    assert (resources.files(task.package) / DECLARATION_FILE).is_file(), task.package
    assert len(set(task.aliases)) == len(task.aliases) and task.name not in task.aliases
    assert task.key_metric in task.metrics and set(task.main_metrics) <= set(task.metrics)
    assert set(task.metrics) <= set(task.metric_specs), f"{task.name}: official metrics without a spec"
    assert all(name == spec.name for name, spec in task.metric_specs.items())
    assert task.file("dev") is not None and set(task.sizes) <= {"train", "dev"}
    assert all(len(f.git_blob) == 40 and int(f.git_blob, 16) >= 0 for f in task.files)
    assert task.default_local_protocol in protocols.names(task), task.name
    for spec in task.protocols.values():
        readers = [spec.reader, *(extra.reader for extra in getattr(spec, "extra_train", ()))]
        assert all(callable(task.reader(name)) for name in readers), spec.name
        assert spec.name.startswith("local:") and all(ref.path for ref in spec.refs())
    for model, scores in task.reference_scores.items():
        assert model in REFERENCE_SOURCES and set(task.main_metrics) <= set(scores) <= set(task.metric_specs)
    for config in (BASE_CONFIG, LARGE_CONFIG):
        hp = resolve("paper", task.name, config, {}).hyperparameters
        assert hp.selection_metric is None or hp.selection_metric in task.metric_specs, task.name
    for ref in (task.adapter, task.baseline):
        if ref is not None:
            assert callable(resolve_ref(task.package, ref)), ref


def check_gold_scores_the_maximum(task: Task[Any, Any], roots: DataRoots, tmp_path: Path, n: int = 300) -> None:
    """On real data of the task's default local protocol: gold predictions survive the prediction file
    (write -> read -> parse) and the judge's path scores them at the maximum."""
    if protocols.missing(task, task.default_local_protocol, roots):
        pytest.skip(f"{task.name}: the files of {task.default_local_protocol} are not here")
    data = protocols.resolve(task, task.default_local_protocol, roots)
    golds = data.eval[:n]
    predictions = [task.gold_prediction(r) for r in golds]
    log = ProblemLog("gold")
    assert [task.parse_prediction(task.prediction_to_json(p), log, "") for p in predictions] == predictions
    assert not log.problems
    path = tmp_path / f"{task.name}-gold.jsonl"
    write_predictions(path, task, golds, predictions, "gold")
    report = score_predictions(task, golds, path).report
    assert report.n_examples == len(golds)
    assert report.scores[task.key_metric] == pytest.approx(100.0), (task.name, report.scores)
    assert set(report.scores) <= set(task.metric_specs), task.name


def slice_of(data: protocols.ProtocolData[Any], n_train: int, n_eval: int) -> protocols.ProtocolData[Any]:
    return dataclasses.replace(data, train=data.train[:n_train], eval=data.eval[:n_eval])
