"""The `klue` command.

Each module of this package (other than those starting with `_`) adds its commands through a
`register(app)` function, so a new command group never edits this file. Heavy libraries (torch,
transformers) are imported inside commands, never at start-up: `klue score` must start fast.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from klue.errors import DataError

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


_register_all()


def main() -> None:
    try:
        app()
    except DataError as error:
        print(f"klue: error: {error.summary()}", file=sys.stderr)
        sys.exit(2)
