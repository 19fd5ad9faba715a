"""KLUE-NLI records and readers: the official JSON, KorNLI TSV and the Hugging Face copy.

File format (docs/tasks.md, NLI): a JSON list of `{guid, source, premise, hypothesis, gold_label, author,
label2, label3, label4, label5}`; `gold_label` is the target, `author` the writer's intended label and
`label2..label5` the four validators' labels. Each dev premise appears in exactly three pairs, one per
label, so local splits group by premise (docs/tasks.md, "Splitting without leakage").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.errors import ProblemLog
from klue.io import hf
from klue.io.fields import Fields, item_path, read_json_objects
from klue.io.formats import ReadPurpose
from klue.io.text import check_unique_guids
from klue.io.tsv import file_stem, headed_rows
from klue.tasks.kinds import NO_LABEL, one_of, reads_for_prediction

LABELS: tuple[str, ...] = ("entailment", "contradiction", "neutral")  # official order
KORNLI_HEADER = ("sentence1", "sentence2", "gold_label")
VALIDATOR_FIELDS: tuple[str, ...] = ("label2", "label3", "label4", "label5")
_FIELDS = frozenset({"guid", "source", "premise", "hypothesis", "gold_label", "author", *VALIDATOR_FIELDS})


@dataclass(frozen=True)
class NliRecord:
    """One premise-hypothesis pair with every field of the official file.

    `author` and `validator_labels` are None for pairs from other sources (KorNLI, the Hugging Face
    copy), which carry only the gold label.
    """

    guid: str
    source: str
    premise: str
    hypothesis: str
    gold_label: str
    author: str | None = None
    validator_labels: tuple[str, str, str, str] | None = None  # label2 .. label5
    # False: read for prediction without `gold_label` (then `NO_LABEL`); such a record is never scored
    labelled: bool = True

    @property
    def label(self) -> str:
        return self.gold_label


@dataclass(frozen=True)
class NliPrediction:
    guid: str
    label: str


def _label_field(fields: Fields, key: str, optional: bool = False) -> str | None:
    return one_of(fields, key, LABELS, optional=optional)


def _validators(fields: Fields, optional: bool) -> tuple[str, str, str, str] | None:
    """label2..label5: all four, or (read for prediction) none of them."""
    given = [key for key in VALIDATOR_FIELDS if fields.has(key)]
    if optional and given and len(given) != len(VALIDATOR_FIELDS):
        fields.fail(fields.location, f"{len(given)} of the {len(VALIDATOR_FIELDS)} validator labels "
                    f"({', '.join(VALIDATOR_FIELDS)}) are given: all or none")
    labels = [label for key in VALIDATOR_FIELDS if (label := _label_field(fields, key, optional)) is not None]
    return (labels[0], labels[1], labels[2], labels[3]) if len(labels) == len(VALIDATOR_FIELDS) else None


def read(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[NliRecord]:
    """Read an official KLUE-NLI JSON file; every problem goes to `log` with its JSON path. Read for
    prediction, the gold (`gold_label`, `author`, `label2..label5`) may be absent."""
    locations: list[str] = []  # of the records kept, for the duplicate-pair warnings

    def record(fields: Fields) -> NliRecord | None:
        guid = fields.str("guid", nonempty=True)
        source = fields.str("source")
        premise = fields.str("premise", nonempty=True)
        hypothesis = fields.str("hypothesis", nonempty=True)
        optional = reads_for_prediction(purpose)
        gold = _label_field(fields, "gold_label", optional)
        author = _label_field(fields, "author", optional)
        validators = _validators(fields, optional)
        fields.warn_unknown(_FIELDS)
        if not fields.ok:
            return None
        assert guid is not None and source is not None and premise is not None and hypothesis is not None
        locations.append(fields.location)
        # An absent gold is None only when optional: a bad one failed the object above.
        return NliRecord(guid, source, premise, hypothesis, gold if gold is not None else NO_LABEL, author,
                         validators, gold is not None)

    records = read_json_objects(path, log, "NLI pairs", record)
    warn_duplicate_pairs(records, log, locations)
    return records


def warn_duplicate_pairs(records: Sequence[NliRecord], log: ProblemLog,
                         locations: Sequence[str] | None = None) -> None:
    """Community-reported: some (premise, hypothesis) pairs occur twice; a warning, nothing changed.

    `locations` (one per record: a JSON path or a line) places the warning; default: the record's guid.
    """
    first: dict[tuple[str, str], str] = {}
    for i, record in enumerate(records):
        pair = (record.premise, record.hypothesis)
        if pair in first:
            where = locations[i] if locations is not None else record.guid
            log.warning(where, f"{record.guid}: duplicate (premise, hypothesis) pair, first seen in {first[pair]}")
        else:
            first[pair] = record.guid


def to_json(record: NliRecord) -> dict[str, Any]:
    """The record as the official file writes it (foreign records omit the fields they lack)."""
    out: dict[str, Any] = {"guid": record.guid, "source": record.source, "premise": record.premise,
                           "hypothesis": record.hypothesis}
    if record.labelled:
        out["gold_label"] = record.gold_label
    if record.author is not None:
        out["author"] = record.author
    if record.validator_labels is not None:
        out.update(zip(VALIDATOR_FIELDS, record.validator_labels))
    return out


def read_kornli(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[NliRecord]:
    """KorNLI TSV -> NLI records. guid `kornli-<file stem>_<row>` (0-based data row), source `kornli`
    (read alike for every purpose)."""
    records = []
    lines = []
    stem = file_stem(path)
    for row, (number, (premise, hypothesis, label)) in enumerate(headed_rows(path, log, KORNLI_HEADER)):
        if label not in LABELS:
            log.error(f"line {number}", f"unknown label {label!r}; labels are {', '.join(LABELS)}")
            continue
        if not premise.strip() or not hypothesis.strip():
            log.error(f"line {number}", "empty sentence1 or sentence2")
            continue
        records.append(NliRecord(f"kornli-{stem}_{row:05d}", "kornli", premise, hypothesis, label))
        lines.append(f"line {number}")
    warn_duplicate_pairs(records, log, lines)
    return records


def _hf_label(row: dict[str, Any], key: str, names: list[str] | None, fields: Fields) -> str | None:
    """An optional label column (absent or null in the hub copy), mapped by name."""
    if row.get(key) is None:
        return None
    label = hf.by_name(row[key], names, LABELS, fields.at(key), fields.log)
    if label is None:
        fields.ok = False
    return label


def from_hf(dataset: Any, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[NliRecord]:
    """HF `klue/klue` nli rows (`guid, source, premise, hypothesis, label` with label names
    entailment, neutral, contradiction) -> NLI records; an export's `author` and `label2..label5`
    columns (see `to_hf`) come back as the record's author and validator labels."""
    names = {key: hf.label_names(dataset, key) for key in ("label", "author", *VALIDATOR_FIELDS)}
    records = []
    for index, row in hf.rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        guid, source = fields.str("guid", nonempty=True), fields.str("source")
        premise, hypothesis = fields.str("premise", nonempty=True), fields.str("hypothesis", nonempty=True)
        label = hf.by_name(row.get("label"), names["label"], LABELS, fields.at("label"), log)
        author = _hf_label(row, "author", names["author"], fields)
        validators = [_hf_label(row, key, names[key], fields) for key in VALIDATOR_FIELDS]
        given = [v for v in validators if v is not None]
        if given and len(given) != len(VALIDATOR_FIELDS):
            fields.fail(fields.location, f"{len(given)} of the {len(VALIDATOR_FIELDS)} validator labels "
                        f"({', '.join(VALIDATOR_FIELDS)}) are set: all or none")
        record = (fields.build(NliRecord, guid, source, premise, hypothesis, label, author,
                               tuple(given) if given else None) if label is not None else None)
        if record is not None:
            records.append(record)
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    warn_duplicate_pairs(records, log)
    return records


def to_hf(records: Sequence[NliRecord]) -> list[dict[str, Any]]:
    """Rows in the klue/klue nli layout, plus `author` and `label2..label5` (null where a record has none)."""
    rows = []
    for record in records:
        validators = record.validator_labels or (None,) * len(VALIDATOR_FIELDS)
        rows.append({"guid": record.guid, "source": record.source, "premise": record.premise,
                     "hypothesis": record.hypothesis, "label": record.gold_label, "author": record.author,
                     **dict(zip(VALIDATOR_FIELDS, validators))})
    return rows


# The export's columns: the hub's, with the label columns in the OFFICIAL order (the hub orders them
# entailment, neutral, contradiction; readers map by name either way).
HF_FEATURES: dict[str, Any] = {
    "guid": "string", "source": "string", "premise": "string", "hypothesis": "string",
    "label": hf.Labels(LABELS), "author": hf.Labels(LABELS), **{key: hf.Labels(LABELS) for key in VALIDATOR_FIELDS},
}
HF_LAYOUT = hf.HfLayout(HF_FEATURES, to_hf, from_hf)
