"""`klue.baselines.run`: declared baselines, outputs written atomically and scored by the judge, determinism."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from klue import registry
from klue.baselines import NoBaselineError, available_baselines, make_baseline, run
from klue.errors import DataError


def test_every_registered_task_has_a_baseline() -> None:
    tasks = registry.all_tasks()
    assert available_baselines(tasks) == sorted(t.name for t in tasks)
    for task in tasks:  # each declared reference resolves to a factory (no sklearn fit here)
        assert callable(make_baseline(task, 1).fit)


def test_a_task_without_a_baseline_is_a_clear_error() -> None:
    fake = dataclasses.replace(registry.get("ynat"), name="nonexistent", baseline=None)
    with pytest.raises(NoBaselineError, match="no CPU baseline"):
        make_baseline(fake, 1)


def test_run_writes_scored_predictions_and_results(protocol_slice, tmp_path: Path) -> None:
    data = protocol_slice("ynat", 600, 200)
    results = run(registry.get("ynat"), data, 3, tmp_path)
    lines = (tmp_path / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["guid"] for line in lines] == [r.guid for r in data.eval]
    written = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert written["scores"] == results.scores and written["protocol"] == "local:ynat-resplit"
    assert written["protocol_official"] is False and written["n_train"] == 600
    task = registry.get("ynat")
    assert written["metric_versions"] == {name: task.metric_spec(name).version for name in written["scores"]}
    assert not list(tmp_path.glob(".*.tmp"))  # nothing half-written left behind
    again = run(registry.get("ynat"), data, 3, tmp_path / "again")
    assert again.scores == results.scores  # deterministic for a seed


def test_empty_sides_are_data_errors(protocol_slice, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no training records"):
        run(registry.get("ynat"), protocol_slice("ynat", 0, 10), 1, tmp_path)
    with pytest.raises(DataError, match="no evaluation records"):
        run(registry.get("ynat"), protocol_slice("ynat", 10, 0), 1, tmp_path)
