"""KLUE-RE: relation extraction between a subject and an object entity (30 classes with no_relation),
scored by micro F1 over the 29 relations (no_relation excluded) and AUPRC over all 30.

`relation_list.json` (index 0 `no_relation`) fixes the order of the predicted probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics import re as metric
from klue.metrics.report import MetricMode, MetricReport, spec_map
from klue.metrics.statistics import ExampleStatistics
from klue.tasks.base import Task, declare
from klue.tasks.kinds import require_labelled

from .records import (
    RELATIONS,
    RePrediction,
    ReRecord,
    from_hf,
    gold_prediction,
    parse_prediction,
    read,
    read_relation_list,
)


def score(golds: Sequence[ReRecord], preds: Sequence[RePrediction], mode: MetricMode) -> MetricReport:
    require_labelled(golds)  # records read for prediction hold no gold to score against
    return metric.compute([g.label for g in golds], [p.label for p in preds], [list(p.probs) for p in preds],
                          RELATIONS, mode=mode)


def statistics(golds: Sequence[ReRecord], preds: Sequence[RePrediction], mode: MetricMode) -> ExampleStatistics:
    require_labelled(golds)
    return metric.statistics([g.label for g in golds], [p.label for p in preds], [list(p.probs) for p in preds],
                             RELATIONS, mode=mode)


TASK: Task[ReRecord, RePrediction] = declare(
    __name__, labels=RELATIONS, metric_specs=spec_map(metric.SPECS), record_type=ReRecord,
    prediction_type=RePrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=score, statistics=statistics, read_resource=read_relation_list, from_hf=from_hf,
    adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
)
