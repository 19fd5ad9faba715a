"""NLI baseline: pair features over Kiwi morphemes and a multinomial logistic regression.

Features: TF-IDF of the hypothesis' morpheme 1-2-grams, of the morphemes the hypothesis adds to the
premise and of those it drops, plus dense cues -- overlap ratios, negation on one side only, numbers new
in the hypothesis, new content morphemes by part of speech, endings and particles of the hypothesis,
longest common substring. A hypothesis-only model scores about 40% on KLUE NLI (its hypotheses carry
little annotation bias), so the pair cues do most of the work.
"""

from __future__ import annotations

import difflib
import math
from typing import Any

import numpy as np

from klue.text.features import CONTENT_TAGS, NEGATION_FORMS, Morpheme, analyse, char_ngrams, containment

from .records import NliPrediction, NliRecord

_NEW_CONTENT_TAGS = ("NNG", "NNP", "VV", "VA", "MAG", "SN", "MM", "NNB", "XR")
_FUNCTION_TAGS = ("EP", "EF", "EC", "ETM", "JKS", "JX", "JKB", "VX", "VCN", "VCP")


def _keys(morphemes: list[Morpheme]) -> str:
    return " ".join(m.key for m in morphemes)


def _added(premise: list[Morpheme], hypothesis: list[Morpheme]) -> str:
    """The hypothesis' morphemes that the premise lacks, in hypothesis order."""
    seen = {m.key for m in premise}
    return " ".join(m.key for m in hypothesis if m.key not in seen)


def cue_features(premise: str, hypothesis: str, mp: list[Morpheme], mh: list[Morpheme]) -> list[float]:
    keys_p, keys_h = {m.key for m in mp}, {m.key for m in mh}
    content_p = {m.key for m in mp if m.tag.startswith(CONTENT_TAGS)}
    content_h = {m.key for m in mh if m.tag.startswith(CONTENT_TAGS)}
    new_content = [m for m in mh if m.tag.startswith(CONTENT_TAGS) and m.key not in content_p]
    neg_p = sum(m.form in NEGATION_FORMS for m in mp)
    neg_h = sum(m.form in NEGATION_FORMS for m in mh)
    numbers_p = {m.form for m in mp if m.tag == "SN"}
    numbers_h = {m.form for m in mh if m.tag == "SN"}
    matcher = difflib.SequenceMatcher(None, premise, hypothesis, autojunk=False)
    longest = matcher.find_longest_match(0, len(premise), 0, len(hypothesis)).size
    features = [
        containment(keys_h, keys_p), containment(keys_p, keys_h), containment(content_h, content_p),
        float(len(content_h - content_p)), len({m.key for m in new_content}) / max(1, len(content_h)),
        len(hypothesis) / max(1, len(premise)), math.log1p(len(hypothesis)), math.log1p(len(premise)),
        float(neg_h - neg_p), float(neg_h > 0), float(neg_p > 0), float((neg_h > 0) != (neg_p > 0)),
        float(bool(numbers_h - numbers_p)), float(bool(numbers_h)),
        containment(char_ngrams(hypothesis, 2), char_ngrams(premise, 2)),
        containment(char_ngrams(hypothesis, 3), char_ngrams(premise, 3)),
        longest / max(1, len(hypothesis)), matcher.ratio(),
    ]
    features += [float(sum(1 for m in {x.key: x for x in new_content}.values() if m.tag == tag))
                 for tag in _NEW_CONTENT_TAGS]
    features += [float(sum(1 for m in mh if m.tag == tag)) for tag in _FUNCTION_TAGS]
    return features


class PairLogRegNli:
    name = "pair-features-logreg"

    def __init__(self, seed: int, c: float = 1.0) -> None:
        self.seed = seed
        self.hyperparameters: dict[str, Any] = {
            "features": "TF-IDF of hypothesis morpheme 1-2-grams, of morphemes added and dropped by the "
                        "hypothesis; standardised overlap/negation/number/POS cues",
            "model": "LogisticRegression (lbfgs, multinomial)", "C": c, "max_iter": 2000,
        }
        self._c = c
        self._vectorizers: list[Any] = []
        self._scaler: Any = None
        self._model: Any = None

    def _views(self, records: list[NliRecord]) -> tuple[list[list[str]], np.ndarray]:
        mp = analyse([r.premise for r in records])
        mh = analyse([r.hypothesis for r in records])
        texts = [[_keys(h) for h in mh], [_added(p, h) for p, h in zip(mp, mh, strict=True)],
                 [_added(h, p) for p, h in zip(mp, mh, strict=True)]]
        cues = np.array([cue_features(r.premise, r.hypothesis, p, h)
                         for r, p, h in zip(records, mp, mh, strict=True)], dtype=np.float64)
        return texts, cues

    def _matrix(self, texts: list[list[str]], cues: np.ndarray) -> Any:
        from scipy.sparse import csr_matrix, hstack

        parts = [v.transform(t) for v, t in zip(self._vectorizers, texts, strict=True)]
        return hstack([*parts, csr_matrix(self._scaler.transform(cues))]).tocsr()

    def fit(self, train: list[NliRecord], selection: list[NliRecord] | None) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        texts, cues = self._views(train)
        self._vectorizers = [TfidfVectorizer(token_pattern=r"\S+", lowercase=False, sublinear_tf=True,
                                             ngram_range=ngrams).fit(view)
                             for view, ngrams in zip(texts, ((1, 2), (1, 1), (1, 1)), strict=True)]
        self._scaler = StandardScaler().fit(cues)
        self._model = LogisticRegression(C=self._c, max_iter=2000)
        self._model.fit(self._matrix(texts, cues), [r.gold_label for r in train])

    def predict(self, records: list[NliRecord]) -> list[NliPrediction]:
        if self._model is None:
            raise RuntimeError("fit the baseline before predicting")
        labels = self._model.predict(self._matrix(*self._views(records)))
        return [NliPrediction(r.guid, str(label)) for r, label in zip(records, labels, strict=True)]


def make_baseline(seed: int) -> PairLogRegNli:
    return PairLogRegNli(seed)
