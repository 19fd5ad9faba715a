"""RE baseline: entity-pair features and a multinomial logistic regression over the 30 relations.

Features: the two entity types, their pair and order, the distance between them, the characters
right before and after each mention (Korean particles and brackets say a lot: `부구욱(` ...), the mentions'
last characters, and character n-gram TF-IDF of the text between the entities and of a window around
them. Logistic regression gives a probability for every relation seen in training (0 for those never
seen), which the AUPRC metric needs; the label is the most probable relation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from klue.text.features import log_bin

from .records import RELATIONS, Entity, RePrediction, ReRecord

_WINDOW = 10  # characters of context on each side of the entity pair


def _ordered(record: ReRecord) -> tuple[Entity, Entity]:
    s, o = record.subject_entity, record.object_entity
    return (s, o) if s.start_idx <= o.start_idx else (o, s)


def between_text(record: ReRecord) -> str:
    first, second = _ordered(record)
    return record.sentence[first.end_idx + 1:second.start_idx]


def window_text(record: ReRecord) -> str:
    first, second = _ordered(record)
    text = record.sentence
    return f"{text[max(0, first.start_idx - _WINDOW):first.start_idx]} | {text[second.end_idx + 1:second.end_idx + 1 + _WINDOW]}"


def pair_indicators(record: ReRecord) -> dict[str, float]:
    text, s, o = record.sentence, record.subject_entity, record.object_entity
    order = "SO" if s.start_idx <= o.start_idx else "OS"
    between = between_text(record)
    return {
        f"subject_type={s.type}": 1.0, f"object_type={o.type}": 1.0, f"types={s.type}>{o.type}": 1.0,
        f"order={order}": 1.0, f"types_order={s.type}>{o.type}:{order}": 1.0,
        f"distance_bin={log_bin(len(between), 6)}": 1.0,
        f"words_between={min(8, len(between.split()))}": 1.0,
        "bracket_apposition": float("(" in between and len(between) < 4),
        f"after_subject={text[s.end_idx + 1:s.end_idx + 3]}": 1.0,
        f"after_object={text[o.end_idx + 1:o.end_idx + 3]}": 1.0,
        f"before_subject={text[max(0, s.start_idx - 2):s.start_idx]}": 1.0,
        f"before_object={text[max(0, o.start_idx - 2):o.start_idx]}": 1.0,
        f"subject_last={s.word[-1:]}": 1.0, f"object_last={o.word[-1:]}": 1.0,
        f"object_last2={o.word[-2:]}": 1.0,
    }


class EntityPairLogRegRe:
    name = "entity-pair-logreg"

    def __init__(self, seed: int, c: float = 1.0) -> None:
        self.seed = seed
        self.hyperparameters: dict[str, Any] = {
            "features": "entity types/pair/order, distance, characters around each mention, char_wb TF-IDF "
                        "(1-3-grams between the entities, 1-2-grams in a 10-character window around them)",
            "model": "LogisticRegression (lbfgs, multinomial)", "C": c, "max_iter": 3000,
        }
        self._c = c
        self._indicators: Any = None
        self._between: Any = None
        self._window: Any = None
        self._model: Any = None

    def _matrix(self, records: list[ReRecord]) -> Any:
        from scipy.sparse import hstack

        return hstack([
            self._indicators.transform([pair_indicators(r) for r in records]),
            self._between.transform([between_text(r) for r in records]),
            self._window.transform([window_text(r) for r in records]),
        ]).tocsr()

    def fit(self, train: list[ReRecord], selection: list[ReRecord] | None) -> None:
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        self._indicators = DictVectorizer().fit([pair_indicators(r) for r in train])
        self._between = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 3), sublinear_tf=True,
                                        min_df=2).fit([between_text(r) for r in train])
        self._window = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 2), sublinear_tf=True,
                                       min_df=2).fit([window_text(r) for r in train])
        self._model = LogisticRegression(C=self._c, max_iter=3000)
        self._model.fit(self._matrix(train), [r.label for r in train])

    def predict(self, records: list[ReRecord]) -> list[RePrediction]:
        if self._model is None:
            raise RuntimeError("fit the baseline before predicting")
        seen = self._model.predict_proba(self._matrix(records))
        probs = np.zeros((len(records), len(RELATIONS)))
        columns = [RELATIONS.index(label) for label in self._model.classes_]
        probs[:, columns] = seen
        best = probs.argmax(axis=1)
        return [RePrediction(r.guid, RELATIONS[int(k)], tuple(float(p) for p in row))
                for r, k, row in zip(records, best, probs, strict=True)]


def make_baseline(seed: int) -> EntityPairLogRegRe:
    return EntityPairLogRegRe(seed)
