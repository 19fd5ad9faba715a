"""KLUE-NLI: natural language inference (entailment / contradiction / neutral), scored by accuracy.

Each dev premise appears in exactly three pairs, one per label, so local splits group by premise.
"""

from __future__ import annotations

from klue.metrics import nli as metric
from klue.metrics.report import spec_map
from klue.tasks.base import Task, declare
from klue.tasks.kinds import label_score, label_statistics

from .records import (
    LABELS,
    NliPrediction,
    NliRecord,
    from_hf,
    gold_prediction,
    parse_prediction,
    read,
    read_kornli,
)

TASK: Task[NliRecord, NliPrediction] = declare(
    __name__, labels=LABELS, metric_specs=spec_map(metric.SPECS), record_type=NliRecord,
    prediction_type=NliPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=label_score(metric.compute, LABELS),
    statistics=label_statistics(metric.statistics, LABELS), group_key=lambda r: r.premise,
    other_readers={"kornli": read_kornli}, from_hf=from_hf, adapter=".adapter:make_adapter",
    baseline=".baseline:make_baseline",
)
