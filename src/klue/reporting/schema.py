"""The results schema: one `results.json` per run (task x model x seed), validated on write and read.

The format is documented in docs/results-schema.md (keep the two in step).

Version history
- klue.results/1: first version. Validation states what v1 always meant: an ok run carries scores,
  breakdowns and learning-curve points are numbers, a confusion matrix is square over its labels.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.metrics.report import MetricReport

SCHEMA_VERSION = "klue.results/1"
STATUSES = ("ok", "failed")


@dataclass
class Results:
    task: str
    task_version: str
    model: str  # "classic", a hub name, or a local path
    model_family: str  # "classic" | "encoder" | "llm"
    seed: int
    protocol: str  # "official", "heldout", "local:dev-80-20", ...
    protocol_official: bool
    protocol_description: str
    metric_mode: str  # "official" | "corrected"
    status: str = "ok"  # "ok" | "failed"
    error: str | None = None  # the error of a failed run, one paragraph
    scores: dict[str, float] = field(default_factory=dict)  # 0-100, official metric names
    breakdown: dict[str, dict[str, float]] = field(default_factory=dict)
    confusion: dict[str, Any] | None = None  # {"labels": [...], "counts": [[...], ...]}
    n_train: int = 0
    n_eval: int = 0
    data_sources: list[dict[str, Any]] = field(default_factory=list)  # DataSource as dicts
    recipe: str | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    learning_curve: list[dict[str, float]] = field(default_factory=list)  # {"step", "loss", metric...}
    wall_time_s: float = 0.0
    train_time_s: float = 0.0
    train_examples_per_s: float | None = None
    eval_examples_per_s: float | None = None
    predictions_file: str | None = None  # relative to the results file
    library_versions: dict[str, str] = field(default_factory=dict)
    git_revision: str | None = None
    created_at: str = ""
    schema_version: str = SCHEMA_VERSION

    def validate(self, where: str = "results") -> None:
        problems: list[str] = []
        if self.schema_version != SCHEMA_VERSION:
            problems.append(f"schema_version {self.schema_version!r}, expected {SCHEMA_VERSION!r}")
        for name in ("task", "model", "model_family", "protocol"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                problems.append(f"{name} must be a non-empty string")
        if not _is_int(self.seed):
            problems.append(f"seed {self.seed!r} is not an integer")
        if self.status not in STATUSES:
            problems.append(f"status {self.status!r} is not one of {STATUSES}")
        if self.status == "failed" and not self.error:
            problems.append("a failed run must carry its error")
        if self.status == "ok" and not self.scores:
            problems.append("a run with status ok must carry scores")
        if self.metric_mode not in ("official", "corrected"):
            problems.append(f"metric_mode {self.metric_mode!r} is not official/corrected")
        if self.protocol_official and self.protocol != "official":
            problems.append(f"protocol {self.protocol!r} is marked official")
        for name in ("n_train", "n_eval"):
            if not _is_int(getattr(self, name)) or getattr(self, name) < 0:
                problems.append(f"{name} must be a non-negative integer")
        problems += _number_map_problems("scores", self.scores)
        if not isinstance(self.breakdown, dict):
            problems.append("breakdown must be an object")
        else:
            for key, values in self.breakdown.items():
                problems += _number_map_problems(f"breakdown.{key}", values)
        if self.confusion is not None:
            problems += _confusion_problems(self.confusion)
        if not isinstance(self.learning_curve, list):
            problems.append("learning_curve must be a list")
        else:
            for i, point in enumerate(self.learning_curve):
                problems += _number_map_problems(f"learning_curve[{i}]", point)
        if not isinstance(self.data_sources, list):
            problems.append("data_sources must be a list")
        else:
            for i, source in enumerate(self.data_sources):
                missing = [k for k in _SOURCE_KEYS if not isinstance(source, dict) or k not in source]
                if missing:
                    problems.append(f"data_sources[{i}] lacks {missing}")
        if problems:
            raise DataError(f"invalid results ({where}): " + "; ".join(problems), where)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict[str, Any], where: str = "results") -> Results:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(obj) - known)
        if unknown:
            raise DataError(f"invalid results ({where}): unknown keys {unknown}", where)
        try:
            results = cls(**obj)
        except TypeError as error:
            raise DataError(f"invalid results ({where}): {error}", where) from None
        results.validate(where)
        return results


_SOURCE_KEYS = ("path", "git_blob", "n_examples", "used_as")  # klue.tasks.base.DataSource


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number_map_problems(where: str, values: Any) -> list[str]:
    if not isinstance(values, dict):
        return [f"{where} must be an object of numbers"]
    return [f"{where}[{name!r}] is not a finite number: {value!r}"
            for name, value in values.items() if not _is_number(value)]


def _confusion_problems(confusion: Any) -> list[str]:
    if not isinstance(confusion, dict) or set(confusion) != {"labels", "counts"}:
        return ["confusion must be {labels, counts}"]
    labels, counts = confusion["labels"], confusion["counts"]
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        return ["confusion.labels must be a list of strings"]
    square = isinstance(counts, list) and len(counts) == len(labels) and all(
        isinstance(row, list) and len(row) == len(labels) for row in counts)
    if not square:
        return [f"confusion.counts must be {len(labels)} x {len(labels)}"]
    if not all(_is_int(c) and c >= 0 for row in counts for c in row):
        return ["confusion.counts must be non-negative integers"]
    return []


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to a temporary file beside `path`, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(obj, handle, ensure_ascii=False, indent=2)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write text beside `path`, then rename (see write_json_atomic)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_results(path: Path, results: Results) -> None:
    results.validate(str(path))
    write_json_atomic(path, results.to_json())


def read_results(path: Path) -> Results:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"cannot read results: {error}", path) from None
    if not isinstance(obj, dict):
        raise DataError("results file is not a JSON object", path)
    return Results.from_json(obj, str(path))


def metric_fields(report: MetricReport) -> dict[str, Any]:
    """The Results fields a `MetricReport` fills: `Results(..., **metric_fields(report))`."""
    confusion = None
    if report.confusion is not None:
        confusion = {"labels": list(report.confusion.labels),
                     "counts": [list(map(int, row)) for row in report.confusion.counts]}
    return {
        "scores": {k: float(v) for k, v in report.scores.items()},
        "breakdown": {k: {n: float(v) for n, v in values.items()} for k, values in report.breakdown.items()},
        "confusion": confusion,
        "n_eval": int(report.n_examples),
    }
