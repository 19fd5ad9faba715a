"""Running the judge (`klue.leaderboard.judge`) in its own process under resource limits.

The child gets RLIMIT_CPU (CPU seconds), RLIMIT_AS (address space) and RLIMIT_FSIZE (largest file it may
write: the decompressed cap plus a margin), set between fork and exec, so a hostile or broken file costs at
most that much and never the server; a child killed by a limit is a rejected file with a sentence saying
which limit. No Django here.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from klue.leaderboard.config import Limits

MIB = 1 << 20


@dataclass(frozen=True)
class JudgeFailure(Exception):
    """The judge process ended without an answer (a limit, a crash); `message` is for the submitter."""

    message: str

    def __str__(self) -> str:
        return self.message


def _limiter(limits: Limits) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 5))
        memory = limits.memory_mib * MIB
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        size = (limits.decompressed_mib + 16) * MIB
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def run_judge(request: dict[str, Any], limits: Limits) -> dict[str, Any]:
    """The judge's answer to `request`; JudgeFailure when the process ends without one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KLUE_TOKEN", "DJANGO"))}
    env["OMP_NUM_THREADS"] = "1"
    done = subprocess.run([sys.executable, "-m", "klue.leaderboard.judge"], input=json.dumps(request),
                          capture_output=True, text=True, env=env, preexec_fn=_limiter(limits),
                          timeout=limits.cpu_seconds * 4 + 60, check=False)
    if done.returncode == 0:
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer
    killed = -done.returncode
    if killed in (signal.SIGXCPU, signal.SIGKILL):
        raise JudgeFailure(f"scoring stopped at the CPU-time limit ({limits.cpu_seconds} s)")
    if killed == signal.SIGXFSZ:
        raise JudgeFailure(f"the file is larger than {limits.decompressed_mib} MiB decompressed")
    if "MemoryError" in done.stderr:
        raise JudgeFailure(f"scoring stopped at the memory limit ({limits.memory_mib} MiB)")
    last = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
    raise RuntimeError(f"the judge process failed: {last[0]}")
