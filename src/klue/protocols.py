"""Named protocols: what a run trains on, selects checkpoints on and evaluates on.

Generic protocols, built for every task from its official files, `task.read` and `task.group_key`:

- `official`: train on the official train file, evaluate on the official dev file, select checkpoints
  on dev (the official recipe; the paper reports dev since the test sets were never released).
- `heldout`: train on the official train file minus a 10% slice chosen by a stable hash of the group
  key; select checkpoints on that slice; evaluate on the official dev file.
- `local:dev-80-20`: only the dev file: 80% of it (by group hash) to train, 20% to evaluate; no
  separate selection set. For machines without the train files; never comparable with official scores.

Task-specific protocols are declared in each task's `task.yaml` (`klue.tasks.base.FileProtocol`: whole
files; `HashSplitProtocol`: one file split by group hash, plus whole extra files) and built here. Groups
(the records that share a task's group key: one premise's pairs, one context's questions, one dialogue's
turns) never straddle a split, so no example leaks across it.
Every protocol's description says what it is; only `official` is official.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from klue.errors import DataError, ProblemLog
from klue.io.locate import DataRoots, FileRef, how_to_get, how_to_get_extra
from klue.io.provenance import DataSource, data_source
from klue.io.release import FileRole
from klue.io.splits import split_by_key
from klue.tasks.base import (
    DEFAULT_LOCAL_PROTOCOL,
    FileProtocol,
    HashSplitProtocol,
    ProtocolSpec,
    Reader,
    Task,
)

OFFICIAL = "official"
HELDOUT = "heldout"
DEV_80_20 = DEFAULT_LOCAL_PROTOCOL
GENERIC_PROTOCOLS: tuple[str, ...] = (OFFICIAL, HELDOUT, DEV_80_20)
HELDOUT_FRACTION = 0.10  # share of train (by group hash) kept out for checkpoint selection
DEV_TRAIN_FRACTION = 0.80  # share of dev (by group hash) used for training under local:dev-80-20

RecordT = TypeVar("RecordT")


@dataclass(frozen=True)
class ProtocolData(Generic[RecordT]):
    """What a run trains on, selects checkpoints on, and evaluates on, under a named protocol."""

    protocol: str  # "official", "heldout", "local:dev-80-20", ...
    official: bool  # True only for `official` (train on train, report dev)
    description: str  # one sentence, copied into every output that uses it
    train: list[RecordT]
    eval: list[RecordT]
    selection: list[RecordT] | None  # checkpoint selection set; None = select on `eval` (official recipe)
    sources: tuple[DataSource, ...]
    # The roots the data came from, so a model can open a task's resource file (an ontology, say).
    roots: DataRoots | None = None


def read_checked(reader: Reader, path: Path) -> list[Any]:
    """All records of a file, or a DataError listing every problem in it."""
    log = ProblemLog(str(path))
    records = reader(path, log)
    log.raise_if_errors()
    return records


def missing_message(protocol: str, missing: Sequence[FileRef], roots: DataRoots, task: Task[Any, Any]) -> str:
    parts = []
    for ref in missing:
        if ref.root == "extra":
            hint = how_to_get_extra() if roots.extra is None else f"it is not under {roots.extra}; " \
                f"{how_to_get_extra()}"
        else:
            hint = how_to_get(task.name)
        parts.append(f"{ref.where(roots)} is missing ({hint})")
    return f"protocol {protocol!r} cannot run here: " + "; ".join(parts)


def names(task: Task[Any, Any]) -> list[str]:
    """Every protocol a task knows: the generic ones, then its own."""
    return [*GENERIC_PROTOCOLS, *(n for n in task.protocols if n not in GENERIC_PROTOCOLS)]


def _official_roles(name: str) -> tuple[FileRole, ...]:
    return ("dev",) if name == DEV_80_20 else ("train", "dev")


def _applies(task: Task[Any, Any], name: str) -> bool:
    return name not in GENERIC_PROTOCOLS or all(task.file(role) is not None for role in _official_roles(name))


def _spec(task: Task[Any, Any], name: str) -> ProtocolSpec:
    if name not in task.protocols:
        raise DataError(f"unknown protocol {name!r} for task {task.name!r}; known: {', '.join(names(task))}",
                        "protocol")
    return task.protocols[name]


def file_refs(task: Task[Any, Any], name: str) -> list[FileRef]:
    """The files protocol `name` reads (DataError for an unknown protocol or one that does not apply)."""
    if name not in GENERIC_PROTOCOLS:
        return _spec(task, name).refs()
    refs = []
    for role in _official_roles(name):
        entry = task.file(role)
        if entry is None:
            raise DataError(f"task {task.name!r} has no official {role} file, so protocol {name!r} does not "
                            "apply to it", "protocol")
        refs.append(FileRef("klue", entry.path))
    return refs


def missing(task: Task[Any, Any], name: str, roots: DataRoots) -> list[str]:
    """The files protocol `name` needs that are not here (paths as messages show them)."""
    return [ref.where(roots) for ref in file_refs(task, name) if not ref.exists(roots)]


def available(task: Task[Any, Any], roots: DataRoots) -> list[str]:
    """The protocols of `task` whose files are all present under `roots`."""
    return [name for name in names(task) if _applies(task, name) and not missing(task, name, roots)]


def split_by_group(task: Task[Any, Any], records: Sequence[Any], fraction: float) -> tuple[list[Any], list[Any]]:
    """(records whose group hashes below `fraction`, the rest), order kept; a group never straddles."""
    return split_by_key(records, task.group_key, fraction)


def resolve(task: Task[Any, Any], name: str, roots: DataRoots) -> ProtocolData[Any]:
    """The data of protocol `name` for `task`, read and split; DataError if unknown or not available."""
    refs = file_refs(task, name)
    absent = [ref for ref in refs if not ref.exists(roots)]
    if absent:
        raise DataError(missing_message(name, absent, roots, task), absent[0].where(roots))
    if name in GENERIC_PROTOCOLS:
        builder = {OFFICIAL: _official, HELDOUT: _heldout, DEV_80_20: _dev_80_20}[name]
        return builder(task, [ref.locate(roots) for ref in refs], roots)  # type: ignore[arg-type]
    spec = _spec(task, name)
    if isinstance(spec, FileProtocol):
        return _files(task, spec, roots)
    return _hash_split(task, spec, roots)


def _source(ref: FileRef, roots: DataRoots, n_examples: int, used_as: str) -> DataSource:
    path = ref.locate(roots)
    assert path is not None  # resolve checked that every file exists
    return data_source(path, n_examples, used_as, roots.of(ref.root))


def _files(task: Task[Any, Any], spec: FileProtocol, roots: DataRoots) -> ProtocolData[Any]:
    reader = task.reader(spec.reader)
    train = read_checked(reader, spec.train.locate(roots))  # type: ignore[arg-type]
    evaluation = read_checked(reader, spec.eval.locate(roots))  # type: ignore[arg-type]
    sources = (_source(spec.train, roots, len(train), "train"), _source(spec.eval, roots, len(evaluation), "eval"))
    return ProtocolData(spec.name, False, spec.description, train, evaluation, None, sources, roots)


def _hash_split(task: Task[Any, Any], spec: HashSplitProtocol, roots: DataRoots) -> ProtocolData[Any]:
    records = read_checked(task.reader(spec.reader), spec.split.locate(roots))  # type: ignore[arg-type]
    train, evaluation = split_by_group(task, records, spec.train_fraction)
    pct = round(spec.train_fraction * 100)
    sources = [_source(spec.split, roots, len(train), f"train ({pct}% by {spec.group} hash)"),
               _source(spec.split, roots, len(evaluation), f"eval ({100 - pct}% by {spec.group} hash)")]
    n_split_train = len(train)
    added = []
    for extra in spec.extra_train:
        extra_records = read_checked(task.reader(extra.reader), extra.file.locate(roots))  # type: ignore[arg-type]
        train.extend(extra_records)
        sources.append(_source(extra.file, roots, len(extra_records), "train (whole file)"))
        note = f"; {extra.note}" if extra.note else ""
        added.append(f"{extra.what} ({len(extra_records):,} {spec.unit}{note})")
    plus = f" plus {' and '.join(added)}" if added else ""
    description = (f"local protocol, not official: trained on {pct}% of {spec.what} "
                   f"({n_split_train:,} {spec.unit}, split by a stable hash of the {spec.group}){plus} and "
                   f"evaluated on the other {100 - pct}% ({len(evaluation):,} {spec.unit}); no {spec.group} "
                   "straddles the split")
    return ProtocolData(spec.name, False, description, train, evaluation, None, tuple(sources), roots)


def _grouping(task: Task[Any, Any], records: Sequence[Any]) -> str:
    """What the split hashes, in words: the guid, or the group key with its number of groups."""
    groups = {task.group_key(r) for r in records}
    if all(task.group_key(r) == task.guid(r) for r in records):
        return "the guid"
    return f"the group key ({len(groups):,} groups, each kept whole on one side)"


def _label(task: Task[Any, Any]) -> str:
    return f"KLUE {task.title} ({task.name}) v1.1"


def _blob_note(task: Task[Any, Any], role: FileRole, source: DataSource) -> str:
    entry = task.file(role)
    if entry is not None and entry.git_blob != source.git_blob:
        return f" (this {role} file differs from the official release: git blob {source.git_blob})"
    return ""


def _official(task: Task[Any, Any], paths: list[Path], roots: DataRoots) -> ProtocolData[Any]:
    train_path, dev_path = paths
    train = read_checked(task.read, train_path)
    dev = read_checked(task.read, dev_path)
    sources = (data_source(train_path, len(train), "train", roots.klue),
               data_source(dev_path, len(dev), "eval and selection", roots.klue))
    description = (f"official protocol: trained on the official {_label(task)} train file ({len(train):,} "
                   f"examples) and evaluated on the official dev file ({len(dev):,} examples), checkpoints "
                   f"selected on dev as in the official recipe"
                   f"{_blob_note(task, 'train', sources[0])}{_blob_note(task, 'dev', sources[1])}")
    return ProtocolData(OFFICIAL, True, description, train, dev, dev, sources, roots)


def _heldout(task: Task[Any, Any], paths: list[Path], roots: DataRoots) -> ProtocolData[Any]:
    train_path, dev_path = paths
    full_train = read_checked(task.read, train_path)
    dev = read_checked(task.read, dev_path)
    selection, train = split_by_group(task, full_train, HELDOUT_FRACTION)
    pct = round(HELDOUT_FRACTION * 100)
    sources = (data_source(train_path, len(train), f"train ({100 - pct}% by group hash)", roots.klue),
               data_source(train_path, len(selection), f"selection ({pct}% by group hash)", roots.klue),
               data_source(dev_path, len(dev), "eval", roots.klue))
    description = (f"not the official protocol: trained on the official {_label(task)} train file minus a "
                   f"{pct}% slice chosen by a stable hash of {_grouping(task, full_train)} ({len(train):,} "
                   f"examples), "
                   f"checkpoints selected on that slice ({len(selection):,}), evaluated on the official dev "
                   f"file ({len(dev):,} examples)")
    return ProtocolData(HELDOUT, False, description, train, dev, selection, sources, roots)


def _dev_80_20(task: Task[Any, Any], paths: list[Path], roots: DataRoots) -> ProtocolData[Any]:
    (dev_path,) = paths
    dev = read_checked(task.read, dev_path)
    train, evaluation = split_by_group(task, dev, DEV_TRAIN_FRACTION)
    pct = round(DEV_TRAIN_FRACTION * 100)
    sources = (data_source(dev_path, len(train), f"train ({pct}% of dev by group hash)", roots.klue),
               data_source(dev_path, len(evaluation), f"eval ({100 - pct}% of dev by group hash)", roots.klue))
    description = (f"local protocol, not official: trained on {pct}% of the official {_label(task)} dev file "
                   f"({len(train):,} examples) and evaluated on the other {100 - pct}% ({len(evaluation):,} "
                   f"examples), split by a stable hash of {_grouping(task, dev)}")
    return ProtocolData(DEV_80_20, False, description, train, evaluation, None, sources, roots)
