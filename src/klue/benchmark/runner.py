"""The benchmark runner: every (task x model x seed) cell, resumable, failures recorded, in worker processes.

A cell is done once its `results.json` exists, reads back valid and has status ok; it is written
atomically as the cell's last act, so an interrupted benchmark resumes by running the same command.
A failing cell is recorded with status "failed" and its error (full traceback in `error.txt`), and
the benchmark goes on; a failed cell is tried again by the next run.

Cells run in worker processes from `concurrent.futures.ProcessPoolExecutor` (spawn start method, so a
worker never inherits a half-initialised CUDA or thread pool); each worker's output goes to the cell's
`log.txt`, keeping the terminal for the progress bar. With several GPUs each worker owns one
(`CUDA_VISIBLE_DEVICES`). `jobs=0` runs cells in this process without capturing output (debugging).

The hook: `cell_runner(spec) -> Results` replaces the whole cell (default `run_cell`); to keep the real
protocol resolution and swap only the model, pass `functools.partial(run_cell, family=...)`. A runner
must be picklable (a module-level function or a partial of one) when jobs >= 1.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from klue.benchmark.cells import (
    AUTO_PROTOCOL,
    CLASSIC,
    ERROR_FILE,
    FILES_PROTOCOL,
    LOG_FILE,
    CellOutcome,
    CellRunner,
    CellSpec,
    FilesChoice,
    describe_failure,
    failed_results,
    model_slug,
    run_cell,
)
from klue.benchmark.manifest import Invocation, Manifest, read_manifest, write_manifest
from klue.errors import DataError
from klue.io import provenance
from klue.io.atomic import write_text_atomic
from klue.io.lock import exclusive
from klue.io.output import OutputError, check_output_dir, output_error
from klue.results import RESULTS_FILE, read_results, write_results


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
            raise DataError(f"two models share a directory name: {dict(zip(self.models, slugs))}")

    def cells(self) -> list[CellSpec]:
        """Task-major, then model, then seed: a report is useful task by task while the run goes on.
        Training overrides go to encoder cells only: the classic baselines take none."""
        return [
            CellSpec(task, model, seed, self.protocol, self.mode,
                     str(self.out / task / model_slug(model) / f"seed{seed}"),
                     self.data_dir, self.extra_data_dir, () if model == CLASSIC else self.overrides, self.files)
            for task in self.tasks for model in self.models for seed in self.seeds
        ]


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
    if (results.task, results.model, results.seed) != (spec.task, spec.model, spec.seed):
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


@contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors too, for C libraries) to `path`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with path.open("a", encoding="utf-8") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def execute_cell(cell_runner: CellRunner, spec: CellSpec, capture_output: bool = True) -> CellOutcome:
    """Run one cell and write its results.json (ok or failed). KeyboardInterrupt writes nothing.

    A cell whose failure cannot even be recorded (the disk filled up) still reports it to the runner, with
    both errors, so the terminal and the manifest say what happened."""
    start = time.perf_counter()
    try:
        spec.path.mkdir(parents=True, exist_ok=True)
        (spec.path / ERROR_FILE).unlink(missing_ok=True)
        capture = _output_to(spec.path / LOG_FILE) if capture_output else _nothing()
    except OSError as error:
        return CellOutcome(spec, "failed", describe_failure(output_error(spec.path, error)).error, {},
                           time.perf_counter() - start, spec.protocol, cannot_write=True)
    with capture:
        try:
            results = cell_runner(spec)
            if not results.wall_time_s:
                results.wall_time_s = time.perf_counter() - start
            write_results(spec.path / RESULTS_FILE, results)
            return CellOutcome(spec, results.status, results.error, dict(results.scores), results.wall_time_s,
                               results.protocol)
        except Exception as error:  # noqa: BLE001 - any failure of a cell is recorded, and the run goes on
            info = describe_failure(error)
            elapsed = time.perf_counter() - start
            message, cannot_write = info.error, isinstance(error, OutputError)
            try:
                write_text_atomic(spec.path / ERROR_FILE, info.trace)
                write_results(spec.path / RESULTS_FILE, failed_results(spec, info.error, elapsed))
            except (OSError, DataError) as unrecorded:
                message = f"{info.error}; the failure itself could not be recorded: {describe_failure(unrecorded).error}"
                cannot_write = True
            return CellOutcome(spec, "failed", message, {}, elapsed, spec.protocol, cannot_write=cannot_write)


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def visible_gpus() -> list[str]:
    """GPU ids this process may use: CUDA_VISIBLE_DEVICES if set, else what `nvidia-smi -L` lists."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    try:
        listing = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(ln for ln in listing.splitlines() if ln.startswith("GPU "))]


def _die_with_parent(parent_pid: int) -> None:
    """End this worker the moment the benchmark process that started it dies, however it dies (kill -9
    gives it no chance to stop its workers): the kernel's parent-death signal on Linux, and a watchdog
    thread everywhere, which also covers a parent that died before the signal was armed."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        try:
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
        except (OSError, AttributeError):
            pass  # the watchdog below still ends the worker, within a second
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)  # no cleanup to run: every result file is written atomically

    threading.Thread(target=watch, name="klue-parent-watchdog", daemon=True).start()


def _init_worker(gpu_ids: Any, threads: int, parent_pid: int) -> None:
    """Runs once in each worker: die with the parent, take one GPU, and a fair share of the CPU threads."""
    _die_with_parent(parent_pid)
    if gpu_ids is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu_ids.get()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))


def worker_count(jobs: int | None, models: Sequence[str], gpus: Sequence[str]) -> int:
    """None = one worker per GPU (at least one); with GPUs and GPU models, never more workers than GPUs."""
    uses_gpu = any(m != CLASSIC for m in models) and bool(gpus)
    if jobs is None:
        return max(1, len(gpus)) if uses_gpu else 1
    if jobs < 0:
        raise DataError(f"--jobs must be 0 (in this process) or more, not {jobs}")
    return min(jobs, len(gpus)) if uses_gpu and jobs > 0 else jobs


def _new_manifest(plan: BenchmarkPlan, jobs: int, previous: Manifest | None) -> Manifest:
    now = provenance.utc_now()
    history = previous.invocations if previous else []
    return Manifest(
        models=list(plan.models), tasks=list(plan.tasks), seeds=list(plan.seeds), protocol=plan.protocol,
        metric_mode=plan.mode, jobs=jobs, data_dir=plan.data_dir, extra_data_dir=plan.extra_data_dir,
        overrides=dict(plan.overrides), klue_version=provenance.library_versions().get("klue", "unknown"),
        git_revision=provenance.git_revision(), started_at=now,
        invocations=[*history, Invocation(started_at=now)],
    )


def run_benchmark(plan: BenchmarkPlan, cell_runner: CellRunner = run_cell, jobs: int | None = 1,
                  console: Console | None = None) -> BenchmarkSummary:
    """Run every cell of `plan` that is not done yet; see the module docstring. One benchmark per
    directory at a time: a second one on the same `out` is refused (klue.io.lock)."""
    check_output_dir(plan.out, "--out")
    with exclusive(plan.out, "klue benchmark"):
        return _run_benchmark(plan, cell_runner, jobs, console)


def _run_benchmark(plan: BenchmarkPlan, cell_runner: CellRunner, jobs: int | None,
                   console: Console | None) -> BenchmarkSummary:
    cells = plan.cells()
    todo = [c for c in cells if not cell_done(c)]
    summary = BenchmarkSummary(plan, [c for c in cells if c not in todo])
    gpus = visible_gpus()
    workers = worker_count(jobs, plan.models, gpus)
    manifest = _new_manifest(plan, workers, read_manifest(plan.out))
    invocation = manifest.invocations[-1]
    invocation.cells_total, invocation.cells_skipped = len(cells), len(summary.skipped)
    write_manifest(plan.out, manifest)
    console = console or Console(stderr=True)
    progress = Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=False)
    bar = progress.add_task("benchmark", total=len(cells), completed=len(summary.skipped))
    if summary.skipped:
        console.print(f"[dim]{len(summary.skipped)} of {len(cells)} cells already done in {plan.out}[/dim]")

    def finished(outcome: CellOutcome) -> None:
        summary.outcomes.append(outcome)
        invocation.cells_ok += outcome.status == "ok"
        invocation.cells_failed += outcome.status != "ok"
        progress.console.print(_outcome_line(outcome))
        progress.advance(bar)
        write_manifest(plan.out, manifest)
        if outcome.cannot_write:  # every later cell would fail the same way: stop, as one clear error
            raise OutputError(f"{outcome.spec.label}: {outcome.error}", plan.out)

    status = "interrupted"
    try:
        with progress:
            if workers == 0:
                for spec in todo:
                    progress.update(bar, description=f"running {spec.label}")
                    finished(execute_cell(cell_runner, spec, capture_output=False))
            else:
                _run_in_pool(todo, cell_runner, workers, gpus if any(m != CLASSIC for m in plan.models) else [],
                             lambda labels: progress.update(bar, description="running " + ", ".join(labels)),
                             finished)
            progress.update(bar, description="done")
        status = "finished"
    finally:
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


def _run_in_pool(todo: list[CellSpec], cell_runner: CellRunner, workers: int, gpus: Sequence[str],
                 show_running: Any, finished: Any) -> None:
    """At most `workers` cells submitted at a time, so the ones submitted are the ones running.

    A worker that dies without reporting (killed, out of memory) breaks the whole pool: the cells that
    were running are recorded as failed, and a fresh pool takes the remaining cells.
    """
    context = multiprocessing.get_context("spawn")
    gpu_queue = None
    if gpus:
        gpu_queue = context.Queue()
        for gpu in gpus[:workers]:
            gpu_queue.put(gpu)
    threads = max(1, (os.cpu_count() or 1) // workers)

    def new_pool() -> ProcessPoolExecutor:
        if gpu_queue is not None:  # a fresh pool hands the GPUs out again
            while not gpu_queue.empty():
                gpu_queue.get()
            for gpu in gpus[:workers]:
                gpu_queue.put(gpu)
        return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                                   initargs=(gpu_queue, threads, os.getpid()))

    pool = new_pool()
    pending = iter(todo)
    running: dict[Future[CellOutcome], tuple[CellSpec, float]] = {}
    try:
        while True:
            while len(running) < workers and (spec := next(pending, None)) is not None:
                running[pool.submit(execute_cell, cell_runner, spec)] = (spec, time.perf_counter())
            if not running:
                break
            show_running([s.label for s, _ in running.values()])
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            broken = False
            for future in done:
                spec, started = running.pop(future)
                try:
                    outcome = future.result()
                except BrokenProcessPool:
                    broken = True
                    outcome = _worker_died(spec, started, len(running) + 1)
                finished(outcome)
            if broken:
                wait(running)  # a broken pool fails every cell it still holds
                for future, (spec, started) in list(running.items()):
                    finished(_worker_died(spec, started, len(running)))
                running.clear()
                pool.shutdown(wait=True, cancel_futures=True)
                pool = new_pool()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _worker_died(spec: CellSpec, started: float, n_running: int) -> CellOutcome:
    """Record a cell whose worker process ended without reporting."""
    error = ("the worker process running this cell died without reporting (killed by a signal, e.g. out of "
             "memory; see `dmesg`)")
    if n_running > 1:
        error += f"; {n_running} cells were running, and the one that died may be another of them"
    elapsed = time.perf_counter() - started
    write_results(spec.path / RESULTS_FILE, failed_results(spec, error, elapsed))
    return CellOutcome(spec, "failed", error, {}, elapsed, spec.protocol)


def _outcome_line(outcome: CellOutcome) -> str:
    spent = f"{outcome.wall_time_s:.1f} s"
    if outcome.status == "ok":
        shown = ", ".join(f"{k} {v:.2f}" for k, v in list(outcome.scores.items())[:2])
        return f"[green]✓[/green] {outcome.spec.label} [dim]({outcome.protocol}, {spent})[/dim]  {shown}"
    return f"[red]✗[/red] {outcome.spec.label} [dim]({spent})[/dim]  [red]{outcome.error}[/red]"
