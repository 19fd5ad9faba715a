"""Directories that refuse writes, for the output-side tests: a read-only one and a nearly full disk.

As root (permissions do not stop root) both are small tmpfs mounts, read-only or a few KiB large; as
another user the read-only one is a chmod 0555 directory and the full disk is skipped with its reason.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount_tmpfs(path: Path, options: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, check=False)
    return done.returncode == 0


def _unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


@contextmanager
def read_only_dir(path: Path) -> Iterator[Path]:
    if _mount_tmpfs(path, "ro,size=64k"):
        try:
            yield path
        finally:
            _unmount(path)
        return
    if os.geteuid() == 0:
        pytest.skip("running as root without permission to mount a read-only tmpfs")
    path.chmod(0o555)
    try:
        yield path
    finally:
        path.chmod(0o755)


@contextmanager
def full_disk(path: Path, kib: int = 16) -> Iterator[Path]:
    """A tmpfs of `kib` KiB: a write of more than that fails with ENOSPC."""
    if not _mount_tmpfs(path, f"size={kib}k"):
        pytest.skip("a full disk needs a small tmpfs, which only root can mount")
    try:
        yield path
    finally:
        _unmount(path)
