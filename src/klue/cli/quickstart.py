"""`klue quickstart`: find the data, run the CPU baselines on every task, print the leaderboard, write
the HTML report."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from klue.cli._common import stderr


def tasks_with_data(roots: Any) -> dict[str, list[str]]:
    """Task name -> the protocols whose files are present under `roots`."""
    from klue import protocols, registry

    return {t.name: protocols.available(t, roots) for t in registry.all_tasks()}


def ensure_data(data_dir: str | None, extra_data_dir: str | None) -> Any:
    """The data roots, after `klue data download` when no task has any data (raises its DataError)."""
    from klue.io.locate import roots_from

    roots = roots_from(data_dir, extra_data_dir)
    found = {name: p for name, p in tasks_with_data(roots).items() if p}
    if found:
        stderr.print(f"data: {roots.klue}" + (f" and {roots.extra}" if roots.extra else "")
                     + f" — {len(found)} tasks have data")
        return roots
    stderr.print(f"no KLUE data under {roots.klue}; trying `klue data download` ...")
    from klue import registry
    from klue.errors import DataError
    from klue.io import download
    from klue.io.progress import download_bars

    progress = download_bars(stderr)
    try:
        with progress:
            report = download.download(registry.all_tasks(), roots.klue, progress=progress)
    except download.HostUnreachableError:  # no network: the downloader's one sentence, exit 3
        raise
    except download.DownloadError as error:
        raise DataError(str(error), roots.klue) from None
    placed = sum(o.ok for o in report.outcomes)
    stderr.print(f"downloaded {placed} of {len(report.outcomes)} official files into {roots.klue}")
    return roots_from(data_dir, extra_data_dir)


def quickstart(
    out: Annotated[Path, typer.Option("--out", "-o", help="Benchmark directory (resumable).")] = Path(
        "runs/quickstart"),
    jobs: Annotated[int | None, typer.Option(help="Cells at a time (default: the CPU count, at most 4).")
                    ] = None,
    tasks: Annotated[str, typer.Option(help="`all` or comma-separated task names.")] = "all",
    seed: Annotated[int, typer.Option(help="The one seed to run.")] = 1,
    data_dir: Annotated[str | None, typer.Option(help="Official KLUE layout (else KLUE_DATA_DIR, else the "
                                                 "cache).")] = None,
    extra_data_dir: Annotated[str | None, typer.Option(help="Directory holding klue-partial/, klue-derived/ "
                                                       "and korean/ (else KLUE_EXTRA_DATA_DIR).")] = None,
) -> None:
    """The CPU baselines on every KLUE task, one seed: leaderboard on screen, HTML report on disk.

    Finds the data (--data-dir / KLUE_DATA_DIR / cache, downloading when there is none), runs
    `klue benchmark --model classic --protocol auto`, then `klue report`. Tasks without data or without
    a baseline show up as failed cells with the reason. Run it again to resume.
    """
    from klue.benchmark.cells import AUTO_PROTOCOL
    from klue.benchmark.runner import BenchmarkPlan, run_benchmark
    from klue.cli.benchmark import resolve_tasks
    from klue.metrics.report import OFFICIAL_MODE
    from klue.reporting.aggregate import load_aggregate
    from klue.reporting.html import REPORT_FILE, write_report
    from klue.reporting.leaderboard import build_leaderboard, print_rich
    from klue.results import CLASSIC

    start = time.perf_counter()
    ensure_data(data_dir, extra_data_dir)
    workers = jobs if jobs is not None else max(1, min(4, os.cpu_count() or 1))
    plan = BenchmarkPlan(resolve_tasks(tasks), (CLASSIC,), (seed,), out, AUTO_PROTOCOL, OFFICIAL_MODE, data_dir,
                         extra_data_dir)
    summary = run_benchmark(plan, jobs=workers, console=stderr)
    agg = load_aggregate(out)
    print_rich(build_leaderboard(agg))
    report = out / REPORT_FILE
    write_report(agg, report)
    for outcome in summary.failed:
        stderr.print(f"[red]✗[/red] {outcome.spec.task}: {outcome.error}", highlight=False)
    stderr.print(f"{len(plan.cells()) - len(agg.failures)} of {len(plan.cells())} tasks scored in "
                 f"{time.perf_counter() - start:.0f} s. Report: {report.resolve().as_uri()}")


def register(app: typer.Typer) -> None:
    app.command("quickstart")(quickstart)
