"""KLUE-YNAT: topic classification of news headlines into 7 categories, scored by macro F1.

File format (SPEC section 1): a JSON list of `{guid, title, predefined_news_category, label,
annotations: {annotators, annotations: {first-scope, second-scope, third-scope}}, url, date}`; gold is
`label`. Other tools order the labels differently (the Hugging Face copy: IT과학, 경제, 사회, 생활문화, 세계,
스포츠, 정치), so labels are exchanged by name, never by index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.data.formats import check_unique_guids
from klue.data.protocols import FileProtocol, FileRef
from klue.errors import ProblemLog
from klue.metrics.report import MetricMode, MetricReport
from klue.registry import register
from klue.tasks._common import (
    Fields,
    check_aligned,
    guid_locations,
    item_path,
    load_json_list,
    prediction_fields,
)
from klue.tasks.base import ArchiveFile, OfficialFile, Task

LABELS: tuple[str, ...] = ("정치", "경제", "사회", "생활문화", "세계", "IT과학", "스포츠")  # official order
_LABEL_SET = frozenset(LABELS)
NO_SCOPE = "해당없음"  # "not applicable": an annotator's empty second/third choice
_FIELDS = frozenset({"guid", "title", "predefined_news_category", "label", "annotations", "url", "date"})


@dataclass(frozen=True)
class YnatAnnotations:
    """Who annotated and each scope's choices in annotator order, scopes in file order
    (`first-scope`, `second-scope`, `third-scope`; synthetic files may have fewer)."""

    annotators: tuple[str, ...]
    scopes: tuple[tuple[str, tuple[str, ...]], ...]

    def scope(self, name: str) -> tuple[str, ...] | None:
        return next((choices for key, choices in self.scopes if key == name), None)


@dataclass(frozen=True)
class YnatRecord:
    """One headline with every field of the official file; the fields after `label` are None for
    titles from other sources (the ynat-resplit files, the Hugging Face copy)."""

    guid: str
    title: str
    label: str
    predefined_news_category: str | None = None  # the publisher's section (not the gold label)
    annotations: YnatAnnotations | None = None
    url: str | None = None
    date: str | None = None


@dataclass(frozen=True)
class YnatPrediction:
    guid: str
    label: str


def label_field(fields: Fields, key: str, allowed: frozenset[str] = _LABEL_SET) -> str | None:
    value = fields.str(key)
    if value is not None and value not in allowed:
        fields.fail(fields.at(key), f"unknown category {value!r}; categories are {', '.join(LABELS)}")
        return None
    return value


def _annotations(fields: Fields) -> YnatAnnotations | None:
    annotators = fields.str_list("annotators")
    inner = fields.obj("annotations")
    scopes: list[tuple[str, tuple[str, ...]]] = []
    if inner is not None:
        for key in inner.data:
            choices = inner.str_list(key)
            if choices is None:
                continue
            unknown = [c for c in choices if c not in _LABEL_SET and c != NO_SCOPE]
            if unknown:
                inner.fail(inner.at(key), f"unknown categories {unknown} (allowed: the 7 categories and "
                           f"{NO_SCOPE!r})")
            scopes.append((key, choices))
    fields.warn_unknown({"annotators", "annotations"})
    if not fields.ok or annotators is None or inner is None:
        return None
    return YnatAnnotations(annotators, tuple(scopes))


def read(path: Path, log: ProblemLog) -> list[YnatRecord]:
    """Read an official YNAT JSON file; every problem goes to `log` with its JSON path."""
    items = load_json_list(path, log, "YNAT headlines")
    if items is None:
        return []
    records: list[YnatRecord] = []
    for index, item in enumerate(items):
        fields = Fields(item, item_path("$", index), log)
        guid = fields.str("guid", nonempty=True)
        title = fields.str("title", nonempty=True)
        category = fields.str("predefined_news_category")
        label = label_field(fields, "label")
        annotation_fields = fields.obj("annotations")
        annotations = _annotations(annotation_fields) if annotation_fields is not None else None
        url = fields.str("url")
        date = fields.str("date")
        fields.warn_unknown(_FIELDS)
        if not fields.ok:
            continue
        assert guid is not None and title is not None and label is not None
        records.append(YnatRecord(guid, title, label, category, annotations, url, date))
    check_unique_guids(guid_locations(items), log)
    return records


def to_json(record: YnatRecord) -> dict[str, Any]:
    """The record as the official file writes it (fields a foreign record lacks are left out)."""
    out: dict[str, Any] = {"guid": record.guid, "title": record.title}
    if record.predefined_news_category is not None:
        out["predefined_news_category"] = record.predefined_news_category
    out["label"] = record.label
    if record.annotations is not None:
        out["annotations"] = {"annotators": list(record.annotations.annotators),
                              "annotations": {k: list(v) for k, v in record.annotations.scopes}}
    if record.url is not None:
        out["url"] = record.url
    if record.date is not None:
        out["date"] = record.date
    return out


def parse_prediction(obj: Mapping[str, Any], log: ProblemLog, location: str) -> YnatPrediction | None:
    """`label` must be a category NAME; an index is refused (tools disagree on the order)."""
    fields = prediction_fields(obj, log, location)
    if fields is None:
        return None
    if isinstance(obj.get("label"), int) and not isinstance(obj.get("label"), bool):
        fields.fail(location, f"`label` must be a category name, not an index ({obj['label']}); "
                    f"categories are {', '.join(LABELS)}")
        return None
    label = label_field(fields, "label")
    if not fields.ok or label is None:
        return None
    return YnatPrediction(obj["guid"], label)


def prediction_to_json(prediction: YnatPrediction) -> dict[str, Any]:
    return {"guid": prediction.guid, "label": prediction.label}


def gold_prediction(record: YnatRecord) -> YnatPrediction:
    return YnatPrediction(record.guid, record.label)


def evaluate(golds: Sequence[YnatRecord], preds: Sequence[YnatPrediction], mode: MetricMode) -> MetricReport:
    from klue.metrics import ynat as ynat_metric

    check_aligned("ynat", [g.guid for g in golds], [p.guid for p in preds])
    return ynat_metric.compute([g.label for g in golds], [p.label for p in preds], LABELS, mode=mode)


def _read_resplit(path: Path, log: ProblemLog) -> list[YnatRecord]:
    from klue.data import foreign

    return foreign.read_ynat_resplit(path, log)


YNAT_RESPLIT = FileProtocol(
    name="local:ynat-resplit",
    train=FileRef("extra", "klue-derived/ynat-resplit/ynat-resplit_train.json"),
    eval=FileRef("extra", "klue-derived/ynat-resplit/ynat-resplit_test.json"),
    reader=_read_resplit,
    description="local protocol, not official: YNAT titles and labels from a public re-split of the "
                "official train+dev sets, split again 80/20 by title hash; trained on ynat-resplit_train "
                "(36,576 titles) and evaluated on ynat-resplit_test (9,078); not comparable with the "
                "official dev score",
)


TASK: Task[YnatRecord, YnatPrediction] = register(Task(
    name="ynat",
    aliases=("klue-ynat", "ynat-v1.1", "klue-ynat-v1.1", "klue-tc"),
    title="Topic Classification",
    order=1,
    version="1",
    files=(
        OfficialFile("train", "ynat-v1.1/ynat-v1.1_train.json", "e74e912a66720294bd6fe70e69b0cd131a0a10d7"),
        OfficialFile("dev", "ynat-v1.1/ynat-v1.1_dev.json", "f4fb92cc5d967b586ea5172c3da8c379ba31caf9"),
    ),
    sizes={"train": 45678, "dev": 9107},
    labels=LABELS,
    metrics=("macro_f1",),
    main_metrics=("macro_f1",),
    record_type=YnatRecord,
    prediction_type=YnatPrediction,
    read=read,
    guid=lambda r: r.guid,
    group_key=lambda r: r.guid,
    gold_prediction=gold_prediction,
    parse_prediction=parse_prediction,
    prediction_to_json=prediction_to_json,
    evaluate=evaluate,
    v1_archive=ArchiveFile(
        "https://aistages-prod-server-public.s3.amazonaws.com/app/Competitions/000066/data/ynat-v1.tar.gz",
        "820a4d1d6d1fd83e2a421f856965d3cfc5c93627935ce8c5b27468c6113fc482", 4932555),
    other_readers={"ynat-resplit": _read_resplit},
    protocols={YNAT_RESPLIT.name: YNAT_RESPLIT},
    default_local_protocol="local:ynat-resplit",
))
