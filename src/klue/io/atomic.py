"""The one atomic writer: write beside the target, then rename, so a reader never sees half a file or
half a directory.

Temporary files and directories are created with the mode a plain `open()` or `mkdir()` would give (the
umask decides), not mkstemp's 0600 or mkdtemp's 0700, so a renamed result is as readable as any other file
the user writes.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any


def temp_path_beside(final: Path, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new hidden file next to `final` (opened for writing, O_EXCL) and its path."""
    while True:
        tmp = final.parent / f".{final.name}.{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue


def write_atomic(path: Path, write: Callable[[IO[str]], None]) -> None:
    """Create `path` (and its parents) by calling `write` on a text handle of a temporary sibling."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_path_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            write(handle)
        os.replace(tmp, path)
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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_dir_in(path.parent, f".{path.name}.")
    try:
        fill(tmp)
        swap_in(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    write_atomic(path, lambda handle: handle.write(text))


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
