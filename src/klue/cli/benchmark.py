"""`klue benchmark`: every task x model x seed cell, resumable; results under --out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from klue.cli._common import metric_mode, parse_key_values, stderr, with_own_data
from klue.errors import DataError

if TYPE_CHECKING:
    from klue.benchmark.cells import FilesChoice
    from klue.benchmark.ray_executor import RayOptions


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


EXECUTORS = ("local", "ray")
RAY_PANEL = "Ray executor (docs/benchmark.md)"


def ray_options(executor: str, ray_address: str | None, cpus_per_cell: float | None,
                gpus_per_cell: float | None) -> RayOptions | None:
    """None for the local executor (whose options these are not), else the Ray executor's settings."""
    from klue.benchmark.ray_executor import RayOptions

    if executor not in EXECUTORS:
        raise DataError(f"--executor takes {' or '.join(EXECUTORS)}, not {executor!r}")
    if executor == "local":
        given = [name for name, value in (("--ray-address", ray_address), ("--cpus-per-cell", cpus_per_cell),
                                          ("--gpus-per-cell", gpus_per_cell)) if value is not None]
        if given:
            raise DataError(f"{', '.join(given)} go with --executor ray")
        return None
    return RayOptions(ray_address, 1.0 if cpus_per_cell is None else cpus_per_cell, gpus_per_cell)


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
                                             "per GPU, else 1; 0 = in this process, for debugging). With "
                                             "--executor ray: cells in flight (default: as many as the cluster "
                                             "runs at once), and a local Ray gets jobs x --cpus-per-cell "
                                             "CPUs.")] = None,
    executor: Annotated[str, typer.Option(help="What runs the cells: local (worker processes on this machine) "
                                          "or ray (each cell a Ray task, on a local Ray started for this "
                                          "benchmark or on the cluster --ray-address names; needs "
                                          "pip install 'klue\\[ray]'). Same cells, same files.")] = "local",
    ray_address: Annotated[str | None, typer.Option(
        help="With --executor ray: an existing cluster, `auto` (RAY_ADDRESS or the cluster started on this "
        "machine by `ray start`), HOST:PORT (its GCS) or ray://HOST:PORT (Ray Client). Default: a new local "
        "Ray, shut down at the end. On several machines --out (and the data) must be on a shared file "
        "system, at the same path on every node.", show_default=False, rich_help_panel=RAY_PANEL)] = None,
    cpus_per_cell: Annotated[float | None, typer.Option(
        help="With --executor ray: CPUs each cell asks Ray for (default 1; also its thread count).",
        show_default=False, rich_help_panel=RAY_PANEL)] = None,
    gpus_per_cell: Annotated[float | None, typer.Option(
        help="With --executor ray: GPUs each encoder or hf: LM cell asks for, fractions allowed (default: 1 "
        "where the cluster has GPUs, else 0); classic cells take none.", show_default=False,
        rich_help_panel=RAY_PANEL)] = None,
    override: Annotated[list[str] | None, typer.Option(help="Training override key=value for encoder "
                                                       "models (repeatable).")] = None,
    data_dir: Annotated[str | None, typer.Option(help="Official KLUE layout (else KLUE_DATA_DIR, else the "
                                                 "cache).")] = None,
    extra_data_dir: Annotated[str | None, typer.Option(help="Directory holding klue-partial/, klue-derived/ "
                                                       "and korean/ (else KLUE_EXTRA_DATA_DIR).")] = None,
    files: FilesChoice | None = None,  # the own-data options --train, --eval, ... (cli._common.with_own_data)
    report_to: Annotated[str | None, typer.Option(
        "--report-to", help="Encoder cells also send their learning curves to trackers (comma list): "
        "tensorboard, mlflow, wandb; files under each cell's tracking/.", show_default=False)] = None,
) -> None:
    """Run train, predict and score for every task x model x seed; skip cells already done.

    Each cell writes results.json and predictions.jsonl; a failing cell is recorded with its error and
    the others go on. Interrupted? Run the same command again: finished cells are kept.
    `--executor ray` runs each cell as a Ray task (a local Ray, or a cluster with --ray-address);
    the cells and their files are the same.
    Then: `klue report OUT -o report.html`.
    """
    from klue.benchmark.runner import BenchmarkPlan, run_benchmark
    from klue.reporting.html import REPORT_FILE

    overrides = parse_key_values(override or [], "--override")
    if report_to is not None:
        from klue.training.tracking import parse_report_to

        parse_report_to(report_to)  # refused before any cell runs
        overrides["report_to"] = report_to
    ray = ray_options(executor, ray_address, cpus_per_cell, gpus_per_cell)
    plan = BenchmarkPlan(resolve_tasks(tasks), tuple(model), parse_seeds(seeds), out, check_protocol(protocol),
                         metric_mode(mode), data_dir, extra_data_dir, tuple(overrides.items()), files)
    summary = run_benchmark(plan, jobs=jobs, console=stderr, ray=ray)
    print_leaderboard(out)
    ran = len(summary.outcomes)
    stderr.print(f"{ran} cells run, {len(summary.skipped)} already done, {len(summary.failed)} failed; "
                 f"results in {out}. Report: klue report {out} -o {out / REPORT_FILE}")
    if summary.failed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("benchmark")(with_own_data(benchmark))
