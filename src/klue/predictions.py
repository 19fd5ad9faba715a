"""Prediction files, the one contract between producers and judges: read, check, align and write them.

A prediction file (docs/tasks.md, "Prediction files") is JSON Lines, one object per gold example with its
`guid`. For convenience two more shapes are read (the shapes of `shared/data/scoring-cases`):

- a JSON list aligned with the gold order, one item per gold example;
- a JSON object mapping guid -> item.

An item is either the prediction object without its guid (`{"heads": [...], "deprels": [...]}`), or,
for tasks whose prediction has a single field, that field's value alone (a label, a score, a tag list, an
answer, a state). In these two shapes only, an integer `label` is an index into the task's official label
order (`Task.labels`, or the `label_list` given). Any of the three
may be gzip-compressed. Producers write JSON Lines with `write_predictions`. Nothing here imports torch
or sklearn.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from klue.errors import DataError, Problem, ProblemLog
from klue.io.atomic import write_jsonl_atomic
from klue.tasks.base import Task

SHOWN_GUIDS = 5  # how many offending guids a message names before giving the count
# How far a prediction's `probs` may sum from 1 before a warning: wide enough for float32 softmax outputs
# written as text, narrow enough to catch scores that are not probabilities at all.
PROBABILITY_SUM_TOLERANCE = 1e-3


def read_prediction_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise DataError(f"cannot read file: {error.strerror or error}", path) from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise DataError(f"broken gzip file: {error}", path) from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise DataError([Problem(str(path), f"line {line}", f"bytes that are not UTF-8 at offset {error.start}")]) \
            from None
    if not text.strip():
        raise DataError([Problem(str(path), "line 1", "the file is empty")])
    return text


def name_list(names: Sequence[str], total: int | None = None) -> str:
    count = len(names) if total is None else total
    shown = ", ".join(repr(n) for n in names[:SHOWN_GUIDS])
    more = f" (first {SHOWN_GUIDS} of {count})" if count > SHOWN_GUIDS else ""
    return f"{shown}{more}"


def read_label_list(path: Path, expected: Sequence[str]) -> tuple[str, ...]:
    """A label order file: `{"<any key>": [...]}` (such as relation_list.json) or a plain JSON list. It
    must name exactly the task's labels, in any order."""
    try:
        data = json.loads(read_prediction_text(path))
    except json.JSONDecodeError as error:
        raise DataError([Problem(str(path), f"line {error.lineno}", f"invalid JSON: {error.msg}")]) from None
    if isinstance(data, dict) and len(data) == 1:
        data = next(iter(data.values()))
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise DataError("expected a JSON list of label names or {\"relations\": [names]}", path)
    if len(set(data)) != len(data):
        raise DataError("a label is listed twice", path)
    if set(data) != set(expected):
        missing = sorted(set(expected) - set(data))
        unknown = sorted(set(data) - set(expected))
        raise DataError(f"the label list must name the {len(expected)} official labels; missing {missing[:5]}, "
                        f"unknown {unknown[:5]}", path)
    return tuple(data)


class _PredictionShape:
    """Turns the items of the list and map shapes into prediction objects for `task.parse_prediction`."""

    def __init__(self, task: Task[Any, Any], label_list: Sequence[str] | None) -> None:
        self.task = task
        self.labels = tuple(label_list) if label_list is not None else task.labels
        names = [f.name for f in dataclasses.fields(task.prediction_type) if f.name != "guid"]
        self.single_field = names[0] if len(names) == 1 else None

    def to_object(self, guid: str, item: Any, log: ProblemLog, location: str) -> dict[str, Any] | None:
        if isinstance(item, dict):
            obj = dict(item)
            if obj.setdefault("guid", guid) != guid:
                log.error(location, f"the item's guid {obj['guid']!r} differs from {guid!r}, the guid of its place")
                return None
        elif self.single_field is not None:
            obj = {"guid": guid, self.single_field: item}
        else:
            log.error(location, f"{guid}: expected an object with the fields of a {self.task.name} prediction")
            return None
        label = obj.get("label")
        if isinstance(label, int) and not isinstance(label, bool) and self.labels:
            if not 0 <= label < len(self.labels):
                log.error(location, f"{guid}: label index {label} is outside 0-{len(self.labels) - 1}")
                return None
            obj["label"] = self.labels[label]
        return obj


def _reorder_probabilities(obj: dict[str, Any], order: Sequence[str], official: Sequence[str]) -> None:
    probs = obj.get("probs")
    if isinstance(probs, list) and len(probs) == len(order):
        by_name = dict(zip(order, probs))
        obj["probs"] = [by_name[name] for name in official]


def _parse_jsonl(text: str, log: ProblemLog) -> list[tuple[str, Any]]:
    objects: list[tuple[str, Any]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        location = f"line {number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as error:
            log.error(location, f"invalid JSON: {error.msg} (column {error.colno})")
            continue
        if not isinstance(obj, dict):
            log.error(location, "each line must be one JSON object with a `guid`")
            continue
        objects.append((location, obj))
    return objects


def read_predictions(task: Task[Any, Any], path: Path, gold_guids: Sequence[str],
                     label_list: Sequence[str] | None = None) -> tuple[dict[str, Any], str, list[Problem]]:
    """Predictions by guid, the file's shape ("jsonl", "list", "map") and the warnings; every problem
    (bad line, bad field, duplicate guid) raises one DataError listing them all."""
    text = read_prediction_text(path)
    log = ProblemLog(str(path))
    shape = _PredictionShape(task, label_list)
    reorder = label_list is not None and tuple(label_list) != tuple(task.labels)
    whole: Any = None
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        pass  # several lines: JSON Lines
    objects: list[tuple[str, Any]] = []
    if isinstance(whole, list):
        kind = "list"
        if len(whole) != len(gold_guids):
            raise DataError([Problem(str(path), "$", f"a JSON list of predictions must hold one item per gold "
                                     f"example, in gold order: {len(whole)} items for {len(gold_guids)} examples")])
        for index, (guid, item) in enumerate(zip(gold_guids, whole)):
            obj = shape.to_object(guid, item, log, f"$[{index}]")
            if obj is not None:
                objects.append((f"$[{index}]", obj))
    elif isinstance(whole, dict) and not isinstance(whole.get("guid"), str):
        kind = "map"
        for guid, item in whole.items():
            location = f"$[{json.dumps(guid, ensure_ascii=False)}]"
            obj = shape.to_object(guid, item, log, location)
            if obj is not None:
                objects.append((location, obj))
    else:
        kind = "jsonl"
        objects = _parse_jsonl(text, log)
    by_guid: dict[str, Any] = {}
    first_seen: dict[str, str] = {}
    for location, obj in objects:
        if reorder and label_list is not None:
            _reorder_probabilities(obj, label_list, task.labels)
        prediction = task.parse_prediction(obj, log, location)
        if prediction is None:
            continue
        guid = getattr(prediction, "guid", obj.get("guid"))
        if guid in first_seen:
            log.error(location, f"duplicate guid {guid!r} (first at {first_seen[guid]})")
            continue
        first_seen[guid] = location
        by_guid[guid] = prediction
    log.raise_if_errors()
    warnings = log.warnings
    unnormalised = probabilities_not_summing_to_one(by_guid)
    if unnormalised:
        # One warning for the file, not one per line (such files usually have it on most lines), first so
        # that a summary shows it.
        warnings.insert(0, Problem(str(path), "", f"{len(unnormalised)} predictions have `probs` that do not sum "
                                f"to 1 (tolerance {PROBABILITY_SUM_TOLERANCE:g}): {name_list(unnormalised)}; "
                                "scored as given", "warning"))
    return by_guid, kind, warnings


def probabilities_not_summing_to_one(by_guid: Mapping[str, Any]) -> list[str]:
    """The guids, in file order, of the predictions whose `probs` (the field of tasks that predict one
    probability per label) do not sum to 1 within `PROBABILITY_SUM_TOLERANCE`."""
    off = []
    for guid, prediction in by_guid.items():
        probs = getattr(prediction, "probs", None)
        if probs is not None and abs(math.fsum(probs) - 1.0) > PROBABILITY_SUM_TOLERANCE:
            off.append(guid)
    return off


def align(gold_guids: Sequence[str], by_guid: Mapping[str, Any], predictions_path: str) -> list[Any]:
    """Predictions in gold order; DataError naming the missing and the unknown guids (first few + count)."""
    problems = []
    missing = [g for g in gold_guids if g not in by_guid]
    if missing:
        problems.append(Problem(predictions_path, "", f"{len(missing)} gold examples have no prediction: "
                                f"{name_list(missing)}"))
    known = set(gold_guids)
    unknown = [g for g in by_guid if g not in known]
    if unknown:
        problems.append(Problem(predictions_path, "", f"{len(unknown)} predictions name guids that are not in "
                                f"the gold file: {name_list(unknown)}"))
    if problems:
        raise DataError(problems)
    return [by_guid[g] for g in gold_guids]


def write_predictions(path: Path, task: Task[Any, Any], records: Sequence[Any], predictions: Sequence[Any],
                      producer: str) -> None:
    """JSON Lines, one object per record in record order, written atomically; RuntimeError naming the
    `producer` when it did not give exactly one prediction per record, with the record's guid."""
    if len(predictions) != len(records):
        raise RuntimeError(f"{producer} for {task.name} returned {len(predictions)} predictions for "
                           f"{len(records)} records")
    objects = []
    for index, (record, prediction) in enumerate(zip(records, predictions, strict=True)):
        obj = task.prediction_to_json(prediction)
        if obj.get("guid") != task.guid(record):
            raise RuntimeError(f"{producer} for {task.name}: prediction {index} has guid {obj.get('guid')!r}, "
                               f"the record has {task.guid(record)!r}")
        objects.append(obj)
    write_jsonl_atomic(path, objects)
