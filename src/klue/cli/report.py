"""`klue report`: the leaderboard and the HTML report of a benchmark directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from klue.cli._common import stderr
from klue.errors import DataError

if TYPE_CHECKING:
    from klue.reporting.aggregate import Aggregate
    from klue.reporting.contamination import Scan

# html: the page; md: the Markdown leaderboard; the rest for other tools (klue.reporting.exports)
FORMATS = ("html", "md", "model-index", "json", "csv")


def report(
    directory: Annotated[Path, typer.Argument(help="A `klue benchmark --out` directory (every results.json "
                                              "under it is read).")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Where to write: report.html (default "
                                                "DIR/report.html), or the file of any other --format (default: "
                                                "print it).")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="html (one self-contained page with charts), "
                                        "md (the leaderboard as a Markdown table), model-index (a Hugging Face "
                                        "model card's `model-index` YAML for each model: docs/results-schema.md), json "
                                        "or csv (the leaderboard's numbers for other tools).")] = "html",
    resamples: Annotated[int, typer.Option("--resamples", min=0, help="Bootstrap resamples behind the 95% "
                                           "intervals and the tests between neighbouring rows (0: no "
                                           "intervals).")] = 500,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling (the same seed, the same "
                                      "intervals).")] = 0,
    contamination: Annotated[Path | None, typer.Option(
        "--contamination", help="A `klue contamination scan --out` directory: each row's score on the examples "
        "the scan found clean, with its interval, beside the full score, and whether they differ.",
        show_default=False)] = None,
    contamination_by: Annotated[str, typer.Option(
        "--contamination-by", help="Which dirtiness leaves an example out of the clean subset: input (its "
        "input found in the corpus) or with_answer (its input and answer found together).")] = "input",
) -> None:
    """Build the leaderboard and report from a benchmark directory.

    The HTML page holds the leaderboard, charts against the paper, confusion matrices, per-type scores,
    learning curves and the provenance of every number; it needs no network. Scores carry 95% bootstrap
    intervals from each run's per-example statistics, and a `*` marks a row significantly above the next
    (docs/statistics.md).
    """
    from klue.io.atomic import write_text_atomic
    from klue.io.output import check_output_file
    from klue.reporting.aggregate import load_aggregate
    from klue.reporting.html import REPORT_FILE, write_report

    if format not in FORMATS:
        raise DataError(f"--format takes {', '.join(FORMATS)}, not {format!r}")
    target = output or (directory / REPORT_FILE if format == "html" else None)
    if target is not None:
        check_output_file(target, "--output")
    scan = None
    if contamination is not None:
        from klue.reporting.contamination import read_scan

        scan = read_scan(contamination, contamination_by)
    agg = load_aggregate(directory)
    if format != "html":
        text = _text(format, agg, resamples, seed, scan)
        if output is None:
            sys.stdout.write(text)
        else:
            write_text_atomic(output, text)
            stderr.print(f"{'model-index' if format == 'model-index' else 'leaderboard'} written to {output}")
        return
    assert target is not None  # html always has a target
    write_report(agg, target, resamples, seed, scan)
    stderr.print(f"report written to {target}")


def _text(format: str, agg: Aggregate, resamples: int, seed: int, scan: Scan | None) -> str:
    """The leaderboard of `agg` as text in `format` (any but html); the clean-subset scores of `scan` go into
    the Markdown leaderboard."""
    from klue.reporting.exports import leaderboard_csv, leaderboard_json, model_index_text
    from klue.reporting.leaderboard import build_leaderboard, to_markdown

    if format == "model-index":  # the means as measured: no resampling needed
        return model_index_text(agg)
    board = build_leaderboard(agg, resamples, seed, scan if format == "md" else None)
    if format == "md":
        return to_markdown(board)
    return leaderboard_json(agg, board) if format == "json" else leaderboard_csv(agg, board)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
