"""Running the judge (`klue.leaderboard.judge`) in a child process under resource limits.

The child is forked from the scoring worker (which has numpy and the task code imported already, so a
job does not pay for a fresh interpreter's imports: about 1.5 s per submission on a loaded 2-core machine).
Between fork and the judge it sets RLIMIT_CPU (CPU seconds), RLIMIT_AS (address space) and RLIMIT_FSIZE
(largest file it may write: the decompressed cap plus a margin; Python ignores SIGXFSZ, so the write
fails with EFBIG and the judge says the file is too large), so a hostile or broken file costs at most
that much and never the server; it touches neither the database nor any connection the parent holds, and
ends with `os._exit`. A child killed by a limit is a rejected file with a sentence saying which limit.
The answer comes back as JSON over a pipe.
"""

from __future__ import annotations

import json
import os
import signal
import traceback
from dataclasses import dataclass
from typing import Any

from klue.io.processes import limit_resources
from klue.leaderboard.config import Limits
from klue.leaderboard.judge import judge

MIB = 1 << 20
MEMORY_ERROR_EXIT = 3
CRASH_EXIT = 4


@dataclass(frozen=True)
class JudgeFailure(Exception):
    """The judge process ended without an answer (a limit); `message` is for the submitter."""

    message: str

    def __str__(self) -> str:
        return self.message


def apply_limits(limits: Limits) -> None:
    limit_resources(limits.memory_mib * MIB, cpu_seconds=limits.cpu_seconds,
                    file_bytes=(limits.decompressed_mib + 16) * MIB)


def _child(request: dict[str, Any], limits: Limits, write_end: int) -> None:
    """The forked child: limits, judge, answer; never returns."""
    code = 0
    try:
        os.environ["OMP_NUM_THREADS"] = "1"
        apply_limits(limits)
        payload = json.dumps(judge(request), allow_nan=False).encode("utf-8")
        with os.fdopen(write_end, "wb") as out:
            out.write(payload)
    except MemoryError:
        code = MEMORY_ERROR_EXIT
    except BaseException:  # noqa: BLE001  # the forked child must reach os._exit, whatever happened
        code = CRASH_EXIT
        try:
            os.write(2, traceback.format_exc().encode("utf-8", "replace")[-2000:])
        except OSError:
            pass
    os._exit(code)


def run_judge(request: dict[str, Any], limits: Limits) -> dict[str, Any]:
    """The judge's answer to `request`; JudgeFailure when the child hits a limit, RuntimeError on a crash."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        _child(request, limits, write_end)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer_pipe:
        data = answer_pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        answer: dict[str, Any] = json.loads(data)
        return answer
    killed = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    if killed in (signal.SIGXCPU, signal.SIGKILL):
        raise JudgeFailure(f"scoring stopped at the CPU-time limit ({limits.cpu_seconds} s)")
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == MEMORY_ERROR_EXIT:
        raise JudgeFailure(f"scoring stopped at the memory limit ({limits.memory_mib} MiB)")
    raise RuntimeError(f"the judge process failed (status {status}); its traceback is in the server's log")
