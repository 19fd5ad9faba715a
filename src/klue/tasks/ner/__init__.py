"""KLUE-NER: character-level named entity recognition (IOB2 over 6 entity types), scored by entity and
character macro F1.

The official reader drops space characters and their tags, so the metric sees only the non-space
characters of each sentence; a prediction may carry one tag per character or per non-space character.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics import ner as metric
from klue.metrics.report import MetricMode, MetricReport, spec_map
from klue.metrics.statistics import ExampleStatistics
from klue.tasks.base import Task, declare
from klue.tasks.kinds import require_labelled

from .records import (
    TAGS,
    NerPrediction,
    NerRecord,
    from_hf,
    gold_prediction,
    nonspace_prediction,
    parse_prediction,
    read,
)


def _tags(golds: Sequence[NerRecord], preds: Sequence[NerPrediction]) -> tuple[list[list[str]], list[list[str]]]:
    require_labelled(golds)  # records read for prediction hold no gold to score against
    gold_tags = [list(g.nonspace_tags) for g in golds]
    pred_tags = [list(nonspace_prediction(g, p)) for g, p in zip(golds, preds)]
    return gold_tags, pred_tags


def score(golds: Sequence[NerRecord], preds: Sequence[NerPrediction], mode: MetricMode) -> MetricReport:
    return metric.compute(*_tags(golds, preds), mode=mode)


def statistics(golds: Sequence[NerRecord], preds: Sequence[NerPrediction], mode: MetricMode) -> ExampleStatistics:
    return metric.statistics(*_tags(golds, preds), mode=mode)


TASK: Task[NerRecord, NerPrediction] = declare(
    __name__, labels=TAGS, metric_specs=spec_map(metric.SPECS), record_type=NerRecord,
    prediction_type=NerPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=score, statistics=statistics, from_hf=from_hf, adapter=".adapter:make_adapter",
    baseline=".baseline:make_baseline",
)
