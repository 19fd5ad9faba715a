"""Glue that tasks of one kind share, made from the prediction dataclass and the label set instead of
being written again per task.

- Every prediction with a guid and a few fields: `prediction_parser(PredictionType, read_values)`.
- Single-label classification (topics, inference labels): a label field checked against the label set,
  the prediction parser for `{guid, label}` lines, and the metric binding over `record.label`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from klue.errors import ProblemLog
from klue.io.fields import Fields, prediction_fields
from klue.metrics.report import MetricMode, MetricReport

PredictionT = TypeVar("PredictionT")
Nouns = tuple[str, str]  # how messages name one label and several: ("label", "labels"), ("category", ...)


def one_of(fields: Fields, key: str, labels: Sequence[str], nouns: Nouns = ("label", "labels")) -> str | None:
    """The string field `key`, which must be one of `labels` (logged at the field's path otherwise)."""
    value = fields.str(key)
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


def label_score(compute: Callable[..., MetricReport], labels: Sequence[str]) -> Callable[
        [Sequence[Any], Sequence[Any], MetricMode], MetricReport]:
    """The metric binding of a single-label task: `compute(gold labels, predicted labels, labels, mode)`
    over `record.label` and `prediction.label`."""

    def score(golds: Sequence[Any], preds: Sequence[Any], mode: MetricMode) -> MetricReport:
        return compute([g.label for g in golds], [p.label for p in preds], labels, mode=mode)

    return score
