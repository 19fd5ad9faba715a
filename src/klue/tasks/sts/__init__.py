"""KLUE-STS: semantic textual similarity on a 0-5 scale, scored by Pearson r and binary F1 (>= 3.0).

The target is `labels.real-label`, the mean of the annotators' scores.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics import sts as metric
from klue.metrics.report import MetricMode, MetricReport, spec_map
from klue.metrics.statistics import ExampleStatistics
from klue.tasks.base import Task, declare
from klue.tasks.kinds import require_labelled

from .records import StsPrediction, StsRecord, from_hf, gold_prediction, parse_prediction, read, read_korsts


def score(golds: Sequence[StsRecord], preds: Sequence[StsPrediction], mode: MetricMode) -> MetricReport:
    require_labelled(golds)  # records read for prediction hold no gold to score against
    return metric.compute([g.real_label for g in golds], [p.score for p in preds], mode=mode)


def statistics(golds: Sequence[StsRecord], preds: Sequence[StsPrediction], mode: MetricMode) -> ExampleStatistics:
    require_labelled(golds)
    return metric.statistics([g.real_label for g in golds], [p.score for p in preds], mode=mode)


TASK: Task[StsRecord, StsPrediction] = declare(
    __name__, labels=(), metric_specs=spec_map(metric.SPECS), record_type=StsRecord,
    prediction_type=StsPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=score, statistics=statistics, other_readers={"korsts": read_korsts}, from_hf=from_hf,
    adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
)
