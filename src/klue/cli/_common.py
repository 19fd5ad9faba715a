"""Small helpers shared by the CLI modules."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from klue.io.console import make_console

if TYPE_CHECKING:
    from klue.benchmark.cells import FilesChoice
    from klue.errors import Problem
    from klue.metrics.report import MetricMode

# Results and tables go to stdout; progress and messages to stderr, so `--json` output stays clean. Where no
# terminal reads them (a log, a pipe), nothing is wrapped: a path or a number is never cut in two.
stdout = make_console()
stderr = make_console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Stop with one clear sentence on stderr and exit code 2 (bad input or missing data)."""
    print(f"klue: error: {message}", file=sys.stderr)
    sys.exit(code)


SHOWN_WARNINGS = 5  # warnings printed per file, one per line, before the count of the others


def print_warnings(warnings: Sequence[Problem], kept_in: Path | None = None) -> None:
    """Per file read, how many warnings its reader gave and the first ones in full (each names its line or
    guid), then how many more; one file's must not hide another's. `kept_in`: where all of them are written."""
    from rich.markup import escape

    by_file: dict[str, list[Problem]] = {}
    for problem in warnings:
        by_file.setdefault(problem.path, []).append(problem)
    for path, problems in by_file.items():
        stderr.print(f"[yellow]{len(problems):,} warnings[/yellow] while reading {escape(path)}:", highlight=False,
                     markup=True, soft_wrap=True)
        for problem in problems[:SHOWN_WARNINGS]:
            stderr.print(f"  {problem}", markup=False, highlight=False, soft_wrap=True)
        if len(problems) > SHOWN_WARNINGS:
            stderr.print(f"  ... and {len(problems) - SHOWN_WARNINGS:,} more", markup=False, highlight=False)
    if warnings and kept_in is not None:
        stderr.print(f"all {len(warnings):,} warnings are kept in {kept_in}", markup=False, highlight=False,
                     soft_wrap=True)


def metric_mode(mode: str) -> MetricMode:
    """`--mode`, checked: one of the metric modes (DataError naming them otherwise)."""
    from klue.errors import DataError
    from klue.metrics.classification import check_mode
    from klue.metrics.report import METRIC_MODES

    try:
        return check_mode(mode)
    except ValueError:
        raise DataError(f"--mode must be one of {', '.join(METRIC_MODES)}, not {mode!r}") from None


def parse_key_values(items: list[str], option: str) -> dict[str, Any]:
    """`["learning_rate=1e-3", "epochs=2"]` -> dict; values are read as YAML scalars (`fp16=true` is a bool,
    an empty value is null). `option` names the flag or argument for the error."""
    import yaml

    from klue.errors import DataError

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise DataError(f"{option} {item!r} is not key=value")
        out[key.strip()] = yaml.safe_load(value) if value.strip() else None
    return out


# The options `klue llm` and `klue embed` share with the same words (a benchmark directory of one family).
MetricModeOption = Annotated[str, typer.Option("--metric-mode", help="official or corrected metrics.")]
DataDirOption = Annotated[str | None, typer.Option(help="Official KLUE layout (else KLUE_DATA_DIR, else the cache).")]
ExtraDataDirOption = Annotated[str | None, typer.Option(help="klue-partial/, klue-derived/, korean/ (else "
                                                        "KLUE_EXTRA_DATA_DIR).")]
JobsOption = Annotated[int, typer.Option(help="Cells at a time, each in its own process (0: in this process).")]


# Own files (protocol `files`): the same options on `klue train`, `klue benchmark` and `klue llm`.
_FORMATS = ("official, a reader of the task (`klue tasks` lists them: kornli, korsts, conllu, squad, ...), "
            "datasets (a save_to_disk directory, DIR:split for a DatasetDict) or parquet")
TrainFile = Annotated[Path | None, typer.Option(
    "--train", help="Train on this file (any reader of the task; format told from the file). Makes the "
    "protocol `files`, never official; without --selection, checkpoints are selected on a 10% slice of it "
    "kept out by group hash.", show_default=False, rich_help_panel="Own data")]
EvalFile = Annotated[Path | None, typer.Option(
    "--eval", help="Evaluate on this file (with --train).", show_default=False, rich_help_panel="Own data")]
SelectionFile = Annotated[Path | None, typer.Option(
    "--selection", help="Select checkpoints on this file instead of a slice of --train.", show_default=False,
    rich_help_panel="Own data")]
TrainFormat = Annotated[str | None, typer.Option(
    "--train-format", help=f"Format of --train: {_FORMATS}.", show_default=False, rich_help_panel="Own data")]
EvalFormat = Annotated[str | None, typer.Option(
    "--eval-format", help="Format of --eval.", show_default=False, rich_help_panel="Own data")]
SelectionFormat = Annotated[str | None, typer.Option(
    "--selection-format", help="Format of --selection.", show_default=False, rich_help_panel="Own data")]
EvalFraction = Annotated[float | None, typer.Option(
    "--eval-fraction", help="Without --eval: split this fraction of --train off for evaluation, by group hash "
    "(no premise, dialogue or context straddles the split).", show_default=False, rich_help_panel="Own data")]


OWN_DATA_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("train_file", TrainFile), ("eval_file", EvalFile), ("selection_file", SelectionFile),
    ("train_format", TrainFormat), ("eval_format", EvalFormat), ("selection_format", SelectionFormat),
    ("eval_fraction", EvalFraction))


def with_own_data(command: Callable[..., None]) -> Callable[..., None]:
    """`command` taking the own-data options (--train, --eval, --selection, their formats, --eval-fraction)
    in place of its parameter `files`, which receives what they make (`files_choice`: None without --train).
    The options are declared once, here, for every command that reads the user's own files."""
    signature = inspect.signature(command)
    parameters = [_evaluated(p, command.__globals__) for p in signature.parameters.values() if p.name != "files"]
    at = list(signature.parameters).index("files")
    own = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=annotation)
           for name, annotation in OWN_DATA_OPTIONS]
    parameters[at:at] = own

    @functools.wraps(command)
    def with_files(**values: Any) -> None:
        own_values = [values.pop(name) for name, _ in OWN_DATA_OPTIONS]
        command(**values, files=files_choice(*own_values))

    # typer reads the options from the signature and its annotations, which now name the own-data options
    with_files.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]  # typeshed: no __signature__ on functions
    with_files.__annotations__ = {p.name: p.annotation for p in parameters}
    return with_files


def _evaluated(parameter: inspect.Parameter, namespace: dict[str, Any]) -> inspect.Parameter:
    """`parameter` with its annotation evaluated in the command module's namespace, as
    `inspect.signature(eval_str=True)` would (which would also evaluate `files`' type, imported only for
    type checking)."""
    if not isinstance(parameter.annotation, str):
        return parameter
    return parameter.replace(annotation=eval(parameter.annotation, namespace))


def files_choice(train: Path | None, eval: Path | None, selection: Path | None, train_format: str | None,
                 eval_format: str | None, selection_format: str | None,
                 eval_fraction: float | None) -> FilesChoice | None:
    """The `files` protocol's options, or None when --train is not given (then none of them may be)."""
    from klue.benchmark.cells import FilesChoice
    from klue.errors import DataError

    if train is None:
        given = [name for name, value in (("--eval", eval), ("--selection", selection), ("--eval-format", eval_format),
                                          ("--selection-format", selection_format), ("--train-format", train_format),
                                          ("--eval-fraction", eval_fraction)) if value is not None]
        if given:
            raise DataError(f"{', '.join(given)} need --train FILE (protocol `files`)")
        return None
    return FilesChoice(str(train), str(eval) if eval else None, str(selection) if selection else None,
                       train_format, eval_format, selection_format, eval_fraction)
