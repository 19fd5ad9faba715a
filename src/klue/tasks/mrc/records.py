"""KLUE-MRC records and readers: the official JSON, SQuAD v1.1 (KorQuAD 1.0) and the Hugging Face copy.

File format (docs/tasks.md, MRC): SQuAD-2.0-like `{version, data: [{title, news_category, source,
paragraphs: [{context, qas: [{question, answers: [{text, answer_start}], plausible_answers?,
question_type, is_impossible, guid}]}]}]}`. question_type 1 paraphrase, 2 multi-sentence reasoning,
3 unanswerable (`is_impossible`, no answers; `plausible_answers` holds the distractor spans).

Records are one per question (the unit predictions and metrics count), each carrying its context and
article fields; local splits group by context so no paragraph's questions straddle a split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from klue.errors import ProblemLog
from klue.io import hf
from klue.io.fields import Fields, describe, item_path
from klue.io.text import check_unique_guids, load_json
from klue.tasks.kinds import prediction_parser, present

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


def _answers(qa: Fields, key: str, context: str | None, strict_offsets: bool,
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
            qa.log.warning(answer.location, offset_message(context, start, text))
        answers.append(MrcAnswer(text, start))
    return tuple(answers)


def read_squad_like(path: Path, log: ProblemLog, squad: bool = False, strict_offsets: bool = True) -> list[MrcRecord]:
    """Read a KLUE-MRC file (or, with `squad`, a SQuAD v1.1 file such as KorQuAD 1.0).

    With `strict_offsets` off, answers whose offsets do not match the context are warnings instead of
    errors (for synthetic scoring files where only the answer texts matter).
    """
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
                record = _question(qa, squad, guid_key, context, strict_offsets)
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
    guid, question, answers, qtype, impossible, plausible = parts
    return MrcRecord(guid, question, answers, qtype, impossible, context, title, category, source, plausible,
                     a_index, p_index)


def _question(qa: Fields, squad: bool, guid_key: str, context: str | None,
              strict_offsets: bool) -> tuple[Any, ...] | None:
    guid = qa.str(guid_key, nonempty=True)
    question = qa.str("question", nonempty=True)
    answers = _answers(qa, "answers", context, strict_offsets)
    plausible = _answers(qa, "plausible_answers", context, strict_offsets, optional=True)
    if squad:
        qtype = None
        impossible = qa.bool("is_impossible", optional=True) or False
        qa.warn_unknown(_SQUAD_QA_FIELDS)
    else:
        qtype = qa.int("question_type")
        impossible = qa.bool("is_impossible")
        qa.warn_unknown(_QA_FIELDS)
        if qtype is not None and qtype not in QUESTION_TYPES:
            qa.fail(qa.at("question_type"), f"`question_type` must be 1, 2 or 3, found {qtype}")
    if not qa.ok or answers is None:
        return None
    if impossible and answers:
        qa.fail(qa.at("answers"), "an unanswerable question (is_impossible true) must have no answers")
        return None
    if not impossible and not answers:
        qa.fail(qa.at("answers"), "an answerable question (is_impossible false) has no answers")
        return None
    if qtype is not None and (qtype == UNANSWERABLE) != impossible:
        qa.log.warning(qa.location, f"question_type {qtype} but is_impossible {str(impossible).lower()}")
    return guid, question, answers, qtype, impossible, plausible


def read(path: Path, log: ProblemLog) -> list[MrcRecord]:
    """Read an official KLUE-MRC JSON file; every problem goes to `log` with its JSON path."""
    return read_squad_like(path, log)


read_unchecked_offsets = partial(read_squad_like, squad=False, strict_offsets=False)


def _answers_json(answers: Sequence[MrcAnswer]) -> list[dict[str, Any]]:
    return [{"text": a.text, "answer_start": a.answer_start} for a in answers]


def question_to_json(record: MrcRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"question": record.question, "answers": _answers_json(record.answers)}
    if record.plausible_answers is not None:
        out["plausible_answers"] = _answers_json(record.plausible_answers)
    out.update({"question_type": record.question_type, "is_impossible": record.is_impossible, "guid": record.guid})
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
    return MrcPrediction(record.guid, record.answers[0].text if record.answers else "")


def read_korquad(path: Path, log: ProblemLog) -> list[MrcRecord]:
    """SQuAD v1.1 JSON (KorQuAD 1.0) -> MRC records: one per question, guid = the question `id`,
    question_type None (SQuAD has none), never impossible; answer offsets are checked."""
    return read_squad_like(path, log, squad=True)


def from_hf(dataset: Any, log: ProblemLog) -> list[MrcRecord]:
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
        records.append(MrcRecord(guid, question, gold, qtype, impossible, context,  # type: ignore[arg-type]
                                     title=title, news_category=category, source=source,  # type: ignore[arg-type]
                                     plausible_answers=plausible))
    check_unique_guids(((r.guid, r.guid) for r in records), log)
    return records
