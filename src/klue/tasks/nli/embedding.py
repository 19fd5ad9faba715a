"""NLI for sentence-embedding models: premise and hypothesis embedded apart, a logistic regression over the
pair features (u, v, |u - v|, u * v) predicts entailment, neutral or contradiction."""

from __future__ import annotations

from collections.abc import Mapping

from klue.tasks.embedding import Classification

from .records import NliPrediction, NliRecord


def _predict(record: NliRecord, label: str, probabilities: Mapping[str, float]) -> NliPrediction:
    return NliPrediction(record.guid, label)


EMBEDDING = Classification(texts=lambda r: (r.premise, r.hypothesis), gold=lambda r: r.gold_label,
                           predict=_predict, inputs="premise and hypothesis, apart (pair features)", n_texts=2)
