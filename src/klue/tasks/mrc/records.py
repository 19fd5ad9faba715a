"""KLUE-MRC records and readers: the official JSON, SQuAD v1.1 (KorQuAD 1.0) and the Hugging Face copy.

File format (docs/tasks.md, MRC): SQuAD-2.0-like `{version, data: [{title, news_category, source,
paragraphs: [{context, qas: [{question, answers: [{text, answer_start}], plausible_answers?,
question_type, is_impossible, guid}]}]}]}`. question_type 1 paraphrase, 2 multi-sentence reasoning,
3 unanswerable (`is_impossible`, no answers; `plausible_answers` holds the distractor spans).

Records are one per question (the unit predictions and metrics count), each carrying its context and
article fields; local splits group by context so no paragraph's questions straddle a split.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from klue.errors import ProblemLog
from klue.io import hf
from klue.io.fields import Fields, describe, item_path
from klue.io.formats import ReadPurpose
from klue.io.text import check_unique_guids, load_json
from klue.tasks.kinds import (
    gold_absent,
    prediction_parser,
    present,
    reads_for_prediction,
    reads_for_scoring,
    refuse_unlabelled,
)

QUESTION_TYPES: tuple[int, ...] = (1, 2, 3)  # paraphrase, multi-sentence reasoning, unanswerable
UNANSWERABLE = 3
_ARTICLE_FIELDS = frozenset({"title", "news_category", "source", "paragraphs"})
_QA_FIELDS = frozenset({"question", "answers", "plausible_answers", "question_type", "is_impossible", "guid"})
_SQUAD_QA_FIELDS = frozenset({"question", "answers", "id", "is_impossible", "plausible_answers"})


@dataclass(frozen=True)
class MrcAnswer:
    text: str
    answer_start: int  # character offset into the context


@dataclass(frozen=True)
class MrcRecord:
    """One question with its paragraph and article fields (every field of the official file).

    `plausible_answers` is None when the file has no such field. `question_type` is None for SQuAD-style
    sources (KorQuAD), which have none. `article_index` / `paragraph_index` are the positions in the
    file, so records can be grouped back into the nested layout.
    """

    guid: str
    question: str
    answers: tuple[MrcAnswer, ...]
    question_type: int | None
    is_impossible: bool
    context: str
    title: str | None = None
    news_category: str | None = None
    source: str | None = None
    plausible_answers: tuple[MrcAnswer, ...] | None = None
    article_index: int = 0
    paragraph_index: int = 0
    # False: read for prediction without `answers` (then `()`, and `is_impossible` False unless given);
    # such a record is never scored
    labelled: bool = True

    @property
    def answer_texts(self) -> list[str]:
        """The gold answer texts the metric compares with ([] for an unanswerable question)."""
        return [a.text for a in self.answers]


@dataclass(frozen=True)
class MrcPrediction:
    guid: str
    answer: str  # "" for no answer


def offsets_match(context: str, start: int, text: str) -> bool:
    return 0 <= start and context[start:start + len(text)] == text


def offset_message(context: str, start: int, text: str) -> str:
    found = context[start:start + len(text)] if 0 <= start < len(context) else "(outside the context)"
    return f"context[{start}:{start + len(text)}] is {found!r}, not the answer text {text!r}"


def _optional_text(fields: Fields, key: str) -> str | None:
    """A field that may be absent or null (KLUE MRC leaves `news_category` empty for some sources)."""
    value = fields.data.get(key)
    if value is not None and not isinstance(value, str):
        fields.fail(fields.at(key), f"`{key}` must be a string or null, found {describe(value)}")
        return None
    return value


def _answers(qa: Fields, key: str, context: str | None, guid: str | None, strict_offsets: bool,
             optional: bool = False) -> tuple[MrcAnswer, ...] | None:
    items = qa.items(key, optional=optional)
    if items is None:
        return None
    answers = []
    for answer in items:
        text = answer.str("text")
        start = answer.int("answer_start")
        answer.warn_unknown({"text", "answer_start"})
        if text is None or start is None:
            continue
        if context is not None and not offsets_match(context, start, text):
            if strict_offsets:
                answer.fail(answer.location, offset_message(context, start, text))
                continue
            # The metric compares answer texts only, so the answer is kept; the warning names the question
            # and the answer so that whoever made the file can still fix the offset.
            qa.log.warning(answer.location, f"{guid}: {offset_message(context, start, text)}; kept (the metric "
                           "compares answer texts only)")
        answers.append(MrcAnswer(text, start))
    return tuple(answers)


def read_squad_like(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate", squad: bool = False,
                    strict_offsets: bool | None = None) -> list[MrcRecord]:
    """Read a KLUE-MRC file (or, with `squad`, a SQuAD v1.1 file such as KorQuAD 1.0).

    An answer whose `answer_start` does not point at its text is an error when `strict_offsets` is on,
    a warning naming the guid and the answer when it is off. By default (None) it is on, except for a
    gold file read for scoring (`klue.tasks.kinds.reads_for_scoring`): the metric reads only the answer
    texts, so `klue score` accepts what `klue data validate` calls an error. Read for prediction, a
    question may come without its gold.
    """
    strict = not reads_for_scoring(purpose) if strict_offsets is None else strict_offsets
    data = load_json(path, log)
    if data is None:
        return []
    top = Fields(data, "$", log)
    top.str("version", optional=True)
    articles = top.items("data", linked=False)
    if articles is None:
        return []
    if not articles:
        log.error(location="$.data", message="the file holds no articles (an empty list)")
        return []
    records: list[MrcRecord] = []
    guid_key = "id" if squad else "guid"
    guids: list[tuple[str, str]] = []
    for a_index, article in enumerate(articles):
        title = article.str("title")
        category = None if squad else _optional_text(article, "news_category")
        source = "korquad" if squad else _optional_text(article, "source")
        article.warn_unknown(_ARTICLE_FIELDS)
        for p_index, paragraph in enumerate(article.items("paragraphs", linked=False) or []):
            context = paragraph.str("context", nonempty=True)
            paragraph.warn_unknown({"context", "qas"})
            for qa in paragraph.items("qas", linked=False) or []:
                record = _question(qa, squad, guid_key, context, strict, purpose)
                if record is None or context is None or not paragraph.ok or not article.ok:
                    continue
                guids.append((record[0], qa.at(guid_key)))
                records.append(_build(record, context, title, category, source, a_index, p_index))
    check_unique_guids(guids, log)
    if not records and not log.errors:
        log.error(location="$.data", message="the file holds no questions")
    return records


def _build(parts: tuple[Any, ...], context: str, title: str | None, category: str | None, source: str | None,
           a_index: int, p_index: int) -> MrcRecord:
    guid, question, answers, qtype, impossible, plausible, labelled = parts
    return MrcRecord(guid, question, answers, qtype, impossible, context, title, category, source, plausible,
                     a_index, p_index, labelled)


def _question(qa: Fields, squad: bool, guid_key: str, context: str | None, strict_offsets: bool,
              purpose: ReadPurpose) -> tuple[Any, ...] | None:
    guid = qa.str(guid_key, nonempty=True)
    question = qa.str("question", nonempty=True)
    # Read for prediction, a question may come without its gold: `answers`, and then `is_impossible`
    # (the answerability is gold too); `question_type` may be absent whenever it is read so.
    unlabelled = gold_absent(qa, purpose, "answers")
    answers = () if unlabelled else _answers(qa, "answers", context, guid, strict_offsets)
    plausible = _answers(qa, "plausible_answers", context, guid, strict_offsets, optional=True)
    if squad:
        qtype = None
        impossible: bool | None = qa.bool("is_impossible", optional=True) or False
        qa.warn_unknown(_SQUAD_QA_FIELDS)
    else:
        qtype = qa.int("question_type", optional=reads_for_prediction(purpose))
        impossible = qa.bool("is_impossible", optional=unlabelled)
        qa.warn_unknown(_QA_FIELDS)
        if qtype is not None and qtype not in QUESTION_TYPES:
            qa.fail(qa.at("question_type"), f"`question_type` must be 1, 2 or 3, found {qtype}")
    if not qa.ok or answers is None:
        return None
    if unlabelled:
        return guid, question, (), qtype, bool(impossible), plausible, False
    if impossible and answers:
        qa.fail(qa.at("answers"), "an unanswerable question (is_impossible true) must have no answers")
        return None
    if not impossible and not answers:
        qa.fail(qa.at("answers"), "an answerable question (is_impossible false) has no answers")
        return None
    if qtype is not None and (qtype == UNANSWERABLE) != impossible:
        qa.log.warning(qa.location, f"question_type {qtype} but is_impossible {str(impossible).lower()}")
    return guid, question, answers, qtype, impossible, plausible, True


def read(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[MrcRecord]:
    """Read an official KLUE-MRC JSON file; every problem goes to `log` with its JSON path (answer offsets
    that miss their text are warnings when the file is read for scoring, see `read_squad_like`)."""
    return read_squad_like(path, log, purpose)


read_unchecked_offsets = partial(read_squad_like, squad=False, strict_offsets=False)


def _answers_json(answers: Sequence[MrcAnswer]) -> list[dict[str, Any]]:
    return [{"text": a.text, "answer_start": a.answer_start} for a in answers]


def question_to_json(record: MrcRecord) -> dict[str, Any]:
    """A question as the official file writes it; one without gold has no `answers` and `is_impossible`
    (nor a `question_type` it does not know)."""
    out: dict[str, Any] = {"question": record.question}
    if record.labelled:
        out["answers"] = _answers_json(record.answers)
    if record.plausible_answers is not None:
        out["plausible_answers"] = _answers_json(record.plausible_answers)
    if record.labelled or record.question_type is not None:
        out["question_type"] = record.question_type
    if record.labelled:
        out["is_impossible"] = record.is_impossible
    out["guid"] = record.guid
    return out


def to_json(records: Sequence[MrcRecord], version: str | None = None) -> dict[str, Any]:
    """The records nested back into the official layout (articles, paragraphs, questions in order)."""
    articles: list[dict[str, Any]] = []
    last_article: tuple[int, str | None] | None = None
    last_paragraph: tuple[int, int] | None = None
    for record in records:
        article_key = (record.article_index, record.title)
        if article_key != last_article:
            articles.append({"title": record.title, "news_category": record.news_category, "source": record.source,
                             "paragraphs": []})
            last_article, last_paragraph = article_key, None
        paragraph_key = (record.article_index, record.paragraph_index)
        if paragraph_key != last_paragraph:
            articles[-1]["paragraphs"].append({"context": record.context, "qas": []})
            last_paragraph = paragraph_key
        articles[-1]["paragraphs"][-1]["qas"].append(question_to_json(record))
    out: dict[str, Any] = {} if version is None else {"version": version}
    out["data"] = articles
    return out


# `answer` a string, "" for no answer.
parse_prediction = prediction_parser(MrcPrediction, lambda fields: present(fields.str("answer")))


def gold_prediction(record: MrcRecord) -> MrcPrediction:
    refuse_unlabelled(record)
    return MrcPrediction(record.guid, record.answers[0].text if record.answers else "")


def read_korquad(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[MrcRecord]:
    """SQuAD v1.1 JSON (KorQuAD 1.0) -> MRC records: one per question, guid = the question `id`,
    question_type None (SQuAD has none), never impossible; answer offsets are checked as in `read`."""
    return read_squad_like(path, log, purpose, squad=True)


def _from_hub_rows(dataset: Any, log: ProblemLog) -> list[MrcRecord]:
    """HF `klue/klue` mrc rows (`title, context, news_category, source, guid, is_impossible,
    question_type, question, answers: {answer_start: [...], text: [...]}`) -> MRC records.

    The HF copy merges `plausible_answers` into `answers`; for an impossible question those answers
    are moved back to `plausible_answers`, so its gold answer list is empty as in the official file.
    """
    records = []
    for index, row in hf.rows(dataset):
        if isinstance(row, dict) and "answers" in row:
            row = {**row, "answers": hf.as_columns(row["answers"], ("answer_start", "text"))}
        fields = Fields(row, item_path("$", index), log)
        guid, question = fields.str("guid", nonempty=True), fields.str("question", nonempty=True)
        context, title = fields.str("context", nonempty=True), fields.str("title")
        category, source = fields.str("news_category", optional=True), fields.str("source", optional=True)
        impossible, qtype = fields.bool("is_impossible"), fields.int("question_type")
        answers_fields = fields.obj("answers")
        answers: list[MrcAnswer] = []
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
                    if context is not None and not offsets_match(context, start, text):
                        answers_fields.fail(where, offset_message(context, start, text))
                        continue
                    answers.append(MrcAnswer(text, start))
        if not fields.ok:
            continue
        if qtype not in QUESTION_TYPES:
            fields.fail(fields.at("question_type"), f"`question_type` must be one of 1, 2, 3, found {qtype!r}")
            continue
        gold, plausible = ((), tuple(answers)) if impossible else (tuple(answers), None)
        if not impossible and not gold:
            fields.fail(fields.at("answers"), "an answerable question (is_impossible false) has no answers")
            continue
        record = fields.build(MrcRecord, guid, question, gold, qtype, impossible, context, title=title,
                              news_category=category, source=source, plausible_answers=plausible)
        if record is not None:
            records.append(record)
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records


_HF_EXTRAS = ("plausible_answers", "article_index", "paragraph_index")  # an export's columns the hub lacks


def from_hf(dataset: Any, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[MrcRecord]:
    """HF mrc rows -> MRC records: the hub's (`_from_hub_rows`; null optional texts dropped first, since it
    takes an absent one, not a null) and an export's, whose extra columns are put back."""
    rows = [{k: v for k, v in row.items() if not (v is None and k in ("news_category", "source"))}
            for _, row in hf.rows(dataset)]
    records = _from_hub_rows(rows, log)
    if not set(_HF_EXTRAS) & hf.columns(dataset):
        return records
    extras = {row.get("guid"): row for row in rows}
    restored = []
    for record in records:
        row = extras[record.guid]
        plausible = hf.as_rows(row.get("plausible_answers"))
        restored.append(dataclasses.replace(
            record, article_index=row.get("article_index") or 0, paragraph_index=row.get("paragraph_index") or 0,
            plausible_answers=None if plausible is None else
            tuple(MrcAnswer(a["text"], a["answer_start"]) for a in plausible)))
    return restored


def _answers_columns(answers: Sequence[MrcAnswer]) -> dict[str, list[Any]]:
    return {"answer_start": [a.answer_start for a in answers], "text": [a.text for a in answers]}


def to_hf(records: Sequence[MrcRecord]) -> list[dict[str, Any]]:
    """The hub's mrc layout (an unanswerable question's plausible answers in `answers`, as the hub stores
    them), plus `plausible_answers` and the article and paragraph positions, so records come back whole."""
    rows = []
    for r in records:
        shown = r.answers if not r.is_impossible else (r.plausible_answers or ())
        rows.append({"title": r.title, "context": r.context, "news_category": r.news_category, "source": r.source,
                     "guid": r.guid, "is_impossible": r.is_impossible, "question_type": r.question_type,
                     "question": r.question, "answers": _answers_columns(shown),
                     "plausible_answers": None if r.plausible_answers is None else
                     _answers_columns(r.plausible_answers),
                     "article_index": r.article_index, "paragraph_index": r.paragraph_index})
    return rows


_HF_ANSWERS: dict[str, Any] = {"answer_start": ["int32"], "text": ["string"]}  # the hub's Sequence of structs
HF_FEATURES: dict[str, Any] = {
    "title": "string", "context": "string", "news_category": "string", "source": "string", "guid": "string",
    "is_impossible": "bool", "question_type": "int32", "question": "string", "answers": _HF_ANSWERS,
    "plausible_answers": _HF_ANSWERS, "article_index": "int32", "paragraph_index": "int32"}
HF_LAYOUT = hf.HfLayout(HF_FEATURES, to_hf, from_hf)
