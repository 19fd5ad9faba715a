"""The results schema: what is written is read back equal; invalid results are refused both ways."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from klue.errors import DataError
from klue.io.provenance import DataSource
from klue.metrics.report import ConfusionMatrix, MetricReport
from klue.results import SCHEMA_VERSION, CurvePoint, Results, metric_fields, read_results, write_results


def ok_results(**changes: object) -> Results:
    base = {"task": "nli", "task_version": "1", "model": "classic", "model_family": "classic", "seed": 1,
                "protocol": "local:dev-80-20", "protocol_official": False, "protocol_description": "dev 80/20",
                "metric_mode": "official", "scores": {"accuracy": 61.5},
                "confusion": ConfusionMatrix(("a", "b"), ((3, 1), (0, 4))),
                "learning_curve": [CurvePoint(1, 0.5, loss=0.7), CurvePoint(2, 1.0, selection={"accuracy": 60.0})],
                "data_sources": [DataSource("klue-nli-v1.1/klue-nli-v1.1_dev.json", "d" * 40, 600, "eval")]}
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
    ({"confusion": ConfusionMatrix(("a", "b"), ((1, 2),))}, "2 x 2"),
    ({"confusion": ConfusionMatrix(("a",), ((-1,),))}, "non-negative"),
    ({"breakdown": {"f1_per_type": {"PS": "high"}}}, "breakdown.f1_per_type"),
    ({"learning_curve": [CurvePoint(1, 0.1, loss=float("nan"))]}, "learning_curve[0]"),
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
    obj = ok_results().to_json()
    obj["data_sources"] = [{"path": "x"}]
    path.write_text(json.dumps(obj))
    with pytest.raises(DataError, match=r"data_sources\[0\] lacks"):
        read_results(path)
    path.write_text('{"task": ')
    with pytest.raises(DataError, match="cannot read"):
        read_results(path)


def test_a_data_source_sha256_round_trips_and_older_files_without_it_read(tmp_path: Path) -> None:
    """`data_sources[].sha256` is optional: a file written before it existed reads (sha256 None), a new
    one keeps it, and a key the schema does not know is still refused."""
    path = tmp_path / "results.json"
    source = DataSource("train.tsv", "d" * 40, 10, "train (whole file)", "e" * 64)
    write_results(path, ok_results(data_sources=[source]))
    assert json.loads(path.read_text())["data_sources"][0]["sha256"] == "e" * 64
    assert read_results(path).data_sources == [source]
    old = ok_results().to_json()
    del old["data_sources"][0]["sha256"]  # what every results.json written before the field holds
    assert set(old["data_sources"][0]) == {"path", "git_blob", "n_examples", "used_as"}
    path.write_text(json.dumps(old))
    assert read_results(path).data_sources == [DataSource("klue-nli-v1.1/klue-nli-v1.1_dev.json", "d" * 40, 600,
                                                          "eval")]
    assert read_results(path).data_sources[0].sha256 is None
    old["data_sources"][0]["md5"] = "f" * 32
    path.write_text(json.dumps(old))
    with pytest.raises(DataError, match=r"data_sources\[0\] has unknown fields \['md5'\]"):
        read_results(path)
    with pytest.raises(DataError, match=r"data_sources\[0\].sha256 must be a string or null"):
        write_results(path, ok_results(data_sources=[DataSource("x", "d" * 40, 1, "eval", 5)]))  # type: ignore[arg-type]


def test_version_1_files_are_read_and_upgraded(tmp_path: Path) -> None:
    """A klue.results/1 file (flat learning-curve points, training figures among the hyper-parameters)."""
    v1 = {"schema_version": "klue.results/1", "task": "nli", "task_version": "1", "model": "tiny",
          "model_family": "encoder", "seed": 1, "protocol": "local:dev-80-20", "protocol_official": False,
          "protocol_description": "dev 80/20", "metric_mode": "official", "scores": {"accuracy": 40.0},
          "confusion": {"labels": ["a"], "counts": [[2]]},
          "hyperparameters": {"learning_rate": 0.001, "best_step": 4, "device": "cpu", "selection_metric": "accuracy",
                              "checkpoint_selection": "eval set", "best_selection_score": 40.0, "total_steps": 8,
                              "steps_per_epoch": 4, "num_processes": 1, "mixed_precision_used": "no",
                              "model_source": "from scratch (config only)", "num_parameters": 10,
                              "use_token_type_ids": True, "added_tokens": 0, "n_train_features": 8,
                              "n_eval_features": 2, "truncated_train_features": 0, "resumed_from_steps": [],
                              "overrides": {}},
          "learning_curve": [{"step": 4.0, "epoch": 1.0, "loss": 0.9}, {"step": 4.0, "epoch": 1.0,
                                                                       "selection_accuracy": 40.0}]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(v1))
    results = read_results(path)
    assert results.schema_version == SCHEMA_VERSION
    assert results.hyperparameters == {"learning_rate": 0.001, "selection_metric": "accuracy"}
    assert results.training is not None and results.training.best_step == 4 and results.training.device == "cpu"
    assert results.learning_curve == [CurvePoint(4, 1.0, loss=0.9), CurvePoint(4, 1.0, selection={"accuracy": 40.0})]
    assert results.confusion == ConfusionMatrix(("a",), ((2,),))
    # An encoder run from before some figures were recorded (no `added_tokens`) still reads.
    del v1["hyperparameters"]["added_tokens"]
    path.write_text(json.dumps(v1))
    older = read_results(path)
    assert older.training is not None and older.training.added_tokens is None and older.training.best_step == 4
    assert older.hyperparameters == {"learning_rate": 0.001, "selection_metric": "accuracy"}


def test_metric_fields_from_a_metric_report() -> None:
    report = MetricReport("nli", "official", {"accuracy": 50.0}, {"f1_per_class": {"a": 40.0}},
                          ConfusionMatrix(("a", "b"), ((1, 1), (0, 2))), 4)
    results = ok_results(**metric_fields(report))
    results.validate()
    assert results.confusion == ConfusionMatrix(("a", "b"), ((1, 1), (0, 2)))
    assert results.n_eval == 4
