"""KLUE-RE: relation extraction between a subject and an object entity (30 classes with no_relation),
scored by micro F1 over the 29 relations (no_relation excluded) and AUPRC over all 30.

`relation_list.json` (index 0 `no_relation`) fixes the order of the predicted probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics import re as metric
from klue.metrics.report import spec_map
from klue.tasks.base import ExampleText, Task, TextFields, declare
from klue.tasks.kinds import metric_binding

from .records import (
    RELATIONS,
    RePrediction,
    ReRecord,
    gold_prediction,
    parse_prediction,
    read,
    read_relation_list,
)


def _columns(golds: Sequence[ReRecord], preds: Sequence[RePrediction]) -> tuple[
        list[str], list[str], list[list[float]], tuple[str, ...]]:
    """Gold and predicted relations, the predicted probabilities, the relation order."""
    return [g.label for g in golds], [p.label for p in preds], [list(p.probs) for p in preds], RELATIONS


# the entities' words lie inside the sentence; they are input parts of their own, so a corpus line holding
# the sentence and its entities (a dump of the task's file) is told from one holding the sentence alone
TEXT_FIELDS = TextFields[ReRecord](
    ("sentence", "subject_entity", "object_entity"), ("label",),
    lambda r: ExampleText((r.sentence, r.subject_entity.word, r.object_entity.word), (r.label,)))

TASK: Task[ReRecord, RePrediction] = declare(
    __name__, labels=RELATIONS, metric_specs=spec_map(metric.SPECS), record_type=ReRecord,
    prediction_type=RePrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=metric_binding(metric.compute, _columns),
    statistics=metric_binding(metric.statistics, _columns), read_resource=read_relation_list,
    adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
    embedding=".embedding:EMBEDDING", text_fields=TEXT_FIELDS,
)
