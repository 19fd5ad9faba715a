"""One writer per output directory: an advisory lock on `<dir>/.klue.lock`.

The lock is `flock` on an open file, so the kernel releases it when its holder dies, however it dies
(kill -9 included): a lock file left behind by a dead process is simply taken over by the next run. The
file records who holds it (command, pid, host, since when) for the message the second writer gets.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from klue.errors import DataError
from klue.io.output import output_error
from klue.io.provenance import utc_now

LOCK_FILE = ".klue.lock"


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        return f"`{info['command']}` (pid {info['pid']} on {info['host']}, since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another klue process"


def _open_locked(path: Path) -> int | None:
    """An fd holding the lock on `path`, or None when another process holds it.

    After locking, the fd must still be the file at `path`: a holder that released and removed the file
    between our open and our lock leaves us locking a file no one else will ever see, so try again.
    """
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)


@contextlib.contextmanager
def exclusive(directory: Path, command: str) -> Iterator[None]:
    """Hold `directory` for `command` (e.g. "klue train") while the block runs; a second writer gets a
    DataError naming the holder. The directory is created if needed."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / LOCK_FILE
        fd = _open_locked(path)
    except OSError as error:
        raise output_error(directory, error) from error
    if fd is None:
        raise DataError(f"{directory} is in use by {_holder(path)}: one writer per directory. Wait for it to "
                        "finish, or choose another output directory", directory)
    try:
        record = {"command": command, "pid": os.getpid(), "host": socket.gethostname(), "since": utc_now()}
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(record).encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # before unlocking, so a waiter that opened the old file retries (see _open_locked)
        os.close(fd)


def check_free(directory: Path, command: str) -> None:
    """Fail now, before long preparations, if another process holds `directory` (the lock itself is
    taken later, by the code that writes)."""
    if (directory / LOCK_FILE).exists():
        with exclusive(directory, command):
            pass


def exclusive_in_main_process(directory: Path, command: str) -> contextlib.AbstractContextManager[None]:
    """`exclusive`, taken by the main process of an `accelerate launch` (or a process not launched at all) for
    all of them: the others, known from the launcher's RANK, take nothing."""
    return exclusive(directory, command) if is_launch_main() else contextlib.nullcontext()


def is_launch_main() -> bool:
    """Whether this process is the main one of an `accelerate launch` (or not launched at all), known from
    the launcher's environment before accelerate starts."""
    return os.environ.get("RANK", "0") == "0"
