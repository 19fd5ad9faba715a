"""Executors: what runs a benchmark's cells. Every executor runs each cell through the same
`execute_cell` (so the files a cell leaves are the same whichever ran it) and reports each outcome to the
runner as it comes; the runner decides what is done, keeps the manifest and shows progress.

- `InProcess` (`--jobs 0`): one cell after another in this process, output not captured (debugging).
- `LocalProcesses` (the default): worker processes from `concurrent.futures.ProcessPoolExecutor` (spawn
  start method, so a worker never inherits a half-initialised CUDA or thread pool); each worker's output
  goes to the cell's `log.txt`, keeping the terminal for the progress bar. With several GPUs each worker
  owns one (`CUDA_VISIBLE_DEVICES`), and workers die with the benchmark process.
- `RayExecutor` (`--executor ray`, klue.benchmark.ray_executor): each cell a Ray task.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from klue.benchmark.cells import CellOutcome, CellRunner, CellSpec, execute_cell, failed_results
from klue.errors import DataError
from klue.families import uses_gpu
from klue.io.processes import die_with_parent
from klue.results import RESULTS_FILE, write_results

ShowRunning = Callable[[list[str]], None]  # the labels of the cells running now
Finished = Callable[[CellOutcome], None]  # one cell's outcome; raises to stop the benchmark


class Executor(ABC):
    """Runs cells; `workers` is how many at a time (0: in this process), as the manifest records it."""

    workers: int

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the manifest records of this executor (its name first)."""

    @abstractmethod
    def run(self, todo: Sequence[CellSpec], cell_runner: CellRunner, show_running: ShowRunning,
            finished: Finished) -> None:
        """Run every cell of `todo`, calling `finished` with each outcome in this thread."""

    def close(self) -> None:
        """Give back what the executor took (a Ray instance it started); called once, however the run ended."""


class InProcess(Executor):
    workers = 0

    def describe(self) -> dict[str, Any]:
        return {"name": "local", "workers": 0}

    def run(self, todo: Sequence[CellSpec], cell_runner: CellRunner, show_running: ShowRunning,
            finished: Finished) -> None:
        for spec in todo:
            show_running([spec.label])
            finished(execute_cell(cell_runner, spec, capture_output=False))


class LocalProcesses(Executor):
    def __init__(self, workers: int, gpus: Sequence[str]) -> None:
        self.workers = workers
        self.gpus = list(gpus)  # empty: the cells use no GPU

    def describe(self) -> dict[str, Any]:
        return {"name": "local", "workers": self.workers, "gpus": self.gpus[:self.workers]}

    def run(self, todo: Sequence[CellSpec], cell_runner: CellRunner, show_running: ShowRunning,
            finished: Finished) -> None:
        _run_in_pool(todo, cell_runner, self.workers, self.gpus, show_running, finished)


def local_executor(jobs: int | None, models: Sequence[str]) -> Executor:
    """`jobs` worker processes (see `worker_count`), or this process for jobs=0."""
    gpus = visible_gpus()
    workers = worker_count(jobs, models, gpus)
    if workers == 0:
        return InProcess()
    return LocalProcesses(workers, gpus if any(uses_gpu(m) for m in models) else [])


def record_lost_cell(spec: CellSpec, started: float, error: str) -> CellOutcome:
    """Record a cell whose worker ended without reporting: results.json written here, status failed."""
    elapsed = time.perf_counter() - started
    write_results(spec.path / RESULTS_FILE, failed_results(spec, error, elapsed))
    return CellOutcome(spec, "failed", error, {}, elapsed, spec.protocol)


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


def _init_worker(gpu_ids: Any, threads: int, parent_pid: int) -> None:
    """Runs once in each worker: die with the parent, take one GPU, and a fair share of the CPU threads."""
    die_with_parent(parent_pid)
    if gpu_ids is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu_ids.get()
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, str(threads))


def worker_count(jobs: int | None, models: Sequence[str], gpus: Sequence[str]) -> int:
    """None = one worker per GPU (at least one); with GPUs and GPU models, never more workers than GPUs."""
    on_gpus = any(uses_gpu(m) for m in models) and bool(gpus)
    if jobs is None:
        return max(1, len(gpus)) if on_gpus else 1
    if jobs < 0:
        raise DataError(f"--jobs must be 0 (in this process) or more, not {jobs}")
    return min(jobs, len(gpus)) if on_gpus and jobs > 0 else jobs



def _run_in_pool(todo: Sequence[CellSpec], cell_runner: CellRunner, workers: int, gpus: Sequence[str],
                 show_running: ShowRunning, finished: Finished) -> None:
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
    return record_lost_cell(spec, started, error)
