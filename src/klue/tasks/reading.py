"""The one reading layer: a task's data (a file in any format the task reads, a `datasets` copy, rows of
the hub's copy) into records, for a purpose the caller states.

`read(task, source, format, purpose=...)` is how every command reads data: the protocols (the official
files, the user's `files`, the hub copy), `klue score` (gold), `klue predict` (examples to predict),
`klue data validate` and `klue data export`. It tells the format once when none is given
(`infer_format`), reads with the task's reader for it, which sees the purpose, and (except to validate)
raises one DataError listing every problem of a source with errors, led by a hint when the format may
be the mistake (`_with_hint`), or one for a source without records.

The purposes (`klue.io.formats.ReadPurpose`), and what each changes:

- "validate" (`klue data validate`): every rule of the format is an error; the problems come back in the
  `Reading`, nothing is raised.
- "train" (what a protocol trains, selects and evaluates on) and "export" (official files written as a
  Hugging Face copy): every rule is an error, and a source with errors or without records is refused.
- "score" (a gold file for `klue score`): the metric only needs what it reads, so a reader may let a
  problem the metric never sees pass as a warning (MRC answer offsets, RE entity offsets).
- "predict" (`klue predict --input`): the gold is not known yet, so the readers accept examples without
  their gold fields; such a record says so (`labelled` False) and is never scored
  (`klue.tasks.kinds.require_labelled`). Gold that is there is checked as always.

A `datasets` copy is read by the task's row reader (`reader_of`), which sees the purpose as a file's reader does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.errors import DataError, HasProblems, Problem, ProblemLog
from klue.io import formats, hf
from klue.io.formats import READ_PURPOSES, ReadPurpose
from klue.io.hf import RowReader
from klue.tasks.base import OFFICIAL_READER, Task

HINT_ERRORS = 5  # errors of the failed read shown after a hint that another format reads the file
# How a hint names what was read, by purpose: "read as sts 'official' gold, ..."
READ_AS: dict[ReadPurpose, str] = {"validate": "data", "train": "data", "score": "gold", "predict": "input",
                                   "export": "data"}


@dataclass(frozen=True)
class CopyRows:
    """Rows of a `datasets` copy already loaded (a split of the hub's klue/klue), and how messages name them."""

    dataset: Any
    shown: str


Source = Path | CopyRows


@dataclass(frozen=True)
class Reading(HasProblems):
    """What `read` found: the records, the format they were read in and whether it was told from the
    source, the problems (to validate: all of them; otherwise the warnings, since errors are raised), how
    messages show the source (a path, `DIR:split`, `hf:...`) and the file that identifies it (a parquet
    file, a split's own directory; None for rows already loaded)."""

    records: list[Any]
    format: str
    inferred: bool
    problems: list[Problem]
    shown: str
    identified: Path | None


def read(task: Task[Any, Any], source: Source, format: str | None = None, *, purpose: ReadPurpose,
         option: str | None = None) -> Reading:
    """The records of `source` in `format` (told from the source when None, as `infer_format` tells it),
    read for `purpose` (see the module's docstring). `option` is the command-line option that names the
    format (`--gold-format`, `--input-format`, `--train-format`): messages about the format name it, and
    a hint says what to pass when another reader reads the file cleanly."""
    if purpose not in READ_PURPOSES:
        raise ValueError(f"unknown reading purpose {purpose!r}; purposes: {', '.join(READ_PURPOSES)}")
    if isinstance(source, CopyRows):
        log = ProblemLog(source.shown)
        rows = Reading(reader_of(task)(source.dataset, log, purpose), formats.DATASETS_FORMAT, False, log.problems,
                       source.shown, None)
        return rows if purpose == "validate" else _checked(task, rows)
    inferred = format is None
    chosen = infer_format(task, source) if format is None else format
    check_format(task, chosen, option or "format")
    read_path = _read_copy if chosen in formats.HF_FORMATS else _read_file
    reading = read_path(task, source, chosen, purpose, inferred)
    if purpose == "validate":
        return reading
    if reading.errors:
        raise DataError(_with_hint(task, source, reading, purpose, option))
    return _checked(task, reading)


def _read_file(task: Task[Any, Any], path: Path, fmt: str, purpose: ReadPurpose, inferred: bool) -> Reading:
    """A file read by the task's reader for `fmt`, every problem kept (a missing file is one; the reader
    says why another path that is no file cannot be read)."""
    log = ProblemLog(str(path))
    if not path.exists():
        log.error(location="", message="no such file")
        return Reading([], fmt, inferred, log.problems, str(path), path)
    return Reading(task.reader(fmt)(path, log, purpose), fmt, inferred, log.problems, str(path), path)


def _checked(task: Task[Any, Any], reading: Reading) -> Reading:
    """The reading with its warnings only; DataError for errors or when it holds no records."""
    if reading.errors:
        raise DataError(reading.problems)
    if not reading.records:
        raise DataError(f"holds no {task.name} examples (read as {reading.format!r})", reading.shown)
    return reading


# ------------------------------------------------------------------------------------ formats


def formats_of(task: Task[Any, Any]) -> list[str]:
    """Every format a task's files can be read in: official, its other readers, `datasets`, `parquet`."""
    return [formats.OFFICIAL_FORMAT, *task.other_readers, *formats.HF_FORMATS]


def check_format(task: Task[Any, Any], fmt: str, what: str = "format") -> None:
    """DataError unless `fmt` is one of `formats_of(task)` (`what` names the option in the message)."""
    if fmt not in formats_of(task):
        raise DataError(f"unknown {what} {fmt!r} for {task.name}; formats: {', '.join(formats_of(task))}")


def infer_format(task: Task[Any, Any], path: Path) -> str:
    """The format of `path` for `task`, told from the path (`klue.io.formats.format_named_by`: a directory
    or `DIR:split` is `datasets`, a `.parquet` file `parquet`, else the first of the task's other readers
    that the file's extension, name or folder mentions, else `official`). Every command that reads a file
    without being told its format tells it this way.

    A file whose name tells nothing is read by a reader of its extension (`readers_of_extension`: a `.tsv`
    for STS is KorSTS, never the official JSON); where several share it, or none declares it (`.txt`), a
    file whose content is not JSON is read by each of them in turn: the first that reads it without an
    error is its format."""
    told = formats.format_named_by(path, list(task.other_readers))
    if told != formats.OFFICIAL_FORMAT or not path.is_file():
        return told
    candidates = readers_of_extension(task, path) or [OFFICIAL_READER, *task.other_readers]
    if len(candidates) == 1:
        return candidates[0]
    if OFFICIAL_READER in candidates and _looks_like_json(path):
        return OFFICIAL_READER
    found = _reader_that_reads(task, path, [name for name in candidates if name != OFFICIAL_READER], "validate")
    return found[0] if found is not None else candidates[0]


def readers_of_extension(task: Task[Any, Any], path: Path) -> list[str]:
    """The readers of `task` that read files with `path`'s extension: the official one where its files have
    it (train and dev, not resources), then those `task.reader_suffixes` declares for it."""
    suffix = path.suffix.lower()
    official = {Path(entry.path).suffix.lower() for entry in task.files if entry.role != "resource"}
    return ([OFFICIAL_READER] if suffix in official else []) + [
        name for name, suffixes in task.reader_suffixes.items() if suffix in suffixes]


def _looks_like_json(path: Path) -> bool:
    """Whether the file starts (after a BOM and white space) like JSON, or is gzip (read as JSON Lines)."""
    with path.open("rb") as handle:
        head = handle.read(4096)
    if head.startswith(b"\x1f\x8b"):
        return True
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return not text or text[:1] in (b"[", b"{")


def _reader_that_reads(task: Task[Any, Any], path: Path, names: Iterable[str], purpose: ReadPurpose,
                       tried: str | None = None) -> tuple[str, int] | None:
    """The first of the readers `names` (after `tried`; two names of one reader count once) that reads
    `path` for `purpose` with records and no error, and its record count. Each try reads the file again,
    so this runs only where a name does not tell the format, or after a failed read."""
    seen = {id(task.reader(tried))} if tried is not None else set()
    for name in names:
        reader = task.reader(name)
        if id(reader) in seen:
            continue
        seen.add(id(reader))
        trial = ProblemLog(str(path))
        try:
            records = reader(path, trial, purpose)
        except DataError:  # a reader that needs what is not here (a resource file beside it)
            continue
        if records and not trial.errors:
            return name, len(records)
    return None


def _with_hint(task: Task[Any, Any], path: Path, failed: Reading, purpose: ReadPurpose,
               option: str | None) -> list[Problem]:
    """The problems of a failed read, led by the one hint on its format, when `option` can act on it:
    another reader of the task reads the file cleanly (a TSV given where the official format is JSON
    fails as invalid JSON: the hint is what to pass; only the first errors follow, the rest repeat the
    wrong guess); else which format was tried, whether the file or `option` chose it, and how to name another."""
    if option is None or not path.exists():
        return failed.problems
    found = None if failed.format in formats.HF_FORMATS else _reader_that_reads(
        task, path, (OFFICIAL_READER, *task.other_readers), purpose, failed.format)
    if found is not None:
        other, n_records = found
        errors = failed.errors
        counted = f"{len(errors):,} error{'s' if len(errors) > 1 else ''}"
        hint = Problem(str(path), "", f"read as {task.name} {failed.format!r} {READ_AS[purpose]}, this file has "
                       f"{counted} (first below), but it reads cleanly as {other!r} ({n_records:,} examples): "
                       f"pass {option} {other}")
        shown = errors[:HINT_ERRORS]
        if len(errors) > HINT_ERRORS:
            shown.append(Problem(str(path), "", f"... and {len(errors) - HINT_ERRORS:,} more errors as "
                                 f"{failed.format!r}"))
        return [hint, *shown]
    how = "told from the file" if failed.inferred else f"as {option} named it"
    told = Problem(failed.shown, "", f"read as the {failed.format!r} format, {how}; name another with {option} "
                   f"({', '.join(formats_of(task))})")
    return [told, *failed.problems]


# ------------------------------------------------------------------------------------ Hugging Face copies


def layout_of(task: Task[Any, Any]) -> hf.HfLayout[Any] | None:
    """The task's Hugging Face layout (`HF_LAYOUT` in its records module), or None."""
    layout: hf.HfLayout[Any] | None = task.hf_layout()
    return layout


def reader_of(task: Task[Any, Any]) -> RowReader[Any]:
    """How rows of a `datasets` copy become the task's records; DataError when the task has no mapping."""
    layout = layout_of(task)
    if layout is not None:
        return layout.from_rows
    raise DataError(f"task {task.name!r} has no Hugging Face mapping, so it cannot read a `datasets` copy")


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


def _read_copy(task: Task[Any, Any], path: Path, fmt: str, purpose: ReadPurpose, inferred: bool) -> Reading:
    """A local copy (see `open_copy`) read by the task's row reader, every problem kept (a copy that
    cannot be opened is one), as a file's reader keeps them."""
    log = ProblemLog(str(path))
    try:
        opened = open_copy(path, fmt)
        records = reader_of(task)(opened.dataset, log, purpose)
    except DataError as error:
        log.problems.extend(error.problems)
        return Reading([], fmt, inferred, log.problems, str(path), path)
    return Reading(records, fmt, inferred, log.problems, opened.shown, opened.identified)
