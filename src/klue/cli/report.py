"""`klue report`: the leaderboard and the HTML report of a benchmark directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from klue.cli._common import stderr
from klue.errors import DataError


def report(
    directory: Annotated[Path, typer.Argument(help="A `klue benchmark --out` directory (every results.json "
                                              "under it is read).")],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Where to write: report.html (default "
                                                "DIR/report.html), or a .md file with --format md (default: "
                                                "print it).")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="html (one self-contained page with charts) "
                                        "or md (the leaderboard as a Markdown table).")] = "html",
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
    from klue.reporting.leaderboard import build_leaderboard, to_markdown

    if format not in ("html", "md"):
        raise DataError(f"--format takes html or md, not {format!r}")
    target = output or (directory / REPORT_FILE if format == "html" else None)
    if target is not None:
        check_output_file(target, "--output")
    scan = None
    if contamination is not None:
        from klue.reporting.contamination import read_scan

        scan = read_scan(contamination, contamination_by)
    agg = load_aggregate(directory)
    if format == "md":
        text = to_markdown(build_leaderboard(agg, resamples, seed, scan))
        if output is None:
            sys.stdout.write(text)
        else:
            write_text_atomic(output, text)
            stderr.print(f"leaderboard written to {output}")
        return
    assert target is not None  # html always has a target
    write_report(agg, target, resamples, seed, scan)
    stderr.print(f"report written to {target}")


def register(app: typer.Typer) -> None:
    app.command("report")(report)
