"""Checks on where output goes, made before the work starts, and one clear error for a write that fails.

A command that would run for an hour and then find it cannot write its result checks first: the output
file's directory can be created and written (a probe file is created and removed, which catches read-only
mounts and permissions alike, root's included), and the output path is not a directory when a file is
meant, nor a file when a directory is. A write that still fails (a disk that fills up meanwhile) becomes
`OutputError`: the CLI prints it as one line and exits 2.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from klue.errors import DataError

_WHY = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded",
        errno.EROFS: "the file system is read-only", errno.EACCES: "permission denied",
        errno.EPERM: "permission denied", errno.EISDIR: "it is a directory", errno.ENOTDIR: "a parent is not a directory"}


class OutputError(DataError):
    """An output file or directory that cannot be written."""


def output_error(path: Path, error: OSError) -> OutputError:
    reason = _WHY.get(error.errno or 0, error.strerror or str(error))
    where = os.fsdecode(error.filename) if error.filename else path
    return OutputError(f"cannot write {where}: {reason}")  # the path is in the sentence, not before it


def _probe(directory: Path) -> None:
    """Create the directory and a file in it, then remove the file: the one test every file system answers."""
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / f".klue-write-test-{os.getpid()}"
    fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"k")
    finally:
        os.close(fd)
        probe.unlink(missing_ok=True)


def _existing_ancestor_file(path: Path) -> Path | None:
    for parent in (path, *path.parents):
        if parent.exists():
            return parent if not parent.is_dir() else None
    return None


def check_output_file(path: Path, option: str) -> None:
    """`path` can be written as a file: not a directory, and its directory exists or can be made, writable."""
    if path.is_dir():
        raise OutputError(f"{option} {path} is a directory; name a file to write", path)
    blocker = _existing_ancestor_file(path.parent)
    if blocker is not None:
        raise OutputError(f"{option} {path}: {blocker} is a file, not a directory", path)
    try:
        _probe(path.parent)
    except OSError as error:
        raise output_error(path, error) from error


@contextmanager
def output_dir_for_run(path: Path, option: str) -> Iterator[None]:
    """`check_output_dir`, and the directories it made for `path` removed again, while they hold nothing,
    when the run inside refuses (raises): a refused run leaves nothing behind."""
    made = [directory for directory in (path, *path.parents) if not directory.exists()]  # deepest first
    check_output_dir(path, option)
    try:
        yield
    except BaseException:
        for directory in made:
            try:
                directory.rmdir()
            except OSError:  # the run wrote something there (or it is gone): kept as it is
                break
        raise


def check_output_dir(path: Path, option: str) -> None:
    """`path` can hold output: a directory (or creatable as one) that can be written."""
    blocker = _existing_ancestor_file(path)
    if blocker is not None:
        what = "is a file" if blocker == path else f"is inside {blocker}, which is a file"
        raise OutputError(f"{option} {path} {what}; name a directory", path)
    try:
        _probe(path)
    except OSError as error:
        raise output_error(path, error) from error
