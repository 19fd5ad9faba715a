"""Every command explains itself, and docstring paragraphs reflow to the terminal width."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from klue.cli import app, unwrap_paragraphs

runner = CliRunner()


def _command_paths(typer_app: typer.Typer, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for command in typer_app.registered_commands:
        name = command.name or command.callback.__name__.removesuffix("_command").replace("_", "-")
        paths.append((*prefix, name))
    for group in typer_app.registered_groups:
        paths.append((*prefix, group.name))
        paths.extend(_command_paths(group.typer_instance, (*prefix, group.name)))
    return paths


def test_unwrap_joins_wrapped_lines_and_keeps_lists() -> None:
    text = """First line.

    A wrapped
    paragraph here.
    - item one
    - item two
    1. numbered
    """
    assert unwrap_paragraphs(text) == "First line.\n\nA wrapped paragraph here.\n- item one\n- item two\n1. numbered"


def test_every_command_has_help_that_exits_zero() -> None:
    paths = _command_paths(app)
    assert ("score",) in paths and ("data", "validate") in paths
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
        assert result.exit_code == 0, (path, result.output)
        assert "Usage: klue " + " ".join(path) in result.output, path
