"""RE for sentence-embedding models: the sentence with its two entities marked by typed markers
(`<subj:PER>`...`</subj:PER>`, `<obj:ORG>`...`</obj:ORG>`), a logistic regression over the 30 relations whose
probabilities (0 for a relation the training part lacks) give AUPRC."""

from __future__ import annotations

from collections.abc import Mapping

from klue.tasks.embedding import Classification

from .markers import mark
from .records import RELATIONS, RePrediction, ReRecord


def _predict(record: ReRecord, label: str, probabilities: Mapping[str, float]) -> RePrediction:
    return RePrediction(record.guid, label, tuple(float(probabilities.get(r, 0.0)) for r in RELATIONS))


EMBEDDING = Classification(texts=lambda r: (mark(r, typed=True)[0],), gold=lambda r: r.label, predict=_predict,
                           inputs="the sentence with typed entity markers")
