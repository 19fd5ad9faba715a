"""Where the KLUE files are: `--data-dir`, then `KLUE_DATA_DIR`, then a per-user cache directory.

The directory holds the official layout: `<root>/klue-nli-v1.1/klue-nli-v1.1_dev.json`, ...
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir

from klue.errors import DataError
from klue.tasks.base import FileRole, Task

ENV_VAR = "KLUE_DATA_DIR"


@dataclass(frozen=True)
class DataRoot:
    path: Path
    source: str  # "--data-dir", "KLUE_DATA_DIR" or "cache": how it was chosen, for messages


def default_cache_dir() -> Path:
    return Path(user_cache_dir("klue", appauthor=False)) / "data"


def data_root(cli_value: str | Path | None = None, environ: Mapping[str, str] | None = None) -> DataRoot:
    env = os.environ if environ is None else environ
    if cli_value:
        return DataRoot(Path(cli_value).expanduser(), "--data-dir")
    if env.get(ENV_VAR):
        return DataRoot(Path(env[ENV_VAR]).expanduser(), ENV_VAR)
    return DataRoot(default_cache_dir(), "cache")


def how_to_get(task: Task[Any, Any]) -> str:
    return (
        f"run `klue data download {task.name}` (or `klue data download {task.name} --from DIR` to import "
        f"a local copy), or point --data-dir / {ENV_VAR} at a directory in the official layout"
    )


def task_file(task: Task[Any, Any], role: FileRole, root: DataRoot) -> Path:
    """The path of a task's official file; a clear `DataError` when it is not there."""
    entry = task.file(role)
    if entry is None:
        raise DataError(f"task {task.name!r} has no official {role} file")
    path = root.path / entry.path
    if not path.is_file():
        raise DataError(
            f"{task.name}: the official {role} file {entry.path} is not in {root.path} "
            f"(chosen by {root.source}); {how_to_get(task)}",
            path,
        )
    return path


def missing_files(task: Task[Any, Any], root: DataRoot) -> list[str]:
    return [f.path for f in task.files if not (root.path / f.path).is_file()]
