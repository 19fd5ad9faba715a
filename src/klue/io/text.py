"""Low-level reading shared by every reader: bytes -> checked text, JSON or JSON Lines, with file:line errors."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from klue.errors import ProblemLog


def read_text(path: Path, log: ProblemLog) -> str | None:
    """The file's text, or None after logging why not (missing, empty, not UTF-8)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        log.error("", f"cannot read file: {error.strerror or error}")  # noqa: PLE1205 (ProblemLog, not logging)
        return None
    if not data.strip():
        log.error("line 1", "the file is empty")  # noqa: PLE1205
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        log.error(f"line {line}", f"bytes that are not UTF-8 at byte offset {error.start}: "
                                 f"{data[error.start:error.start + 4]!r}")
        return None
    return text.removeprefix("\ufeff")


def load_json(path: Path, log: ProblemLog) -> Any | None:
    """Parsed JSON, or None after logging where it is invalid or truncated."""
    text = read_text(path, log)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        truncated = error.pos >= len(text.rstrip())
        what = "truncated JSON (the file ends early)" if truncated else f"invalid JSON: {error.msg}"
        log.error(f"line {error.lineno} column {error.colno}", what)
        return None


def check_unique_guids(guids: Iterable[tuple[str, str]], log: ProblemLog) -> None:
    """`guids` yields (guid, location); a guid seen twice is an error at its second place."""
    first_seen: dict[str, str] = {}
    for guid, location in guids:
        if guid in first_seen:
            log.error(location, f"duplicate guid {guid!r} (first at {first_seen[guid]})")
        else:
            first_seen[guid] = location


def jsonl_objects(lines: Iterable[str], log: ProblemLog, text_field: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of each JSON Lines line that is an object with a string `text_field`; blank
    lines are skipped, every other line is an error in `log`."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as error:
            log.error(f"line {number}", f"not JSON: {error.msg}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get(text_field), str):
            log.error(f"line {number}", f"expected an object with a string field {text_field!r}")
            continue
        yield number, obj
