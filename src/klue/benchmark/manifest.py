"""`<out>/benchmark.json`: what a benchmark directory was asked to hold, and each invocation's outcome."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.io.atomic import write_json_atomic
from klue.io.text import read_json_file

MANIFEST_FILE = "benchmark.json"
MANIFEST_VERSION = "klue.benchmark/1"
MANIFEST_STATUSES = ("running", "finished", "interrupted")


@dataclass
class Invocation:
    started_at: str
    finished_at: str | None = None
    status: str = "running"
    cells_total: int = 0
    cells_skipped: int = 0  # already done before this invocation
    cells_ok: int = 0
    cells_failed: int = 0
    # what ran the cells: {"name": "local", "workers": N, ...} or {"name": "ray", "address": ..., resources}
    executor: dict[str, Any] = field(default_factory=dict)


@dataclass
class Manifest:
    models: list[str]
    tasks: list[str]
    seeds: list[int]
    protocol: str  # as asked ("auto" chooses per task; each results.json names the protocol used)
    metric_mode: str
    jobs: int
    data_dir: str | None
    extra_data_dir: str | None
    overrides: dict[str, Any]
    klue_version: str
    git_revision: str | None
    started_at: str
    finished_at: str | None = None
    status: str = "running"
    invocations: list[Invocation] = field(default_factory=list)  # this one last
    schema_version: str = MANIFEST_VERSION

    def validate(self, where: str) -> None:
        problems = []
        if self.schema_version != MANIFEST_VERSION:
            problems.append(f"schema_version {self.schema_version!r}, expected {MANIFEST_VERSION!r}")
        if self.status not in MANIFEST_STATUSES:
            problems.append(f"status {self.status!r} is not one of {MANIFEST_STATUSES}")
        if not self.models or not self.tasks or not self.seeds:
            problems.append("models, tasks and seeds must be non-empty")
        if problems:
            raise DataError(f"invalid benchmark manifest ({where}): " + "; ".join(problems), where)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def write_manifest(out: Path, manifest: Manifest) -> None:
    path = out / MANIFEST_FILE
    manifest.validate(str(path))
    write_json_atomic(path, manifest.to_json())


def read_manifest(out: Path) -> Manifest | None:
    path = out / MANIFEST_FILE
    if not path.is_file():
        return None
    obj = read_json_file(path, "the benchmark manifest")
    try:
        obj["invocations"] = [Invocation(**i) for i in obj.get("invocations", [])]
        manifest = Manifest(**obj)
    except (TypeError, AttributeError) as error:
        raise DataError(f"cannot read the benchmark manifest: {error}", path) from None
    manifest.validate(str(path))
    return manifest
