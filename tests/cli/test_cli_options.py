"""Options across every command: one that takes one value is refused when given twice (click would keep the
last silently: `--train A --train B` trained on B alone), while `list` options still repeat; `python -m klue`
runs the same command."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import klue
from klue.cli import app

runner = CliRunner()


def _commands(group: object, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    """(command path, click command) for every leaf command of a click group, nested groups included (a typer
    group of one command, `klue leaderboard user add`, is a group only inside its parent: walk the click tree)."""
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        if hasattr(command, "commands"):
            yield from _commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def _one_value_options(command: object) -> list[str]:
    return [max(p.opts, key=len) for p in command.params  # type: ignore[attr-defined]
            if p.param_type_name == "option" and not (p.multiple or p.is_flag or p.count)]


def test_every_one_value_option_given_twice_is_refused_with_exit_2() -> None:
    checked = 0
    cli = typer.main.get_command(app)  # built once: rebuilding it per call takes most of the time
    for path, command in _commands(cli):
        for option in _one_value_options(command):
            # standalone_mode=False: the usage error comes back as an exception, not drawn in a panel
            with pytest.raises(typer.BadParameter) as caught:
                cli.main([*path, option, "1", option, "2"], prog_name="klue", standalone_mode=False)
            error = caught.value
            assert error.exit_code == 2 and "given 2 times, but it takes one value" in error.format_message()
            assert option in error.param.opts, (path, option)  # type: ignore[union-attr]
            checked += 1
    assert checked > 60  # every command's options, not a few


def test_train_with_two_train_files_never_trains_on_one_of_them(tmp_path: Path) -> None:
    result = runner.invoke(app, ["train", "--task", "nli", "--model", "classic", "--train", "a.json", "--train",
                                 "b.json", "--eval-fraction", "0.2", "--output", str(tmp_path / "run")])
    assert result.exit_code == 2 and "'--train': given 2 times" in result.output
    assert not (tmp_path / "run").exists()


def test_list_options_still_repeat() -> None:
    result = runner.invoke(app, ["llm", "-m", "hf:a", "-m", "nonsense", "--out", "x"])
    assert "given 2 times" not in result.output  # the second spec is refused for what it is
    assert "model spec 'nonsense'" in str(result.exception)  # a DataError (exit 2 through main)


def test_python_dash_m_klue_runs_the_cli() -> None:
    env = os.environ | {"PYTHONPATH": str(Path(klue.__file__).parents[1]), "COLUMNS": "200"}  # the klue under test
    result = subprocess.run([sys.executable, "-m", "klue", "tasks"], check=False, capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "nli" in result.stdout and "ynat" in result.stdout
    refused = subprocess.run([sys.executable, "-m", "klue", "score", "--task", "nli", "--task", "sts"],
                             check=False, capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 2 and "given 2 times" in refused.stderr
