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
    assert {"validate", "summary"} <= names
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
                                     ["tasks", "--help"]])
def test_help(command: list[str]) -> None:
    result = runner.invoke(app, command)
    assert result.exit_code == 0 and len(result.output) > 100
