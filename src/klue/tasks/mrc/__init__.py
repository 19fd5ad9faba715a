"""KLUE-MRC: extractive machine reading comprehension with unanswerable questions, scored by exact match
and the official "ROUGE-W" (a character LCS-substring F1).

Records are one per question (the unit predictions and metrics count), each carrying its context and
article fields; local splits group by context so no paragraph's questions straddle a split.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics import mrc as metric
from klue.metrics.report import MetricMode, MetricReport, spec_map
from klue.metrics.statistics import ExampleStatistics
from klue.tasks.base import Task, declare
from klue.tasks.kinds import require_labelled

from .records import (
    MrcPrediction,
    MrcRecord,
    from_hf,
    gold_prediction,
    parse_prediction,
    read,
    read_korquad,
    read_unchecked_offsets,
)


def score(golds: Sequence[MrcRecord], preds: Sequence[MrcPrediction], mode: MetricMode) -> MetricReport:
    require_labelled(golds)  # records read for prediction hold no gold to score against
    types = [g.question_type for g in golds]
    question_types = None if any(t is None for t in types) else [int(t) for t in types]  # type: ignore[arg-type]
    return metric.compute([g.answer_texts for g in golds], [p.answer for p in preds], question_types, mode=mode)


def statistics(golds: Sequence[MrcRecord], preds: Sequence[MrcPrediction], mode: MetricMode) -> ExampleStatistics:
    require_labelled(golds)
    return metric.statistics([g.answer_texts for g in golds], [p.answer for p in preds], mode=mode)


TASK: Task[MrcRecord, MrcPrediction] = declare(
    __name__, labels=(), metric_specs=spec_map(metric.SPECS), record_type=MrcRecord,
    prediction_type=MrcPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=score, statistics=statistics, group_key=lambda r: r.context,
    other_readers={"korquad": read_korquad, "squad": read_korquad, "unchecked-offsets": read_unchecked_offsets},
    from_hf=from_hf, adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
)
