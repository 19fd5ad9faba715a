"""The benchmark runner: every (task x model x seed) cell, resumable, failures recorded, by an executor.

A cell is done once its `results.json` exists, reads back valid and has status ok; it is written
atomically as the cell's last act, so an interrupted benchmark resumes by running the same command.
A failing cell is recorded with status "failed" and its error (full traceback in `error.txt`), and
the benchmark goes on; a failed cell is tried again by the next run.

The runner decides which cells are to run, keeps the manifest (`benchmark.json`, each invocation with its
executor) and shows progress; an executor (klue.benchmark.executors) runs the cells: local worker
processes by default (`jobs=0`: in this process, for debugging), or Ray tasks (`ray=RayOptions(...)`,
klue.benchmark.ray_executor). Every executor runs a cell through the same `execute_cell`.

The hook: `cell_runner(spec) -> Results` replaces the whole cell (default `run_cell`); to keep the real
protocol resolution and swap only the model, pass `functools.partial(run_cell, family=...)`. A runner
must be picklable (a module-level function or a partial of one) when jobs >= 1 or with Ray.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from klue.benchmark.cells import (
    AUTO_PROTOCOL,
    FILES_PROTOCOL,
    CellOutcome,
    CellRunner,
    CellSpec,
    FilesChoice,
    model_slug,
    run_cell,
)
from klue.benchmark.executors import Executor, local_executor
from klue.benchmark.manifest import Invocation, Manifest, read_manifest, write_manifest
from klue.errors import DataError, UnreachableError
from klue.families import check_specs, family_of, not_applicable
from klue.io import provenance
from klue.io.console import make_console
from klue.io.lock import exclusive
from klue.io.output import OutputError, check_output_dir
from klue.io.progress import ProgressBar
from klue.io.redact import redact_text
from klue.results import RESULTS_FILE, read_results

if TYPE_CHECKING:
    from klue.benchmark.ray_executor import RayOptions


@dataclass(frozen=True)
class BenchmarkPlan:
    tasks: tuple[str, ...]  # registry names
    models: tuple[str, ...]
    seeds: tuple[int, ...]
    out: Path
    protocol: str = AUTO_PROTOCOL
    mode: str = "official"
    data_dir: str | None = None
    extra_data_dir: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    files: FilesChoice | None = None  # the user's own files: protocol `files`, one task

    def __post_init__(self) -> None:
        if self.files is not None:
            if len(self.tasks) != 1:
                raise DataError(f"--train/--eval name one task's files; --tasks names {len(self.tasks)} "
                                f"({', '.join(self.tasks)})")
            if self.protocol not in (AUTO_PROTOCOL, FILES_PROTOCOL):
                raise DataError(f"--train/--eval make the protocol `files`; drop --protocol {self.protocol}")
            object.__setattr__(self, "protocol", FILES_PROTOCOL)
        for name in ("tasks", "models", "seeds"):
            values = getattr(self, name)
            if not values:
                raise DataError(f"a benchmark needs at least one of {name}")
            if len(set(values)) != len(values):
                raise DataError(f"{name} repeat a value: {list(values)}")
        slugs = [model_slug(m) for m in self.models]
        if len(set(slugs)) != len(slugs):
            shown = {redact_text(m): s for m, s in zip(self.models, slugs)}
            raise DataError(f"two models share a directory name: {shown}")

    def cells(self) -> list[CellSpec]:
        """Task-major, then model, then seed: a report is useful task by task while the run goes on.
        The overrides go to the cells of families that take options (not the classic baselines). A task that
        a model's family does not apply to has no cell (`not_applicable`)."""
        skipped = {(task, model) for task, model, _ in self.not_applicable()}
        return [
            CellSpec(task, model, seed, self.protocol, self.mode,
                     str(self.out / task / model_slug(model) / f"seed{seed}"),
                     self.data_dir, self.extra_data_dir, self.overrides if family_of(model).takes_options else (),
                     self.files)
            for task in self.tasks for model in self.models for seed in self.seeds if (task, model) not in skipped
        ]

    def not_applicable(self) -> list[tuple[str, str, str]]:
        """(task, model, why) for each task of the plan that a model's family does not apply to."""
        from klue import registry

        found = ((task, model, not_applicable(registry.get(task), model)) for task in self.tasks
                 for model in self.models)
        return [(task, model, why) for task, model, why in found if why is not None]


@dataclass
class BenchmarkSummary:
    plan: BenchmarkPlan
    skipped: list[CellSpec]  # done before this run
    outcomes: list[CellOutcome] = field(default_factory=list)

    @property
    def failed(self) -> list[CellOutcome]:
        return [o for o in self.outcomes if o.status != "ok"]


def cell_done(spec: CellSpec) -> bool:
    """True when the cell's results.json is valid, ok and belongs to this very cell.

    A results file of another cell, or an ok one made under another metric mode or protocol, is a
    conflict: DataError, since running over it would destroy a result.
    """
    path = spec.path / RESULTS_FILE
    if not path.is_file():
        return False
    try:
        results = read_results(path)
    except DataError:
        return False  # half-written by something else or hand-edited: the cell runs again
    if (results.task, results.model, results.seed) != (spec.task, spec.shown_model, spec.seed):
        raise DataError(f"{path} holds {results.task}/{results.model}/seed {results.seed}, "
                        f"not {spec.label}; use another --out", path)
    if results.status != "ok":
        return False
    if results.metric_mode != spec.mode or spec.protocol not in (AUTO_PROTOCOL, results.protocol):
        raise DataError(f"{path} was run with protocol {results.protocol!r} and metric mode "
                        f"{results.metric_mode!r}, not {spec.protocol!r}/{spec.mode!r}; use another --out", path)
    if spec.files is not None:
        _check_same_files(spec.files, results, path)
    return not (results.predictions_file and not (spec.path / results.predictions_file).is_file())


def _check_same_files(files: FilesChoice, results: Any, path: Path) -> None:
    """A `files` cell is done only for the very files it names: a path recorded otherwise, or a file whose
    content changed since, is a conflict (running over it would replace a result made on other data)."""
    from klue.io.provenance import identify

    recorded = {source.path: source.sha256 for source in results.data_sources}
    for given in (files.train, files.eval, files.selection):
        if given is None:
            continue
        local = Path(given.rsplit(":", 1)[0]) if not Path(given).exists() else Path(given)
        if given not in recorded:
            raise DataError(f"{path} was run on other files ({', '.join(sorted(recorded))}), not {given}; use "
                            "another --out", path)
        if local.exists() and recorded[given] and identify(local).sha256 != recorded[given]:
            raise DataError(f"{given} changed since {path} was made from it; use another --out, or delete that "
                            "cell to run it again", path)


def _new_manifest(plan: BenchmarkPlan, executor: Executor, previous: Manifest | None) -> Manifest:
    now = provenance.utc_now()
    history = previous.invocations if previous else []
    return Manifest(
        models=[redact_text(m) for m in plan.models], tasks=list(plan.tasks), seeds=list(plan.seeds), protocol=plan.protocol,
        metric_mode=plan.mode, jobs=executor.workers, data_dir=plan.data_dir, extra_data_dir=plan.extra_data_dir,
        overrides=dict(plan.overrides), klue_version=provenance.library_versions().get("klue", "unknown"),
        git_revision=provenance.git_revision(), started_at=now,
        invocations=[*history, Invocation(started_at=now, executor=executor.describe())],
    )


def make_executor(plan: BenchmarkPlan, jobs: int | None, ray: RayOptions | None) -> Executor:
    """Local processes (or this process), or Ray tasks when `ray` is given (Ray started or connected here)."""
    if ray is None:
        return local_executor(jobs, plan.models)
    from klue.benchmark.ray_executor import RayExecutor

    return RayExecutor(ray, jobs, plan.models, plan.out)


def run_benchmark(plan: BenchmarkPlan, cell_runner: CellRunner = run_cell, jobs: int | None = 1,
                  console: Console | None = None, ray: RayOptions | None = None) -> BenchmarkSummary:
    """Run every cell of `plan` that is not done yet; see the module docstring. One benchmark per
    directory at a time: a second one on the same `out` is refused (klue.io.lock). `ray` runs the cells
    as Ray tasks (`jobs` = cells in flight, default the cluster's CPUs / CPUs per cell)."""
    if ray is not None:
        from klue.io.processes import import_ray

        import_ray()  # without Ray, its one sentence before anything is touched
    check_specs(plan.models)  # a model that cannot run is refused before a cell runs or a file is written
    check_output_dir(plan.out, "--out")
    with exclusive(plan.out, "klue benchmark"):
        cells = plan.cells()
        todo = [c for c in cells if not cell_done(c)]
        executor = make_executor(plan, jobs, ray)
        try:
            return _run_benchmark(plan, cells, todo, cell_runner, executor, console or make_console(stderr=True))
        finally:
            executor.close()


def _run_benchmark(plan: BenchmarkPlan, cells: list[CellSpec], todo: list[CellSpec], cell_runner: CellRunner,
                   executor: Executor, console: Console) -> BenchmarkSummary:
    summary = BenchmarkSummary(plan, [c for c in cells if c not in todo])
    manifest = _new_manifest(plan, executor, read_manifest(plan.out))
    invocation = manifest.invocations[-1]
    invocation.cells_total, invocation.cells_skipped = len(cells), len(summary.skipped)
    write_manifest(plan.out, manifest)
    if summary.skipped:
        console.print(f"[dim]{len(summary.skipped)} of {len(cells)} cells already done in {plan.out}[/dim]")
    for task, model, why in plan.not_applicable():
        console.print(f"[dim]{task} · {model}: no cell, not applicable ({why})[/dim]", highlight=False)
    if invocation.executor.get("name") == "ray" and todo:
        from klue.benchmark.ray_executor import resources_text

        console.print(f"[dim]cells run on {resources_text(invocation.executor)}[/dim]")

    def finished(outcome: CellOutcome) -> None:
        summary.outcomes.append(outcome)
        invocation.cells_ok += outcome.status == "ok"
        invocation.cells_failed += outcome.status != "ok"
        if not outcome.unreachable:  # an unreachable server is said once, by the error that stops the run
            console.print(_outcome_line(outcome))
        progress.update(advance=1)
        write_manifest(plan.out, manifest)
        if outcome.cannot_write:  # every later cell would fail the same way: stop, as one clear error
            raise OutputError(f"{outcome.spec.label}: {outcome.error}", plan.out)
        if outcome.unreachable:  # a server that is down: stop at once, with its own exit code (3)
            raise UnreachableError(f"{outcome.spec.label}: {outcome.error}")

    status = "interrupted"
    progress = ProgressBar("benchmark", len(cells), done=len(summary.skipped), console=console)
    try:
        executor.run(todo, cell_runner, lambda labels: progress.update(label="running " + ", ".join(labels)),
                     finished)
        progress.update(label="done")
        status = "finished"
    finally:
        progress.close()
        invocation.status = manifest.status = status
        invocation.finished_at = provenance.utc_now()
        manifest.finished_at = invocation.finished_at if status == "finished" else None
        try:
            write_manifest(plan.out, manifest)
        except OutputError:
            if status == "finished":
                raise
            # else the error that stopped the run is the one to report, not this consequence of it
    return summary


def _outcome_line(outcome: CellOutcome) -> str:
    spent = f"{outcome.wall_time_s:.1f} s"
    if outcome.status == "ok":
        shown = ", ".join(f"{k} {v:.2f}" for k, v in list(outcome.scores.items())[:2])
        return f"[green]✓[/green] {outcome.spec.label} [dim]({outcome.protocol}, {spent})[/dim]  {shown}"
    return f"[red]✗[/red] {outcome.spec.label} [dim]({spent})[/dim]  [red]{outcome.error}[/red]"
