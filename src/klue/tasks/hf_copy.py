"""A task's records written as a Hugging Face `datasets` copy: the official files exported as a
`DatasetDict` (`klue data export --format hf`). Copies are read back by the reading layer
(`klue.tasks.reading`: the hub's `klue/klue` copy, a `save_to_disk` directory, a parquet file).

Every task declares its layout as `HF_LAYOUT` in its records module (`Task.hf_layout`); this module
knows no task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.io import hf
from klue.io.locate import DataRoots, how_to_get
from klue.io.provenance import data_source
from klue.tasks.base import OFFICIAL_READER, Task
from klue.tasks.reading import layout_of, read


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
        entry = task.file(role)
        if entry is None:
            continue
        path = roots.klue / entry.path
        if not path.is_file():
            missing.append(str(path))
            continue
        records = read(task, path, OFFICIAL_READER, purpose="export").records
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
