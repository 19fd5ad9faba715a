"""YNAT baseline: character n-gram TF-IDF of the headline and a linear SVM.

Headlines are short (about 30 characters) and topical words are mostly nouns, so character 1-3-grams
inside word boundaries cover them without a morphological analyser; a linear SVM is the classic strong
choice for sparse text features.
"""

from __future__ import annotations

from typing import Any

from .records import YnatPrediction, YnatRecord


class TfidfSvmYnat:
    name = "char-tfidf-linear-svm"

    def __init__(self, seed: int, ngram_range: tuple[int, int] = (1, 3), c: float = 0.3, min_df: int = 2) -> None:
        self.seed = seed
        self.hyperparameters: dict[str, Any] = {
            "features": "character n-grams within word boundaries (char_wb), sublinear TF-IDF",
            "ngram_range": list(ngram_range), "min_df": min_df, "model": "LinearSVC", "C": c,
        }
        self._ngram_range = ngram_range
        self._c = c
        self._min_df = min_df
        self._vectorizer: Any = None
        self._model: Any = None

    def fit(self, train: list[YnatRecord], selection: list[YnatRecord] | None) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.svm import LinearSVC

        self._vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=self._ngram_range,
                                           sublinear_tf=True, min_df=self._min_df)
        features = self._vectorizer.fit_transform([r.title for r in train])
        self._model = LinearSVC(C=self._c, random_state=self.seed)
        self._model.fit(features, [r.label for r in train])

    def predict(self, records: list[YnatRecord]) -> list[YnatPrediction]:
        if self._model is None:
            raise RuntimeError("fit the baseline before predicting")
        labels = self._model.predict(self._vectorizer.transform([r.title for r in records]))
        return [YnatPrediction(r.guid, str(label)) for r, label in zip(records, labels, strict=True)]


def make_baseline(seed: int) -> TfidfSvmYnat:
    return TfidfSvmYnat(seed)
