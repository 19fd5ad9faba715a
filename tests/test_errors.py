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
