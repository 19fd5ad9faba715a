"""Named protocols: what a run trains on, selects checkpoints on and evaluates on (contract C).

Generic protocols, built for every task from its official files, `task.read` and `task.group_key`:

- `official`: train on the official train file, evaluate on the official dev file, select checkpoints
  on dev (the official recipe; the paper reports dev since the test sets were never released).
- `heldout`: train on the official train file minus a 10% slice chosen by a stable hash of the group
  key; select checkpoints on that slice; evaluate on the official dev file.
- `local:dev-80-20`: only the dev file: 80% of it (by group hash) to train, 20% to evaluate; no
  separate selection set. For machines without the train files; never comparable with official scores.

Task-specific protocols come from `task.protocols` (most are `FileProtocol`s: whole files from the
official layout or the extra data directory). Groups (an NLI premise, an MRC context, a WoS dialogue)
never straddle a split, so no example leaks across it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from klue.data.hashing import git_blob_sha1
from klue.data.locate import data_root, how_to_get
from klue.data.splits import split_by_key
from klue.errors import DataError, ProblemLog
from klue.tasks.base import DataRoots, DataSource, ProtocolData, Task

EXTRA_ENV_VAR = "KLUE_EXTRA_DATA_DIR"
OFFICIAL = "official"
HELDOUT = "heldout"
DEV_80_20 = "local:dev-80-20"
GENERIC_PROTOCOLS: tuple[str, ...] = (OFFICIAL, HELDOUT, DEV_80_20)
HELDOUT_FRACTION = 0.10  # share of train (by group hash) kept out for checkpoint selection
DEV_TRAIN_FRACTION = 0.80  # share of dev (by group hash) used for training under local:dev-80-20

RootKind = Literal["klue", "extra"]
Reader = Callable[[Path, ProblemLog], list[Any]]


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


def how_to_get_extra() -> str:
    return (f"point --extra-data-dir / {EXTRA_ENV_VAR} at the directory holding klue-partial/, "
            "klue-derived/ and korean/")


@dataclass(frozen=True)
class FileRef:
    """A data file by its path under one of the roots: the official layout or the extra data directory."""

    root: RootKind
    path: str

    def locate(self, roots: DataRoots) -> Path | None:
        base = roots.klue if self.root == "klue" else roots.extra
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


def read_checked(reader: Reader, path: Path) -> list[Any]:
    """All records of a file, or a DataError listing every problem in it."""
    log = ProblemLog(str(path))
    records = reader(path, log)
    log.raise_if_errors()
    return records


def source(path: Path, n_examples: int, used_as: str, root: Path | None = None) -> DataSource:
    """A provenance entry: the path (relative to its root when given), git blob id and count."""
    shown = str(path.relative_to(root)) if root is not None and path.is_relative_to(root) else str(path)
    return DataSource(shown, git_blob_sha1(path), n_examples, used_as)


@dataclass(frozen=True)
class FileProtocol:
    """A task-specific protocol made of whole files: train on one, evaluate on another.

    Declared in a task module (`protocols={"local:ner-train5000": FileProtocol(...)}`); calling it
    with the roots reads both files. Checkpoints are selected on `eval` (selection None), as the
    official recipe selects on dev.
    """

    name: str
    train: FileRef
    eval: FileRef
    reader: Reader
    description: str  # one sentence: what is trained and evaluated on, and that it is not official

    def refs(self) -> list[FileRef]:
        """The files it reads, each once (train and eval may be the same file)."""
        return list(dict.fromkeys([self.train, self.eval]))

    def missing(self, roots: DataRoots) -> list[FileRef]:
        return [ref for ref in self.refs() if not ref.exists(roots)]

    def __call__(self, roots: DataRoots) -> ProtocolData[Any]:
        missing = self.missing(roots)
        if missing:
            raise DataError(missing_message(self.name, missing, roots), missing[0].where(roots))
        train_path, eval_path = self.train.locate(roots), self.eval.locate(roots)
        assert train_path is not None and eval_path is not None
        train = read_checked(self.reader, train_path)
        evaluation = read_checked(self.reader, eval_path)
        sources = (
            source(train_path, len(train), "train", _root_of(self.train, roots)),
            source(eval_path, len(evaluation), "eval", _root_of(self.eval, roots)),
        )
        return ProtocolData(self.name, False, self.description, train, evaluation, None, sources)


def _root_of(ref: FileRef, roots: DataRoots) -> Path | None:
    return roots.klue if ref.root == "klue" else roots.extra


def missing_message(protocol: str, missing: Sequence[FileRef], roots: DataRoots,
                     task: Task[Any, Any] | None = None) -> str:
    parts = []
    for ref in missing:
        if ref.root == "extra":
            hint = how_to_get_extra() if roots.extra is None else f"it is not under {roots.extra}; " \
                f"{how_to_get_extra()}"
        else:
            hint = how_to_get(task) if task is not None else "point --data-dir / KLUE_DATA_DIR at the " \
                "official layout"
        parts.append(f"{ref.where(roots)} is missing ({hint})")
    return f"protocol {protocol!r} cannot run here: " + "; ".join(parts)


_missing_message = missing_message  # the earlier private name, still used by some task modules


def names(task: Task[Any, Any]) -> list[str]:
    """Every protocol a task knows: the generic ones, then its own."""
    return [*GENERIC_PROTOCOLS, *(n for n in task.protocols if n not in GENERIC_PROTOCOLS)]


def _official_refs(task: Task[Any, Any], name: str) -> list[FileRef]:
    roles = ("dev",) if name == DEV_80_20 else ("train", "dev")
    refs = []
    for role in roles:
        entry = task.file(role)
        if entry is None:
            raise DataError(f"task {task.name!r} has no official {role} file, so protocol {name!r} does not "
                            "apply to it", "protocol")
        refs.append(FileRef("klue", entry.path))
    return refs


def missing(task: Task[Any, Any], name: str, roots: DataRoots) -> list[str]:
    """The files protocol `name` needs that are not here (paths as messages show them)."""
    if name in GENERIC_PROTOCOLS:
        return [ref.where(roots) for ref in _official_refs(task, name) if not ref.exists(roots)]
    builder = _builder(task, name)
    declared = getattr(builder, "missing", None)  # FileProtocol and other declarative protocols
    if callable(declared):
        return [ref.where(roots) for ref in declared(roots)]
    try:  # a protocol declared as a plain function: the only way to know is to build it
        builder(roots)
    except DataError as error:
        return [str(error)]
    return []


def file_refs(task: Task[Any, Any], name: str) -> list[FileRef]:
    """The files protocol `name` reads, where it declares them (generic and declarative protocols)."""
    if name in GENERIC_PROTOCOLS:
        return _official_refs(task, name) if _applies(task, name) else []
    refs = getattr(_builder(task, name), "refs", None)
    return list(refs()) if callable(refs) else []


def available(task: Task[Any, Any], roots: DataRoots) -> list[str]:
    """The protocols of `task` whose files are all present under `roots`."""
    return [name for name in names(task) if _applies(task, name) and not missing(task, name, roots)]


def _applies(task: Task[Any, Any], name: str) -> bool:
    if name in GENERIC_PROTOCOLS:
        return all(task.file(role) is not None for role in (("dev",) if name == DEV_80_20 else ("train", "dev")))
    return True


def _builder(task: Task[Any, Any], name: str) -> Callable[[DataRoots], ProtocolData[Any]]:
    if name not in task.protocols:
        raise DataError(f"unknown protocol {name!r} for task {task.name!r}; known: {', '.join(names(task))}",
                        "protocol")
    return task.protocols[name]


def resolve(task: Task[Any, Any], name: str, roots: DataRoots) -> ProtocolData[Any]:
    """The data of protocol `name` for `task`, read and split; DataError if unknown or not available."""
    return dataclasses.replace(_resolve(task, name, roots), roots=roots)


def _resolve(task: Task[Any, Any], name: str, roots: DataRoots) -> ProtocolData[Any]:
    if name not in GENERIC_PROTOCOLS:
        return _builder(task, name)(roots)
    refs = _official_refs(task, name)
    absent = [ref for ref in refs if not ref.exists(roots)]
    if absent:
        raise DataError(missing_message(name, absent, roots, task), absent[0].where(roots))
    paths = [ref.locate(roots) for ref in refs]
    if name == OFFICIAL:
        return _official(task, paths[0], paths[1], roots)
    if name == HELDOUT:
        return _heldout(task, paths[0], paths[1], roots)
    return _dev_80_20(task, paths[0], roots)


def split_by_group(task: Task[Any, Any], records: Sequence[Any], fraction: float) -> tuple[list[Any], list[Any]]:
    """(records whose group hashes below `fraction`, the rest), order kept; a group never straddles."""
    return split_by_key(records, task.group_key, fraction)


def _grouping(task: Task[Any, Any], records: Sequence[Any]) -> str:
    """What the split hashes, in words: the guid, or the group key with its number of groups."""
    groups = {task.group_key(r) for r in records}
    if all(task.group_key(r) == task.guid(r) for r in records):
        return "the guid"
    return f"the group key ({len(groups):,} groups, each kept whole on one side)"


def _label(task: Task[Any, Any]) -> str:
    return f"KLUE {task.title} ({task.name}) v1.1"


def _blob_note(task: Task[Any, Any], role: str, data_source: DataSource) -> str:
    entry = task.file(role)  # type: ignore[arg-type]
    if entry is not None and entry.git_blob != data_source.git_blob:
        return f" (this {role} file differs from the official release: git blob {data_source.git_blob})"
    return ""


def _official(task: Task[Any, Any], train_path: Path, dev_path: Path, roots: DataRoots) -> ProtocolData[Any]:
    train = read_checked(task.read, train_path)
    dev = read_checked(task.read, dev_path)
    sources = (source(train_path, len(train), "train", roots.klue),
               source(dev_path, len(dev), "eval and selection", roots.klue))
    description = (f"official protocol: trained on the official {_label(task)} train file ({len(train):,} "
                   f"examples) and evaluated on the official dev file ({len(dev):,} examples), checkpoints "
                   f"selected on dev as in the official recipe"
                   f"{_blob_note(task, 'train', sources[0])}{_blob_note(task, 'dev', sources[1])}")
    return ProtocolData(OFFICIAL, True, description, train, dev, dev, sources)


def _heldout(task: Task[Any, Any], train_path: Path, dev_path: Path, roots: DataRoots) -> ProtocolData[Any]:
    full_train = read_checked(task.read, train_path)
    dev = read_checked(task.read, dev_path)
    selection, train = split_by_group(task, full_train, HELDOUT_FRACTION)
    pct = round(HELDOUT_FRACTION * 100)
    sources = (source(train_path, len(train), f"train ({100 - pct}% by group hash)", roots.klue),
               source(train_path, len(selection), f"selection ({pct}% by group hash)", roots.klue),
               source(dev_path, len(dev), "eval", roots.klue))
    description = (f"not the official protocol: trained on the official {_label(task)} train file minus a "
                   f"{pct}% slice chosen by a stable hash of {_grouping(task, full_train)} ({len(train):,} "
                   f"examples), "
                   f"checkpoints selected on that slice ({len(selection):,}), evaluated on the official dev "
                   f"file ({len(dev):,} examples)")
    return ProtocolData(HELDOUT, False, description, train, dev, selection, sources)


def _dev_80_20(task: Task[Any, Any], dev_path: Path, roots: DataRoots) -> ProtocolData[Any]:
    dev = read_checked(task.read, dev_path)
    train, evaluation = split_by_group(task, dev, DEV_TRAIN_FRACTION)
    pct = round(DEV_TRAIN_FRACTION * 100)
    sources = (source(dev_path, len(train), f"train ({pct}% of dev by group hash)", roots.klue),
               source(dev_path, len(evaluation), f"eval ({100 - pct}% of dev by group hash)", roots.klue))
    description = (f"local protocol, not official: trained on {pct}% of the official {_label(task)} dev file "
                   f"({len(train):,} examples) and evaluated on the other {100 - pct}% ({len(evaluation):,} "
                   f"examples), split by a stable hash of {_grouping(task, dev)}")
    return ProtocolData(DEV_80_20, False, description, train, evaluation, None, sources)
