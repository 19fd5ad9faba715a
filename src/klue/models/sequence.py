"""The adapter of every one-sentence or sentence-pair task with a [CLS] head (classification or regression).

Inputs longer than max_len are truncated longest-first, as the official baseline does (max_len 128 covers
all but a handful of KLUE examples); the count of truncated features is kept in `truncated`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from klue.models.adapter import Adapter, TaskView, check_head_options
from klue.models.features import Feature, FeaturizeContext
from klue.models.heads import IGNORE_INDEX, SEQUENCE_POOLINGS, HeadSpec


class SequenceAdapter(Adapter):
    """`text_a` (and `text_b`) give a record's input text(s). Classification predicts the prediction-file field
    `label` over `task.labels`; regression predicts the field `score` (docs/tasks.md, "Prediction files")."""

    def __init__(self, task: TaskView, text_a: Callable[[Any], str],
                 text_b: Callable[[Any], str] | None = None, regression: bool = False) -> None:
        super().__init__(task)
        self.text_a = text_a
        self.text_b = text_b
        self.regression = regression
        self.truncated = 0
        if not regression and not task.labels:
            raise ValueError(f"task {task.name!r} declares no labels to classify into")
        self.label_index = {label: i for i, label in enumerate(task.labels)}

    def head_spec(self, dropout: float | None, options: Mapping[str, Any]) -> HeadSpec:
        chosen = check_head_options(self.task.name, options, {"pooling": SEQUENCE_POOLINGS})
        if self.regression:
            return HeadSpec("sequence_regression", ("score",), dropout, chosen)
        return HeadSpec("sequence_classification", tuple(self.task.labels), dropout, chosen)

    def _label(self, record: Any) -> int | float:
        if not self.has_gold(record):
            return float("nan") if self.regression else IGNORE_INDEX
        gold = self.gold_json(record)
        if self.regression:
            return float(gold["score"])
        return self.label_index[gold["label"]]

    def featurize(self, records: Sequence[Any], ctx: FeaturizeContext) -> list[Feature]:
        if not records:
            return []
        first = [self.text_a(r) for r in records]
        second = [self.text_b(r) for r in records] if self.text_b is not None else None
        encoded = ctx.tokenizer(first, second, truncation=True, max_length=ctx.max_len,
                                return_token_type_ids=ctx.use_token_type_ids, return_length=False)
        full = ctx.tokenizer(first, second, truncation=False, return_attention_mask=False)["input_ids"]
        self.truncated = sum(len(ids) > ctx.max_len for ids in full)
        types = encoded.get("token_type_ids") if ctx.use_token_type_ids else None
        return [
            Feature(i, tuple(ids), tuple(types[i]) if types is not None else None, self._label(r), 1)
            for i, (r, ids) in enumerate(zip(records, encoded["input_ids"]))
        ]

    def decode(self, records: Sequence[Any], features: Sequence[Feature], outputs: Sequence[Any]) -> list[Any]:
        by_record: dict[int, np.ndarray] = {f.record_index: o for f, o in zip(features, outputs)}
        predictions = []
        for i, record in enumerate(records):
            row = by_record[i]
            guid = self.task.guid(record)
            if self.regression:
                predictions.append(self.prediction({"guid": guid, "score": float(row[0])}))
            else:
                predictions.append(self.prediction({"guid": guid, "label": self.task.labels[int(np.argmax(row))]}))
        return predictions
