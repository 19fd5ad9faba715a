"""KLUE-NLI: natural language inference (entailment / contradiction / neutral), scored by accuracy.

File format (SPEC section 1): a JSON list of `{guid, source, premise, hypothesis, gold_label, author,
label2, label3, label4, label5}`; `gold_label` is the target, `author` the writer's intended label and
`label2..label5` the four validators' labels. Each dev premise appears in exactly three pairs, one per
label, so local splits group by premise (SPEC "Splitting without leakage").
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

LABELS: tuple[str, ...] = ("entailment", "contradiction", "neutral")  # official order
_LABEL_SET = frozenset(LABELS)
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

    @property
    def label(self) -> str:
        return self.gold_label


@dataclass(frozen=True)
class NliPrediction:
    guid: str
    label: str


def _label_field(fields: Fields, key: str) -> str | None:
    value = fields.str(key)
    if value is not None and value not in _LABEL_SET:
        fields.fail(fields.at(key), f"unknown label {value!r}; labels are {', '.join(LABELS)}")
        return None
    return value


def read(path: Path, log: ProblemLog) -> list[NliRecord]:
    """Read an official KLUE-NLI JSON file; every problem goes to `log` with its JSON path."""
    items = load_json_list(path, log, "NLI pairs")
    if items is None:
        return []
    records: list[NliRecord] = []
    locations: list[str] = []
    for index, item in enumerate(items):
        fields = Fields(item, item_path("$", index), log)
        guid = fields.str("guid", nonempty=True)
        source = fields.str("source")
        premise = fields.str("premise", nonempty=True)
        hypothesis = fields.str("hypothesis", nonempty=True)
        gold = _label_field(fields, "gold_label")
        author = _label_field(fields, "author")
        validators = tuple(_label_field(fields, key) for key in VALIDATOR_FIELDS)
        fields.warn_unknown(_FIELDS)
        if not fields.ok:
            continue
        assert guid is not None and source is not None and premise is not None and hypothesis is not None
        assert gold is not None and author is not None
        records.append(NliRecord(guid, source, premise, hypothesis, gold, author,
                                 validators))  # type: ignore[arg-type]
        locations.append(fields.location)
    check_unique_guids(guid_locations(items), log)
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
                           "hypothesis": record.hypothesis, "gold_label": record.gold_label}
    if record.author is not None:
        out["author"] = record.author
    if record.validator_labels is not None:
        out.update(zip(VALIDATOR_FIELDS, record.validator_labels))
    return out


def parse_prediction(obj: Mapping[str, Any], log: ProblemLog, location: str) -> NliPrediction | None:
    fields = prediction_fields(obj, log, location)
    if fields is None:
        return None
    label = _label_field(fields, "label")
    if not fields.ok or label is None:
        return None
    return NliPrediction(obj["guid"], label)


def prediction_to_json(prediction: NliPrediction) -> dict[str, Any]:
    return {"guid": prediction.guid, "label": prediction.label}


def gold_prediction(record: NliRecord) -> NliPrediction:
    return NliPrediction(record.guid, record.gold_label)


def evaluate(golds: Sequence[NliRecord], preds: Sequence[NliPrediction], mode: MetricMode) -> MetricReport:
    from klue.metrics import nli as nli_metric

    check_aligned("nli", [g.guid for g in golds], [p.guid for p in preds])
    return nli_metric.compute([g.gold_label for g in golds], [p.label for p in preds], LABELS, mode=mode)


def _read_kornli(path: Path, log: ProblemLog) -> list[NliRecord]:
    from klue.data import foreign

    return foreign.read_kornli(path, log)


DEV_FILE = "klue-nli-v1.1/klue-nli-v1.1_dev.json"

DEV_80_20_KORNLI = HashSplitProtocol(
    name="local:dev-80-20+kornli",
    split=FileRef("klue", DEV_FILE),
    reader=read,
    group_key=lambda r: r.premise,
    group="premise",
    what="the official KLUE NLI v1.1 dev file",
    unit="pairs",
    extra_train=(ExtraTrain(FileRef("extra", "korean/kornli/xnli.dev.ko.tsv"), _read_kornli,
                            "KorNLI's XNLI dev set",
                            "machine-translated, not KLUE"),),
)


TASK: Task[NliRecord, NliPrediction] = register(Task(
    name="nli",
    aliases=("klue-nli", "nli-v1.1", "klue-nli-v1.1"),
    title="Natural Language Inference",
    order=3,
    version="1",
    files=(
        OfficialFile("train", "klue-nli-v1.1/klue-nli-v1.1_train.json", "a7903d15f09a3663d8f1d78e68d8d6c10dbd8618"),
        OfficialFile("dev", DEV_FILE, "db052b2459c68d1ec57dd1573bfe90a9bb3f8157", 1498298),
    ),
    sizes={"train": 24998, "dev": 3000},
    labels=LABELS,
    metrics=("accuracy",),
    main_metrics=("accuracy",),
    record_type=NliRecord,
    prediction_type=NliPrediction,
    read=read,
    guid=lambda r: r.guid,
    group_key=lambda r: r.premise,
    gold_prediction=gold_prediction,
    parse_prediction=parse_prediction,
    prediction_to_json=prediction_to_json,
    evaluate=evaluate,
    v1_archive=ArchiveFile(
        "https://aistages-prod-server-public.s3.amazonaws.com/app/Competitions/000068/data/klue-nli-v1.tar.gz",
        "388be2033ef712072201903795a35b4f86826ee3ed3b62dc0c98e1721baa8850", 1257374),
    other_readers={"kornli": _read_kornli},
    protocols={DEV_80_20_KORNLI.name: DEV_80_20_KORNLI},
))
