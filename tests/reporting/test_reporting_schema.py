"""The results schema: what is written is read back equal; invalid results are refused both ways."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from klue.errors import DataError
from klue.metrics.report import ConfusionMatrix, MetricReport
from klue.reporting.schema import SCHEMA_VERSION, Results, metric_fields, read_results, write_results


def ok_results(**changes: object) -> Results:
    base = {"task": "nli", "task_version": "1", "model": "classic", "model_family": "classic", "seed": 1,
                "protocol": "local:dev-80-20", "protocol_official": False, "protocol_description": "dev 80/20",
                "metric_mode": "official", "scores": {"accuracy": 61.5},
                "confusion": {"labels": ["a", "b"], "counts": [[3, 1], [0, 4]]},
                "learning_curve": [{"step": 1.0, "loss": 0.7}]}
    base.update(changes)
    return Results(**base)  # type: ignore[arg-type]


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    write_results(path, ok_results())
    assert read_results(path) == ok_results()
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize("changes, message", [
    ({"scores": {"accuracy": float("nan")}}, "not a finite number"),
    ({"scores": {}}, "must carry scores"),
    ({"status": "failed", "error": None}, "must carry its error"),
    ({"status": "maybe"}, "status"),
    ({"protocol_official": True}, "marked official"),
    ({"confusion": {"labels": ["a", "b"], "counts": [[1, 2]]}}, "2 x 2"),
    ({"confusion": {"labels": ["a"], "counts": [[-1]]}}, "non-negative"),
    ({"breakdown": {"f1_per_type": {"PS": "high"}}}, "breakdown.f1_per_type"),
    ({"learning_curve": [{"step": 1, "loss": None}]}, "learning_curve[0]"),
    ({"seed": True}, "seed"),
    ({"n_eval": -1}, "n_eval"),
    ({"data_sources": [{"path": "x"}]}, "data_sources[0]"),
    ({"schema_version": "klue.results/0"}, "schema_version"),
])
def test_invalid_results_are_refused_on_write(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(DataError, match=message.replace("[", r"\[").replace("]", r"\]")):
        write_results(tmp_path / "results.json", ok_results(**changes))
    assert not (tmp_path / "results.json").exists()


def test_invalid_results_are_refused_on_read(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    obj = ok_results().to_json()
    obj["scores"] = {"accuracy": "61"}
    path.write_text(json.dumps(obj))
    with pytest.raises(DataError, match="results.json"):
        read_results(path)
    obj = ok_results().to_json() | {"surprise": 1}
    path.write_text(json.dumps(obj))
    with pytest.raises(DataError, match="unknown keys"):
        read_results(path)
    path.write_text('{"task": ')
    with pytest.raises(DataError, match="cannot read"):
        read_results(path)


def test_metric_fields_from_a_metric_report() -> None:
    report = MetricReport("nli", "official", {"accuracy": 50.0}, {"f1_per_class": {"a": 40.0}},
                          ConfusionMatrix(("a", "b"), ((1, 1), (0, 2))), 4)
    results = ok_results(**metric_fields(report))
    results.validate()
    assert results.confusion == {"labels": ["a", "b"], "counts": [[1, 1], [0, 2]]}
    assert results.n_eval == 4
