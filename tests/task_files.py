"""Writing a test's data file and reading it back with a task reader, for the task tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from klue.errors import ProblemLog


def write_file(path: Path, content: Any) -> Path:
    """`content` as the file: bytes as they are, a string as UTF-8, anything else as JSON."""
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False),
                        encoding="utf-8")
    return path


def read_with_log(reader: Callable[[Path, ProblemLog], list[Any]], path: Path) -> tuple[list[Any], ProblemLog]:
    """The records a reader makes of `path` and the log of what it found."""
    log = ProblemLog(str(path))
    return reader(path, log), log
