"""Where the data is: the official layout (`--data-dir`, then `KLUE_DATA_DIR`, then a per-user cache
directory) and the extra data directory of the local protocols (`--extra-data-dir`, then
`KLUE_EXTRA_DATA_DIR`).

The official root holds `<root>/klue-nli-v1.1/klue-nli-v1.1_dev.json`, ...; the extra root holds
`klue-partial/`, `klue-derived/` and `korean/`. A file is named by a `FileRef`: its root and its path there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from platformdirs import user_cache_dir

ENV_VAR = "KLUE_DATA_DIR"
EXTRA_ENV_VAR = "KLUE_EXTRA_DATA_DIR"

RootKind = Literal["klue", "extra"]


@dataclass(frozen=True)
class DataRoot:
    path: Path
    source: str  # "--data-dir", "KLUE_DATA_DIR" or "cache": how it was chosen, for messages


@dataclass(frozen=True)
class DataRoots:
    """`klue`: the official layout (--data-dir / KLUE_DATA_DIR / cache). `extra`: the directory holding
    `klue-partial/`, `klue-derived/` and `korean/` (--extra-data-dir / KLUE_EXTRA_DATA_DIR), or None."""

    klue: Path
    extra: Path | None = None

    def of(self, kind: RootKind) -> Path | None:
        return self.klue if kind == "klue" else self.extra


def default_cache_dir() -> Path:
    return Path(user_cache_dir("klue", appauthor=False)) / "data"


def data_root(cli_value: str | Path | None = None, environ: Mapping[str, str] | None = None) -> DataRoot:
    env = os.environ if environ is None else environ
    if cli_value:
        return DataRoot(Path(cli_value).expanduser(), "--data-dir")
    if env.get(ENV_VAR):
        return DataRoot(Path(env[ENV_VAR]).expanduser(), ENV_VAR)
    return DataRoot(default_cache_dir(), "cache")


def roots_from(data_dir: str | Path | None, extra_data_dir: str | Path | None,
               environ: Mapping[str, str] | None = None) -> DataRoots:
    """The data roots: the CLI value, then KLUE_DATA_DIR / KLUE_EXTRA_DATA_DIR, then the cache / None."""
    env = os.environ if environ is None else environ
    klue = data_root(data_dir, env).path
    if extra_data_dir:
        extra: Path | None = Path(extra_data_dir).expanduser()
    elif env.get(EXTRA_ENV_VAR):
        extra = Path(env[EXTRA_ENV_VAR]).expanduser()
    else:
        extra = None
    return DataRoots(klue, extra)


@dataclass(frozen=True)
class FileRef:
    """A data file by its path under one of the roots: the official layout or the extra data directory."""

    root: RootKind
    path: str

    def locate(self, roots: DataRoots) -> Path | None:
        base = roots.of(self.root)
        return None if base is None else base / self.path

    def exists(self, roots: DataRoots) -> bool:
        where = self.locate(roots)
        return where is not None and where.is_file()

    def where(self, roots: DataRoots) -> str:
        """The path for messages, also when the root is not set."""
        located = self.locate(roots)
        if located is not None:
            return str(located)
        return f"<--extra-data-dir>/{self.path}"


def how_to_get(task_name: str) -> str:
    return (
        f"run `klue data download {task_name}` (or `klue data download {task_name} --from DIR` to import "
        f"a local copy), or point --data-dir / {ENV_VAR} at a directory in the official layout"
    )


def how_to_get_extra() -> str:
    return (f"point --extra-data-dir / {EXTRA_ENV_VAR} at the directory holding klue-partial/, "
            "klue-derived/ and korean/")


def beside(path: Path, name: str) -> Path | None:
    """A resource file that sits next to a data file (`relation_list.json`, `ontology.json`), if any."""
    candidate = path.parent / name
    return candidate if candidate.is_file() else None
