"""The Ray executor (`klue benchmark --executor ray`): each benchmark cell a Ray task, on a local Ray that
klue starts or on an existing cluster.

A cell runs on a Ray worker through the same `execute_cell` as with local processes, so it leaves the same
files, written by the cell itself into the benchmark directory; the driver (this process) decides which
cells are done, keeps the manifest and shows progress, exactly as with the local executor. On a cluster
of several machines `--out` must therefore be a shared file system mounted at the same path on every node
(and the data directories too): a worker that cannot see the benchmark directory's manifest stops the
benchmark with that sentence instead of writing results where no one will find them.

- `address=None`: a new local Ray (`ray.init(address="local")`, never another session's cluster) with
  `jobs x cpus_per_cell` CPUs, else the machine's; no dashboard, workers' output kept out of the terminal
  (each cell's output goes to its log.txt anyway), shut down at the end.
- `address="auto"`, `"host:port"` (the cluster's GCS) or `"ray://host:port"` (Ray Client): an existing
  cluster; klue disconnects at the end and leaves it running. KLUE_DATA_DIR and KLUE_EXTRA_DATA_DIR go
  with the tasks, so workers read the data the driver names.
- A Ray session this process opened already (a notebook, the tests) is used as it is and left open.

Each task asks for `cpus_per_cell` CPUs and, for cells that use a GPU (encoders, `hf:` LMs), `gpus_per_cell`
GPUs (default 1 where the cluster has GPUs, else 0); Ray sets CUDA_VISIBLE_DEVICES for it. Tasks are
never retried (`max_retries=0`): a worker that dies (killed, out of memory) fails its cell with Ray's
error, recorded like any failure, and the benchmark goes on. At most `jobs` cells are in flight (default:
as many as the cluster's CPUs, and GPUs when every cell takes one, run at once), so the cells submitted
are the cells running, and an interrupted benchmark cancels only those.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.benchmark.cells import CellOutcome, CellRunner, CellSpec, execute_cell
from klue.benchmark.executors import Executor, Finished, ShowRunning, record_lost_cell
from klue.benchmark.manifest import MANIFEST_FILE
from klue.errors import DataError
from klue.families import uses_gpu
from klue.io.processes import import_ray
from klue.io.redact import redact_text, redact_url

FORWARDED_ENV = ("KLUE_DATA_DIR", "KLUE_EXTRA_DATA_DIR")  # where the cells read data, as on the driver


@dataclass(frozen=True)
class RayOptions:
    address: str | None = None  # None: a local Ray started here; "auto", "host:port" or "ray://host:port"
    cpus_per_cell: float = 1.0
    gpus_per_cell: float | None = None  # None: 1 for GPU cells where the cluster has GPUs, else 0

    def __post_init__(self) -> None:
        if not self.cpus_per_cell > 0:
            raise DataError(f"--cpus-per-cell must be more than 0, not {self.cpus_per_cell}")
        if self.gpus_per_cell is not None and not self.gpus_per_cell >= 0:
            raise DataError(f"--gpus-per-cell must be 0 or more, not {self.gpus_per_cell}")
        if self.address is not None and not _address_form(self.address):
            raise DataError(f"--ray-address takes auto, HOST:PORT or ray://HOST:PORT, not {self.address!r}")


def _address_form(address: str) -> bool:
    host, _, port = address.removeprefix("ray://").rpartition(":")
    return address == "auto" or (bool(host) and port.isdigit())


def run_on_worker(cell_runner: CellRunner, spec: CellSpec, out: str) -> CellOutcome:
    """What a Ray task runs: the cell, by the same code as every executor, if this node sees the benchmark
    directory (the driver wrote its manifest before submitting any cell)."""
    if not (Path(out) / MANIFEST_FILE).is_file():
        error = (f"the Ray worker on {socket.gethostname()} cannot see the benchmark directory {out}: on a Ray "
                 "cluster of several machines --out must be on a shared file system mounted at the same path on "
                 "every node")
        return CellOutcome(spec, "failed", error, {}, 0.0, spec.protocol, cannot_write=True)
    return execute_cell(cell_runner, spec)


class RayExecutor(Executor):
    """Connects (or starts a local Ray) when made; `close` shuts down what it started or connected."""

    def __init__(self, options: RayOptions, jobs: int | None, models: Sequence[str], out: Path) -> None:
        if jobs is not None and jobs < 1:
            raise DataError(f"--jobs {jobs} runs cells in this process; with --executor ray give --jobs 1 or more "
                            "(cells in flight) or leave it out")
        self.ray = import_ray()
        self.options = options
        self.out = out
        self.owned = False  # this executor called ray.init, so it calls ray.shutdown
        if not self.ray.is_initialized():
            self._init(jobs)
            self.owned = True
        try:
            self.resources = {k: v for k, v in self.ray.cluster_resources().items() if not k.startswith("node:")}
            self.nodes = sum(1 for node in self.ray.nodes() if node.get("Alive"))
            self.gpus = {m: self._gpus_for(m) for m in models}
            if self.owned and options.address is None:
                self._check_feasible()
            self.workers = jobs if jobs is not None else self._fits_at_once()
        except BaseException:
            self.close()
            raise

    def _init(self, jobs: int | None) -> None:
        ray, address = self.ray, self.options.address
        if address is None:  # Ray's own notices (token authentication is on, ...) ask nothing of the user here
            num_cpus = math.ceil(jobs * self.options.cpus_per_cell) if jobs else (os.cpu_count() or 1)
            try:
                ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR)
            except (ConnectionError, RuntimeError, ValueError, OSError) as error:
                raise DataError(f"cannot start a local Ray: {_first_line(error)}") from None
            return
        check_reachable(address)
        env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
        try:
            ray.init(address=address, runtime_env={"env_vars": env} if env else None, log_to_driver=False,
                     logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as error:
            raise DataError(f"cannot connect to the Ray cluster at {redact_url(address)}: "
                            f"{redact_text(_first_line(error))}") from None

    def _fits_at_once(self) -> int:
        """How many cells the cluster runs at once (at least 1): by CPUs, and by GPUs when every cell takes one."""
        fits = self.resources.get("CPU", 0.0) // self.options.cpus_per_cell
        if self.gpus and all(self.gpus.values()):
            fits = min(fits, self.resources.get("GPU", 0.0) // max(self.gpus.values()))
        return max(1, int(fits))

    def _gpus_for(self, model: str) -> float:
        if self.options.gpus_per_cell is not None:
            return self.options.gpus_per_cell if uses_gpu(model) else 0.0
        return 1.0 if uses_gpu(model) and self.resources.get("GPU", 0.0) >= 1 else 0.0

    def _check_feasible(self) -> None:
        """A local Ray is all there is: a cell asking for more than it has would wait forever."""
        have_cpus, have_gpus = self.resources.get("CPU", 0.0), self.resources.get("GPU", 0.0)
        if self.options.cpus_per_cell > have_cpus:
            raise DataError(f"--cpus-per-cell {self.options.cpus_per_cell:g} is more than the local Ray's "
                            f"{have_cpus:g} CPUs")
        wanted = max(self.gpus.values(), default=0.0)
        if wanted > have_gpus:
            raise DataError(f"--gpus-per-cell {wanted:g} is more than the {have_gpus:g} GPUs Ray found here")

    def address(self) -> str | None:
        try:
            return str(self.ray.get_runtime_context().gcs_address)
        except Exception:  # noqa: BLE001 - Ray Client sessions do not say; the address given is recorded
            return self.options.address

    def describe(self) -> dict[str, Any]:
        given, found = self.options.address, self.address()
        return {"name": "ray", "ray_version": self.ray.__version__, "address": found and redact_url(found),
                "address_given": given and redact_url(given), "started_by_klue": self.owned and not given,
                "nodes": self.nodes, "cluster_resources": self.resources, "workers": self.workers,
                "cpus_per_cell": self.options.cpus_per_cell, "gpus_per_cell": self.gpus}

    def run(self, todo: Sequence[CellSpec], cell_runner: CellRunner, show_running: ShowRunning,
            finished: Finished) -> None:
        ray = self.ray
        # A killed worker fails its cell: no retry that would run it again behind the benchmark's back.
        remote = ray.remote(max_retries=0)(run_on_worker)
        pending = iter(todo)
        running: dict[Any, tuple[CellSpec, float]] = {}
        try:
            while True:
                while len(running) < self.workers and (spec := next(pending, None)) is not None:
                    ref = remote.options(num_cpus=self.options.cpus_per_cell, num_gpus=self.gpus.get(spec.model, 0.0),
                                         name=f"klue cell {spec.label}").remote(cell_runner, spec, str(self.out))
                    running[ref] = (spec, time.perf_counter())
                if not running:
                    break
                show_running([s.label for s, _ in running.values()])
                done, _ = ray.wait(list(running), num_returns=1)
                for ref in done:
                    spec, started = running.pop(ref)
                    finished(self._outcome(ref, spec, started))
        finally:
            for ref in running:  # interrupted: stop the cells in flight (they write nothing half-done)
                ray.cancel(ref, force=True)

    def _outcome(self, ref: Any, spec: CellSpec, started: float) -> CellOutcome:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayError as error:  # the task died: the cell's own errors are outcomes
            return record_lost_cell(spec, started, f"the Ray task running this cell failed "
                                                   f"({type(error).__name__}): {_first_line(error)}")

    def close(self) -> None:
        if self.owned:
            self.owned = False
            self.ray.shutdown()


def check_reachable(address: str) -> None:
    """A HOST:PORT where nothing listens fails here at once (Ray itself would wait for its GCS for minutes);
    `auto` and `ray://` addresses fail fast in Ray already."""
    if address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as error:
        raise DataError(f"cannot connect to the Ray cluster at {address}: nothing answers there "
                        f"({error.strerror or error}); is the head node up (`ray status`)?") from None


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def resources_text(describe: Mapping[str, Any]) -> str:
    """One line for the terminal: where the cells run."""
    res = describe.get("cluster_resources", {})
    gpus = f", {res['GPU']:g} GPUs" if res.get("GPU") else ""
    where = "a local Ray" if describe.get("started_by_klue") else f"Ray at {describe.get('address')}"
    return (f"{where}: {describe.get('nodes')} node(s), {res.get('CPU', 0):g} CPUs{gpus}; "
            f"{describe.get('cpus_per_cell'):g} CPU(s) per cell, at most {describe.get('workers')} cells at a time")
