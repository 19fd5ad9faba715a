"""KLUE-STS records and readers: the official JSON, KorSTS TSV and the Hugging Face copy.

File format (docs/tasks.md, STS): a JSON list of `{guid, source, sentence1, sentence2, labels: {label,
real-label, binary-label}, annotations: {agreement, annotators, annotations}}`. The target is
`labels.real-label` (the mean of the annotators' scores); `labels.label` is that mean rounded to one
decimal and `binary-label` is `real-label >= 3`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from klue.errors import ProblemLog
from klue.io import hf
from klue.io.fields import Fields, item_path, read_json_objects
from klue.io.formats import ReadPurpose
from klue.io.text import check_unique_guids
from klue.io.tsv import file_stem, headed_rows
from klue.metrics.sts import THRESHOLD as BINARY_THRESHOLD
from klue.tasks.kinds import gold_prediction_of, prediction_parser, present, reads_for_prediction

MIN_SCORE = 0.0
MAX_SCORE = 5.0
KORSTS_HEADER = ("genre", "filename", "year", "id", "score", "sentence1", "sentence2")
_FIELDS = frozenset({"guid", "source", "sentence1", "sentence2", "labels", "annotations"})
_LABEL_FIELDS = frozenset({"label", "real-label", "binary-label"})
NO_SCORE = math.nan  # label and real-label of a pair without gold (read for prediction)
NO_BINARY = -1  # its binary-label: neither 0 nor 1 (the Hugging Face convention for "no label")
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
    # False: read for prediction without `labels` (then NaN scores and binary-label NO_BINARY); never scored
    labelled: bool = True

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


def _labels(labels: Fields) -> tuple[float, float, int] | None:
    """`labels`: (label, real-label, binary-label), binary-label checked against real-label."""
    label = _score(labels, "label")
    real = _score(labels, "real-label")
    binary = labels.int("binary-label")
    if binary is not None and binary not in (0, 1):
        labels.fail(labels.at("binary-label"), f"`binary-label` must be 0 or 1, found {binary}")
    elif binary is not None and real is not None and binary != int(real >= BINARY_THRESHOLD):
        labels.log.warning(labels.at("binary-label"), f"`binary-label` {binary} disagrees with real-label "
                           f"{real} (expected real-label >= {BINARY_THRESHOLD})")
    labels.warn_unknown(_LABEL_FIELDS)
    if label is None or real is None or binary is None or not labels.ok:
        return None
    return label, real, binary


def _record(fields: Fields, purpose: ReadPurpose) -> StsRecord | None:
    guid = fields.str("guid", nonempty=True)
    source = fields.str("source")
    sentence1 = fields.str("sentence1", nonempty=True)
    sentence2 = fields.str("sentence2", nonempty=True)
    # Read for prediction, the gold (`labels`, and the annotators' scores) may be absent.
    optional = reads_for_prediction(purpose)
    labels_fields = fields.obj("labels", optional=optional)
    labels = _labels(labels_fields) if labels_fields is not None else None
    annotations_fields = fields.obj("annotations", optional=optional)
    annotations = _annotations(annotations_fields) if annotations_fields is not None else None
    fields.warn_unknown(_FIELDS)
    if not fields.ok:
        return None
    assert guid is not None and source is not None and sentence1 is not None and sentence2 is not None
    if labels is None:  # absent, read for prediction: bad labels failed the object above
        return StsRecord(guid, source, sentence1, sentence2, NO_SCORE, NO_SCORE, NO_BINARY, annotations,
                         labelled=False)
    return StsRecord(guid, source, sentence1, sentence2, *labels, annotations)


def read(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[StsRecord]:
    """Read an official KLUE-STS JSON file; every problem goes to `log` with its JSON path."""
    return read_json_objects(path, log, "STS pairs", partial(_record, purpose=purpose))


def to_json(record: StsRecord) -> dict[str, Any]:
    """The record as the official file writes it (foreign records have no `annotations`)."""
    out: dict[str, Any] = {
        "guid": record.guid, "source": record.source, "sentence1": record.sentence1,
        "sentence2": record.sentence2,
    }
    if record.labelled:
        out["labels"] = {"label": record.label, "real-label": record.real_label, "binary-label": record.binary_label}
    if record.annotations is not None:
        out["annotations"] = {"agreement": record.annotations.agreement,
                              "annotators": list(record.annotations.annotators),
                              "annotations": list(record.annotations.scores)}
    return out


def _predicted_score(fields: Fields) -> tuple[float] | None:
    """A predicted score must be a finite number; values outside 0-5 are accepted (a regressor may
    overshoot and Pearson r does not care), but flagged as a warning."""
    score = fields.number("score")
    if score is not None and not MIN_SCORE <= score <= MAX_SCORE:
        fields.warn(f"predicted score {score!r} is outside 0-5")
    return present(score)


parse_prediction = prediction_parser(StsPrediction, _predicted_score)


gold_prediction = gold_prediction_of(StsPrediction, "real_label")


def read_korsts(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[StsRecord]:
    """KorSTS TSV -> STS records. guid `korsts-<file stem>_<row>`; source `korsts/<genre>/<filename>/
    <year>/<id>` keeps the original identity; label = real-label = score, binary-label = score >= 3."""
    records = []
    stem = file_stem(path)
    rows = headed_rows(path, log, KORSTS_HEADER)
    for row, (number, (genre, filename, year, ident, score_text, sentence1, sentence2)) in enumerate(rows):
        try:
            score = float(score_text)
        except ValueError:
            log.error(f"line {number}", f"score {score_text!r} is not a number")
            continue
        if not MIN_SCORE <= score <= MAX_SCORE:
            log.error(f"line {number}", f"score {score!r} is outside the 0-5 range")
            continue
        if not sentence1.strip() or not sentence2.strip():
            log.error(f"line {number}", "empty sentence1 or sentence2")
            continue
        records.append(StsRecord(f"korsts-{stem}_{row:05d}", f"korsts/{genre}/{filename}/{year}/{ident}",
                                 sentence1, sentence2, score, score, int(score >= BINARY_THRESHOLD)))
    return records


def from_hf(dataset: Any, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[StsRecord]:
    """HF `klue/klue` sts rows (`guid, source, sentence1, sentence2, labels: {label, real-label,
    binary-label}`) -> STS records. The hub copy has no annotations; an export's `annotations` column
    (see `to_hf`) comes back as the record's, null where it had none."""
    records = []
    for index, row in hf.rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        guid, source = fields.str("guid", nonempty=True), fields.str("source")
        sentence1, sentence2 = fields.str("sentence1", nonempty=True), fields.str("sentence2", nonempty=True)
        labels = fields.obj("labels")
        values: list[float | None] = [None, None]
        binary = None
        if labels is not None:
            values = [_score(labels, key) for key in ("label", "real-label")]
            binary = labels.int("binary-label")
            if binary is not None and binary not in (0, 1):
                labels.fail(labels.at("binary-label"), f"`binary-label` must be 0 or 1, found {binary}")
        annotations = None
        if row.get("annotations") is not None:
            annotations_fields = fields.obj("annotations")
            annotations = _annotations(annotations_fields) if annotations_fields is not None else None
        record = (fields.build(StsRecord, guid, source, sentence1, sentence2, values[0], values[1], binary,
                               annotations) if None not in values and binary is not None else None)
        if record is not None:
            records.append(record)
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records


def to_hf(records: Sequence[StsRecord]) -> list[dict[str, Any]]:
    """Rows in the klue/klue sts layout, plus `annotations` (null for pairs from other sources)."""
    rows = []
    for record in records:
        row = to_json(record)
        row["annotations"] = row.get("annotations")
        rows.append(row)
    return rows


# The export's columns: the hub's (binary-label a ClassLabel negative, positive: 0 and 1 as in the
# official files), plus the annotations the hub copy leaves out.
HF_FEATURES: dict[str, Any] = {
    "guid": "string", "source": "string", "sentence1": "string", "sentence2": "string",
    "labels": {"label": "float64", "real-label": "float64", "binary-label": hf.Labels(("negative", "positive"))},
    "annotations": {"agreement": "string", "annotators": ["string"], "annotations": ["int64"]},
}
HF_LAYOUT = hf.HfLayout(HF_FEATURES, to_hf, from_hf)
