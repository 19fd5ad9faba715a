"""KLUE-STS: semantic textual similarity on a 0-5 scale, scored by Pearson r and binary F1 (>= 3.0).

File format (SPEC section 1): a JSON list of `{guid, source, sentence1, sentence2, labels: {label,
real-label, binary-label}, annotations: {agreement, annotators, annotations}}`. The target is
`labels.real-label` (the mean of the annotators' scores); `labels.label` is that mean rounded to one
decimal and `binary-label` is `real-label >= 3`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.data.formats import check_unique_guids
from klue.data.protocols import FileRef
from klue.errors import ProblemLog
from klue.metrics.report import MetricMode, MetricReport
from klue.registry import register
from klue.tasks._common import (
    ExtraTrain,
    Fields,
    HashSplitProtocol,
    check_aligned,
    guid_locations,
    item_path,
    load_json_list,
    prediction_fields,
)
from klue.tasks.base import ArchiveFile, OfficialFile, Task

MIN_SCORE = 0.0
MAX_SCORE = 5.0
BINARY_THRESHOLD = 3.0
_FIELDS = frozenset({"guid", "source", "sentence1", "sentence2", "labels", "annotations"})
_LABEL_FIELDS = frozenset({"label", "real-label", "binary-label"})
_ANNOTATION_FIELDS = frozenset({"agreement", "annotators", "annotations"})


@dataclass(frozen=True)
class StsAnnotations:
    """The raw annotation of one pair: `agreement` (counts of scores 0..5, `:`-joined), who annotated,
    and each annotator's integer score."""

    agreement: str
    annotators: tuple[str, ...]
    scores: tuple[int, ...]


@dataclass(frozen=True)
class StsRecord:
    """One sentence pair with every field of the official file; `annotations` is None for pairs from
    other sources (KorSTS, the Hugging Face copy)."""

    guid: str
    source: str
    sentence1: str
    sentence2: str
    label: float  # labels.label: real-label rounded to one decimal
    real_label: float  # labels.real-label: the target
    binary_label: int  # labels.binary-label: real-label >= 3
    annotations: StsAnnotations | None = None

    @property
    def score(self) -> float:
        return self.real_label


@dataclass(frozen=True)
class StsPrediction:
    guid: str
    score: float


def _score(fields: Fields, key: str) -> float | None:
    value = fields.number(key)
    if value is not None and not MIN_SCORE <= value <= MAX_SCORE:
        fields.fail(fields.at(key), f"`{key}` {value!r} is outside the 0-5 score range")
        return None
    return value


def _annotations(fields: Fields) -> StsAnnotations | None:
    agreement = fields.str("agreement")
    annotators = fields.str_list("annotators")
    raw = fields.list("annotations")
    scores: list[int] = []
    for i, value in enumerate(raw or []):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 5:
            fields.fail(f"{fields.at('annotations')}[{i}]", f"an annotator score must be an integer 0-5, "
                        f"found {value!r}")
        else:
            scores.append(value)
    fields.warn_unknown(_ANNOTATION_FIELDS)
    if not fields.ok or agreement is None or annotators is None or raw is None:
        return None
    return StsAnnotations(agreement, annotators, tuple(scores))


def read(path: Path, log: ProblemLog) -> list[StsRecord]:
    """Read an official KLUE-STS JSON file; every problem goes to `log` with its JSON path."""
    items = load_json_list(path, log, "STS pairs")
    if items is None:
        return []
    records: list[StsRecord] = []
    for index, item in enumerate(items):
        fields = Fields(item, item_path("$", index), log)
        guid = fields.str("guid", nonempty=True)
        source = fields.str("source")
        sentence1 = fields.str("sentence1", nonempty=True)
        sentence2 = fields.str("sentence2", nonempty=True)
        labels = fields.obj("labels")
        label = real = binary = None
        if labels is not None:
            label = _score(labels, "label")
            real = _score(labels, "real-label")
            binary = labels.int("binary-label")
            if binary is not None and binary not in (0, 1):
                labels.fail(labels.at("binary-label"), f"`binary-label` must be 0 or 1, found {binary}")
            elif binary is not None and real is not None and binary != int(real >= BINARY_THRESHOLD):
                log.warning(labels.at("binary-label"), f"`binary-label` {binary} disagrees with real-label "
                            f"{real} (expected real-label >= {BINARY_THRESHOLD})")
            labels.warn_unknown(_LABEL_FIELDS)
        annotations_fields = fields.obj("annotations")
        annotations = _annotations(annotations_fields) if annotations_fields is not None else None
        fields.warn_unknown(_FIELDS)
        if not fields.ok:
            continue
        assert guid is not None and source is not None and sentence1 is not None and sentence2 is not None
        assert label is not None and real is not None and binary is not None
        records.append(StsRecord(guid, source, sentence1, sentence2, label, real, binary, annotations))
    check_unique_guids(guid_locations(items), log)
    return records


def to_json(record: StsRecord) -> dict[str, Any]:
    """The record as the official file writes it (foreign records have no `annotations`)."""
    out: dict[str, Any] = {
        "guid": record.guid, "source": record.source, "sentence1": record.sentence1,
        "sentence2": record.sentence2,
        "labels": {"label": record.label, "real-label": record.real_label, "binary-label": record.binary_label},
    }
    if record.annotations is not None:
        out["annotations"] = {"agreement": record.annotations.agreement,
                              "annotators": list(record.annotations.annotators),
                              "annotations": list(record.annotations.scores)}
    return out


def parse_prediction(obj: Mapping[str, Any], log: ProblemLog, location: str) -> StsPrediction | None:
    """A predicted score must be a finite number; values outside 0-5 are accepted (a regressor may
    overshoot and Pearson r does not care), but flagged as a warning."""
    fields = prediction_fields(obj, log, location)
    if fields is None:
        return None
    score = fields.number("score")
    if not fields.ok or score is None:
        return None
    if not MIN_SCORE <= score <= MAX_SCORE:
        log.warning(location, f"{obj['guid']}: predicted score {score!r} is outside 0-5")
    return StsPrediction(obj["guid"], score)


def prediction_to_json(prediction: StsPrediction) -> dict[str, Any]:
    return {"guid": prediction.guid, "score": prediction.score}


def gold_prediction(record: StsRecord) -> StsPrediction:
    return StsPrediction(record.guid, record.real_label)


def evaluate(golds: Sequence[StsRecord], preds: Sequence[StsPrediction], mode: MetricMode) -> MetricReport:
    from klue.metrics import sts as sts_metric

    check_aligned("sts", [g.guid for g in golds], [p.guid for p in preds])
    return sts_metric.compute([g.real_label for g in golds], [p.score for p in preds], mode=mode)


def _read_korsts(path: Path, log: ProblemLog) -> list[StsRecord]:
    from klue.data import foreign

    return foreign.read_korsts(path, log)


DEV_FILE = "klue-sts-v1.1/klue-sts-v1.1_dev.json"

DEV_80_20_KORSTS = HashSplitProtocol(
    name="local:dev-80-20+korsts",
    split=FileRef("klue", DEV_FILE),
    reader=read,
    group_key=lambda r: r.guid,
    group="guid",
    what="the official KLUE STS v1.1 dev file",
    unit="pairs",
    extra_train=(ExtraTrain(FileRef("extra", "korean/korsts/sts-train.tsv"), _read_korsts,
                            "KorSTS train",
                            "machine-translated STS-B, not KLUE"),),
)


TASK: Task[StsRecord, StsPrediction] = register(Task(
    name="sts",
    aliases=("klue-sts", "sts-v1.1", "klue-sts-v1.1"),
    title="Semantic Textual Similarity",
    order=2,
    version="1",
    files=(
        OfficialFile("train", "klue-sts-v1.1/klue-sts-v1.1_train.json", "4e92fce70fe9f2dbed2ffcb9c2aec7417c6d32ff"),
        OfficialFile("dev", DEV_FILE, "2645707503e7b25cc3d9f94103cbfb2f5a086f56", 454638),
    ),
    sizes={"train": 11668, "dev": 519},
    labels=(),
    metrics=("pearsonr", "f1"),
    main_metrics=("pearsonr", "f1"),
    record_type=StsRecord,
    prediction_type=StsPrediction,
    read=read,
    guid=lambda r: r.guid,
    group_key=lambda r: r.guid,
    gold_prediction=gold_prediction,
    parse_prediction=parse_prediction,
    prediction_to_json=prediction_to_json,
    evaluate=evaluate,
    v1_archive=ArchiveFile(
        "https://aistages-prod-server-public.s3.amazonaws.com/app/Competitions/000067/data/klue-sts-v1.tar.gz",
        "539341ba78a3b351c686cf70a448ac7a5886ed95f0719d5e3d2378ba703213bd", 1349875),
    other_readers={"korsts": _read_korsts},
    protocols={DEV_80_20_KORSTS.name: DEV_80_20_KORSTS},
))
