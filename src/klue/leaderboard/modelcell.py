"""A model submission's benchmark cell, run where no Django is: the cell itself (klue.benchmark.cells, the
machinery `klue benchmark` runs), the limited child process it runs in, the Ray task that runs that child on
a cluster, and the progress read back from the cell's own progress lines (docs/leaderboard.md, "Model
submissions").

The cell is protocol `files`: trained on the site's training split, evaluated on the site's gold file (the
gold's inputs are what the model predicts; its labels are read only by the judge, after the model wrote
predictions.jsonl, exactly as in `klue benchmark --train TRAIN --eval GOLD`), with the site's fixed seed, so
the predictions equal that command's. The family checks its checkpoints on a held-out slice of the training
split (protocol `files`' selection part), never on the gold. The child:

    python -m klue.leaderboard.modelcell CELL.json PARENT_PID

applies the job's limits (address space = `memory_gb`, threads = `cpus`, no GPU when `gpus` is 0), dies with
its parent, and runs `execute_cell`: results.json, predictions.jsonl and log.txt in the cell's directory.
Its output goes to log.txt, which only the organisers read: the owner's log is built by
`progress_of` from the numbers of the cell's progress lines (done, total, elapsed, ETA), never their text.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from klue.benchmark.cells import LOG_FILE, CellSpec, FilesChoice, execute_cell, run_cell
from klue.io.processes import die_with_parent, limit_resources
from klue.leaderboard.config import ModelLimits, ModelsConfig
from klue.results import PREDICTIONS_FILE, RESULTS_FILE, read_results

CELL_FILE = "cell.json"
POLL_S = 0.5
GIB = 1 << 30
KILLED, CANCELLED, WALL, OK, FAILED, LOST = "killed", "cancelled", "wall", "ok", "failed", "lost"

# klue.io.progress's plain line: "LABEL: DONE/TOTAL (P%)[ INFO]; H:MM:SS elapsed[, ETA H:MM:SS]"
PROGRESS_LINE = re.compile(r"^(?P<label>[^\n]{1,200}?): (?P<done>[\d,]+)/(?P<total>[\d,]+) \(\d+%\)"
                           r"(?: [^\n]*)?; (?P<elapsed>\d+:\d\d:\d\d) elapsed(?:, ETA (?P<eta>\d+:\d\d:\d\d))?$")


def model_cell(task: str, model: str, seed: int, out_dir: Path, train: Path, train_format: str | None,
               gold: Path, gold_format: str | None, shots: int) -> CellSpec:
    """The cell of a model submission on one task: what `klue benchmark --tasks TASK --model MODEL --train
    TRAIN --eval GOLD --seeds SEED` runs (protocol `files`, official metric mode; an LLM with `--override
    shots=SHOTS`)."""
    from klue.families import family_of
    from klue.results import LLM

    files = FilesChoice(str(train), str(gold), train_format=train_format or None, eval_format=gold_format or None)
    overrides = (("shots", shots),) if family_of(model).name == LLM else ()
    return CellSpec(task, model, seed, "files", "official", str(out_dir), overrides=overrides, files=files)


def write_cell(spec: CellSpec, path: Path) -> None:
    data = asdict(spec)
    path.write_text(json.dumps(data), encoding="utf-8")


def read_cell(path: Path) -> CellSpec:
    data = json.loads(path.read_text(encoding="utf-8"))
    files = FilesChoice(**data.pop("files")) if data.get("files") else None
    return CellSpec(**{**data, "files": files, "overrides": tuple(tuple(x) for x in data["overrides"])})


@dataclass(frozen=True)
class CellRun:
    """How the cell's process ended: ok | failed (the cell recorded its failure) | killed (no results.json:
    a signal, a limit) | cancelled | wall (stopped at the wall-time limit) | lost (its Ray task or node died:
    the job is worth another attempt)."""

    status: str
    seconds: float


def finished_cell(out_dir: Path) -> str | None:
    """"ok" or "failed" when the cell's results.json is there (the cell finished: a requeued job only scores
    it), else None."""
    path = out_dir / RESULTS_FILE
    if not path.is_file() or not (out_dir / CELL_FILE).is_file():
        return None
    return OK if read_results(path).status == OK and (out_dir / PREDICTIONS_FILE).is_file() else FAILED


def _limit_child(limits: ModelLimits) -> None:
    """In the child before exec: its own session (so a cancel ends its whole group), its memory, no core."""
    os.setsid()
    limit_resources(int(limits.memory_gb * GIB))


def child_env(limits: ModelLimits) -> dict[str, str]:
    threads = str(limits.cpus)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads,
           "TOKENIZERS_PARALLELISM": "false"}
    if limits.gpus <= 0:
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def run_local(out_dir: Path, limits: ModelLimits, stop: Callable[[], bool]) -> CellRun:
    """The cell (its cell.json in `out_dir`) in a limited child process; `stop()` is asked every POLL_S and
    True kills it (a cancel). The wall-time limit counts this attempt."""
    start = time.monotonic()
    child = subprocess.Popen([sys.executable, "-m", "klue.leaderboard.modelcell", str(out_dir / CELL_FILE),
                              str(os.getpid())], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=child_env(limits),
                             preexec_fn=lambda: _limit_child(limits))  # noqa: PLW1509  # no threads start before exec
    ended: str | None = None
    while True:
        try:
            code = child.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        if stop():
            ended = CANCELLED
        elif time.monotonic() - start > limits.wall_s:
            ended = WALL
        if ended is not None:
            _kill_group(child.pid)
            child.wait()
            return CellRun(ended, time.monotonic() - start)
    seconds = time.monotonic() - start
    if code != 0:
        return CellRun(KILLED, seconds)
    return CellRun(finished_cell(out_dir) or KILLED, seconds)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _on_ray_worker(out_dir: str, limits: dict[str, Any]) -> tuple[str, float]:
    """What the Ray task runs: the same limited child as the local executor, on the node Ray chose (the
    site's directory must be on a file system every node mounts at the same path)."""
    run = run_local(Path(out_dir), ModelLimits(**limits), lambda: False)
    return run.status, run.seconds


def run_ray(out_dir: Path, models: ModelsConfig, model_spec: str, stop: Callable[[], bool]) -> CellRun:
    """The cell as a Ray task through klue's Ray executor's connection (a local Ray started for the job, or
    the cluster at `ray_address`), asking for `limits.cpus` CPUs and, for a GPU model, `limits.gpus` GPUs
    (the executor's --cpus-per-cell / --gpus-per-cell); a cancel cancels the task (force: its worker and so
    the child end)."""
    from klue.benchmark.ray_executor import RayExecutor, RayOptions

    limits = models.limits
    start = time.monotonic()
    executor = RayExecutor(RayOptions(models.ray_address, float(limits.cpus), limits.gpus), 1, [model_spec],
                           out_dir)
    try:
        ray = executor.ray
        remote = ray.remote(max_retries=0)(_on_ray_worker)
        ref = remote.options(num_cpus=float(limits.cpus), num_gpus=executor.gpus.get(model_spec, 0.0),
                             name=f"klue model job {out_dir.name}").remote(str(out_dir), asdict(limits))
        while True:
            done, _ = ray.wait([ref], timeout=POLL_S)
            if done:
                try:
                    status, _seconds = ray.get(ref)
                except ray.exceptions.RayError:  # the task or its node died (not the cell): another attempt
                    status = LOST
                return CellRun(status, time.monotonic() - start)
            if stop():
                ray.cancel(ref, force=True)
                return CellRun(CANCELLED, time.monotonic() - start)
    finally:
        executor.close()


@dataclass(frozen=True)
class Progress:
    """Where the cell stands, from its last progress line: a step word klue chose, numbers only."""

    step: str
    done: int
    total: int
    elapsed_s: int
    eta_s: int | None

    def line(self) -> str:
        eta = f", ETA {_clock(self.eta_s)}" if self.eta_s is not None else ""
        share = 100 * self.done / self.total if self.total else 0
        return f"{self.step}: {self.done:,}/{self.total:,} ({share:.0f}%), {_clock(self.elapsed_s)} elapsed{eta}"


def _clock(seconds: int) -> str:
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _seconds(text: str) -> int:
    hours, minutes, seconds = (int(x) for x in text.split(":"))
    return 3600 * hours + 60 * minutes + seconds


def step_of(label: str) -> str:
    """A fixed word for a progress label (the label itself is not shown: it names what a family chose to)."""
    if label.startswith("train"):
        return "training"
    if label.startswith("embedding"):
        return "embedding"
    return "predicting"


def progress_of(out_dir: Path) -> list[Progress]:
    """Every progress line of the cell's log.txt so far, as numbers (an unreadable log: none)."""
    try:
        text = (out_dir / LOG_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        found = PROGRESS_LINE.match(line.strip())
        if found is not None:
            eta = found["eta"]
            out.append(Progress(step_of(found["label"]), int(found["done"].replace(",", "")),
                                int(found["total"].replace(",", "")), _seconds(found["elapsed"]),
                                None if eta is None else _seconds(eta)))
    return out


def main() -> None:
    """The child: `CELL.json PARENT_PID` -> the cell run, exit 0 (results.json written, ok or failed)."""
    die_with_parent(int(sys.argv[2]))
    spec = read_cell(Path(sys.argv[1]))
    execute_cell(run_cell, spec)
    os._exit(0)  # skip interpreter teardown (threads of the model libraries); results.json is written


if __name__ == "__main__":
    main()
