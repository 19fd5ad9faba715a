"""The one atomic writer: write beside the target, then rename, so a reader never sees half a file or
half a directory.

Temporary files and directories are created with the mode a plain `open()` or `mkdir()` would give (the
umask decides), not mkstemp's 0600 or mkdtemp's 0700, so a renamed result is as readable as any other file
the user writes. A write that fails (full disk, read-only directory) removes its temporary and raises
`OutputError` naming the target, so the CLI prints one line and nothing half-written is left.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from klue.io.output import output_error


def temp_path_beside(final: Path, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new hidden file next to `final` (opened for writing, O_EXCL) and its path."""
    while True:
        tmp = final.parent / f".{final.name}.{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue


def _about(error: OSError, *places: Path) -> bool:
    """Whether `error` is a failure to write one of `places` (or inside one): not, say, a file the callback
    was reading, whose error must stay as it is."""
    if not error.filename:
        return True
    failed = Path(os.fsdecode(error.filename))
    return any(failed == place or place in failed.parents for place in places)


def write_atomic(path: Path, write: Callable[[IO[str]], None]) -> None:
    """Create `path` (and its parents) by calling `write` on a text handle of a temporary sibling."""
    _write_atomic(path, write, binary=False)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Create `path` (and its parents) holding `data`, through a temporary sibling."""
    _write_atomic(path, lambda handle: handle.write(data), binary=True)


def _write_atomic(path: Path, write: Callable[[Any], Any], binary: bool) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = temp_path_beside(path)
    except OSError as error:
        raise output_error(path, error) from error
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as handle:
            write(handle)
        os.replace(tmp, path)
    except OSError as error:
        tmp.unlink(missing_ok=True)
        if _about(error, tmp, path, path.parent):
            raise output_error(path, error) from error
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def temp_dir_in(parent: Path, prefix: str) -> Path:
    """A new hidden directory in `parent`, named `<prefix><random>`."""
    while True:
        path = parent / f"{prefix}{secrets.token_hex(6)}"
        try:
            path.mkdir(0o777)
            return path
        except FileExistsError:
            continue


def swap_in(new: Path, target: Path) -> None:
    """Put the directory `new` at `target`, replacing what is there: the old one is moved aside first and
    removed last, so `target` is always either the old or the new complete directory."""
    old = target.with_name(f".{target.name}.old")
    if target.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)


def write_dir_atomic(path: Path, fill: Callable[[Path], None]) -> None:
    """Create the directory `path` by calling `fill` on a temporary sibling, then swapping it in."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_dir_in(path.parent, f".{path.name}.")
    except OSError as error:
        raise output_error(path, error) from error
    try:
        fill(tmp)
        swap_in(tmp, path)
    except OSError as error:
        shutil.rmtree(tmp, ignore_errors=True)
        if _about(error, tmp, path, path.parent):
            raise output_error(path, error) from error
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    def fill(handle: IO[str]) -> None:
        handle.write(text)

    write_atomic(path, fill)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Indented UTF-8 JSON with a final newline."""

    def write(handle: IO[str]) -> None:
        json.dump(obj, handle, ensure_ascii=False, indent=2)
        handle.write("\n")

    write_atomic(path, write)


def write_jsonl_atomic(path: Path, objects: Iterable[dict[str, Any]]) -> None:
    """JSON Lines: one compact object per line."""

    def write(handle: IO[str]) -> None:
        for obj in objects:
            handle.write(json.dumps(obj, ensure_ascii=False))
            handle.write("\n")

    write_atomic(path, write)


def current_umask() -> int:
    """The process umask, read without changing it where the kernel reports it (changing it, even for an
    instant, races with other threads creating files)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    previous = os.umask(0o022)
    os.umask(previous)
    return previous


def follow_umask(path: Path) -> None:
    """Give a file written by a library that forces 0600 (safetensors does) the mode `open()` would."""
    os.chmod(path, 0o666 & ~current_umask())
