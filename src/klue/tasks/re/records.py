"""KLUE-RE records and readers: the official JSON (with its relation list) and the Hugging Face copy.

File format (docs/tasks.md, RE): a JSON list of `{guid, sentence, subject_entity: {word, start_idx, end_idx,
type}, object_entity: {...}, label, source}`; offsets are inclusive character indices, so
`sentence[start_idx:end_idx + 1] == word`. `relation_list.json` (`{"relations": [30 names]}`, index 0
`no_relation`) fixes the order of the predicted probabilities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.errors import ProblemLog
from klue.io import hf
from klue.io.fields import Fields, describe, item_path, read_json_objects
from klue.io.locate import beside
from klue.io.text import check_unique_guids, load_json
from klue.metrics.re import NO_RELATION
from klue.tasks.kinds import prediction_parser, present

RELATIONS: tuple[str, ...] = (
    NO_RELATION, "org:dissolved", "org:founded", "org:place_of_headquarters", "org:alternate_names",
    "org:member_of", "org:members", "org:political/religious_affiliation", "org:product", "org:founded_by",
    "org:top_members/employees", "org:number_of_employees/members", "per:date_of_birth", "per:date_of_death",
    "per:place_of_birth", "per:place_of_death", "per:place_of_residence", "per:origin", "per:employee_of",
    "per:schools_attended", "per:alternate_names", "per:parents", "per:children", "per:siblings", "per:spouse",
    "per:other_family", "per:colleagues", "per:product", "per:religion", "per:title",
)  # official order: relation_list.json
RELATION_LIST_FILE = "relation_list.json"
ENTITY_TYPES: tuple[str, ...] = ("PER", "ORG", "LOC", "DAT", "POH", "NOH")  # POH other proper noun, NOH number
_FIELDS = frozenset({"guid", "sentence", "subject_entity", "object_entity", "label", "source"})
_ENTITY_FIELDS = frozenset({"word", "start_idx", "end_idx", "type"})


@dataclass(frozen=True)
class Entity:
    """An entity mention; `start_idx` and `end_idx` are inclusive character offsets into the sentence."""

    word: str
    start_idx: int
    end_idx: int
    type: str


@dataclass(frozen=True)
class ReRecord:
    """One sentence with a subject and an object entity and their relation: every official field."""

    guid: str
    sentence: str
    subject_entity: Entity
    object_entity: Entity
    label: str
    source: str


@dataclass(frozen=True)
class RePrediction:
    guid: str
    label: str
    probs: tuple[float, ...]  # one per relation, in RELATIONS order


def entity_from(fields: Fields, sentence: str | None) -> Entity | None:
    """An entity object, its offsets checked against the sentence."""
    word = fields.str("word", nonempty=True)
    start = fields.int("start_idx")
    end = fields.int("end_idx")
    kind = fields.str("type")
    fields.warn_unknown(_ENTITY_FIELDS)
    if kind is not None and kind not in ENTITY_TYPES:
        fields.log.warning(fields.at("type"), f"unusual entity type {kind!r} (the official types are "
                           f"{', '.join(ENTITY_TYPES)})")
    if word is None or start is None or end is None or kind is None:
        return None
    if sentence is not None:
        if not 0 <= start <= end < len(sentence):
            fields.fail(fields.location, f"offsets [{start}, {end}] are outside the sentence (length "
                        f"{len(sentence)}) or reversed")
            return None
        if sentence[start:end + 1] != word:
            fields.fail(fields.location, f"sentence[{start}:{end + 1}] is {sentence[start:end + 1]!r}, not the "
                        f"entity word {word!r}")
            return None
    return Entity(word, start, end, kind)


def read_relation_list(path: Path, log: ProblemLog) -> tuple[str, ...] | None:
    """`relation_list.json`: `{"relations": [...]}`, unique names, `no_relation` first."""
    data = load_json(path, log)
    if data is None:
        return None
    fields = Fields(data, "$", log)
    names = fields.str_list("relations")
    if names is None:
        return None
    if not names or names[0] != NO_RELATION:
        log.error(location="$.relations[0]", message=f"the first relation must be {NO_RELATION!r}")
        return None
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        log.error(location="$.relations", message=f"relations listed twice: {', '.join(duplicates)}")
        return None
    if names != RELATIONS:
        log.warning(location="$.relations", message=f"this relation list differs from the official one ({len(names)} names); "
                    "labels are checked against it, probabilities are still read in the official order")
    return names


def relations_for(path: Path, log: ProblemLog) -> tuple[str, ...]:
    """The relation list next to a data file when present, else the official one."""
    found = beside(path, RELATION_LIST_FILE)
    if found is None:
        return RELATIONS
    relation_log = ProblemLog(str(found))
    names = read_relation_list(found, relation_log)
    log.problems.extend(relation_log.problems)
    return names if names is not None else RELATIONS


def read(path: Path, log: ProblemLog) -> list[ReRecord]:
    """Read an official KLUE-RE JSON file (labels checked against the relation list beside it, else the
    official list); every problem goes to `log` with its JSON path."""
    relations: list[frozenset[str]] = []  # read at the first object, once the file is known to be a list

    def record(fields: Fields) -> ReRecord | None:
        if not relations:
            relations.append(frozenset(relations_for(path, log)))
        guid = fields.str("guid", nonempty=True)
        sentence = fields.str("sentence", nonempty=True)
        subject_fields = fields.obj("subject_entity")
        object_fields = fields.obj("object_entity")
        subject = entity_from(subject_fields, sentence) if subject_fields is not None else None
        obj = entity_from(object_fields, sentence) if object_fields is not None else None
        label = fields.str("label")
        if label is not None and label not in relations[0]:
            fields.fail(fields.at("label"), f"unknown relation {label!r} (not in {RELATION_LIST_FILE})")
        source = fields.str("source")
        fields.warn_unknown(_FIELDS)
        if not fields.ok:
            return None
        assert guid is not None and sentence is not None and subject is not None and obj is not None
        assert label is not None and source is not None
        return ReRecord(guid, sentence, subject, obj, label, source)

    return read_json_objects(path, log, "RE examples", record)


def _entity_json(entity: Entity) -> dict[str, Any]:
    return {"word": entity.word, "start_idx": entity.start_idx, "end_idx": entity.end_idx, "type": entity.type}


def to_json(record: ReRecord) -> dict[str, Any]:
    return {"guid": record.guid, "sentence": record.sentence, "subject_entity": _entity_json(record.subject_entity),
            "object_entity": _entity_json(record.object_entity), "label": record.label, "source": record.source}


def _predicted_relation(fields: Fields) -> tuple[str, tuple[float, ...]] | None:
    """`label` a relation name; `probs` 30 finite numbers in relation_list.json order."""
    label = fields.str("label")
    if label is not None and label not in RELATIONS:
        fields.fail(fields.location, f"unknown relation {label!r}")
    probs = fields.list("probs")
    if probs is not None:
        bad = [p for p in probs if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p)]
        if bad:
            fields.fail(fields.location, f"`probs` must hold finite numbers only, found {describe(bad[0])}")
        elif len(probs) != len(RELATIONS):
            fields.fail(fields.location, f"`probs` must hold {len(RELATIONS)} numbers (one per relation, in "
                        f"{RELATION_LIST_FILE} order), found {len(probs)}")
    if not fields.ok or probs is None:
        return None
    return present(label, tuple(float(p) for p in probs))


parse_prediction = prediction_parser(RePrediction, _predicted_relation)


def gold_prediction(record: ReRecord) -> RePrediction:
    return RePrediction(record.guid, record.label, tuple(float(r == record.label) for r in RELATIONS))


def _entity(fields: Fields | None, sentence: str | None) -> Entity | None:
    if fields is None:
        return None
    return entity_from(fields, sentence)


def from_hf(dataset: Any, log: ProblemLog) -> list[ReRecord]:
    """HF `klue/klue` re rows (`guid, sentence, subject_entity, object_entity, label, source`) -> RE
    records, labels mapped by name onto the official relation list."""
    names = hf.label_names(dataset, "label")
    records = []
    for index, row in hf.rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        guid, sentence = fields.str("guid", nonempty=True), fields.str("sentence", nonempty=True)
        source = fields.str("source")
        subject = _entity(fields.obj("subject_entity"), sentence)
        obj = _entity(fields.obj("object_entity"), sentence)
        label = hf.by_name(row.get("label"), names, RELATIONS, fields.at("label"), log)
        if fields.ok and label is not None and subject is not None and obj is not None:
            records.append(ReRecord(guid, sentence, subject, obj, label, source))  # type: ignore[arg-type]
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records
