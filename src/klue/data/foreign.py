"""Readers of other real formats, mapped onto the KLUE task records.

- KorNLI TSV (`sentence1, sentence2, gold_label`) -> NLI records
- KorSTS TSV (`genre, filename, year, id, score, sentence1, sentence2`) -> STS records
- SQuAD v1.1 JSON (KorQuAD 1.0) -> MRC records
- the `ynat-resplit` JSON files (`guid, title, label`) -> YNAT records
- the Hugging Face `klue/klue` dataset (v1 content, its own label orders) -> records of any JSON task,
  through the `datasets` library when it is installed; labels are mapped by NAME, never by index.

Every reader logs each problem with its line or JSON path and keeps going, like the official readers.
None of these are official KLUE data; protocols that use them say so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from klue.data.formats import check_unique_guids, read_text
from klue.errors import ProblemLog
from klue.tasks import mrc, nli, re, sts, wos, ynat
from klue.tasks._common import Fields, describe, guid_locations, item_path, load_json_list

HF_DATASET = "klue/klue"
HF_REVISION = "349481ec73fff722f88e0453ca05c77a447d967c"
KORNLI_HEADER = ("sentence1", "sentence2", "gold_label")
KORSTS_HEADER = ("genre", "filename", "year", "id", "score", "sentence1", "sentence2")


# ---------------------------------------------------------------------------------------------- TSV


def _tsv_rows(path: Path, log: ProblemLog, header: Sequence[str]) -> list[tuple[int, list[str]]]:
    """(line number, fields) of each data row of a headed TSV file; bad rows are logged and skipped."""
    text = read_text(path, log)
    if text is None:
        return []
    lines = text.split("\n")
    first = lines[0].removesuffix("\r").split("\t")
    if tuple(first) != tuple(header):
        log.error(location="line 1", message=f"expected the header {' '.join(header)!r} (tab-separated), found {lines[0][:80]!r}")
        return []
    rows = []
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.removesuffix("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            log.error(f"line {number}", f"expected {len(header)} tab-separated fields, found {len(fields)}")
            continue
        rows.append((number, fields))
    if not rows and not log.errors:
        log.error(location="line 2", message="the file has a header but no rows")
    return rows


def _tsv_name(path: Path) -> str:
    return path.name.removesuffix(".tsv")


def read_kornli(path: Path, log: ProblemLog) -> list[nli.NliRecord]:
    """KorNLI TSV -> NLI records. guid `kornli-<file stem>_<row>` (0-based data row), source `kornli`."""
    records = []
    lines = []
    stem = _tsv_name(path)
    for row, (number, (premise, hypothesis, label)) in enumerate(_tsv_rows(path, log, KORNLI_HEADER)):
        if label not in nli.LABELS:
            log.error(f"line {number}", f"unknown label {label!r}; labels are {', '.join(nli.LABELS)}")
            continue
        if not premise.strip() or not hypothesis.strip():
            log.error(f"line {number}", "empty sentence1 or sentence2")
            continue
        records.append(nli.NliRecord(f"kornli-{stem}_{row:05d}", "kornli", premise, hypothesis, label))
        lines.append(f"line {number}")
    nli.warn_duplicate_pairs(records, log, lines)
    return records


def read_korsts(path: Path, log: ProblemLog) -> list[sts.StsRecord]:
    """KorSTS TSV -> STS records. guid `korsts-<file stem>_<row>`; source `korsts/<genre>/<filename>/
    <year>/<id>` keeps the original identity; label = real-label = score, binary-label = score >= 3."""
    records = []
    stem = _tsv_name(path)
    rows = _tsv_rows(path, log, KORSTS_HEADER)
    for row, (number, (genre, filename, year, ident, score_text, sentence1, sentence2)) in enumerate(rows):
        try:
            score = float(score_text)
        except ValueError:
            log.error(f"line {number}", f"score {score_text!r} is not a number")
            continue
        if not sts.MIN_SCORE <= score <= sts.MAX_SCORE:
            log.error(f"line {number}", f"score {score!r} is outside the 0-5 range")
            continue
        if not sentence1.strip() or not sentence2.strip():
            log.error(f"line {number}", "empty sentence1 or sentence2")
            continue
        records.append(sts.StsRecord(f"korsts-{stem}_{row:05d}", f"korsts/{genre}/{filename}/{year}/{ident}",
                                     sentence1, sentence2, score, score, int(score >= sts.BINARY_THRESHOLD)))
    return records


# ---------------------------------------------------------------------------------------------- JSON


def read_ynat_resplit(path: Path, log: ProblemLog) -> list[ynat.YnatRecord]:
    """A `ynat-resplit` file (`[{guid, title, label}]`) -> YNAT records without the other fields."""
    items = load_json_list(path, log, "YNAT titles")
    if items is None:
        return []
    records = []
    for index, item in enumerate(items):
        fields = Fields(item, item_path("$", index), log)
        guid = fields.str("guid", nonempty=True)
        title = fields.str("title", nonempty=True)
        label = ynat.label_field(fields, "label")
        fields.warn_unknown({"guid", "title", "label"})
        if fields.ok and guid is not None and title is not None and label is not None:
            records.append(ynat.YnatRecord(guid, title, label))
    check_unique_guids(guid_locations(items), log)
    return records


def read_squad(path: Path, log: ProblemLog) -> list[mrc.MrcRecord]:
    """SQuAD v1.1 JSON (KorQuAD 1.0) -> MRC records: one per question, guid = the question `id`,
    question_type None (SQuAD has none), never impossible; answer offsets are checked."""
    return mrc.read_squad_like(path, log, squad=True)


# ---------------------------------------------------------------------------------- Hugging Face


def _label_names(dataset: Any, column: str) -> list[str] | None:
    """The names of a ClassLabel column, or None when the column holds plain values."""
    feature = getattr(dataset, "features", {}).get(column)
    names = getattr(feature, "names", None)
    return list(names) if names is not None else None


def _by_name(value: Any, names: list[str] | None, allowed: Iterable[str], location: str,
             log: ProblemLog) -> str | None:
    """A label given as a ClassLabel index (mapped through its names) or as a name, checked by name."""
    allowed = tuple(allowed)
    if names is not None and isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < len(names):
            log.error(location, f"label index {value} is outside the dataset's {len(names)} label names "
                      "(-1 marks an unlabelled split)")
            return None
        value = names[value]
    if not isinstance(value, str) or value not in allowed:
        log.error(location, f"unknown label {value!r}; labels are {', '.join(allowed)}")
        return None
    return value


def _rows(dataset: Any) -> Iterable[tuple[int, dict[str, Any]]]:
    return enumerate(dataset)


def _as_rows(value: Any) -> Any:
    """A `datasets.Sequence` of structs comes back as a dict of equal-length lists; turn it into a list of
    dicts (a value already in that shape, or anything else, is returned as it is)."""
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        lengths = {len(v) for v in value.values()}
        if len(lengths) == 1:
            n = lengths.pop()
            return [{key: column[i] for key, column in value.items()} for i in range(n)]
    return value


def _as_columns(value: Any, keys: Sequence[str]) -> Any:
    """The inverse of `_as_rows`, for a list of struct rows: a dict of lists over `keys`."""
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return {key: [v.get(key) for v in value] for key in keys}
    return value


def nli_from_hf(dataset: Any, log: ProblemLog) -> list[nli.NliRecord]:
    """HF `klue/klue` nli rows (`guid, source, premise, hypothesis, label` with label names
    entailment, neutral, contradiction) -> NLI records."""
    names = _label_names(dataset, "label")
    records = []
    for index, row in _rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        guid, source = fields.str("guid", nonempty=True), fields.str("source")
        premise, hypothesis = fields.str("premise", nonempty=True), fields.str("hypothesis", nonempty=True)
        label = _by_name(row.get("label"), names, nli.LABELS, fields.at("label"), log)
        if fields.ok and label is not None:
            records.append(nli.NliRecord(guid, source, premise, hypothesis, label))  # type: ignore[arg-type]
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    nli.warn_duplicate_pairs(records, log)
    return records


def sts_from_hf(dataset: Any, log: ProblemLog) -> list[sts.StsRecord]:
    """HF `klue/klue` sts rows (`guid, source, sentence1, sentence2, labels: {label, real-label,
    binary-label}`) -> STS records (no annotations in the HF copy)."""
    records = []
    for index, row in _rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        guid, source = fields.str("guid", nonempty=True), fields.str("source")
        sentence1, sentence2 = fields.str("sentence1", nonempty=True), fields.str("sentence2", nonempty=True)
        labels = fields.obj("labels")
        values: list[float | None] = [None, None]
        binary = None
        if labels is not None:
            values = [labels.number(key) for key in ("label", "real-label")]
            for key, value in zip(("label", "real-label"), values):
                if value is not None and not sts.MIN_SCORE <= value <= sts.MAX_SCORE:
                    labels.fail(labels.at(key), f"`{key}` {value!r} is outside the 0-5 score range")
            binary = labels.int("binary-label")
            if binary is not None and binary not in (0, 1):
                labels.fail(labels.at("binary-label"), f"`binary-label` must be 0 or 1, found {binary}")
        if fields.ok and None not in values and binary is not None:
            records.append(sts.StsRecord(guid, source, sentence1, sentence2,  # type: ignore[arg-type]
                                         values[0], values[1], binary))  # type: ignore[arg-type]
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records


def ynat_from_hf(dataset: Any, log: ProblemLog) -> list[ynat.YnatRecord]:
    """HF `klue/klue` ynat rows (`guid, title, label, url, date`; label names in the order IT과학, 경제,
    사회, 생활문화, 세계, 스포츠, 정치) -> YNAT records, labels mapped by name."""
    names = _label_names(dataset, "label")
    records = []
    for index, row in _rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        guid, title = fields.str("guid", nonempty=True), fields.str("title", nonempty=True)
        url, date = fields.str("url", optional=True), fields.str("date", optional=True)
        label = _by_name(row.get("label"), names, ynat.LABELS, fields.at("label"), log)
        if fields.ok and label is not None:
            records.append(ynat.YnatRecord(guid, title, label, url=url, date=date))  # type: ignore[arg-type]
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records


def _entity(fields: Fields | None, sentence: str | None) -> re.Entity | None:
    if fields is None:
        return None
    return re.entity_from(fields, sentence)


def re_from_hf(dataset: Any, log: ProblemLog) -> list[re.ReRecord]:
    """HF `klue/klue` re rows (`guid, sentence, subject_entity, object_entity, label, source`) -> RE
    records, labels mapped by name onto the official relation list."""
    names = _label_names(dataset, "label")
    records = []
    for index, row in _rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        guid, sentence = fields.str("guid", nonempty=True), fields.str("sentence", nonempty=True)
        source = fields.str("source")
        subject = _entity(fields.obj("subject_entity"), sentence)
        obj = _entity(fields.obj("object_entity"), sentence)
        label = _by_name(row.get("label"), names, re.RELATIONS, fields.at("label"), log)
        if fields.ok and label is not None and subject is not None and obj is not None:
            records.append(re.ReRecord(guid, sentence, subject, obj, label, source))  # type: ignore[arg-type]
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records


def mrc_from_hf(dataset: Any, log: ProblemLog) -> list[mrc.MrcRecord]:
    """HF `klue/klue` mrc rows (`title, context, news_category, source, guid, is_impossible,
    question_type, question, answers: {answer_start: [...], text: [...]}`) -> MRC records.

    The HF copy merges `plausible_answers` into `answers`; for an impossible question those answers
    are moved back to `plausible_answers`, so its gold answer list is empty as in the official file.
    """
    records = []
    for index, row in _rows(dataset):
        if isinstance(row, dict) and "answers" in row:
            row = {**row, "answers": _as_columns(row["answers"], ("answer_start", "text"))}
        fields = Fields(row, item_path("$", index), log)
        guid, question = fields.str("guid", nonempty=True), fields.str("question", nonempty=True)
        context, title = fields.str("context", nonempty=True), fields.str("title")
        category, source = fields.str("news_category", optional=True), fields.str("source", optional=True)
        impossible, qtype = fields.bool("is_impossible"), fields.int("question_type")
        answers_fields = fields.obj("answers")
        answers: list[mrc.MrcAnswer] = []
        if answers_fields is not None:
            starts, texts = answers_fields.list("answer_start"), answers_fields.str_list("text")
            if starts is not None and texts is not None:
                if len(starts) != len(texts):
                    answers_fields.fail(answers_fields.location, f"{len(starts)} answer_start values but "
                                        f"{len(texts)} texts")
                for i, (start, text) in enumerate(zip(starts, texts)):
                    where = f"{answers_fields.location}.answer_start[{i}]"
                    if isinstance(start, bool) or not isinstance(start, int):
                        answers_fields.fail(where, f"`answer_start` must be an integer, found {describe(start)}")
                        continue
                    if context is not None and not mrc.offsets_match(context, start, text):
                        answers_fields.fail(where, mrc.offset_message(context, start, text))
                        continue
                    answers.append(mrc.MrcAnswer(text, start))
        if not fields.ok:
            continue
        if qtype not in mrc.QUESTION_TYPES:
            fields.fail(fields.at("question_type"), f"`question_type` must be one of 1, 2, 3, found {qtype!r}")
            continue
        gold, plausible = ((), tuple(answers)) if impossible else (tuple(answers), None)
        if not impossible and not gold:
            fields.fail(fields.at("answers"), "an answerable question (is_impossible false) has no answers")
            continue
        records.append(mrc.MrcRecord(guid, question, gold, qtype, impossible, context,  # type: ignore[arg-type]
                                     title=title, news_category=category, source=source,  # type: ignore[arg-type]
                                     plausible_answers=plausible))
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records


def wos_from_hf(dataset: Any, log: ProblemLog) -> list[wos.WosTurn]:
    """HF `klue/klue` wos rows (`guid, domains, dialogue: [{role, text, state}]`, where system turns
    carry an empty state list; a dict of lists is accepted too) -> WoS turn records."""
    dialogues = []
    for index, row in _rows(dataset):
        if isinstance(row, dict) and "dialogue" in row:
            row = {**row, "dialogue": _as_rows(row["dialogue"])}
        fields = Fields(row, item_path("$", index), log)
        dialogue = wos.dialogue_from(fields, wos.DEFAULT_SLOTS, empty_sys_state_ok=True)
        if dialogue is not None:
            dialogues.append(dialogue)
    check_unique_guids(((d.guid, d.guid) for d in dialogues), log)
    return wos.expand_turns(dialogues)


HF_CONVERTERS: Mapping[str, Callable[[Any, ProblemLog], list[Any]]] = {
    "ynat": ynat_from_hf, "sts": sts_from_hf, "nli": nli_from_hf, "re": re_from_hf, "mrc": mrc_from_hf,
    "wos": wos_from_hf,
}


def from_hf(task_name: str, dataset: Any, log: ProblemLog) -> list[Any]:
    """Records of `task_name` from a `datasets.Dataset` with the `klue/klue` column schema."""
    if task_name not in HF_CONVERTERS:
        raise KeyError(f"no Hugging Face mapping for task {task_name!r}; known: {', '.join(HF_CONVERTERS)}")
    return HF_CONVERTERS[task_name](dataset, log)


def load_hf(task_name: str, split: str, log: ProblemLog, cache_dir: str | None = None) -> list[Any]:
    """Load `klue/klue` (config = task name, pinned revision) through `datasets` and map it to records.

    Needs the `datasets` package and either network access to the hub or a local cache of the dataset.
    """
    try:
        import datasets
    except ImportError as error:  # pragma: no cover - datasets is a declared dependency of the extras
        raise RuntimeError("reading the Hugging Face copy needs the `datasets` package") from error
    dataset = datasets.load_dataset(HF_DATASET, task_name, split=split, revision=HF_REVISION,
                                    cache_dir=cache_dir)
    return from_hf(task_name, dataset, log)
