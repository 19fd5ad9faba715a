"""Glue that tasks of one kind share, made from the prediction dataclass and the label set instead of
being written again per task.

- Every prediction with a guid and a few fields: `prediction_parser(PredictionType, read_values)`, and
  the gold prediction where those fields are the record's gold ones: `gold_prediction_of`.
- Single-label classification (topics, inference labels): a label field checked against the label set and
  the prediction parser for `{guid, label}` lines (the rest of that kind: `klue.tasks.labels`).
- Every task's metric binding: `metric_binding(metric function, the columns it reads)`.
- Reading without gold: `klue predict` reads examples whose gold is not known yet (the purpose
  "predict", `klue.tasks.reading`), so the official readers accept them without their gold fields
  (`gold_absent`, `reads_for_prediction`). Such a record says so (`labelled` False) and is never scored
  (`require_labelled`): its gold fields hold the task's "no gold" placeholder (`NO_LABEL`, NaN, `()`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from klue.errors import DataError, ProblemLog
from klue.io.fields import Fields, prediction_fields
from klue.io.formats import ReadPurpose
from klue.metrics.report import MetricMode

PredictionT = TypeVar("PredictionT")
BoundT = TypeVar("BoundT")  # what a metric binding returns: a MetricReport or ExampleStatistics
Nouns = tuple[str, str]  # how messages name one label and several: ("label", "labels"), ("category", ...)
NO_LABEL = ""  # the label (name) field of a record without gold: never one of a task's labels
SHOWN_UNLABELLED = 5  # guids named in the error that refuses to score records without gold


def reads_for_scoring(purpose: ReadPurpose) -> bool:
    """Whether a gold file is read for `klue score`, where a problem the metric never sees may pass as a
    warning (`klue data validate` keeps it an error)."""
    return purpose == "score"


def reads_for_prediction(purpose: ReadPurpose) -> bool:
    """Whether examples are read for prediction: their gold fields may be absent."""
    return purpose == "predict"


def gold_absent(fields: Fields, purpose: ReadPurpose, *keys: str) -> bool:
    """Whether an object read for prediction lacks every one of its gold fields `keys`: the record is then
    built without gold. False whenever the file is read for anything else (the absent field is then an
    error, logged by the read that asks for it) or when one of them is there (it is then read and checked
    as always: present but invalid gold stays an error)."""
    return reads_for_prediction(purpose) and not any(fields.has(key) for key in keys)


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
