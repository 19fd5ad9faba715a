"""The own-data options (--train, --eval, --selection, their formats, --eval-fraction) are declared once
(klue.cli._common.with_own_data) and are the same on every command that takes them."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.testing import CliRunner

from klue.cli import app
from klue.cli._common import OWN_DATA_OPTIONS

COMMANDS = ("train", "llm", "benchmark")
OWN = ("--train", "--eval", "--selection", "--train-format", "--eval-format", "--selection-format", "--eval-fraction")


def _options(name: str) -> dict[str, tuple[str, str | None, str | None]]:
    """Each option of the command as typer built it: (parameter name, help, help panel)."""
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {opt: (param.name, param.help, param.rich_help_panel)
            for param in command.params if param.param_type_name == "option" for opt in param.opts}


def test_every_command_has_the_same_own_data_options() -> None:
    assert [name for name, _ in OWN_DATA_OPTIONS] == ["train_file", "eval_file", "selection_file", "train_format",
                                                      "eval_format", "selection_format", "eval_fraction"]
    declared = [_options(name) for name in COMMANDS]
    for options in declared:
        assert set(OWN) <= set(options) and "--files" not in options
        assert {options[o][2] for o in OWN} == {"Own data"}
    assert all({o: d[o] for o in OWN} == {o: declared[0][o] for o in OWN} for d in declared[1:])


def test_an_own_data_option_without_train_is_refused_by_each_command(tmp_path: Path) -> None:
    eval_file = tmp_path / "eval.tsv"
    eval_file.write_text("sentence1\tsentence2\tgold_label\n", encoding="utf-8")
    required = {"train": ["--task", "nli", "--model", "classic"], "llm": ["--model", "hf:x", "--out", str(tmp_path)],
                "benchmark": ["--model", "classic", "--out", str(tmp_path)]}
    for name in COMMANDS:
        run = CliRunner().invoke(app, [name, *required[name], "--eval", str(eval_file), "--eval-format", "kornli"])
        assert isinstance(run.exception, Exception) and "--eval, --eval-format need --train FILE" in str(
            run.exception), (name, run.output)
