"""`klue train` and `klue predict` end to end on a tiny model: train, predict a file, score it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from klue.cli import app
from klue.errors import DataError


@pytest.fixture(scope="module")
def nli_model(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path) -> Path:
    from klue.models.tiny import make_tiny_model_dir

    rows = json.loads((klue_data_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    texts = [r[k] for r in rows[:300] for k in ("premise", "hypothesis")]
    return make_tiny_model_dir(tmp_path_factory.mktemp("nli-model"), "bert", texts, vocab_size=800, max_len=128)


@pytest.fixture(scope="module")
def nli_data(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path) -> Path:
    """A data directory in the official layout with the first 601 NLI dev pairs (whole premises): the local
    split, the training steps and the files are the same as on the whole file, at a fifth of the evaluation."""
    folder = "klue-nli-v1.1"
    rows = json.loads((klue_data_dir / folder / f"{folder}_dev.json").read_text(encoding="utf-8"))
    assert rows[600]["premise"] != rows[601]["premise"]
    root = tmp_path_factory.mktemp("nli-data")
    (root / folder).mkdir()
    (root / folder / f"{folder}_dev.json").write_text(json.dumps(rows[:601], ensure_ascii=False), encoding="utf-8")
    return root


@pytest.mark.realdata
@pytest.mark.slow
def test_train_predict_score(nli_model: Path, klue_data_dir: Path, nli_data: Path, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    runner = CliRunner()
    out = tmp_path / "run"
    result = runner.invoke(app, ["train", "--task", "klue-nli", "--model", str(nli_model), "--protocol",
                                 "local:dev-80-20", "--data-dir", str(nli_data), "--seed", "3", "--output",
                                 str(out), "max_steps=2", "batch_size=8", "max_len=64", "evals_per_epoch=0",
                                 "progress=false"])
    assert result.exit_code == 0, result.output
    assert "accuracy" in result.stdout
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["protocol"] == "local:dev-80-20" and results["recipe"] == "paper/base"
    assert results["training"]["total_steps"] == 2 and results["seed"] == 3
    assert results["data_sources"] and results["library_versions"]["torch"]
    assert sum(1 for _ in (out / "predictions.jsonl").open()) == results["n_eval"]

    rows = json.loads((klue_data_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    subset = tmp_path / "nli-200.json"
    subset.write_text(json.dumps(rows[:200], ensure_ascii=False), encoding="utf-8")
    predictions = tmp_path / "pred.jsonl"
    result = runner.invoke(app, ["predict", "--task", "nli", "--model", str(out / "best"), "--input", str(subset),
                                 "--output", str(predictions)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["score", "--task", "nli", "--gold", str(subset), "--predictions",
                                 str(predictions), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_examples"] == 200

    # New data has no gold: the same examples without any label field predict the same labels.
    unlabelled = tmp_path / "nli-200-unlabelled.json"
    gold_fields = ("gold_label", "author", "label2", "label3", "label4", "label5")
    unlabelled.write_text(json.dumps([{k: v for k, v in r.items() if k not in gold_fields} for r in rows[:200]],
                                     ensure_ascii=False), encoding="utf-8")
    blind = tmp_path / "blind.jsonl"
    result = runner.invoke(app, ["predict", "--task", "nli", "--model", str(out / "best"), "--input",
                                 str(unlabelled), "--output", str(blind)])
    assert result.exit_code == 0, result.output
    assert blind.read_text(encoding="utf-8") == predictions.read_text(encoding="utf-8")


@pytest.mark.realdata
def test_bad_input_is_a_data_error(nli_model: Path, klue_data_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    common = ["train", "--model", str(nli_model), "--protocol", "local:dev-80-20", "--data-dir",
              str(klue_data_dir), "--output", str(tmp_path / "x")]
    result = runner.invoke(app, [*common, "--task", "nli", "learnig_rate=1"])
    assert isinstance(result.exception, DataError) and "learning_rate" in str(result.exception)
    result = runner.invoke(app, ["predict", "--task", "ynat", "--model", str(tmp_path), "--input",
                                 str(tmp_path / "none.json"), "--output", str(tmp_path / "p.jsonl")])
    assert isinstance(result.exception, DataError)


def test_help_explains_train_and_predict() -> None:
    runner = CliRunner()
    for command in ("train", "predict"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "--model" in result.output


@pytest.mark.realdata
@pytest.mark.slow
def test_report_to_tensorboard_writes_the_learning_curve(nli_model: Path, nli_data: Path, tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    torch.set_num_threads(1)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "--task", "nli", "--model", str(nli_model), "--protocol",
                                      "local:dev-80-20", "--data-dir", str(nli_data), "--output", str(out),
                                      "--report-to", "tensorboard", "max_steps=4", "batch_size=8", "max_len=64",
                                      "eval_steps=2", "logging_steps=1", "progress=false"])
    assert result.exit_code == 0, result.output
    events = list((out / "tracking").rglob("events.out.tfevents.*"))
    assert events, list((out / "tracking").rglob("*"))
    scalars: dict[str, list[int]] = {}
    for path in events:
        accumulator = EventAccumulator(str(path))
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            scalars.setdefault(tag, []).extend(e.step for e in accumulator.Scalars(tag))
    assert sorted(scalars["train/loss"]) == [1, 2, 3, 4]
    assert sorted(scalars["selection/accuracy"]) == [2, 4]
    curve = json.loads((out / "results.json").read_text(encoding="utf-8"))["learning_curve"]
    assert [p["step"] for p in curve if p.get("loss") is not None] == [1, 2, 3, 4]


def test_report_to_refuses_unknown_trackers_before_any_work(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "--task", "nli", "--model", str(tmp_path / "none"), "--output",
                                      str(tmp_path / "run"), "--report-to", "tensorboard,comet"])
    assert isinstance(result.exception, DataError) and "unknown tracker comet" in str(result.exception)


def test_classic_is_the_baseline_never_a_hub_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["train", "--task", "nli", "--model", "classic", "--output", str(tmp_path / "r"),
                                      "learning_rate=1e-3"])
    assert isinstance(result.exception, DataError) and "CPU baseline" in str(result.exception)
    result = CliRunner().invoke(app, ["predict", "--task", "nli", "--model", "classic", "--input", "x.json",
                                      "--output", str(tmp_path / "p.jsonl")])
    assert isinstance(result.exception, DataError) and "not saved" in str(result.exception)
