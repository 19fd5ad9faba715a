"""A task's records as a Hugging Face `datasets` copy, both ways: finding the task's layout, reading rows
(the hub's `klue/klue` copy, a `save_to_disk` directory, a parquet file) into records, and exporting the
official files as a `DatasetDict` (`klue data export --format hf`).

Every task declares its layout as `HF_LAYOUT` in its records module (`Task.hf_layout`), whose `from_rows`
is the task's one reader of rows; this module knows no task.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.errors import DataError, ProblemLog
from klue.io import formats, hf
from klue.io.locate import DataRoots, how_to_get
from klue.io.provenance import data_source
from klue.tasks.base import Task

RowReader = Callable[[Any, ProblemLog], list[Any]]


def layout_of(task: Task[Any, Any]) -> hf.HfLayout[Any] | None:
    """The task's Hugging Face layout (`HF_LAYOUT` in its records module), or None."""
    layout: hf.HfLayout[Any] | None = task.hf_layout()
    return layout


def reader_of(task: Task[Any, Any]) -> RowReader:
    """How rows of a `datasets` copy become the task's records; DataError when the task has no mapping."""
    layout = layout_of(task)
    if layout is not None:
        return layout.from_rows
    raise DataError(f"task {task.name!r} has no Hugging Face mapping, so it cannot read a `datasets` copy")


def read_rows(task: Task[Any, Any], dataset: Any, where: str) -> list[Any]:
    """All records of a Dataset, or a DataError listing every problem (at `where`, row by row)."""
    log = ProblemLog(where)
    records = reader_of(task)(dataset, log)
    log.raise_if_errors()
    return records


@dataclass(frozen=True)
class OpenedCopy:
    """A local `datasets` copy opened: its rows, how messages show it, and the path that identifies it
    (a parquet file, a split's own directory, else the save_to_disk directory)."""

    dataset: Any
    shown: str
    identified: Path


def open_copy(path: Path, fmt: str) -> OpenedCopy:
    """The Dataset of a parquet file (`fmt` "parquet") or a save_to_disk directory (`fmt` "datasets":
    `DIR`, or `DIR:split` for one split of a DatasetDict); DataError when it cannot be had."""
    if fmt == formats.PARQUET_FORMAT:
        return OpenedCopy(hf.load_parquet(path), str(path), path)
    saved = formats.saved_path(path)
    if saved is None:
        raise DataError("the `datasets` format reads a save_to_disk directory (DIR, or DIR:split for one split "
                        "of a DatasetDict); this is not a directory", path)
    dataset = hf.load_saved(saved)
    split_dir = saved.directory / saved.split if saved.split else saved.directory
    return OpenedCopy(dataset, str(saved), split_dir if split_dir.is_dir() else saved.directory)


def read_copy(task: Task[Any, Any], path: Path, fmt: str, log: ProblemLog) -> list[Any]:
    """The records of a local copy (see `open_copy`), every problem logged in `log` (the file's own
    reader logs row problems; a copy that cannot be opened is one problem), as a task reader does."""
    try:
        return reader_of(task)(open_copy(path, fmt).dataset, log)
    except DataError as error:
        log.problems.extend(error.problems)
        return []


# ------------------------------------------------------------------------------------ export


@dataclass(frozen=True)
class ExportedSplit:
    split: str  # "train" or "validation"
    path: str  # the official file it was made from, under the KLUE data root
    git_blob: str
    n_records: int


@dataclass(frozen=True)
class Export:
    out: Path
    splits: tuple[ExportedSplit, ...]
    missing: tuple[str, ...]  # official train/dev files that are not here (paths as messages show them)


def _layout_or_refuse(task: Task[Any, Any]) -> hf.HfLayout[Any]:
    layout = layout_of(task)
    if layout is None:
        raise DataError(f"task {task.name!r} declares no Hugging Face layout (HF_LAYOUT in its records module), "
                        "so it cannot be exported yet")
    return layout


def dataset_of(task: Task[Any, Any], records: Sequence[Any], description: str = "") -> Any:
    """The records as a `datasets.Dataset` in the task's layout (ClassLabels in the official order).
    Records without gold (read for prediction) are refused: a copy's label columns would invent one."""
    layout = _layout_or_refuse(task)
    unlabelled = [task.guid(r) for r in records if not getattr(r, "labelled", True)]
    if unlabelled:
        raise DataError(f"{task.name}: {len(unlabelled):,} records have no gold (read for prediction, e.g. "
                        f"{unlabelled[0]!r}), so they cannot be written as a Hugging Face copy")
    return hf.dataset_from_rows(layout.to_rows(records), layout.features, description)


def export(task: Task[Any, Any], roots: DataRoots, out: Path) -> Export:
    """Write the task's official train and dev files that are here as a `DatasetDict` (splits `train`,
    `validation`) at `out`, atomically; DataError when neither is here or a file has errors."""
    _layout_or_refuse(task)
    hf.require_datasets()
    splits: dict[str, Any] = {}
    done: list[ExportedSplit] = []
    missing: list[str] = []
    for role, split in hf.SPLIT_OF_ROLE.items():
        entry = task.file(role)  # type: ignore[arg-type]
        if entry is None:
            continue
        path = roots.klue / entry.path
        if not path.is_file():
            missing.append(str(path))
            continue
        log = ProblemLog(str(path))
        records = task.read(path, log)
        log.raise_if_errors()
        source = data_source(path, len(records), split, roots.klue)
        official = "the official" if source.git_blob == entry.git_blob else "a non-official (its content differs)"
        description = (f"KLUE {task.title} ({task.name}) v1.1: {official} {role} file {entry.path} (git blob "
                       f"{source.git_blob}), {len(records):,} records, exported by klue; label columns are "
                       "ClassLabels in the official label order")
        splits[split] = dataset_of(task, records, description)
        done.append(ExportedSplit(split, entry.path, source.git_blob, len(records)))
    if not splits:
        raise DataError(f"none of the official {task.name} train and dev files is here ({'; '.join(missing)}); "
                        f"{how_to_get(task.name)}")
    hf.write_dataset_dict(out, splits)
    return Export(out, tuple(done), tuple(missing))
