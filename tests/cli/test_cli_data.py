"""`klue data validate`, `klue data summary` and `klue tasks` through the real CLI app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from klue import registry
from klue.cli import app

runner = CliRunner()
NER_HEADER = "## a\n## b\n## c\n## d\n## e\tf\n"


def test_data_app_is_mounted_and_importable() -> None:
    from klue.cli.data import data_app

    names = {c.name for c in data_app.registered_commands}
    assert {"validate", "summary", "export"} <= names
    result = runner.invoke(app, ["data", "--help"])
    assert result.exit_code == 0 and "validate" in result.output


def test_validate_bad_file_exits_2_and_lists_all_problems(tmp_path: Path) -> None:
    bad = tmp_path / "klue-ner-v1.1_dev.tsv"
    bad.write_text(NER_HEADER + "## s1\t가나\n가\tB-XX\n나\n\n## s2\t다\n다다\tO\n\n", encoding="utf-8")
    result = runner.invoke(app, ["data", "validate", str(bad)])
    assert result.exit_code == 2
    for line in ("line 7", "line 8", "line 11"):
        assert f"{bad}:{line}: error" in result.output
    assert "3 errors" in result.output


def test_validate_json_and_task_option(tmp_path: Path) -> None:
    path = tmp_path / "anything.tsv"
    path.write_text("## a\n## b\n## c\n## d\n## e\n## s1\t가\n1\t가\t가\tNNG\t0\tNP\n\n", encoding="utf-8")
    result = runner.invoke(app, ["data", "validate", str(path), "--task", "dp", "--json"])
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.output)
    assert report["task"] == "dp" and report["records"] == 1 and report["errors"] == 0
    result = runner.invoke(app, ["data", "validate", str(path)])
    assert result.exit_code == 2 and "pass --task" in result.output
    result = runner.invoke(app, ["data", "validate", str(path), "--task", "nope"])
    assert result.exit_code == 2


def test_validate_real_files_clean(klue_data_dir: Path, shared_data_dir: Path) -> None:
    files = [klue_data_dir / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv",
             klue_data_dir / "klue-dp-v1.1" / "klue-dp-v1.1_dev.tsv",
             shared_data_dir / "korean" / "ud-korean" / "ko_gsd-ud-dev.conllu"]
    result = runner.invoke(app, ["data", "validate", *map(str, files)])
    assert result.exit_code == 0, result.output
    assert "5,000 records, 0 errors" in result.output and "2,000 records, 0 errors" in result.output


def test_summary_json(tmp_path: Path, klue_data_dir: Path, shared_data_dir: Path) -> None:
    result = runner.invoke(app, ["data", "summary", "--data-dir", str(klue_data_dir), "--extra-data-dir",
                                 str(shared_data_dir), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    by_task = {t["task"]: t for t in summary["tasks"]}
    ner_dev = next(f for f in by_task["ner"]["files"] if f["role"] == "dev")
    assert ner_dev["present"] and ner_dev["blob_matches"] and ner_dev["count"] == 5000
    ner_train = next(f for f in by_task["ner"]["files"] if f["role"] == "train")
    if not ner_train["present"]:
        assert any("klue data download ner" in t for t in by_task["ner"]["todo"])
    assert "local:ner-train5000" in by_task["ner"]["protocols_available"]
    assert "local:ud-gsd" in by_task["dp"]["protocols_available"]


def test_summary_missing_everything(tmp_path: Path) -> None:
    result = runner.invoke(app, ["data", "summary", "--data-dir", str(tmp_path), "--no-count"],
                           env={"KLUE_EXTRA_DATA_DIR": ""})
    assert result.exit_code == 0, result.output
    assert "missing" in result.output and "klue data download" in result.output


def test_tasks_lists_the_registry() -> None:
    result = runner.invoke(app, ["tasks", "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    assert [t["name"] for t in listed] == [t.name for t in registry.all_tasks()]
    ner = next(t for t in listed if t["name"] == "ner")
    assert ner["labels"][-1] == "O" and ner["metrics"][0] == "entity_macro_f1"
    assert "local:ner-train5000" in ner["protocols"] and ner["files"][1]["size"] == 2635045
    assert all(t["package"] == f"klue.tasks.{t['name']}" and t["label"] for t in listed)
    table = runner.invoke(app, ["tasks"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "Named Entity Recognition" in table.output


@pytest.mark.parametrize("command", [["data", "validate", "--help"], ["data", "summary", "--help"],
                                     ["data", "export", "--help"], ["tasks", "--help"]])
def test_help(command: list[str]) -> None:
    result = runner.invoke(app, command)
    assert result.exit_code == 0 and len(result.output) > 100


def test_export_writes_a_datasets_copy_with_official_label_names(klue_data_dir: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    if not (klue_data_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json").is_file():
        pytest.skip("the official NLI dev file is absent")
    out = tmp_path / "nli-copy"
    result = runner.invoke(app, ["data", "export", "--task", "nli", "--format", "hf", "--out", str(out),
                                 "--data-dir", str(klue_data_dir), "--json"])
    assert result.exit_code == 0, result.output
    written = json.loads(result.output)
    assert [s["split"] for s in written["splits"]] == ["validation"] and written["splits"][0]["n_records"] == 3000
    loaded = datasets.load_from_disk(str(out))
    assert loaded["validation"].features["label"].names == ["entailment", "contradiction", "neutral"]
    assert "official dev file" in loaded["validation"].info.description
    again = runner.invoke(app, ["data", "export", "-t", "nli", "-o", str(out), "--data-dir", str(klue_data_dir)])
    assert again.exit_code == 0 and "validation: 3,000 records" in again.output  # an earlier export is replaced


def test_export_refusals_exit_2_with_one_line(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    cases = [(["--task", "nli", "--format", "csv"], "--format must be one of hf, not 'csv'"),
             (["--task", "nli", "--data-dir", str(tmp_path / "empty")], "none of the official nli train and dev"),
             (["--task", "nope"], "unknown task 'nope'")]
    for extra, message in cases:
        args = ["data", "export", "--out", str(tmp_path / "out"), *extra]
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and message in result.output, result.output
    nli_dir = tmp_path / "root" / "klue-nli-v1.1"
    nli_dir.mkdir(parents=True)
    (nli_dir / "klue-nli-v1.1_dev.json").write_text(json.dumps([{
        "guid": "g", "source": "s", "premise": "p", "hypothesis": "h", "gold_label": "neutral", "author": "neutral",
        "label2": "neutral", "label3": "neutral", "label4": "neutral", "label5": "neutral"}]), encoding="utf-8")
    result = runner.invoke(app, ["data", "export", "-t", "nli", "-o", str(mine), "--data-dir", str(tmp_path / "root")])
    assert result.exit_code == 2 and "is not a `datasets` directory" in result.output
    assert (mine / "notes.txt").read_text() == "keep"
