"""The results schema: one `results.json` per run (task x model x seed), validated on write and read.

Version history
- klue.results/1: first version.
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
        if self.status not in STATUSES:
            problems.append(f"status {self.status!r} is not one of {STATUSES}")
        if self.status == "failed" and not self.error:
            problems.append("a failed run must carry its error")
        if self.metric_mode not in ("official", "corrected"):
            problems.append(f"metric_mode {self.metric_mode!r} is not official/corrected")
        if self.protocol_official and self.protocol != "official":
            problems.append(f"protocol {self.protocol!r} is marked official")
        for name, value in self.scores.items():
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                problems.append(f"score {name!r} is not a finite number: {value!r}")
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
