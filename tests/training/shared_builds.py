"""Helpers for the training tests' fixtures."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder that `build(folder)` fills once per test session, shared by its xdist workers: under
    `--dist worksteal` the tests of one module can run on both workers, and each worker built a
    module-scoped fine-tune of its own (CPU seconds twice). The first worker builds under a file lock;
    another waits for it and reads the finished folder."""
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker's base folder (popen-gwN) sits in the session's own one; without xdist the
    # parent would be shared with other sessions, so the session's base folder itself is used.
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = root / f"built-once-{name}", root / f"built-once-{name}.done"
    with open(root / f"built-once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed half-way
            folder.mkdir()
            build(folder)
            done.touch()
    return folder
