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

Two protocols read data from elsewhere than the data roots:

- `files` (`resolve_files`): files the user names, each in any format the task reads (the official one,
  KorNLI/KorSTS TSV, CoNLL-U, SQuAD, ..., a `datasets` save_to_disk directory, a parquet file; told
  from the file when not given). Without a selection file the selection set is a 10% slice of train by
  group hash (as `heldout` carves it); with `eval_fraction` and no eval file, the evaluation part is
  split from the train file by the same hash. Each file is recorded with its path, git blob id, sha256
  and example count.
- `hf` (`resolve_hf`, or `resolve(task, "hf", roots)`): the Hugging Face hub copy `klue/klue` at the
  pinned revision (v1 content, not v1.1), train minus a 10% group-hash slice for selection, evaluated on
  its validation split; labels mapped by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from klue.errors import DataError, Problem
from klue.io import hf
from klue.io.locate import DataRoots, FileRef, how_to_get, how_to_get_extra
from klue.io.provenance import DataSource, FileIdentity, data_source, identify, named_source
from klue.io.release import FileRole
from klue.io.splits import hash_fraction, split_by_key
from klue.tasks.base import (
    DEFAULT_LOCAL_PROTOCOL,
    OFFICIAL_READER,
    FileProtocol,
    HashSplitProtocol,
    ProtocolSpec,
    Task,
)
from klue.tasks.reading import CopyRows, read, reader_of

OFFICIAL = "official"
HELDOUT = "heldout"
DEV_80_20 = DEFAULT_LOCAL_PROTOCOL
GENERIC_PROTOCOLS: tuple[str, ...] = (OFFICIAL, HELDOUT, DEV_80_20)
HELDOUT_FRACTION = 0.10  # share of train (by group hash) kept out for checkpoint selection
FILES = "files"  # user-named files (resolve_files); not a generic protocol: it reads no data root
HF = "hf"  # the hub's klue/klue copy (resolve_hf)
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
    # What the readers accepted but flagged (a duplicate pair, an odd lemma): shown and kept beside the results.
    warnings: tuple[Problem, ...] = ()


def _records(task: Task[Any, Any], path: Path, fmt: str = OFFICIAL_READER,
             warnings: list[Problem] | None = None) -> list[Any]:
    """The records of a file a protocol reads (`fmt` one of the task's readers), or a DataError listing
    every problem in it; its warnings go to `warnings`."""
    reading = read(task, path, fmt, purpose="train")
    if warnings is not None:
        warnings.extend(reading.problems)
    return reading.records


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
    """The data of protocol `name` for `task`, read and split; DataError if unknown or not available.

    `hf` loads the hub copy (`resolve_hf`); `files` needs the files named, so it is `resolve_files`.
    """
    if name == HF:
        return resolve_hf(task, roots=roots)
    if name == FILES:
        raise DataError("protocol 'files' reads the files you name: give --train (and --eval or --eval-fraction)",
                        "protocol")
    refs = file_refs(task, name)
    absent = [ref for ref in refs if not ref.exists(roots)]
    if absent:
        raise DataError(missing_message(name, absent, roots, task), absent[0].where(roots))
    if name in GENERIC_PROTOCOLS:
        builder = {OFFICIAL: _official, HELDOUT: _heldout, DEV_80_20: _dev_80_20}[name]
        located = [ref.locate(roots) for ref in refs]
        return builder(task, [path for path in located if path is not None], roots)
    spec = _spec(task, name)
    if isinstance(spec, FileProtocol):
        return _files(task, spec, roots)
    return _hash_split(task, spec, roots)


def _path(ref: FileRef, roots: DataRoots) -> Path:
    """Where a protocol's file is: resolve checked that every file exists."""
    path = ref.locate(roots)
    assert path is not None
    return path


def _source(ref: FileRef, roots: DataRoots, n_examples: int, used_as: str) -> DataSource:
    return data_source(_path(ref, roots), n_examples, used_as, roots.of(ref.root))


def _files(task: Task[Any, Any], spec: FileProtocol, roots: DataRoots) -> ProtocolData[Any]:
    found: list[Problem] = []
    train = _records(task, _path(spec.train, roots), spec.reader, warnings=found)
    evaluation = _records(task, _path(spec.eval, roots), spec.reader, warnings=found)
    sources = (_source(spec.train, roots, len(train), "train"), _source(spec.eval, roots, len(evaluation), "eval"))
    return ProtocolData(spec.name, False, spec.description, train, evaluation, None, sources, roots, tuple(found))


def _hash_split(task: Task[Any, Any], spec: HashSplitProtocol, roots: DataRoots) -> ProtocolData[Any]:
    found: list[Problem] = []
    records = _records(task, _path(spec.split, roots), spec.reader, warnings=found)
    train, evaluation = split_by_group(task, records, spec.train_fraction)
    pct = round(spec.train_fraction * 100)
    sources = [_source(spec.split, roots, len(train), f"train ({pct}% by {spec.group} hash)"),
               _source(spec.split, roots, len(evaluation), f"eval ({100 - pct}% by {spec.group} hash)")]
    n_split_train = len(train)
    added = []
    for extra in spec.extra_train:
        extra_records = _records(task, _path(extra.file, roots), extra.reader, warnings=found)
        train.extend(extra_records)
        sources.append(_source(extra.file, roots, len(extra_records), "train (whole file)"))
        note = f"; {extra.note}" if extra.note else ""
        added.append(f"{extra.what} ({len(extra_records):,} {spec.unit}{note})")
    plus = f" plus {' and '.join(added)}" if added else ""
    description = (f"local protocol, not official: trained on {pct}% of {spec.what} "
                   f"({n_split_train:,} {spec.unit}, split by a stable hash of the {spec.group}){plus} and "
                   f"evaluated on the other {100 - pct}% ({len(evaluation):,} {spec.unit}); no {spec.group} "
                   "straddles the split")
    return ProtocolData(spec.name, False, description, train, evaluation, None, tuple(sources), roots, tuple(found))


def _grouping(task: Task[Any, Any], records: Sequence[Any]) -> str:
    """What the split hashes, in words: the guid, or the group key with its number of groups."""
    groups = {task.group_key(r) for r in records}
    if all(task.group_key(r) == task.guid(r) for r in records):
        return "the guid"
    return f"the group key ({len(groups):,} groups, each kept whole on one side)"


def _minus_selection(task: Task[Any, Any], full_train: Sequence[Any], train: Sequence[Any],
                     selection: Sequence[Any]) -> str:
    """How a description says that the selection slice was kept out of the train records."""
    return (f"minus a {_pct(HELDOUT_FRACTION)} slice chosen by a stable hash of {_grouping(task, full_train)} "
            f"({len(train):,} examples), checkpoints selected on that slice ({len(selection):,})")


def _label(task: Task[Any, Any]) -> str:
    return f"KLUE {task.title} ({task.name}) v1.1"


def _blob_note(task: Task[Any, Any], role: FileRole, source: DataSource) -> str:
    entry = task.file(role)
    if entry is not None and entry.git_blob != source.git_blob:
        return f" (this {role} file differs from the official release: git blob {source.git_blob})"
    return ""


def _official(task: Task[Any, Any], paths: list[Path], roots: DataRoots) -> ProtocolData[Any]:
    train_path, dev_path = paths
    found: list[Problem] = []
    train = _records(task, train_path, warnings=found)
    dev = _records(task, dev_path, warnings=found)
    sources = (data_source(train_path, len(train), "train", roots.klue),
               data_source(dev_path, len(dev), "eval and selection", roots.klue))
    description = (f"official protocol: trained on the official {_label(task)} train file ({len(train):,} "
                   f"examples) and evaluated on the official dev file ({len(dev):,} examples), checkpoints "
                   f"selected on dev as in the official recipe"
                   f"{_blob_note(task, 'train', sources[0])}{_blob_note(task, 'dev', sources[1])}")
    return ProtocolData(OFFICIAL, True, description, train, dev, dev, sources, roots, tuple(found))


def _heldout(task: Task[Any, Any], paths: list[Path], roots: DataRoots) -> ProtocolData[Any]:
    train_path, dev_path = paths
    found: list[Problem] = []
    full_train = _records(task, train_path, warnings=found)
    dev = _records(task, dev_path, warnings=found)
    selection, train = split_by_group(task, full_train, HELDOUT_FRACTION)
    pct = round(HELDOUT_FRACTION * 100)
    sources = (data_source(train_path, len(train), f"train ({100 - pct}% by group hash)", roots.klue),
               data_source(train_path, len(selection), f"selection ({pct}% by group hash)", roots.klue),
               data_source(dev_path, len(dev), "eval", roots.klue))
    description = (f"not the official protocol: trained on the official {_label(task)} train file "
                   f"{_minus_selection(task, full_train, train, selection)}, evaluated on the official dev file "
                   f"({len(dev):,} examples)")
    return ProtocolData(HELDOUT, False, description, train, dev, selection, sources, roots, tuple(found))


def _dev_80_20(task: Task[Any, Any], paths: list[Path], roots: DataRoots) -> ProtocolData[Any]:
    (dev_path,) = paths
    found: list[Problem] = []
    dev = _records(task, dev_path, warnings=found)
    train, evaluation = split_by_group(task, dev, DEV_TRAIN_FRACTION)
    pct = round(DEV_TRAIN_FRACTION * 100)
    sources = (data_source(dev_path, len(train), f"train ({pct}% of dev by group hash)", roots.klue),
               data_source(dev_path, len(evaluation), f"eval ({100 - pct}% of dev by group hash)", roots.klue))
    description = (f"local protocol, not official: trained on {pct}% of the official {_label(task)} dev file "
                   f"({len(train):,} examples) and evaluated on the other {100 - pct}% ({len(evaluation):,} "
                   f"examples), split by a stable hash of {_grouping(task, dev)}")
    return ProtocolData(DEV_80_20, False, description, train, evaluation, None, sources, roots, tuple(found))


# ------------------------------------------------------------------------------------ files


@dataclass(frozen=True)
class NamedFile:
    """A file (or `datasets` directory) the user named, read whole."""

    shown: str  # as given: a path, or DIR:split
    format: str
    inferred: bool  # the format was told from the file, not given
    records: list[Any]
    identity: FileIdentity
    warnings: tuple[Problem, ...] = ()


def read_named(task: Task[Any, Any], path: Path, fmt: str | None = None, role: str = "train") -> NamedFile:
    """Read a user-named file whole in `fmt` (told from the file when None), for `--{role}`; DataError
    listing every problem, led by a hint on naming the format (`--{role}-format`) where one fits."""
    reading = read(task, path, fmt, purpose="train", option=f"--{role}-format")
    assert reading.identified is not None  # a path, not rows already loaded
    return NamedFile(reading.shown, reading.format, reading.inferred, reading.records, identify(reading.identified),
                     tuple(reading.problems))


def carve(task: Task[Any, Any], records: Sequence[Any], selection_fraction: float | None,
          eval_fraction: float | None) -> tuple[list[Any], list[Any], list[Any]]:
    """(train, selection, eval) of one file by a stable hash of each record's group key h in [0, 1):
    selection h < selection_fraction (the slice `heldout` keeps out), eval h >= 1 - eval_fraction (the
    part `local:dev-80-20` evaluates on), train the rest; order kept, a group never straddles parts."""
    train: list[Any] = []
    selection: list[Any] = []
    evaluation: list[Any] = []
    for record in records:
        h = hash_fraction(task.group_key(record))
        if selection_fraction is not None and h < selection_fraction:
            selection.append(record)
        elif eval_fraction is not None and h >= 1 - eval_fraction:
            evaluation.append(record)
        else:
            train.append(record)
    return train, selection, evaluation


def _check_fractions(eval_path: Path | None, eval_fraction: float | None, carve_selection: bool) -> None:
    if eval_path is None and eval_fraction is None:
        raise DataError("protocol 'files' needs --eval FILE, or --eval-fraction to split the evaluation part from "
                        "--train")
    if eval_path is not None and eval_fraction is not None:
        raise DataError("give --eval or --eval-fraction, not both (--eval-fraction splits --train when there is "
                        "no eval file)")
    ceiling = 1 - HELDOUT_FRACTION if carve_selection else 1.0
    if eval_fraction is not None and not 0 < eval_fraction < ceiling:
        kept = f" (with the {round(HELDOUT_FRACTION * 100)}% selection slice also taken from --train)" \
            if carve_selection else ""
        raise DataError(f"--eval-fraction must be above 0 and below {ceiling:g}{kept}, not {eval_fraction:g}")


def _pct(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def _file_words(named: NamedFile, count: str = "") -> str:
    """`PATH (FORMAT format, told from the file[; COUNT])` for a description."""
    how = "told from the file" if named.inferred else "as given"
    return f"{named.shown} ({named.format} format, {how}{'; ' + count if count else ''})"


def _overlap_note(task: Task[Any, Any], parts: Sequence[tuple[str, Sequence[Any]]]) -> str:
    """A clause naming groups shared by parts read from different files (leakage the hash cannot stop)."""
    notes = []
    for i, (name_a, a) in enumerate(parts):
        keys = {task.group_key(r) for r in a}
        for name_b, b in parts[i + 1:]:
            shared = keys & {task.group_key(r) for r in b}
            if shared:
                notes.append(f"{len(shared):,} groups appear in both {name_a} and {name_b}")
    return f"; note: {', '.join(notes)}" if notes else ""


@dataclass(frozen=True)
class _Part:
    """One side of a `files` protocol: its records, its provenance entry, and how the description names it."""

    records: list[Any]
    source: DataSource
    words: str


def _whole(named: NamedFile, use: str, unit: str = "") -> _Part:
    count = f"{len(named.records):,}{unit}"
    return _Part(named.records, named_source(named.shown, named.identity, len(named.records), f"{use} (whole file)"),
                 _file_words(named, count))


def _carved(train: NamedFile, records: list[Any], use: str, fraction: float, words: str) -> _Part:
    source = named_source(train.shown, train.identity, len(records), f"{use} ({_pct(fraction)} of train by group hash)")
    return _Part(records, source, words)


def _files_parts(task: Task[Any, Any], train: NamedFile, selection: NamedFile | None, evaluation: NamedFile | None,
                 eval_fraction: float | None) -> tuple[_Part, _Part, _Part]:
    """(train, selection, eval) of the `files` protocol: named files whole, the rest carved from train."""
    kept, selected, held = carve(task, train.records, HELDOUT_FRACTION if selection is None else None,
                                 None if evaluation is not None else eval_fraction)
    grouping = _grouping(task, train.records)
    if selection is not None:
        selection_part = _whole(selection, "selection")
    else:
        selection_part = _carved(train, selected, "selection", HELDOUT_FRACTION,
                                 f"a {_pct(HELDOUT_FRACTION)} slice of the train file chosen by a stable hash of "
                                 f"{grouping} ({len(selected):,})")
    if evaluation is not None:
        eval_part = _whole(evaluation, "eval", " examples")
    else:
        assert eval_fraction is not None  # _check_fractions: an eval file or a fraction
        eval_part = _carved(train, held, "eval", eval_fraction, f"a {_pct(eval_fraction)} part of the train "
                            f"file split off by the same hash ({len(held):,} examples)")
    taken = [f"a {_pct(HELDOUT_FRACTION)} selection slice"] if selection is None else []
    taken += [f"a {_pct(eval_fraction)} eval part"] if evaluation is None and eval_fraction is not None else []
    use = f"train (minus {' and '.join(taken)} by group hash)" if taken else "train (whole file)"
    words = (f"{_file_words(train)} minus {' and '.join(taken)} ({len(kept):,} examples)" if taken
             else _file_words(train, f"{len(kept):,} examples"))
    train_part = _Part(kept, named_source(train.shown, train.identity, len(kept), use), words)
    return train_part, selection_part, eval_part


def resolve_files(task: Task[Any, Any], train: Path, eval: Path | None = None, selection: Path | None = None, *,
                  train_format: str | None = None, eval_format: str | None = None,
                  selection_format: str | None = None, eval_fraction: float | None = None,
                  roots: DataRoots | None = None) -> ProtocolData[Any]:
    """Protocol `files`: train on `train`, evaluate on `eval` (or on an `eval_fraction` split of `train` by
    group hash), select checkpoints on `selection` (or on a 10% group-hash slice of `train`). Formats are
    told from the files unless given (`klue.tasks.reading.formats_of`); `roots` are passed on for task
    resources (the WoS ontology). Never official. DataError for a bad option, an unreadable file or an
    empty part."""
    _check_fractions(eval, eval_fraction, selection is None)
    train_file = read_named(task, train, train_format, "train")
    eval_file = read_named(task, eval, eval_format, "eval") if eval is not None else None
    selection_file = read_named(task, selection, selection_format, "selection") if selection is not None else None
    parts = _files_parts(task, train_file, selection_file, eval_file, eval_fraction)
    for name, part in zip(("train", "selection", "eval"), parts):
        if not part.records:
            raise DataError(f"protocol 'files': the {name} part is empty ({train_file.shown} has "
                            f"{len(train_file.records):,} records, split by a stable hash of "
                            f"{_grouping(task, train_file.records)}); give a bigger file or name the {name} file",
                            train_file.shown)
    carved = selection_file is None or eval_file is None
    # Parts carved from one file by group hash share no group; parts read from different files may.
    separate = [("the train file", train_file.records)]
    separate += [("the selection file", selection_file.records)] if selection_file is not None else []
    separate += [("the eval file", eval_file.records)] if eval_file is not None else []
    train_part, selection_part, eval_part = parts
    description = (f"local protocol `files`, not official: trained on {train_part.words}, checkpoints selected on "
                   f"{selection_part.words}, evaluated on {eval_part.words}"
                   f"{'; no group straddles the split' if carved else ''}{_overlap_note(task, separate)}")
    named = [f for f in (train_file, selection_file, eval_file) if f is not None]
    return ProtocolData(FILES, False, description, train_part.records, eval_part.records, selection_part.records,
                        tuple(part.source for part in parts), roots, tuple(w for f in named for w in f.warnings))


# ------------------------------------------------------------------------------------ hf


def hub_config(task: Task[Any, Any]) -> str:
    """The task's configuration in the hub copy `klue/klue` (`datasets.load_dataset("klue/klue", config)`),
    which the `hf` protocol loads and a model card's `model-index` names: the task's name."""
    return task.name


def resolve_hf(task: Task[Any, Any], *, revision: str = hf.HF_REVISION, repo: str = hf.HF_DATASET,
               cache_dir: Path | None = None, roots: DataRoots | None = None) -> ProtocolData[Any]:
    """Protocol `hf`: the hub copy `repo` (klue/klue) of the task at `revision`, loaded through
    `datasets.load_dataset` (its cache; HF_DATASETS_OFFLINE=1 reads only the cache): trained on its train
    split minus a 10% group-hash slice kept for checkpoint selection, evaluated on its validation split.
    v1 content, never official. DataError (one sentence) when `datasets` is absent or the copy cannot be
    had; a DataError listing every row problem when rows do not map onto records."""
    reader_of(task)  # a task without a mapping is refused before anything loads
    loaded = hf.load_hub(hub_config(task), revision, repo, cache_dir)
    where = f"hf:{repo}@{revision[:12]}/{task.name}"
    train_rows = read(task, CopyRows(hf.hub_split(loaded, "train", where), f"{where}/train"), purpose="train")
    eval_rows = read(task, CopyRows(hf.hub_split(loaded, "validation", where), f"{where}/validation"),
                     purpose="train")
    full_train, evaluation = train_rows.records, eval_rows.records
    selection, train = split_by_group(task, full_train, HELDOUT_FRACTION)
    pct = _pct(HELDOUT_FRACTION)
    sources = (DataSource(f"{where}/train", revision, len(train), f"train ({100 - HELDOUT_FRACTION * 100:g}% of the "
                                                                  "hub train split by group hash)"),
               DataSource(f"{where}/train", revision, len(selection), f"selection ({pct} of the hub train split "
                                                                      "by group hash)"),
               DataSource(f"{where}/validation", revision, len(evaluation), "eval (the hub validation split)"))
    description = (f"Hugging Face protocol, not official: the hub copy {repo} at revision {revision[:12]} (v1 "
                   f"content, not the v1.1 files), trained on its {task.name} train split "
                   f"{_minus_selection(task, full_train, train, selection)}, evaluated on its validation split "
                   f"({len(evaluation):,} examples); labels mapped by name")
    return ProtocolData(HF, False, description, train, evaluation, selection, sources, roots,
                        (*train_rows.problems, *eval_rows.problems))
