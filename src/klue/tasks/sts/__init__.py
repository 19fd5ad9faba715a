"""KLUE-STS: semantic textual similarity on a 0-5 scale, scored by Pearson r and binary F1 (>= 3.0).

The target is `labels.real-label`, the mean of the annotators' scores.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics import sts as metric
from klue.metrics.report import spec_map
from klue.tasks.base import ExampleText, Task, TextFields, declare
from klue.tasks.kinds import metric_binding

from .records import StsPrediction, StsRecord, gold_prediction, parse_prediction, read, read_korsts


def _columns(golds: Sequence[StsRecord], preds: Sequence[StsPrediction]) -> tuple[list[float], list[float]]:
    """The gold scores (`labels.real-label`) and the predicted ones."""
    return [g.real_label for g in golds], [p.score for p in preds]


# the answer is the score as the official file's `label` writes it (one decimal)
TEXT_FIELDS = TextFields[StsRecord](("sentence1", "sentence2"), ("label",),
                                    lambda r: ExampleText((r.sentence1, r.sentence2), (f"{r.label:.1f}",)))

TASK: Task[StsRecord, StsPrediction] = declare(
    __name__, labels=(), metric_specs=spec_map(metric.SPECS), record_type=StsRecord,
    prediction_type=StsPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=metric_binding(metric.compute, _columns),
    statistics=metric_binding(metric.statistics, _columns), other_readers={"korsts": read_korsts},
    reader_suffixes={"korsts": (".tsv",)},
    adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
    embedding=".embedding:EMBEDDING", text_fields=TEXT_FIELDS,
)
