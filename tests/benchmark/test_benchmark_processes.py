"""Processes: one writer per directory (a second `klue benchmark` or `klue train` on it is refused, a lock
left by a dead process is taken over), and the workers of a `klue benchmark` killed with -9 stop too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from klue.errors import DataError
from klue.io.lock import LOCK_FILE, exclusive

KLUE = [sys.executable, "-c", "from klue.cli import main; main()"]
HOLD = ("import sys, time\nfrom pathlib import Path\nfrom klue.io.lock import exclusive\n"
        "with exclusive(Path(sys.argv[1]), 'klue test holder'):\n    print('held', flush=True)\n    time.sleep(600)\n")


def hold_lock(directory: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_writer_is_refused_and_a_dead_holders_lock_is_taken_over(tmp_path: Path) -> None:
    holder = hold_lock(tmp_path)
    try:
        with pytest.raises(DataError, match=r"in use by `klue test holder` \(pid \d+"), \
                exclusive(tmp_path, "klue second"):
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (tmp_path / LOCK_FILE).exists()  # kill -9 left its lock file behind ...
    with exclusive(tmp_path, "klue third"):  # ... and the next writer takes it over
        pass
    assert not (tmp_path / LOCK_FILE).exists()


def test_train_and_benchmark_refuse_a_directory_in_use(tmp_path: Path) -> None:
    out = tmp_path / "busy"
    holder = hold_lock(out)
    try:
        train = subprocess.run([*KLUE, "train", "--task", "nli", "--model", str(tmp_path / "no-model"),
                                "--protocol", "official", "--data-dir", str(tmp_path / "none"), "--output", str(out)],
                               capture_output=True, text=True, timeout=120, check=False)
        bench = subprocess.run([*KLUE, "benchmark", "--tasks", "nli", "--model", "classic", "--out", str(out)],
                               capture_output=True, text=True, timeout=120, check=False)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    for run in (train, bench):
        assert run.returncode == 2, run.stderr
        assert "is in use by `klue test holder`" in run.stderr and "Traceback" not in run.stderr


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.realdata
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc to find the worker processes")
def test_benchmark_workers_die_with_their_parent(klue_data_dir: Path, shared_data_dir: Path, tmp_path: Path) -> None:
    parent = subprocess.Popen([*KLUE, "benchmark", "--tasks", "nli", "--model", "classic", "--protocol",
                               "local:dev-80-20", "--seeds", "1,2,3", "--jobs", "1", "--out", str(tmp_path / "b"),
                               "--data-dir", str(klue_data_dir), "--extra-data-dir", str(shared_data_dir)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline and not (tmp_path / "b" / "nli" / "classic" / "seed1").is_dir():
            time.sleep(0.2)  # a worker has started its first cell
        workers = [pid for pid in _children(parent.pid) if _alive(pid)]
        grandchildren = [g for pid in workers for g in _children(pid)]
        assert workers, "no worker process found"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers + grandchildren):
            time.sleep(0.2)
        assert not [pid for pid in workers + grandchildren if _alive(pid)], "workers outlived their parent"
        assert not (tmp_path / "b" / "nli" / "classic" / "seed2").exists()  # no next cell was started
    finally:
        for pid in _children(parent.pid):
            os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
