"""KLUE-YNAT records and readers: the official JSON, the `ynat-resplit` files and the Hugging Face copy.

File format (docs/tasks.md, YNAT): a JSON list of `{guid, title, predefined_news_category, label,
annotations: {annotators, annotations: {first-scope, second-scope, third-scope}}, url, date}`; gold is
`label`. Other tools order the labels differently (the Hugging Face copy: IT과학, 경제, 사회, 생활문화, 세계,
스포츠, 정치), so labels are exchanged by name, never by index.
"""

from __future__ import annotations

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
from klue.tasks.kinds import NO_LABEL, one_of, reads_for_prediction

LABELS: tuple[str, ...] = ("정치", "경제", "사회", "생활문화", "세계", "IT과학", "스포츠")  # official order
_LABEL_SET = frozenset(LABELS)  # annotations hold these and NO_SCOPE
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
    # False: read for prediction without `label` (then `NO_LABEL`); such a record is never scored
    labelled: bool = True


@dataclass(frozen=True)
class YnatPrediction:
    guid: str
    label: str


CATEGORY = ("category", "categories")  # how messages name the labels


def label_field(fields: Fields, key: str, optional: bool = False) -> str | None:
    return one_of(fields, key, LABELS, CATEGORY, optional=optional)


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


def _record(fields: Fields, purpose: ReadPurpose) -> YnatRecord | None:
    guid = fields.str("guid", nonempty=True)
    title = fields.str("title", nonempty=True)
    category = fields.str("predefined_news_category")
    # Read for prediction, the gold (`label`, and the annotators' choices) may be absent.
    optional = reads_for_prediction(purpose)
    label = label_field(fields, "label", optional)
    annotation_fields = fields.obj("annotations", optional=optional)
    annotations = _annotations(annotation_fields) if annotation_fields is not None else None
    url = fields.str("url")
    date = fields.str("date")
    fields.warn_unknown(_FIELDS)
    if not fields.ok:
        return None
    assert guid is not None and title is not None
    labelled = label is not None  # absent only when optional: a bad label failed the object above
    return YnatRecord(guid, title, label if label is not None else NO_LABEL, category, annotations, url, date,
                      labelled)


def read(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[YnatRecord]:
    """Read an official YNAT JSON file; every problem goes to `log` with its JSON path."""
    return read_json_objects(path, log, "YNAT headlines", partial(_record, purpose=purpose))


def to_json(record: YnatRecord) -> dict[str, Any]:
    """The record as the official file writes it (fields a foreign record lacks are left out)."""
    out: dict[str, Any] = {"guid": record.guid, "title": record.title}
    if record.predefined_news_category is not None:
        out["predefined_news_category"] = record.predefined_news_category
    if record.labelled:
        out["label"] = record.label
    if record.annotations is not None:
        out["annotations"] = {"annotators": list(record.annotations.annotators),
                              "annotations": {k: list(v) for k, v in record.annotations.scopes}}
    if record.url is not None:
        out["url"] = record.url
    if record.date is not None:
        out["date"] = record.date
    return out


def _resplit_record(fields: Fields) -> YnatRecord | None:
    guid = fields.str("guid", nonempty=True)
    title = fields.str("title", nonempty=True)
    label = label_field(fields, "label")
    fields.warn_unknown({"guid", "title", "label"})
    if fields.ok and guid is not None and title is not None and label is not None:
        return YnatRecord(guid, title, label)
    return None


def read_resplit(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[YnatRecord]:
    """A `ynat-resplit` file (`[{guid, title, label}]`) -> YNAT records without the other fields (read alike
    for every purpose)."""
    return read_json_objects(path, log, "YNAT titles", _resplit_record)


def _hf_annotations(fields: Fields) -> YnatAnnotations | None:
    """An export's `annotations` column: `{annotators, scopes: [{scope, choices}]}` (the official object
    keyed by scope, as a list so that every file's scopes and their order come back as they were)."""
    annotators = fields.str_list("annotators")
    scopes: list[tuple[str, tuple[str, ...]]] = []
    for item in fields.items("scopes") or []:
        name, choices = item.str("scope", nonempty=True), item.str_list("choices")
        unknown = [c for c in choices or () if c not in _LABEL_SET and c != NO_SCOPE]
        if unknown:
            item.fail(item.at("choices"), f"unknown categories {unknown} (allowed: the 7 categories and {NO_SCOPE!r})")
        if name is not None and choices is not None:
            scopes.append((name, choices))
    if not fields.ok or annotators is None:
        return None
    return YnatAnnotations(annotators, tuple(scopes))


def from_hf(dataset: Any, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[YnatRecord]:
    """HF `klue/klue` ynat rows (`guid, title, label, url, date`; label names in the order IT과학, 경제,
    사회, 생활문화, 세계, 스포츠, 정치) -> YNAT records, labels mapped by name; an export's
    `predefined_news_category` and `annotations` columns (see `to_hf`) come back too."""
    names = hf.label_names(dataset, "label")
    records = []
    for index, row in hf.rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        guid, title = fields.str("guid", nonempty=True), fields.str("title", nonempty=True)
        url, date = hf.nullable_str(fields, "url"), hf.nullable_str(fields, "date")
        category = hf.nullable_str(fields, "predefined_news_category")
        label = hf.by_name(row.get("label"), names, LABELS, fields.at("label"), log)
        annotations = None
        if row.get("annotations") is not None:
            annotation_fields = fields.obj("annotations")
            annotations = _hf_annotations(annotation_fields) if annotation_fields is not None else None
        record = (fields.build(YnatRecord, guid, title, label, category, annotations, url=url, date=date)
                  if label is not None else None)
        if record is not None:
            records.append(record)
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records


def to_hf(records: Sequence[YnatRecord]) -> list[dict[str, Any]]:
    """Rows in the klue/klue ynat layout, plus `predefined_news_category` and `annotations` (null where a
    record has none)."""
    rows = []
    for r in records:
        annotations = None
        if r.annotations is not None:
            annotations = {"annotators": list(r.annotations.annotators),
                           "scopes": [{"scope": k, "choices": list(v)} for k, v in r.annotations.scopes]}
        rows.append({"guid": r.guid, "title": r.title, "label": r.label, "url": r.url, "date": r.date,
                     "predefined_news_category": r.predefined_news_category, "annotations": annotations})
    return rows


# The export's columns: the hub's, with `label` in the OFFICIAL order (readers map by name either way),
# plus the official fields the hub copy leaves out.
HF_FEATURES: dict[str, Any] = {
    "guid": "string", "title": "string", "label": hf.Labels(LABELS), "url": "string", "date": "string",
    "predefined_news_category": "string",
    "annotations": {"annotators": ["string"], "scopes": [{"scope": "string", "choices": ["string"]}]},
}
HF_LAYOUT = hf.HfLayout(HF_FEATURES, to_hf, from_hf)
