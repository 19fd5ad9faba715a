"""What a task gives the sentence-embedding engine (`klue.embed`): which text(s) of a record to embed, the
gold value a frozen-feature model is fitted to, and how to turn that model's output into the task's
prediction. Each applicable task's `embedding.py` defines `EMBEDDING`, one of the two kinds below, and its
declaration names it (`embedding=".embedding:EMBEDDING"`); a task where a sentence embedding does not apply
(per-token tags, arcs, spans, dialogue states) declares `no_embedding="<why, one sentence>"` instead. The
engine never knows a task by name.

- `Classification`: one text per record (its embedding is the feature vector), or two (a pair: the features
  are u, v, |u - v| and u * v of their embeddings); a logistic regression on the training part predicts a
  probability per label.
- `Similarity`: two texts per record; the cosine similarity of their embeddings, calibrated on the training
  part to the task's score range (crossing the task's binary cut where F1 on the training pairs is best).

Nothing here imports torch or sklearn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Classification:
    """A label per record from a logistic regression on frozen embeddings."""

    texts: Callable[[Any], tuple[str, ...]]  # one text, or two (a pair)
    gold: Callable[[Any], str]  # the record's label (training)
    # (record, the most probable label, probability per label of the task's label set) -> prediction
    predict: Callable[[Any, str, Mapping[str, float]], Any]
    inputs: str  # what is embedded, in words, for results.json: "the title"
    n_texts: int = 1  # 1, or 2 for a pair; checked on every record

    @property
    def kind(self) -> str:
        return "pair classification" if self.n_texts == 2 else "classification"


@dataclass(frozen=True)
class Similarity:
    """A score per pair: the cosine of the two embeddings, mapped to `scale` by a fit on the training part."""

    texts: Callable[[Any], tuple[str, str]]
    gold: Callable[[Any], float]  # the gold score (training)
    predict: Callable[[Any, float], Any]  # (record, calibrated score) -> prediction
    scale: tuple[float, float]  # the gold scores' range: calibrated scores are clipped to it
    cut: float  # where the task's binary metric splits the scores (STS F1: 3.0): the calibration aims F1 there
    inputs: str

    kind = "similarity"
    n_texts = 2


EmbeddingUse = Classification | Similarity
