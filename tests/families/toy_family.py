"""A model family as a plug-in writes one (klue.families): `toy:NAME` answers every evaluation record with the
training part's most frequent gold prediction, on the tasks with labels. Not a test module."""

from __future__ import annotations

import collections
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from klue.errors import DataError
from klue.families.base import ModelFamily
from klue.predictions import write_predictions
from klue.results import PREDICTIONS_FILE, Results
from klue.scoring import ProducerReport, RunRequest
from klue.tasks.base import Task


@dataclass(frozen=True)
class ToyOptions:
    pass


class ToyFamily(ModelFamily[ToyOptions]):
    name = "toy"
    command = "benchmark"

    def recognises(self, model: str) -> bool:
        return model.startswith("toy:")

    def uses_gpu(self, model: str) -> bool:
        return False

    def not_applicable(self, task: Task[Any, Any]) -> str | None:
        return None if task.labels and task.embedding is not None else "the toy family answers one label a record"

    def options(self, values: Mapping[str, Any]) -> ToyOptions:
        if values:
            raise DataError(f"toy cells take no options, not {', '.join(values)}")
        return ToyOptions()

    def run(self, request: RunRequest, options: ToyOptions) -> Results:
        started = time.perf_counter()
        task, data = request.task, request.protocol_data
        label_of = {task.gold_prediction(r).label: task.gold_prediction(r) for r in data.train}
        most = collections.Counter(task.gold_prediction(r).label for r in data.train).most_common(1)[0][0]
        predictions = [type(label_of[most])(**{**vars(label_of[most]), "guid": task.guid(r)}) for r in data.eval]
        write_predictions(request.out_dir / PREDICTIONS_FILE, task, data.eval, predictions, "the toy family")
        producer = ProducerReport(model=request.model_spec, model_family=self.name, seed=request.seed,
                                  started=started, recipe="the most frequent training label")
        return request.judge(data, producer)


FAMILY = ToyFamily()
