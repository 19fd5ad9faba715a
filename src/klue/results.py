"""The results schema: one `results.json` per run (task x model x seed), validated on write and read, and
the names of the files a run directory holds.

Every producer (a fine-tuned encoder, a CPU baseline, a prompted LM) writes its predictions; the
judge (`klue.scoring.judge`) scores them and assembles the `Results`, so the schema lives on the judge's
floor, below every producer and the report. The format is documented in docs/results-schema.md (keep the
two in step).

Version history
- klue.results/1: first version.
- klue.results/2: `metric_versions` (the version of every metric in `scores`); what a training run
  measured about itself (best step, device, parameter count, ...) moved out of `hyperparameters` into a
  typed `training` summary; typed learning-curve points (`step`, `epoch`, `loss`, `learning_rate`,
  `examples_per_s`, `selection`: metric -> score). Version 1 files are read and upgraded.
  Later, within version 2: `data_sources[].sha256` (optional, null where unknown); files without it read;
  `partial` (a `--limit` run: scored on part of the evaluation set, never ranked) and `llm` (what a
  prompted-LM run recorded about itself), both optional. `statistics_file` (optional): the run's
  per-example statistics (`statistics.npz`, docs/statistics.md), which `klue compare` and the report's
  intervals read. `embedding` (optional): what a sentence-embedding run recorded about itself.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from klue.errors import DataError
from klue.io.atomic import write_bytes_atomic, write_json_atomic
from klue.io.provenance import DataSource
from klue.io.text import read_json_file
from klue.metrics.report import METRIC_MODES, ConfusionMatrix, MetricReport
from klue.metrics.statistics import ExampleStatistics, Formula

SCHEMA_VERSION = "klue.results/2"
READABLE_VERSIONS = ("klue.results/1", SCHEMA_VERSION)
STATUSES = ("ok", "failed")
# Results.model_family values of the producers in this package (`model` is "classic" for the baselines too).
CLASSIC = "classic"
ENCODER = "encoder"
LLM = "llm"
EMBEDDING = "embedding"
# The files of a run directory (a benchmark cell, a `klue train --output`), named once.
RESULTS_FILE = "results.json"
PREDICTIONS_FILE = "predictions.jsonl"
STATISTICS_FILE = "statistics.npz"  # per-example statistics of the scores (docs/statistics.md)
DATA_WARNINGS_FILE = "data_warnings.txt"  # every warning the readers gave on the run's data, one per line
STATISTICS_FORMAT = "klue.statistics/1"


@dataclass
class CurvePoint:
    """One point of a training run's log: a training-loss point or an evaluation on the selection set."""

    step: int  # optimizer steps done
    epoch: float
    loss: float | None = None  # mean training loss since the previous loss point
    learning_rate: float | None = None
    examples_per_s: float | None = None
    selection: dict[str, float] = field(default_factory=dict)  # metric -> score on the selection set

    def values(self) -> dict[str, float]:
        """The plotted values by name: `loss`, `learning_rate`, `examples_per_s`, `selection_<metric>`."""
        out = {k: v for k, v in (("loss", self.loss), ("learning_rate", self.learning_rate),
                                 ("examples_per_s", self.examples_per_s)) if v is not None}
        out.update({f"selection_{k}": v for k, v in self.selection.items()})
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> CurvePoint:
        """A point as `asdict` wrote it, or a klue.results/1 point (flat, no `selection` key)."""
        if "selection" not in obj:
            return cls.from_v1(obj)
        return cls(**{**obj, "selection": dict(obj["selection"] or {})})

    @classmethod
    def from_v1(cls, obj: dict[str, Any]) -> CurvePoint:
        """A klue.results/1 point: a flat object with `selection_<metric>` keys."""
        selection = {k.removeprefix("selection_"): v for k, v in obj.items() if k.startswith("selection_")}
        return cls(int(obj.get("step", 0)), float(obj.get("epoch", 0.0)), obj.get("loss"), obj.get("learning_rate"),
                   obj.get("examples_per_s"), selection)


@dataclass
class TrainingSummary:
    """What a fine-tuning run measured about itself, beside the hyper-parameters it was given. A field is
    None when the run that wrote the file did not record it (files older than the field, upgraded)."""

    selection_metric: str | None = None
    checkpoint_selection: str | None = None  # which set selected the checkpoint, in words
    best_step: int | None = None
    best_selection_score: float | None = None
    total_steps: int | None = None
    steps_per_epoch: int | None = None
    num_processes: int | None = None
    device: str | None = None
    mixed_precision_used: str | None = None
    model_source: str | None = None  # "pretrained", "from scratch (config only)" or "klue fine-tuned"
    head_from_pooler: bool | None = None  # the head's dense layer started from the checkpoint's pooler
    num_parameters: int | None = None
    use_token_type_ids: bool | None = None
    added_tokens: int | None = None
    n_train_features: int | None = None
    n_eval_features: int | None = None
    truncated_train_features: int | None = None
    resumed_from_steps: list[int] = field(default_factory=list)
    overrides: dict[str, Any] = field(default_factory=dict)  # key=value as given on the command line
    # Where the wall time went besides training (seconds; over all sessions up to the last checkpoint):
    eval_time_s: float | None = None  # evaluations on the selection set
    checkpoints_written: int | None = None  # full resume states (model, optimizer, RNG)
    checkpoint_time_s: float | None = None
    best_written: int | None = None  # best/ model directories, one per improvement
    best_time_s: float | None = None


@dataclass
class LlmSummary:
    """What a prompted-LM run recorded about itself (klue.llm.run)."""

    backend: str  # "hf" (in process) or "openai" (HTTP)
    model_fingerprint: str  # HF commit or weight-file hash, or the server's model id
    mode: str  # "loglik" or "generate" (as run, after `auto` chose)
    form: str  # "completion" or "chat"
    shots: int
    prompt_version: str
    capabilities: dict[str, Any] = field(default_factory=dict)  # the backend's probe
    usage: dict[str, int] = field(default_factory=dict)  # requests asked of the model, tokens, cache hits
    n_parse_failures: int = 0  # generated answers that did not parse (scored as wrong, never dropped)
    parse_failure_rate: float = 0.0  # of the evaluated examples, 0-1
    n_constrained: int = 0  # generated answers the backend constrained (grammar / JSON schema)
    limit: int | None = None  # --limit: the first N evaluation examples only
    outputs_file: str | None = None  # prompts, raw answers and parses per example, beside the predictions
    notes: list[str] = field(default_factory=list)
    not_applicable: list[str] = field(default_factory=list)  # metrics left out of `scores` in this mode
    # `--mode auto` generated where the task scores by log-likelihood: the backend gave none (notes say why)
    instead_of_loglik: bool = False
    # Shots (klue.llm.run): how they were drawn, and how often the answer simply repeated a shot's label.
    shot_policy: str = ""  # e.g. "balanced over labels, seeded" or "random, seeded"
    shot_label_agreement: float | None = None  # classification: share of answers equal to the last shot's label
    shot_label_agreement_chance: float | None = None  # the same share expected if answers ignored the shots
    # Fitting prompts into the model's context (klue.llm.run): what was cut, per run (per example in outputs).
    context_length: int | None = None  # tokens, from the server, the model or --max-context
    token_counter: str = ""  # how prompt tokens were counted: server endpoint, tokenizer, or a stated estimate
    n_shots_dropped: int = 0  # examples whose prompt lost shots to fit
    n_truncated: int = 0  # examples whose own context (passage, dialogue) was truncated to fit
    n_unfit: int = 0  # examples that could not fit at all: scored wrong, never dropped
    max_new_tokens: int | None = None  # generation: the task's token budget (from the gold answers' lengths)
    budget_rule: str = ""  # how that budget was set, in words


@dataclass
class EmbeddingSummary:
    """What a sentence-embedding run recorded about itself (klue.embed.run)."""

    backend: str  # "local" (in process) or "openai" (HTTP)
    model_fingerprint: str  # the weights' hash with pooling and length, or the server's model id
    prompt: str  # put before every text ("" for none)
    pooling: str | None  # local: mean, cls, last or "the model's own"; None for a server
    dimension: int
    use: str  # "classification", "pair classification" or "similarity"
    inputs: str  # what was embedded, in words
    head: str  # what was fitted on the frozen embeddings, in words
    calibration: dict[str, float] | None = None  # similarity: slope, threshold, anchor, low, high
    cosine_spearman: float | None = None  # similarity: Spearman rho x 100 of the raw cosines (MTEB's figure)
    cosine_spearman_interval: list[float] | None = None  # its 95% bootstrap interval
    texts: int = 0  # distinct texts the run needed
    cache_hits: int = 0  # of those, answered by the embedding cache
    embedded: int = 0  # embedded by the model in this run
    embed_seconds: float = 0.0  # time in the model (or server) for those
    texts_per_s: float | None = None  # embedded / embed_seconds
    limit: int | None = None  # --limit: the first N evaluation examples only
    notes: list[str] = field(default_factory=list)


@dataclass
class Results:
    task: str
    task_version: str
    model: str  # "classic", a hub name, or a local path
    model_family: str  # "classic" | "encoder" | "llm" | "embedding"
    seed: int
    protocol: str  # "official", "heldout", "local:dev-80-20", ...
    protocol_official: bool
    protocol_description: str
    metric_mode: str  # "official" | "corrected"
    status: str = "ok"  # "ok" | "failed"
    error: str | None = None  # the error of a failed run, one paragraph
    scores: dict[str, float] = field(default_factory=dict)  # 0-100, official metric names
    metric_versions: dict[str, str] = field(default_factory=dict)  # metric -> version of its definition
    breakdown: dict[str, dict[str, float]] = field(default_factory=dict)
    confusion: ConfusionMatrix | None = None
    n_train: int = 0
    n_eval: int = 0
    data_sources: list[DataSource] = field(default_factory=list)
    recipe: str | None = None
    hyperparameters: dict[str, Any] = field(default_factory=dict)  # as given to the producer
    training: TrainingSummary | None = None  # fine-tuning runs only
    learning_curve: list[CurvePoint] = field(default_factory=list)
    wall_time_s: float = 0.0
    train_time_s: float = 0.0
    train_examples_per_s: float | None = None
    eval_examples_per_s: float | None = None
    predictions_file: str | None = None  # relative to the results file
    partial: bool = False  # scored on part of the evaluation set (--limit): never ranked as a whole-set score
    statistics_file: str | None = None  # per-example statistics (relative to the results file); None: not kept
    llm: LlmSummary | None = None  # prompted-LM runs only
    embedding: EmbeddingSummary | None = None  # sentence-embedding runs only
    library_versions: dict[str, str] = field(default_factory=dict)
    git_revision: str | None = None
    created_at: str = ""
    schema_version: str = SCHEMA_VERSION

    @property
    def not_applicable_metrics(self) -> tuple[str, ...]:
        """Metrics the run declared it cannot measure (a generate-mode LLM run's AUPRC: generated answers
        carry no probabilities): left out of `scores`, and out of the task score (klue.reporting)."""
        return tuple(self.llm.not_applicable) if self.llm is not None else ()

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
        if self.metric_mode not in METRIC_MODES:
            problems.append(f"metric_mode {self.metric_mode!r} is not official/corrected")
        if self.protocol_official and self.protocol != "official":
            problems.append(f"protocol {self.protocol!r} is marked official")
        for name in ("n_train", "n_eval"):
            if not _is_int(getattr(self, name)) or getattr(self, name) < 0:
                problems.append(f"{name} must be a non-negative integer")
        problems += _number_map_problems("scores", self.scores)
        if not isinstance(self.metric_versions, dict) or not all(
                isinstance(v, str) for v in self.metric_versions.values()):
            problems.append("metric_versions must map metric names to version strings")
        if not isinstance(self.breakdown, dict):
            problems.append("breakdown must be an object")
        else:
            for key, values in self.breakdown.items():
                problems += _number_map_problems(f"breakdown.{key}", values)
        if self.confusion is not None:
            problems += _confusion_problems(self.confusion)
        for i, point in enumerate(self.learning_curve):
            problems += _number_map_problems(f"learning_curve[{i}]", point.values())
        for i, source in enumerate(self.data_sources):
            if not isinstance(source, DataSource):
                problems.append(f"data_sources[{i}] is not a DataSource {{path, git_blob, n_examples, used_as, "
                                "sha256}")
            elif source.sha256 is not None and not isinstance(source.sha256, str):
                problems.append(f"data_sources[{i}].sha256 must be a string or null, found {source.sha256!r}")
        if problems:
            raise DataError(f"invalid results ({where}): " + "; ".join(problems), where)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict[str, Any], where: str = "results") -> Results:
        version = obj.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise DataError(f"invalid results ({where}): schema_version {version!r}, expected one of "
                            f"{', '.join(READABLE_VERSIONS)}", where)
        if version != SCHEMA_VERSION:
            obj = _upgrade_v1(obj)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(obj) - known)
        if unknown:
            raise DataError(f"invalid results ({where}): unknown keys {unknown}", where)
        try:
            results = cls(**_typed_parts(obj))
        except (TypeError, ValueError, AttributeError) as error:
            raise DataError(f"invalid results ({where}): {error}", where) from None
        results.validate(where)
        return results


def _typed_parts(obj: dict[str, Any]) -> dict[str, Any]:
    """The JSON object with its nested parts as their dataclasses."""
    out = dict(obj)
    confusion = obj.get("confusion")
    if confusion is not None:
        if not isinstance(confusion, dict) or set(confusion) != {"labels", "counts"}:
            raise ValueError("confusion must be {labels, counts}")
        out["confusion"] = ConfusionMatrix(tuple(confusion["labels"]), tuple(tuple(row) for row in confusion["counts"]))
    out["data_sources"] = [_data_source(i, s) for i, s in enumerate(obj.get("data_sources") or [])]
    out["learning_curve"] = [CurvePoint.from_json(p) for p in obj.get("learning_curve") or []]
    if obj.get("training") is not None:
        out["training"] = TrainingSummary(**obj["training"])
    if obj.get("llm") is not None:
        out["llm"] = LlmSummary(**obj["llm"])
    if obj.get("embedding") is not None:
        out["embedding"] = EmbeddingSummary(**obj["embedding"])
    return out


# The DataSource fields every entry must have: those without a default (a field added later has one, so
# files written before it still read).
_REQUIRED_SOURCE_FIELDS = tuple(f.name for f in fields(DataSource) if f.default is MISSING)
_SOURCE_FIELDS = frozenset(f.name for f in fields(DataSource))


def _data_source(index: int, source: Any) -> DataSource:
    """One `data_sources` entry; TypeError or ValueError naming it when it is no object, or a required field
    is missing or one is unknown."""
    if not isinstance(source, dict):
        raise TypeError(f"data_sources[{index}] must be an object, not {type(source).__name__}")
    missing = [name for name in _REQUIRED_SOURCE_FIELDS if name not in source]
    if missing:
        raise ValueError(f"data_sources[{index}] lacks {missing}")
    unknown = sorted(set(source) - _SOURCE_FIELDS)
    if unknown:
        raise ValueError(f"data_sources[{index}] has unknown fields {unknown}")
    return DataSource(**source)


def _upgrade_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A klue.results/1 object as version 2: the training keys of `hyperparameters` become `training`."""
    out = {**obj, "schema_version": SCHEMA_VERSION}
    hyperparameters = dict(obj.get("hyperparameters") or {})
    summary_keys = [f.name for f in fields(TrainingSummary)]
    if obj.get("model_family") == ENCODER and "best_step" in hyperparameters:
        # `selection_metric` was both a hyper-parameter and the resolved choice: it stays in both places.
        out["training"] = {k: hyperparameters[k] if k == "selection_metric" else hyperparameters.pop(k)
                           for k in summary_keys if k in hyperparameters}
    out["hyperparameters"] = hyperparameters
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number_map_problems(where: str, values: Any) -> list[str]:
    if not isinstance(values, dict):
        return [f"{where} must be an object of numbers"]
    return [f"{where}[{name!r}] is not a finite number: {value!r}"
            for name, value in values.items() if not _is_number(value)]


def _confusion_problems(confusion: ConfusionMatrix) -> list[str]:
    labels, counts = confusion.labels, confusion.counts
    if not all(isinstance(x, str) for x in labels):
        return ["confusion.labels must be a list of strings"]
    if len(counts) != len(labels) or not all(len(row) == len(labels) for row in counts):
        return [f"confusion.counts must be {len(labels)} x {len(labels)}"]
    if not all(_is_int(c) and c >= 0 for row in counts for c in row):
        return ["confusion.counts must be non-negative integers"]
    return []


def write_results(path: Path, results: Results) -> None:
    results.validate(str(path))
    write_json_atomic(path, results.to_json())


def read_results(path: Path) -> Results:
    obj = read_json_file(path, "results")
    if not isinstance(obj, dict):
        raise DataError("results file is not a JSON object", path)
    return Results.from_json(obj, str(path))


def metric_fields(report: MetricReport) -> dict[str, Any]:
    """The Results fields a `MetricReport` fills: `Results(..., **metric_fields(report))`."""
    return {
        "scores": {k: float(v) for k, v in report.scores.items()},
        "breakdown": {k: {n: float(v) for n, v in values.items()} for k, values in report.breakdown.items()},
        "confusion": report.confusion,
        "n_eval": int(report.n_examples),
    }


# ------------------------------------------------------------------------------ per-example statistics


@dataclass(frozen=True)
class RunStatistics:
    """A run's per-example statistics as stored beside its results: which task and metric mode, each
    example's guid and resampling unit (`group_key`, numbered by first appearance), and the statistics."""

    task: str
    task_version: str
    metric_mode: str
    guids: tuple[str, ...]
    units: np.ndarray  # int64 unit number per example
    statistics: ExampleStatistics


def write_statistics(path: Path, run: RunStatistics) -> None:
    """`statistics.npz`: numeric arrays and one JSON header, no pickled object (read with allow_pickle off),
    compressed (most counts are 0), the same bytes for the same run; written atomically."""
    meta = {"format": STATISTICS_FORMAT, "task": run.task, "task_version": run.task_version,
            "metric_mode": run.metric_mode, "columns": list(run.statistics.columns),
            "formulas": [f.to_json() for f in run.statistics.formulas]}
    arrays = {"meta": np.array(json.dumps(meta, ensure_ascii=False)), "matrix": run.statistics.matrix,
              "guids": np.array(run.guids, dtype=str), "units": np.asarray(run.units, dtype=np.int64)}
    buffer = io.BytesIO()
    # The .npz layout (one .npy per array in a zip), written here with a fixed timestamp: the same run gives
    # the same bytes (np.savez stamps the current time).
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, member.getvalue())
    write_bytes_atomic(path, buffer.getvalue())


def read_statistics(path: Path) -> RunStatistics:
    """A `statistics.npz` as `write_statistics` wrote it; DataError naming the file otherwise."""
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            matrix, guids, units = data["matrix"], data["guids"], data["units"]
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as error:
        raise DataError(f"cannot read per-example statistics: {error}", path) from None
    if not isinstance(meta, dict) or meta.get("format") != STATISTICS_FORMAT:
        raise DataError(f"not a {STATISTICS_FORMAT} file", path)
    try:
        statistics = ExampleStatistics(tuple(meta["columns"]), np.asarray(matrix, dtype=np.float64),
                                       tuple(Formula.from_json(f) for f in meta["formulas"]))
        if len(guids) != statistics.n_examples or len(units) != statistics.n_examples:
            raise ValueError(f"{len(guids)} guids and {len(units)} units for {statistics.n_examples} rows")
        return RunStatistics(str(meta["task"]), str(meta["task_version"]), str(meta["metric_mode"]),
                             tuple(str(g) for g in guids), np.asarray(units, dtype=np.int64), statistics)
    except (KeyError, TypeError, ValueError) as error:
        raise DataError(f"invalid per-example statistics: {error}", path) from None
