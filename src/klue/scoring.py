"""Score a prediction file against a gold file: read both, align by guid, validate, call `task.evaluate`.

Prediction files (SPEC section 3) are JSON Lines, one object per gold example with its `guid`. For
convenience two more shapes are accepted (the shapes of `shared/data/scoring-cases`):

- a JSON list aligned with the gold order, one item per gold example;
- a JSON object mapping guid -> item.

An item is either the prediction object without its guid (`{"heads": [...], "deprels": [...]}`), or,
for tasks whose prediction has a single field, that field's value alone (a YNAT/NLI label, an STS score,
NER tags, an MRC answer, a WoS state). In these two shapes only, an integer `label` is an index into the
task's official label order (YNAT categories; RE relations, or the `label_list` given). Any of the three
may be gzip-compressed. Nothing here imports torch or sklearn.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from klue.errors import DataError, Problem, ProblemLog
from klue.metrics.classification import check_mode
from klue.metrics.report import MetricMode, MetricReport
from klue.tasks.base import Task

SHOWN_GUIDS = 5  # how many offending guids a message names before giving the count


@dataclass(frozen=True)
class ScoreResult:
    """The report of one scored prediction file, with what was read and the warnings found."""

    task: str
    report: MetricReport
    gold_path: str
    predictions_path: str
    prediction_format: str  # "jsonl", "list" or "map"
    warnings: tuple[Problem, ...] = field(default_factory=tuple)


def _read_text(path: Path) -> str:
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


def _name_list(names: Sequence[str], total: int | None = None) -> str:
    count = len(names) if total is None else total
    shown = ", ".join(repr(n) for n in names[:SHOWN_GUIDS])
    more = f" (first {SHOWN_GUIDS} of {count})" if count > SHOWN_GUIDS else ""
    return f"{shown}{more}"


def read_label_list(path: Path, expected: Sequence[str]) -> tuple[str, ...]:
    """A label order file: `{"relations": [...]}` (RE's relation_list.json) or a plain JSON list. It
    must name exactly the task's labels, in any order."""
    try:
        data = json.loads(_read_text(path))
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


def read_gold(task: Task[Any, Any], path: Path, gold_format: str | None = None) -> tuple[list[Any], list[Problem]]:
    """Gold records through the task's official reader (or `task.other_readers[gold_format]`)."""
    if gold_format is None or gold_format == "official":
        reader = task.read
    elif gold_format in task.other_readers:
        reader = task.other_readers[gold_format]
    else:
        known = ", ".join(["official", *task.other_readers])
        raise DataError(f"unknown gold format {gold_format!r} for {task.name}; formats: {known}")
    log = ProblemLog(str(path))
    records = reader(path, log)
    log.raise_if_errors()
    if not records:
        raise DataError("the gold file holds no examples", path)
    return records, log.warnings


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
    text = _read_text(path)
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
    return by_guid, kind, log.warnings


def align(gold_guids: Sequence[str], by_guid: Mapping[str, Any], predictions_path: str) -> list[Any]:
    """Predictions in gold order; DataError naming the missing and the unknown guids (first few + count)."""
    problems = []
    missing = [g for g in gold_guids if g not in by_guid]
    if missing:
        problems.append(Problem(predictions_path, "", f"{len(missing)} gold examples have no prediction: "
                                f"{_name_list(missing)}"))
    known = set(gold_guids)
    unknown = [g for g in by_guid if g not in known]
    if unknown:
        problems.append(Problem(predictions_path, "", f"{len(unknown)} predictions name guids that are not in "
                                f"the gold file: {_name_list(unknown)}"))
    if problems:
        raise DataError(problems)
    return [by_guid[g] for g in gold_guids]


def evaluate(task: Task[Any, Any], golds: Sequence[Any], predictions: Sequence[Any], mode: MetricMode,
             predictions_path: str) -> MetricReport:
    """`task.evaluate`, with its complaints about single examples (wrong NER tag count, wrong DP head
    count, ...) collected over the whole file and named by guid."""
    try:
        return task.evaluate(golds, predictions, mode)
    except (DataError, ValueError) as error:
        first = error
    # Error path only: find every offending example, scoring blocks first and then each example of a
    # failing block alone (a few hundred calls instead of one per example).
    offending: list[tuple[str, str]] = []
    block = 64
    for start in range(0, len(golds), block):
        gold_block, pred_block = golds[start:start + block], predictions[start:start + block]
        if _complaint(task, gold_block, pred_block, mode) is None:
            continue
        for gold, prediction in zip(gold_block, pred_block):
            message = _complaint(task, [gold], [prediction], mode)
            if message is not None:
                offending.append((task.guid(gold), message))
    if not offending:
        if isinstance(first, DataError):
            raise first
        raise DataError(f"{task.name}: {first}", predictions_path) from first
    problems = [Problem(predictions_path, guid, message) for guid, message in offending[:SHOWN_GUIDS]]
    if len(offending) > SHOWN_GUIDS:
        problems.append(Problem(predictions_path, "", f"{len(offending)} predictions in all are unusable: "
                                f"{_name_list([g for g, _ in offending])}"))
    raise DataError(problems)


def _complaint(task: Task[Any, Any], golds: Sequence[Any], predictions: Sequence[Any], mode: MetricMode) -> (
        str | None):
    try:
        task.evaluate(golds, predictions, mode)
    except DataError as error:
        return "; ".join(p.message for p in error.problems)
    except ValueError as error:
        return str(error)
    return None


def score_files(task: Task[Any, Any], gold_path: Path, predictions_path: Path, mode: str = "official",
                label_list_path: Path | None = None, gold_format: str | None = None) -> ScoreResult:
    """Read, align, validate and score one prediction file: the whole of `klue score`."""
    check_mode(mode)
    golds, gold_warnings = read_gold(task, gold_path, gold_format)
    result = score_predictions(task, golds, predictions_path, mode, label_list_path)
    return dataclasses.replace(result, gold_path=str(gold_path), warnings=tuple(gold_warnings) + result.warnings)


def score_predictions(task: Task[Any, Any], golds: Sequence[Any], predictions_path: Path, mode: str = "official",
                      label_list_path: Path | None = None) -> ScoreResult:
    """Score one prediction file against gold records already read (several files, one gold)."""
    metric_mode = check_mode(mode)
    gold_guids = [task.guid(g) for g in golds]
    label_list = read_label_list(label_list_path, task.labels) if label_list_path is not None else None
    by_guid, kind, warnings = read_predictions(task, predictions_path, gold_guids, label_list)
    predictions = align(gold_guids, by_guid, str(predictions_path))
    report = evaluate(task, golds, predictions, metric_mode, str(predictions_path))
    return ScoreResult(task.name, report, "", str(predictions_path), kind, tuple(warnings))


def _finite_or_none(value: float) -> float | None:
    # JSON has no NaN: an undefined score (e.g. Pearson r of a constant prediction) is written null.
    return value if math.isfinite(value) else None


def result_to_json(result: ScoreResult) -> dict[str, Any]:
    """One JSON object: task, mode, n_examples, each metric name at the top level, then breakdowns under
    their own names, the confusion matrix, the files and the number of warnings."""
    report = result.report
    out: dict[str, Any] = {"task": result.task, "mode": report.mode, "n_examples": report.n_examples}
    out.update({name: _finite_or_none(value) for name, value in report.scores.items()})
    for name, values in report.breakdown.items():
        out[name] = {k: _finite_or_none(v) for k, v in values.items()}
    if report.confusion is not None:
        out["confusion"] = {"labels": list(report.confusion.labels),
                            "counts": [list(row) for row in report.confusion.counts]}
    out["gold"] = result.gold_path
    out["predictions"] = result.predictions_path
    out["prediction_format"] = result.prediction_format
    out["warnings"] = len(result.warnings)
    return out
