"""Worker processes: those that die with their parent, and Ray for the work spread over a cluster.

The benchmark's cell workers, the pseudonymiser's and the shard writer's pool workers call `die_with_parent`
first thing, so a parent killed with kill -9 (which gives it no chance to stop its workers) leaves no worker
running the next piece of work or holding its memory. `import_ray` is how every `--executor ray` gets Ray."""

from __future__ import annotations

import os
import resource
import sys
import threading
import time
from typing import Any

from klue.errors import DataError

PR_SET_PDEATHSIG = 1  # prctl option: the signal this process gets when its parent dies (Linux)
RAY_MISSING = "--executor ray needs Ray, which is not installed: pip install 'klue[ray]'"


def limit_resources(memory_bytes: int, cpu_seconds: int | None = None, file_bytes: int | None = None) -> None:
    """This process's limits, inherited by what it runs (the leaderboard's judge and model cells): address
    space, CPU time (SIGXCPU at the soft limit, killed 5 s later), the largest file it may write, and no core
    dump (a dump could hold whatever the process read). Safe between fork and exec: it imports nothing."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    if cpu_seconds is not None:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    if file_bytes is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def die_with_parent(parent_pid: int) -> None:
    """End this process when `parent_pid` dies, however it dies: the kernel's parent-death signal on Linux, and
    a watchdog thread everywhere, which also covers a parent that died before the signal was armed."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass  # the watchdog below still ends the process, within a second
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)  # no cleanup to run: every result file is written atomically

    threading.Thread(target=watch, name="klue-parent-watchdog", daemon=True).start()


def import_ray() -> Any:
    """The `ray` module (the `ray` extra), or the one sentence that says how to get it."""
    try:
        import ray
    except ImportError:
        raise DataError(RAY_MISSING) from None
    return ray
