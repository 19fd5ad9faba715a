"""Telling a data file's format from the file itself, for every command that reads data files.

A task's readers are named: `official`, its other readers (`korsts`, `kornli`, `conllu`, `korquad`, ...),
and two Hugging Face ones every task has: `datasets` (a `save_to_disk` directory, `DIR` or `DIR:split`)
and `parquet` (a parquet file with the `klue/klue` columns). A path names its format by what it is (a
directory, a `.parquet` file) or, for text files, by its extension, name or folder (`.conllu`,
`korsts/sts-train.tsv`, `ynat-resplit_train.json`); anything else is the official format.

This module is task-free: the caller passes the reader names its task knows (`format_named_by`).
`klue data validate` tells a file's task by the same rule (`mentions`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

# Why a file is read; every reader of a task sees it (`klue.tasks.reading` says what each one changes).
ReadPurpose = Literal["validate", "train", "score", "predict", "export"]
READ_PURPOSES: tuple[ReadPurpose, ...] = get_args(ReadPurpose)
OFFICIAL_FORMAT = "official"
DATASETS_FORMAT = "datasets"  # a `datasets` save_to_disk directory: DIR, or DIR:split for a DatasetDict
PARQUET_FORMAT = "parquet"  # one parquet file with the klue/klue columns
HF_FORMATS: tuple[str, ...] = (DATASETS_FORMAT, PARQUET_FORMAT)
PARQUET_SUFFIXES = (".parquet", ".pq")
# What `Dataset.save_to_disk` / `DatasetDict.save_to_disk` leave in a directory.
SAVED_MARKERS = ("dataset_dict.json", "state.json", "dataset_info.json")


@dataclass(frozen=True)
class SavedPath:
    """A `save_to_disk` directory as given on the command line: `DIR` or `DIR:split`."""

    directory: Path
    split: str | None  # None: the directory holds one Dataset, or the caller must be told the splits

    def __str__(self) -> str:
        return f"{self.directory}:{self.split}" if self.split else str(self.directory)


def name_parts(path: Path) -> set[str]:
    """The words of a file's folder and name, split at `/ _ . -` and spaces, lower-cased."""
    text = f"{path.parent.name}/{path.name}".lower()
    return {part for part in re.split(r"[/_.\-\s]+", text) if part}


def mentions(key: str, path: Path) -> bool:
    """Whether a file's extension, name or folder names `key` (a reader or task name)."""
    key = key.lower()
    if key == path.suffix.lower().lstrip(".") or key in name_parts(path):
        return True
    # longer keys may span separators ("ynat-resplit") or sit inside a word ("kornli")
    return len(key) >= 4 and key in f"{path.parent.name}/{path.name}".lower()


def is_saved_dir(path: Path) -> bool:
    return path.is_dir() and any((path / marker).is_file() for marker in SAVED_MARKERS)


def saved_path(path: Path) -> SavedPath | None:
    """`DIR` or `DIR:split` when it names a `save_to_disk` directory (or a directory at all), else None.

    The split suffix is only taken when the whole path is not itself an existing file or directory, so a
    directory whose name holds a colon still reads as it is.
    """
    if path.is_dir():
        return SavedPath(path, None)
    text = str(path)
    head, sep, split = text.rpartition(":")
    if sep and head and split and "/" not in split and Path(head).is_dir():
        return SavedPath(Path(head), split)
    return None


def format_named_by(path: Path, reader_names: Sequence[str]) -> str:
    """The format a path names: `datasets` for a directory (or `DIR:split`), `parquet` for a `.parquet`
    file, else the first of `reader_names` the file's name mentions, else `official`. (A task's
    `klue.tasks.reading.infer_format` starts here, and reads a plain file whose name tells nothing.)"""
    if saved_path(path) is not None:
        return DATASETS_FORMAT
    if path.suffix.lower() in PARQUET_SUFFIXES:
        return PARQUET_FORMAT
    return next((name for name in reader_names if mentions(name, path)), OFFICIAL_FORMAT)
