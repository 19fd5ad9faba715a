"""KLUE-RE records and readers: the official JSON (with its relation list) and the Hugging Face copy.

File format (docs/tasks.md, RE): a JSON list of `{guid, sentence, subject_entity: {word, start_idx, end_idx,
type}, object_entity: {...}, label, source}`; offsets are inclusive character indices, so
`sentence[start_idx:end_idx + 1] == word`. `relation_list.json` (`{"relations": [30 names]}`, index 0
`no_relation`) fixes the order of the predicted probabilities.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.errors import ProblemLog
from klue.io import hf
from klue.io.fields import Fields, describe, item_path, read_json_objects
from klue.io.formats import ReadPurpose
from klue.io.locate import beside
from klue.io.text import check_unique_guids, load_json
from klue.metrics.re import NO_RELATION
from klue.tasks.kinds import (
    NO_LABEL,
    prediction_parser,
    present,
    reads_for_prediction,
    reads_for_scoring,
    refuse_unlabelled,
)

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
    # False: read for prediction without `label` (then `NO_LABEL`); such a record is never scored
    labelled: bool = True


@dataclass(frozen=True)
class RePrediction:
    guid: str
    label: str
    probs: tuple[float, ...]  # one per relation, in RELATIONS order


def offset_problem(sentence: str, start: int, end: int, word: str) -> str | None:
    """What is wrong with an entity's inclusive offsets into the sentence, or None."""
    if not 0 <= start <= end < len(sentence):
        return f"offsets [{start}, {end}] are outside the sentence (length {len(sentence)}) or reversed"
    if sentence[start:end + 1] != word:
        return f"sentence[{start}:{end + 1}] is {sentence[start:end + 1]!r}, not the entity word {word!r}"
    return None


def entity_from(fields: Fields, sentence: str | None, purpose: ReadPurpose) -> Entity | None:
    """An entity object, its offsets checked against the sentence: an error, except in a gold file read for
    scoring (`klue.tasks.kinds.reads_for_scoring`), where the metric compares relation labels only and
    never reads an offset, so the entity is kept with a warning (`klue data validate` keeps the error)."""
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
    problem = offset_problem(sentence, start, end, word) if sentence is not None else None
    if problem is not None:
        if not reads_for_scoring(purpose):
            fields.fail(fields.location, problem)
            return None
        # The warning names the place (the JSON path holds the record's index) so the file can be fixed.
        fields.log.warning(fields.location, f"{problem}; kept (the metric compares relation labels only)")
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


def read(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[ReRecord]:
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
        subject = entity_from(subject_fields, sentence, purpose) if subject_fields is not None else None
        obj = entity_from(object_fields, sentence, purpose) if object_fields is not None else None
        label = fields.str("label", optional=reads_for_prediction(purpose))  # absent: read for prediction
        if label is not None and label not in relations[0]:
            fields.fail(fields.at("label"), f"unknown relation {label!r} (not in {RELATION_LIST_FILE})")
        source = fields.str("source")
        fields.warn_unknown(_FIELDS)
        if not fields.ok:
            return None
        assert guid is not None and sentence is not None and subject is not None and obj is not None
        assert source is not None
        return ReRecord(guid, sentence, subject, obj, label if label is not None else NO_LABEL, source,
                        label is not None)

    return read_json_objects(path, log, "RE examples", record)


def _entity_json(entity: Entity) -> dict[str, Any]:
    return {"word": entity.word, "start_idx": entity.start_idx, "end_idx": entity.end_idx, "type": entity.type}


def to_json(record: ReRecord) -> dict[str, Any]:
    """The record as the official file writes it (a record without gold has no `label`)."""
    out: dict[str, Any] = {"guid": record.guid, "sentence": record.sentence,
                           "subject_entity": _entity_json(record.subject_entity),
                           "object_entity": _entity_json(record.object_entity)}
    if record.labelled:
        out["label"] = record.label
    out["source"] = record.source
    return out


def _probability_problem(probs: list[Any]) -> str | None:
    """What makes `probs` impossible as one probability per relation, or None: the checks the gold reader
    would make of such numbers (finite, in 0..1, one per relation). A sum other than 1 is only warned
    about, for the whole file (`klue.predictions`), since AUPRC ranks the numbers and never adds them."""
    bad = [p for p in probs if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p)]
    if bad:
        return f"`probs` must hold finite numbers only, found {describe(bad[0])}"
    if len(probs) != len(RELATIONS):
        return (f"`probs` must hold {len(RELATIONS)} numbers (one per relation, in {RELATION_LIST_FILE} order), "
                f"found {len(probs)}")
    outside = next((i for i, p in enumerate(probs) if not 0.0 <= p <= 1.0), None)
    if outside is not None:
        return (f"`probs` are probabilities between 0 and 1, found {probs[outside]!r} at index {outside} "
                f"({RELATIONS[outside]})")
    return None


def _predicted_relation(fields: Fields) -> tuple[str, tuple[float, ...]] | None:
    """`label` a relation name; `probs` 30 probabilities in relation_list.json order."""
    label = fields.str("label")
    if label is not None and label not in RELATIONS:
        fields.fail(fields.location, f"unknown relation {label!r}")
    probs = fields.list("probs")
    problem = _probability_problem(probs) if probs is not None else None
    if problem is not None:
        fields.fail(fields.location, problem)
    if not fields.ok or probs is None:
        return None
    return present(label, tuple(float(p) for p in probs))


parse_prediction = prediction_parser(RePrediction, _predicted_relation)


def gold_prediction(record: ReRecord) -> RePrediction:
    refuse_unlabelled(record)
    return RePrediction(record.guid, record.label, tuple(float(r == record.label) for r in RELATIONS))


def _entity(fields: Fields | None, sentence: str | None, purpose: ReadPurpose) -> Entity | None:
    if fields is None:
        return None
    return entity_from(fields, sentence, purpose)


def from_hf(dataset: Any, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[ReRecord]:
    """HF `klue/klue` re rows (`guid, sentence, subject_entity, object_entity, label, source`) -> RE
    records, labels mapped by name onto the official relation list."""
    names = hf.label_names(dataset, "label")
    records = []
    for index, row in hf.rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        guid, sentence = fields.str("guid", nonempty=True), fields.str("sentence", nonempty=True)
        source = fields.str("source")
        subject = _entity(fields.obj("subject_entity"), sentence, purpose)
        obj = _entity(fields.obj("object_entity"), sentence, purpose)
        label = hf.by_name(row.get("label"), names, RELATIONS, fields.at("label"), log)
        record = (fields.build(ReRecord, guid, sentence, subject, obj, label, source)
                  if label is not None and subject is not None and obj is not None else None)
        if record is not None:
            records.append(record)
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records


def to_hf(records: Sequence[ReRecord]) -> list[dict[str, Any]]:
    """Rows in the klue/klue re layout: the official fields, as the official file writes them."""
    return [to_json(r) for r in records]


# The export's columns: the hub's, with `label` in the official relation_list.json order.
_HF_ENTITY: dict[str, Any] = {"word": "string", "start_idx": "int32", "end_idx": "int32", "type": "string"}
HF_FEATURES: dict[str, Any] = {
    "guid": "string", "sentence": "string", "subject_entity": _HF_ENTITY, "object_entity": _HF_ENTITY,
    "label": hf.Labels(RELATIONS), "source": "string"}
HF_LAYOUT = hf.HfLayout(HF_FEATURES, to_hf, from_hf)
