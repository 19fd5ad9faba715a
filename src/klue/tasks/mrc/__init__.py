"""KLUE-MRC: extractive machine reading comprehension with unanswerable questions, scored by exact match
and the official "ROUGE-W" (a character LCS-substring F1). One record per question, grouped by context in
local splits (records.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics import mrc as metric
from klue.metrics.report import spec_map
from klue.tasks.base import ExampleText, Task, TextFields, declare
from klue.tasks.kinds import metric_binding

from .records import (
    MrcPrediction,
    MrcRecord,
    gold_prediction,
    parse_prediction,
    read,
    read_korquad,
    read_unchecked_offsets,
)


def _answers(golds: Sequence[MrcRecord], preds: Sequence[MrcPrediction]) -> tuple[list[list[str]], list[str]]:
    """Each question's gold answer texts and its predicted answer."""
    return [g.answer_texts for g in golds], [p.answer for p in preds]


def _answers_and_types(golds: Sequence[MrcRecord], preds: Sequence[MrcPrediction]) -> tuple[
        list[list[str]], list[str], list[int] | None]:
    """`_answers` and the question types (None when a record has none: no per-type breakdown)."""
    known = [g.question_type for g in golds if g.question_type is not None]
    return (*_answers(golds, preds), known if len(known) == len(golds) else None)


# the answer: the first gold answer (the others are variants of it); none for a question without one
TEXT_FIELDS = TextFields[MrcRecord](
    ("context", "question"), ("answers",),
    lambda r: ExampleText((r.context, r.question), tuple(r.answer_texts[:1])))

TASK: Task[MrcRecord, MrcPrediction] = declare(
    __name__, labels=(), metric_specs=spec_map(metric.SPECS), record_type=MrcRecord,
    prediction_type=MrcPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=metric_binding(metric.compute, _answers_and_types),
    statistics=metric_binding(metric.statistics, _answers), group_key=lambda r: r.context,
    other_readers={"korquad": read_korquad, "squad": read_korquad, "unchecked-offsets": read_unchecked_offsets},
    reader_suffixes={"korquad": (".json",), "squad": (".json",), "unchecked-offsets": (".json",)},
    adapter=".adapter:make_adapter", baseline=".baseline:make_baseline", text_fields=TEXT_FIELDS,
    no_embedding="its answers are spans of a passage, and a sentence embedding is one vector per text, with no "
    "position to point at",
)
