"""STS for sentence-embedding models: the cosine similarity of the two sentences' embeddings, mapped to the
0-5 scale by a calibration fitted on the training part (Pearson r is the official metric; F1 thresholds the
calibrated score at 3.0)."""

from __future__ import annotations

from klue.tasks.embedding import Similarity

from .records import BINARY_THRESHOLD, MAX_SCORE, MIN_SCORE, StsPrediction, StsRecord


def _predict(record: StsRecord, score: float) -> StsPrediction:
    return StsPrediction(record.guid, score)


EMBEDDING = Similarity(texts=lambda r: (r.sentence1, r.sentence2), gold=lambda r: r.real_label, predict=_predict,
                       scale=(MIN_SCORE, MAX_SCORE), cut=BINARY_THRESHOLD, inputs="the two sentences, apart")
