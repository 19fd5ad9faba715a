"""`klue benchmark`: every task x model x seed cell, resumable; results under --out."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from klue.cli._common import (
    EvalFile,
    EvalFormat,
    EvalFraction,
    SelectionFile,
    SelectionFormat,
    TrainFile,
    TrainFormat,
    files_choice,
    metric_mode,
    parse_key_values,
    stderr,
)
from klue.errors import DataError


def parse_seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        raise DataError(f"--seeds takes comma-separated integers, not {text!r}") from None
    if not seeds:
        raise DataError("--seeds is empty")
    return seeds


def check_protocol(protocol: str) -> str:
    from klue.benchmark.cells import AUTO_PROTOCOL, HF_PROTOCOL
    from klue.protocols import HELDOUT, OFFICIAL

    if protocol in (AUTO_PROTOCOL, OFFICIAL, HELDOUT, HF_PROTOCOL) or protocol.startswith("local:"):
        return protocol
    raise DataError(f"--protocol takes auto, official, heldout, hf or local:<name>, not {protocol!r}; for your own "
                    "files use --train FILE --eval FILE (protocol `files`)")


def resolve_tasks(names: str) -> tuple[str, ...]:
    from klue import registry

    return tuple(t.name for t in registry.resolve(names))


def print_leaderboard(out: Path) -> None:
    from klue.reporting.aggregate import load_aggregate
    from klue.reporting.leaderboard import build_leaderboard, print_rich

    print_rich(build_leaderboard(load_aggregate(out)))


def benchmark(
    model: Annotated[list[str], typer.Option("--model", "-m", help="A model: `classic` (the CPU baselines), "
                                             "or anything `klue train` takes (hub name or local path). "
                                             "Repeat for several.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Benchmark directory: "
                                      "<out>/<task>/<model>/seed<k>/results.json.")],
    tasks: Annotated[str, typer.Option(help="`all` or comma-separated task names (ynat,nli,...).")] = "all",
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds, one cell per seed.")] = "1",
    protocol: Annotated[str, typer.Option(help="auto (official when the official train file is present, "
                                          "else the task's local default), official, heldout, local:<name> or hf (the Hugging Face klue/klue "
                                          "copy). --train FILE makes it `files`.")
                        ] = "auto",
    mode: Annotated[str, typer.Option(help="Metric mode: official (the KLUE code, quirks included) or "
                                      "corrected.")] = "official",
    jobs: Annotated[int | None, typer.Option(help="Cells at a time, each in its own process (default: one "
                                             "per GPU, else 1; 0 = in this process, for debugging).")] = None,
    override: Annotated[list[str] | None, typer.Option(help="Training override key=value for encoder "
                                                       "models (repeatable).")] = None,
    data_dir: Annotated[str | None, typer.Option(help="Official KLUE layout (else KLUE_DATA_DIR, else the "
                                                 "cache).")] = None,
    extra_data_dir: Annotated[str | None, typer.Option(help="Directory holding klue-partial/, klue-derived/ "
                                                       "and korean/ (else KLUE_EXTRA_DATA_DIR).")] = None,
    train_file: TrainFile = None,
    eval_file: EvalFile = None,
    selection_file: SelectionFile = None,
    train_format: TrainFormat = None,
    eval_format: EvalFormat = None,
    selection_format: SelectionFormat = None,
    eval_fraction: EvalFraction = None,
    report_to: Annotated[str | None, typer.Option(
        "--report-to", help="Encoder cells also send their learning curves to trackers (comma list): "
        "tensorboard, mlflow, wandb; files under each cell's tracking/.", show_default=False)] = None,
) -> None:
    """Run train, predict and score for every task x model x seed; skip cells already done.

    Each cell writes results.json and predictions.jsonl; a failing cell is recorded with its error and
    the others go on. Interrupted? Run the same command again: finished cells are kept.
    Then: `klue report OUT -o report.html`.
    """
    from klue.benchmark.runner import BenchmarkPlan, run_benchmark
    from klue.reporting.html import REPORT_FILE

    overrides = parse_key_values(override or [], "--override")
    if report_to is not None:
        from klue.training.tracking import parse_report_to

        parse_report_to(report_to)  # refused before any cell runs
        overrides["report_to"] = report_to
    files = files_choice(train_file, eval_file, selection_file, train_format, eval_format, selection_format,
                         eval_fraction)
    plan = BenchmarkPlan(resolve_tasks(tasks), tuple(model), parse_seeds(seeds), out, check_protocol(protocol),
                         metric_mode(mode), data_dir, extra_data_dir, tuple(overrides.items()), files)
    summary = run_benchmark(plan, jobs=jobs, console=stderr)
    print_leaderboard(out)
    ran = len(summary.outcomes)
    stderr.print(f"{ran} cells run, {len(summary.skipped)} already done, {len(summary.failed)} failed; "
                 f"results in {out}. Report: klue report {out} -o {out / REPORT_FILE}")
    if summary.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("benchmark")(benchmark)
