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
from klue.metrics.report import spec_map
from klue.tasks.base import ExampleText, Task, TextFields, declare
from klue.tasks.kinds import metric_binding

from .records import (
    WosPrediction,
    WosTurn,
    gold_prediction,
    load_ontology,
    parse_prediction,
    read,
    read_ontology,
)


def _states(golds: Sequence[WosTurn], preds: Sequence[WosPrediction]) -> tuple[list[list[str]], list[list[str]]]:
    """The gold and the predicted dialogue state of each turn."""
    return [list(g.state) for g in golds], [list(p.state) for p in preds]


# the input: the dialogue's utterances up to this user turn, each a part; the answer: the state's items
TEXT_FIELDS = TextFields[WosTurn](
    ("turns",), ("state",),
    lambda r: ExampleText(tuple(u.text for u in (*r.history, r.dialogue.dialogue[r.utterance_index])), r.state))

TASK: Task[WosTurn, WosPrediction] = declare(
    __name__, labels=(), metric_specs=spec_map(metric.SPECS), record_type=WosTurn,
    prediction_type=WosPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=metric_binding(metric.compute, _states),
    statistics=metric_binding(metric.statistics, _states), group_key=lambda r: r.dialogue_guid,
    read_resource=read_ontology, adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
    text_fields=TEXT_FIELDS,
    no_embedding="its predictions are dialogue states, slot values written turn by turn, which a vector per "
    "utterance cannot express",
)


def ontology(roots: DataRoots | None, who: str) -> dict[str, tuple[str, ...]]:
    """The ontology under the data roots (the task's declared resource file), for `who` in messages."""
    if roots is None:
        raise DataError(f"{who}: the data has no data roots to find ontology.json in")
    resource = TASK.file("resource")
    assert resource is not None  # declared in task.yaml
    return load_ontology(roots.klue / resource.path)
