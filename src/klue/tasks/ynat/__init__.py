"""KLUE-YNAT: topic classification of news headlines into 7 categories, scored by macro F1.

Other tools order the labels differently (the Hugging Face copy: IT과학, 경제, 사회, 생활문화, 세계, 스포츠,
정치), so labels are exchanged by name, never by index.
"""

from __future__ import annotations

from klue.metrics import ynat as metric
from klue.metrics.report import spec_map
from klue.tasks.base import Task, declare
from klue.tasks.kinds import label_score, label_statistics

from .records import (
    LABELS,
    YnatPrediction,
    YnatRecord,
    from_hf,
    gold_prediction,
    parse_prediction,
    read,
    read_resplit,
)

TASK: Task[YnatRecord, YnatPrediction] = declare(
    __name__, labels=LABELS, metric_specs=spec_map(metric.SPECS), record_type=YnatRecord,
    prediction_type=YnatPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=label_score(metric.compute, LABELS),
    statistics=label_statistics(metric.statistics, LABELS), other_readers={"ynat-resplit": read_resplit},
    from_hf=from_hf, adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
)
