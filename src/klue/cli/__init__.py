"""The `klue` command.

Each module of this package (other than those starting with `_`) adds its commands through a
`register(app)` function, so a new command group never edits this file. Heavy libraries (torch,
transformers) are imported inside commands, never at start-up: `klue score` must start fast.

Rules every command gets here: an option that takes one value, given twice (`--train A --train B`), is
refused (exit 2) rather than keeping the last; a klue error ends the run with one line on stderr and its
exit code (README, "Exit codes"), credentials in any URL of it blanked.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import sys
from collections import Counter

import typer
from typer.core import TyperCommand

from klue.errors import DataError
from klue.io.redact import redact_text

app = typer.Typer(
    name="klue",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    help="KLUE, the Korean Language Understanding Evaluation benchmark: data, official metrics, "
    "fine-tuning, CPU baselines, benchmarks and reports.",
)


def _register_all() -> None:
    import klue.cli as package

    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not module.name.startswith("_"):
            importlib.import_module(f"klue.cli.{module.name}").register(app)
    _unwrap_help(app)
    _refuse_repeated_options(app)


class OnceOptionsCommand(TyperCommand):
    """A command that refuses an option taking one value given more than once: click would keep the last
    silently (`--train A --train B` trained on B alone). Options declared `list[...]` repeat as before."""

    # typer.Context is what commands get; the base class names typer's vendored click Context.
    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]  # typer's Context (stubs: click's)
        if args and not ctx.resilient_parsing:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))  # the parser consumes its list
            given = Counter(p for p in order if _takes_one_value(p))
            repeated = [(p, n) for p, n in given.items() if n > 1]
            if repeated:
                option, times = repeated[0]
                raise typer.BadParameter(f"given {times} times, but it takes one value: give it once "
                                         f"(`{ctx.command_path} --help` says which options repeat)", ctx,
                                         option)  # type: ignore[arg-type]  # a TyperOption, typed as its base
        return super().parse_args(ctx, args)


def _takes_one_value(param: object) -> bool:
    """An option (not an argument) that is neither repeatable, a flag nor a counter."""
    return (getattr(param, "param_type_name", "") == "option"
            and not any(getattr(param, name, False) for name in ("multiple", "is_flag", "count")))


def _refuse_repeated_options(typer_app: typer.Typer) -> None:
    for command in typer_app.registered_commands:
        if command.cls in (None, TyperCommand):  # a command with a class of its own keeps it
            command.cls = OnceOptionsCommand
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _refuse_repeated_options(group.typer_instance)


def unwrap_paragraphs(text: str) -> str:
    """Join the hard-wrapped lines of each paragraph so help text reflows to the terminal width.

    Typer's rich help keeps the single line breaks of a docstring's later paragraphs, which reads as ragged
    text in a terminal of another width. Lines that start a list item ("- ", "* ", a digit and ". ") or are
    indented stay on their own line.
    """
    paragraphs = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        lines: list[str] = []
        for line in paragraph.split("\n"):
            keeps_break = (not lines or line.startswith((" ", "-", "*", "\b"))
                           or line.split(". ", 1)[0].isdigit())
            if keeps_break:
                lines.append(line)
            else:
                lines[-1] = f"{lines[-1]} {line.strip()}"
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def _unwrap_help(typer_app: typer.Typer) -> None:
    for command in typer_app.registered_commands:
        text = command.help or (command.callback.__doc__ if command.callback else None)
        if text:
            command.help = unwrap_paragraphs(text)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _unwrap_help(group.typer_instance)


_register_all()


def main() -> None:
    try:
        app()
    except DataError as error:
        print(f"klue: error: {redact_text(error.summary(name_errors=False))}", file=sys.stderr)
        sys.exit(error.exit_code)
    except OSError as error:  # the environment, not klue: a file that cannot be read or written, as one line
        where = f"{os.fsdecode(error.filename)}: " if error.filename else ""
        print(f"klue: error: {redact_text(where + str(error.strerror or error))}", file=sys.stderr)
        sys.exit(2)
