"""Glue that tasks of one kind share, made from the prediction dataclass and the label set instead of
being written again per task.

- Every prediction with a guid and a few fields: `prediction_parser(PredictionType, read_values)`, and
  the gold prediction where those fields are the record's gold ones: `gold_prediction_of`.
- Single-label classification (topics, inference labels): a label field checked against the label set and
  the prediction parser for `{guid, label}` lines (the rest of that kind: `klue.tasks.labels`).
- Every task's metric binding: `metric_binding(metric function, the columns it reads)`.
- Why a file is read (`ReadingLog`): `klue data validate` holds a file to every rule of its format,
  while `klue score` only needs what the metric reads, so a reader may let a problem the metric never
  sees pass as a warning when it reads for scoring (`reads_for_scoring`); `klue predict` reads examples
  whose gold is not known yet, so the official readers accept them without their gold fields
  (`reads_for_prediction`). Such a record says so (`labelled` False) and is never scored
  (`require_labelled`): its gold fields hold the task's "no gold" placeholder (`NO_LABEL`, NaN, `()`).
- Which format a file is in, and reading it (`formats_of`, `infer_format`, `read_records`,
  `read_for_prediction`): the one rule every command uses (`klue.io.formats.infer_format`), over the
  task's own readers and the two Hugging Face formats every task reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from klue.errors import DataError, ProblemLog
from klue.io import formats
from klue.io.fields import Fields, prediction_fields
from klue.metrics.report import MetricMode
from klue.tasks import hf_copy
from klue.tasks.base import Task

PredictionT = TypeVar("PredictionT")
BoundT = TypeVar("BoundT")  # what a metric binding returns: a MetricReport or ExampleStatistics
Nouns = tuple[str, str]  # how messages name one label and several: ("label", "labels"), ("category", ...)
ReadPurpose = Literal["check", "score", "predict"]
READ_PURPOSES: tuple[ReadPurpose, ...] = ("check", "score", "predict")
NO_LABEL = ""  # the label (name) field of a record without gold: never one of a task's labels
SHOWN_UNLABELLED = 5  # guids named in the error that refuses to score records without gold


@dataclass
class ReadingLog(ProblemLog):
    """A `ProblemLog` that also says why the file is read: "check" (validation, training: every rule of
    the format is an error), "score" (a gold file for `klue score`) or "predict" (examples to predict:
    the official reader accepts them without their gold fields, and checks the gold fields that are
    there as "check" does). A plain `ProblemLog` reads as "check". The purpose travels with the log
    because every reader already takes one, so the reader's signature (and the task declaration) stay
    as they are."""

    purpose: ReadPurpose = "check"

    def __post_init__(self) -> None:
        if self.purpose not in READ_PURPOSES:
            raise ValueError(f"unknown reading purpose {self.purpose!r}; purposes: {', '.join(READ_PURPOSES)}")


def reads_for_scoring(log: ProblemLog) -> bool:
    """Whether `log` collects the problems of a gold file read for scoring."""
    return isinstance(log, ReadingLog) and log.purpose == "score"


def reads_for_prediction(log: ProblemLog) -> bool:
    """Whether `log` collects the problems of a file read for prediction (gold fields may be absent)."""
    return isinstance(log, ReadingLog) and log.purpose == "predict"


def gold_absent(fields: Fields, *keys: str) -> bool:
    """Whether an object read for prediction lacks every one of its gold fields `keys`: the record is then
    built without gold. False whenever the file is read for anything else (the absent field is then an
    error, logged by the read that asks for it) or when one of them is there (it is then read and checked
    as always: present but invalid gold stays an error)."""
    return reads_for_prediction(fields.log) and not any(fields.has(key) for key in keys)


def gold_optional(fields: Fields) -> bool:
    """Whether the gold fields of this object may be absent: only in a file read for prediction."""
    return reads_for_prediction(fields.log)


def refuse_unlabelled(record: Any) -> None:
    """DataError for a record without gold: it has no gold prediction (and nothing to learn from)."""
    if not is_labelled(record):
        raise DataError(f"{getattr(record, 'guid', '?')}: this record has no gold (it was read for prediction, "
                        "without its gold fields), so it has no gold prediction")


def is_labelled(record: Any) -> bool:
    """Whether a record carries its gold (every record does unless read for prediction without it)."""
    return bool(getattr(record, "labelled", True))


def require_labelled(records: Sequence[Any], task_name: str = "", where: str = "") -> None:
    """DataError naming the records without gold (read for prediction): scoring them would compare the
    predictions with a placeholder, never with a gold answer. Every metric binding calls it first (so
    `Task.evaluate` refuses them), and the judge before it reads a prediction file."""
    unlabelled = [str(getattr(r, "guid", "?")) for r in records if not is_labelled(r)]
    if not unlabelled:
        return
    shown = ", ".join(repr(g) for g in unlabelled[:SHOWN_UNLABELLED])
    more = f" (first {SHOWN_UNLABELLED} of {len(unlabelled):,})" if len(unlabelled) > SHOWN_UNLABELLED else ""
    who = f"{task_name}: " if task_name else ""
    verb = "has" if len(unlabelled) == 1 else "have"
    raise DataError(f"{who}{len(unlabelled):,} of the {len(records):,} gold records {verb} no gold (read for "
                    f"prediction, without their gold fields), and a record without gold cannot be scored: "
                    f"{shown}{more}", where)


def one_of(fields: Fields, key: str, labels: Sequence[str], nouns: Nouns = ("label", "labels"), *,
           optional: bool = False) -> str | None:
    """The string field `key`, which must be one of `labels` (logged at the field's path otherwise);
    `optional`: an absent field is None without a problem."""
    value = fields.str(key, optional=optional)
    if value is not None and value not in labels:
        fields.fail(fields.at(key), f"unknown {nouns[0]} {value!r}; {nouns[1]} are {', '.join(labels)}")
        return None
    return value


Parser = Callable[[Mapping[str, Any], ProblemLog, str], Any]


def present(*values: Any) -> tuple[Any, ...] | None:
    """The values, or None when one is missing (its problem was logged where it was read)."""
    return None if any(v is None for v in values) else values


def prediction_parser(prediction_type: Callable[..., PredictionT],
                      read_values: Callable[[Fields], tuple[Any, ...] | None]) -> Parser:
    """The parser of prediction lines `{guid, ...}`: `read_values` reads the fields after the guid through
    `Fields` (which logs each problem, prefixed with the guid) and returns them in the dataclass's order;
    the prediction is `prediction_type(guid, *values)`, or None after a problem."""

    def parse(obj: Mapping[str, Any], log: ProblemLog, location: str) -> PredictionT | None:
        fields = prediction_fields(obj, log, location)
        if fields is None:
            return None
        values = read_values(fields)
        if not fields.ok or values is None:
            return None
        return prediction_type(obj["guid"], *values)

    return parse


def gold_prediction_of(prediction_type: Callable[..., PredictionT], *gold_fields: str) -> Callable[[Any], PredictionT]:
    """The gold prediction of a task whose prediction holds the record's gold fields as they are:
    `prediction_type(record.guid, *those fields)`, after refusing a record without gold."""

    def gold_prediction(record: Any) -> PredictionT:
        refuse_unlabelled(record)
        return prediction_type(record.guid, *(getattr(record, name) for name in gold_fields))

    return gold_prediction


def label_parser(prediction_type: Callable[[str, str], PredictionT], labels: Sequence[str],
                 nouns: Nouns = ("label", "labels"), refuse_index: bool = False) -> Parser:
    """The parser of `{guid, label}` prediction lines. `refuse_index`: an integer label is refused with a
    message saying why (tools disagree on the label order, so labels are exchanged by name)."""

    def read_values(fields: Fields) -> tuple[Any, ...] | None:
        value = fields.data.get("label")
        if refuse_index and isinstance(value, int) and not isinstance(value, bool):
            fields.fail(fields.location, f"`label` must be a {nouns[0]} name, not an index ({value}); "
                        f"{nouns[1]} are {', '.join(labels)}")
            return None
        return present(one_of(fields, "label", labels, nouns))

    return prediction_parser(prediction_type, read_values)


Columns = Callable[[Sequence[Any], Sequence[Any]], tuple[Any, ...]]  # (golds, predictions) -> a metric's arguments


def metric_binding(metric: Callable[..., BoundT], columns: Columns) -> Callable[
        [Sequence[Any], Sequence[Any], MetricMode], BoundT]:
    """A task's metric binding (`Task.score`, or `Task.statistics` over the metric module's `statistics`):
    `metric(*columns(golds, predictions), mode=mode)`, where `columns` takes what the metric reads from the
    gold records and the predictions, after refusing gold records without gold (`require_labelled`)."""

    def bound(golds: Sequence[Any], preds: Sequence[Any], mode: MetricMode) -> BoundT:
        require_labelled(golds)  # records read for prediction hold no gold to score against
        return metric(*columns(golds, preds), mode=mode)

    return bound


# ------------------------------------------------------------------------------------ formats and reading


def formats_of(task: Task[Any, Any]) -> list[str]:
    """Every format a task's files can be read in: official, its other readers, `datasets`, `parquet`."""
    return [formats.OFFICIAL_FORMAT, *task.other_readers, *formats.HF_FORMATS]


def infer_format(task: Task[Any, Any], path: Path) -> str:
    """The format of `path` for `task`, told from the path alone (`klue.io.formats.infer_format`: a
    directory or `DIR:split` is `datasets`, a `.parquet` file `parquet`, else the first of the task's
    other readers that the file's extension, name or folder mentions, else `official`). `klue data
    validate`, `klue score`, `klue predict` and the `files` protocol all tell a format this way.

    A file whose name tells nothing and whose content is not JSON (`train.tsv`, `my.conllu.txt`) is read by
    each other reader in turn: the first that reads it without an error is its format."""
    told = formats.infer_format(path, list(task.other_readers))
    if told != formats.OFFICIAL_FORMAT or not path.is_file() or _looks_like_json(path):
        return told
    for name in task.other_readers:
        trial = ProblemLog(str(path))
        try:
            records = task.reader(name)(path, trial)
        except DataError:
            continue
        if records and not trial.errors:
            return name
    return told


def _looks_like_json(path: Path) -> bool:
    """Whether the file starts (after a BOM and white space) like JSON, or is gzip (read as JSON Lines)."""
    with path.open("rb") as handle:
        head = handle.read(4096)
    if head.startswith(b"\x1f\x8b"):
        return True
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return not text or text[:1] in (b"[", b"{")


def check_format(task: Task[Any, Any], fmt: str, what: str = "format") -> None:
    """DataError unless `fmt` is one of `formats_of(task)` (`what` names the option in the message)."""
    if fmt not in formats_of(task):
        raise DataError(f"unknown {what} {fmt!r} for {task.name}; formats: {', '.join(formats_of(task))}")


def read_records(task: Task[Any, Any], path: Path, fmt: str, log: ProblemLog, what: str = "format") -> list[Any]:
    """The records of `path` in format `fmt` (any of `formats_of(task)`; DataError for another, naming
    `what`), every problem of the file logged in `log`, whose purpose the reader sees. The Hugging Face
    formats go through the task's row reader, which reads every purpose as "check"."""
    check_format(task, fmt, what)
    if fmt in formats.HF_FORMATS:
        return hf_copy.read_copy(task, path, fmt, log)
    return task.reader(fmt, what)(path, log)


def read_for_prediction(task: Task[Any, Any], path: Path, fmt: str | None = None) -> list[Any]:
    """The examples of `path` to predict (`klue predict --input`), in `fmt` (told from the path when None,
    as `infer_format` tells it). The official reader accepts examples without their gold fields (records
    with `labelled` False, never scored); the other readers read as always. DataError listing every
    problem when the file has errors (present but invalid gold among them) or holds no example."""
    chosen = infer_format(task, path) if fmt is None else fmt
    log = ReadingLog(str(path), purpose="predict")
    records = read_records(task, path, chosen, log, "--input-format")
    if log.errors:
        raise DataError(log.problems)
    if not records:
        raise DataError(f"no {task.name} examples in this file (read as {chosen!r})", path)
    return records
