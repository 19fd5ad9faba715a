"""YNAT for sentence-embedding models: the headline's embedding, a logistic regression over the 7 topics."""

from __future__ import annotations

from collections.abc import Mapping

from klue.tasks.embedding import Classification

from .records import YnatPrediction, YnatRecord


def _predict(record: YnatRecord, label: str, probabilities: Mapping[str, float]) -> YnatPrediction:
    return YnatPrediction(record.guid, label)


EMBEDDING = Classification(texts=lambda r: (r.title,), gold=lambda r: r.label, predict=_predict,
                           inputs="the headline")
