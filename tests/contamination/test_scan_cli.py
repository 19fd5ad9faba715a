"""`klue contamination scan` through the CLI: the outputs, the options, exit 2 with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scan_helpers import ARTICLE, OTHER, SECOND, SHORT, corpus_lines, write_jsonl
from typer.testing import CliRunner

from cli_in_process import klue_in_process
from klue.cli import app
from klue.errors import DataError

runner = CliRunner()


def kornli(path: Path) -> Path:
    rows = [("sentence1", "sentence2", "gold_label"), (ARTICLE, SHORT, "entailment"), (SECOND, SHORT, "neutral"),
            (OTHER, SHORT, "contradiction")]
    path.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_scan_writes_examples_and_summary(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", corpus_lines(ARTICLE, f"{SECOND} {SHORT} neutral"))
    out = tmp_path / "out"
    result = runner.invoke(app, ["contamination", "scan", "--corpus", str(corpus), "--tasks", "nli", "--eval",
                                 str(kornli(tmp_path / "xnli.dev.ko.tsv")), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "nli" / "examples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["dirty_input"], r["dirty_with_answer"]) for r in rows] == [(True, False), (True, True), (False, False)]
    assert set(rows[0]) >= {"guid", "dirty_input", "dirty_with_answer", "longest_match", "covered", "first_match"}
    assert rows[0]["first_match"]["file"] == str(corpus) and rows[0]["first_match"]["line"] == 3
    assert rows[2]["first_match"] is None and rows[2]["covered"] == 0.0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["tasks"]["nli"]["dirty_input"] == 2 and summary["tasks"]["nli"]["dirty_with_answer"] == 1
    assert summary["settings"] | {"unit": "eojeol", "n": 8, "normalise": "klue"} == summary["settings"]
    assert summary["corpus"][0]["digest"].startswith("sha256-blocks-4MiB:")
    assert summary["corpus"][0]["documents"] == 5
    assert rows[0]["guid"] in result.output  # every dirty example is named on the console too


def test_char_unit_from_the_cli(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [ARTICLE.replace(" ", "")])
    out = tmp_path / "out"
    args = ["contamination", "scan", "--corpus", str(corpus), "--tasks", "nli", "--eval",
            str(kornli(tmp_path / "xnli.dev.ko.tsv")), "--out", str(out)]
    assert runner.invoke(app, [*args, "--unit", "char"]).exit_code == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["settings"]["n"] == 25 and summary["tasks"]["nli"]["dirty_input"] == 1


def test_an_unreadable_corpus_exits_2_and_nothing_is_written(tmp_path: Path) -> None:
    bad = tmp_path / "corpus.txt"
    bad.write_bytes("한국어".encode("utf-16"))
    out = tmp_path / "out"
    # through klue.cli.main in this process (tests/cli_in_process.py), the entry point that turns DataError into exit 2
    done = klue_in_process("contamination", "scan", "--corpus", str(bad), "--tasks", "nli", "--eval",
                           str(kornli(tmp_path / "xnli.dev.ko.tsv")), "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert f"{bad}:line 1" in done.stderr and "UTF-16" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("option", [["--unit", "morpheme"], ["--executor", "dask"], ["--workers", "0"],
                                    ["--protocol", "heldout"]])
def test_a_bad_option_is_refused_before_anything_is_written(tmp_path: Path, option: list[str]) -> None:
    corpus = write_jsonl(tmp_path / "c.jsonl", [ARTICLE])
    out = tmp_path / "out"
    result = runner.invoke(app, ["contamination", "scan", "--corpus", str(corpus), "--tasks", "nli", "--eval",
                                 str(kornli(tmp_path / "xnli.dev.ko.tsv")), "--out", str(out), *option])
    assert isinstance(result.exception, DataError) and option[0] in str(result.exception)
    assert not out.exists()
