"""KLUE-WoS (Wizard of Seoul): dialogue state tracking, scored by joint goal accuracy and the official
"slot micro F1" (a mean of per-turn F1).

The unit of prediction and scoring is the user turn: records are `WosTurn`s, guid `<dialogue guid>-<k>`
with k the 0-based index among the dialogue's user turns, grouped by dialogue so a local split never
separates a dialogue's turns. The ontology (`ontology.json`, the task's resource file) maps the 45
`domain-slot` keys to their values.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.errors import DataError
from klue.io.locate import DataRoots
from klue.metrics import wos as metric
from klue.metrics.report import MetricMode, MetricReport, spec_map
from klue.metrics.statistics import ExampleStatistics
from klue.tasks.base import Task, declare
from klue.tasks.kinds import require_labelled

from .records import (
    WosPrediction,
    WosTurn,
    from_hf,
    gold_prediction,
    load_ontology,
    parse_prediction,
    read,
    read_ontology,
)


def score(golds: Sequence[WosTurn], preds: Sequence[WosPrediction], mode: MetricMode) -> MetricReport:
    require_labelled(golds)  # records read for prediction hold no gold to score against
    return metric.compute([list(g.state) for g in golds], [list(p.state) for p in preds], mode=mode)


def statistics(golds: Sequence[WosTurn], preds: Sequence[WosPrediction], mode: MetricMode) -> ExampleStatistics:
    require_labelled(golds)
    return metric.statistics([list(g.state) for g in golds], [list(p.state) for p in preds], mode=mode)


TASK: Task[WosTurn, WosPrediction] = declare(
    __name__, labels=(), metric_specs=spec_map(metric.SPECS), record_type=WosTurn,
    prediction_type=WosPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=score, statistics=statistics, group_key=lambda r: r.dialogue_guid,
    read_resource=read_ontology, from_hf=from_hf, adapter=".adapter:make_adapter",
    baseline=".baseline:make_baseline",
)


def ontology(roots: DataRoots | None, who: str) -> dict[str, tuple[str, ...]]:
    """The ontology under the data roots (the task's declared resource file), for `who` in messages."""
    if roots is None:
        raise DataError(f"{who}: the data has no data roots to find ontology.json in")
    resource = TASK.file("resource")
    assert resource is not None  # declared in task.yaml
    return load_ontology(roots.klue / resource.path)
