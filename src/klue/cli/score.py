"""`klue score`: the official KLUE metrics of a prediction file against a gold file."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from klue.cli._common import metric_mode, print_warnings, stderr, stdout

if TYPE_CHECKING:
    from klue.scoring import ScoreResult


def register(app: typer.Typer) -> None:
    app.command("score")(score_command)


def score_command(
    task_name: Annotated[str, typer.Option("--task", help="Task name or alias, e.g. ner or klue-ner "
                                           "(`klue tasks` lists them).", show_default=False)],
    gold: Annotated[Path, typer.Option("--gold", help="Gold file in the official format, or in the format "
                                       "named by --gold-format or told by its name.", show_default=False)],
    predictions: Annotated[Path, typer.Option("--predictions", help="Prediction file: JSON Lines, one object "
                                              "per example with its guid (docs/tasks.md, \"Prediction files\"); also a JSON list in "
                                              "gold order or a {guid: item} map; .gz accepted.",
                                              show_default=False)],
    mode: Annotated[str, typer.Option("--mode", help="official: reproduce the KLUE baseline metric code, "
                                      "quirks included; corrected: fix the quirks that are bugs "
                                      "(docs/metrics.md).")] = "official",
    relation_list: Annotated[Path | None, typer.Option(
        "--relation-list", help="The label order that integer labels and `probs` use, for tasks with a "
        "label-order file (relation_list.json); default the official order.")] = None,
    gold_format: Annotated[str | None, typer.Option(
        "--gold-format", help="Read --gold with another reader of the task (`klue tasks` lists each task's "
        "readers); default: told from the file's extension, name or folder as `klue data validate` tells it "
        "(`.conllu`, `korsts/`), else the official format.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object: task, mode, n_examples, "
                                          "every metric at the top level, breakdowns under their names.")] = False,
) -> None:
    """Score PREDICTIONS against GOLD with the official KLUE metrics of TASK (0-100 scale).

    Every gold example needs exactly one prediction. Missing, duplicate or unknown guids, labels outside
    the task's label set, tag or head lists of the wrong length, heads outside the sentence, `probs` that
    are not probabilities and non-finite numbers are errors naming the offending guids (exit code 2).
    Labels in JSON Lines must be names; in the list and map shapes an integer label indexes the official
    label order.
    """
    from klue import registry
    from klue.scoring import result_to_json, score_files
    from klue.tasks.base import OFFICIAL_READER
    from klue.tasks.reading import infer_format

    task = registry.get(task_name)
    checked_mode = metric_mode(mode)
    fmt = infer_format(task, gold) if gold_format is None else gold_format
    if gold_format is None and fmt != OFFICIAL_READER:
        stderr.print(f"reading --gold as {task.name} {fmt!r} (told from the file; --gold-format to choose)",
                     markup=False, highlight=False)
    result = score_files(task, gold, predictions, checked_mode, relation_list, fmt)
    print_warnings(result.warnings)
    if as_json:
        print(json.dumps(result_to_json(result), ensure_ascii=False, indent=2, allow_nan=False))
        return
    _print_table(result)


def _number(value: float) -> str:
    return "undefined" if not math.isfinite(value) else f"{value:.4f}"


def _print_table(result: ScoreResult) -> None:
    from rich.table import Table

    report = result.report
    table = Table(title=f"{result.task}: {report.n_examples:,} examples, {report.mode} metrics",
                  title_justify="left")
    table.add_column("metric")
    table.add_column("score", justify="right")
    for name, value in report.scores.items():
        table.add_row(name, _number(value))
    stdout.print(table)
    for name, values in report.breakdown.items():
        if not values:
            continue
        breakdown = Table(title=name, title_justify="left")
        breakdown.add_column("")
        breakdown.add_column("value", justify="right")
        for key, value in values.items():
            breakdown.add_row(key, _number(value))
        stdout.print(breakdown)
    if report.confusion is not None:
        confusion = Table(title="confusion (rows gold, columns predicted)", title_justify="left")
        confusion.add_column("")
        for label in report.confusion.labels:
            confusion.add_column(label, justify="right")
        for label, row in zip(report.confusion.labels, report.confusion.counts):
            confusion.add_row(label, *(str(v) for v in row))
        stdout.print(confusion)
