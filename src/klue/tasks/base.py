"""The declaration every KLUE task makes once, in its own module under `klue.tasks`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from klue.errors import ProblemLog
from klue.metrics.report import MetricMode, MetricReport

FileRole = Literal["train", "dev", "resource"]

RecordT = TypeVar("RecordT")
PredictionT = TypeVar("PredictionT")


@dataclass(frozen=True)
class OfficialFile:
    """One file of the official KLUE v1.1 release, by its path under `klue_benchmark/`."""

    role: FileRole
    path: str  # e.g. "klue-nli-v1.1/klue-nli-v1.1_dev.json"
    git_blob: str  # sha1 of b"blob <len>\0" + bytes: the file's identity upstream
    size: int | None = None  # bytes, where known


@dataclass(frozen=True)
class ArchiveFile:
    """A v1 tarball (the one the Hugging Face `klue` builder used); it unpacks to `<name>-v1/`."""

    url: str
    sha256: str
    size: int


@dataclass(frozen=True)
class DataRoots:
    """`klue`: the official layout (--data-dir / KLUE_DATA_DIR / cache). `extra`: the directory holding
    `klue-partial/`, `klue-derived/` and `korean/` (--extra-data-dir / KLUE_EXTRA_DATA_DIR), or None."""

    klue: Path
    extra: Path | None = None


@dataclass(frozen=True)
class DataSource:
    """A file a run read, for provenance: its path, git blob id and how many examples it gave."""

    path: str
    git_blob: str
    n_examples: int
    used_as: str  # "train", "eval", "selection", or e.g. "train (80% by premise hash)"


@dataclass(frozen=True)
class ProtocolData(Generic[RecordT]):
    """What a run trains on, selects checkpoints on, and evaluates on, under a named protocol."""

    protocol: str  # "official", "heldout", "local:dev-80-20", ...
    official: bool  # True only for `official` (train on train, report dev)
    description: str  # one sentence, copied into every output that uses it
    train: list[RecordT]
    eval: list[RecordT]
    selection: list[RecordT] | None  # checkpoint selection set; None = select on `eval` (official recipe)
    sources: tuple[DataSource, ...]
    # The roots the data came from, so a model can open a task's resource file (the WoS ontology);
    # `klue.data.protocols.resolve` fills it.
    roots: DataRoots | None = None


@dataclass(frozen=True)
class Task(Generic[RecordT, PredictionT]):
    """Everything the CLI, the scorer, the runner and the report need to know about one task.

    Readers take a path and a `ProblemLog`; they record every problem they find (with line or JSON
    path) and return the records they could build. Callers end with `log.raise_if_errors()`.
    """

    name: str  # short name used everywhere: "nli"
    aliases: tuple[str, ...]  # other accepted spellings: ("klue-nli",)
    title: str  # "Natural Language Inference"
    order: int  # position in the paper's task order (YNAT=1 ... WoS=8)
    version: str  # bump when the task's reading or scoring behaviour changes
    files: tuple[OfficialFile, ...]
    sizes: Mapping[str, int]  # official example counts per split, from SPEC section 1
    labels: tuple[str, ...]  # label set in official order (empty where the task has none)
    metrics: tuple[str, ...]  # official metric names (SPEC section 2); metrics[0] is the key metric
    main_metrics: tuple[str, ...]  # the ones averaged into the overall KLUE score
    record_type: type[RecordT]
    prediction_type: type[PredictionT]
    read: Callable[[Path, ProblemLog], list[RecordT]]  # official v1.1 format
    guid: Callable[[RecordT], str]  # the guid a prediction must carry for this record
    group_key: Callable[[RecordT], str]  # records sharing a key stay on one side of a local split
    gold_prediction: Callable[[RecordT], PredictionT]  # the perfect prediction for a record
    parse_prediction: Callable[[Mapping[str, Any], ProblemLog, str], PredictionT | None]
    prediction_to_json: Callable[[PredictionT], dict[str, Any]]
    evaluate: Callable[[Sequence[RecordT], Sequence[PredictionT], MetricMode], MetricReport]
    v1_archive: ArchiveFile | None = None
    other_readers: Mapping[str, Callable[[Path, ProblemLog], list[RecordT]]] = field(default_factory=dict)
    # Task-specific named protocols ("local:ner-train5000", ...); generic ones live in klue.data.protocols.
    protocols: Mapping[str, Callable[[DataRoots], ProtocolData[RecordT]]] = field(default_factory=dict)
    default_local_protocol: str = "local:dev-80-20"  # used by the benchmark when no train set is present
    license: str = "CC BY-SA 4.0"
    citation: str = "Park et al., KLUE: Korean Language Understanding Evaluation, arXiv:2105.09680"

    def file(self, role: FileRole) -> OfficialFile | None:
        return next((f for f in self.files if f.role == role), None)

    @property
    def key_metric(self) -> str:
        return self.metrics[0]
