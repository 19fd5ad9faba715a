"""How problems read: with their file and place, and without an empty place when they concern an option."""

from __future__ import annotations

from klue.errors import DataError, Problem, ProblemLog


def test_a_file_problem_names_the_file_the_place_and_the_severity() -> None:
    found = ProblemLog("data/train.json")
    found.error("$[3].label", "unknown label 'x'")
    found.warning("line 9", "odd spacing")
    error = DataError(found.problems)
    assert str(error) == "data/train.json:$[3].label: error: unknown label 'x'"
    assert str(Problem("data/train.json", "", "empty file")) == "data/train.json: error: empty file"


def test_an_option_problem_is_its_message_alone() -> None:
    # The CLI prints "klue: error: <summary>": a pathless problem must not add ": error:" again.
    assert str(DataError("unknown head option head.x")) == "unknown head option head.x"
    assert str(Problem("", "", "checkpoint is old", "warning")) == "warning: checkpoint is old"
    assert str(DataError("model dir has no config.json", "runs/x")) == "runs/x: error: model dir has no config.json"


def test_the_cli_line_says_error_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys

    bad = tmp_path / "gold.jsonl"
    bad.write_text("[", encoding="utf-8")
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("", encoding="utf-8")
    found = ProblemLog(str(bad))
    found.error("line 20", "invalid JSON")
    assert DataError(found.problems).summary(name_errors=False) == f"{bad}:line 20: invalid JSON"
    run = subprocess.run([sys.executable, "-c", "from klue.cli import main; main()", "score", "--task", "nli",
                          "--gold", str(bad), "--predictions", str(predictions)], capture_output=True, text=True, check=False)
    assert run.returncode == 2
    assert run.stderr.startswith(f"klue: error: {bad}:")
    assert run.stderr.count("error:") == 1, run.stderr
