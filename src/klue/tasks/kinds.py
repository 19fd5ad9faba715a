"""Glue that tasks of one kind share, made from the prediction dataclass and the label set instead of
being written again per task.

- Single-label classification (YNAT topics, NLI labels): a label field checked against the label set,
  and the prediction parser for `{guid, label}` lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from klue.errors import ProblemLog
from klue.io.fields import Fields, prediction_fields

PredictionT = TypeVar("PredictionT")
Nouns = tuple[str, str]  # how messages name one label and several: ("label", "labels"), ("category", ...)


def one_of(fields: Fields, key: str, labels: Sequence[str], nouns: Nouns = ("label", "labels")) -> str | None:
    """The string field `key`, which must be one of `labels` (logged at the field's path otherwise)."""
    value = fields.str(key)
    if value is not None and value not in labels:
        fields.fail(fields.at(key), f"unknown {nouns[0]} {value!r}; {nouns[1]} are {', '.join(labels)}")
        return None
    return value


def label_parser(prediction_type: Callable[[str, str], PredictionT], labels: Sequence[str],
                 nouns: Nouns = ("label", "labels"), refuse_index: bool = False) -> Callable[
        [Mapping[str, Any], ProblemLog, str], PredictionT | None]:
    """The parser of `{guid, label}` prediction lines. `refuse_index`: an integer label is refused with a
    message saying why (tools disagree on the label order, so labels are exchanged by name)."""

    def parse(obj: Mapping[str, Any], log: ProblemLog, location: str) -> PredictionT | None:
        fields = prediction_fields(obj, log, location)
        if fields is None:
            return None
        value = obj.get("label")
        if refuse_index and isinstance(value, int) and not isinstance(value, bool):
            fields.fail(location, f"`label` must be a {nouns[0]} name, not an index ({value}); "
                        f"{nouns[1]} are {', '.join(labels)}")
            return None
        label = one_of(fields, "label", labels, nouns)
        if not fields.ok or label is None:
            return None
        return prediction_type(obj["guid"], label)

    return parse
