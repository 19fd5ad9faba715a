"""MRC baseline: BM25 sentence retrieval, then a logistic-regression ranker over candidate answer spans.

1. The context is split into sentences and eojeols (space-separated words) and analysed with Kiwi.
2. BM25 over content morphemes ranks the sentences against the question; the top `top_sentences` are kept.
3. Candidates are runs of 1..`max_span_words` eojeols of a kept sentence, from the first non-symbol
   morpheme of the first eojeol to the last content morpheme of the last one (so `1989년에` yields
   `1989년`, `임종석의` yields `임종석`: answers rarely carry their particles).
4. A binary logistic regression scores each candidate from indicator features in the spirit of the SQuAD
   feature baseline (Rajpurkar et al. 2016): the sentence's rank, the span's length and shape, its
   overlap with the question (answers rarely repeat the question), distances to the question's words in
   the sentence, and the question word (누구/언제/어디/몇 ...) and the question's last noun crossed with the
   span's last morpheme, tag and particle. The best candidate is the answer.

Training candidates are all positives (span text = a gold answer) plus up to `negatives_per_question`
negatives drawn with the seed. Unanswerable questions (KLUE MRC type 3) get "" when the best candidate's
probability is below a threshold chosen on the training questions; with no unanswerable training
questions (KorQuAD) the threshold is 0 and every question gets an answer.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from klue.text.features import CONTENT_TAGS, Morpheme, analyse, log_bin

from .records import MrcPrediction, MrcRecord

_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"[.?!。]['\"”’)]*$")
_TRAILING_TAGS = ("J", "E", "VCP", "VCN", "XSV", "XSA", "VX", "SF", "SP", "SE", "SS", "SW", "SO")
_LEADING_TAGS = ("SS", "SW", "SP", "SE", "SO", "SF")
_QUESTION_WORDS = ("누구", "누가", "언제", "어디", "며칠", "몇", "얼마", "무엇", "무슨", "어떤", "어느", "왜", "어떻게", "뭐")
_BM25_K1, _BM25_B = 1.2, 0.75
_HASHED_FEATURES = 2**20  # FeatureHasher (murmurhash, process-independent): no vocabulary to build
# Questions whose candidates are featurised at a time: the feature dicts of all candidates of the official
# train set (17,554 questions, ~200 candidates each) would take several GB; hashed chunks do not, and the
# hasher and the row-wise logistic regression give the same numbers chunk by chunk.
_CHUNK_QUESTIONS = 1000


@dataclass(frozen=True)
class Word:
    """An eojeol of the context: its characters and where its candidate spans may start and end."""

    start: int
    end: int
    core_start: int  # after leading brackets and quotes
    core_end: int | None  # after the last content morpheme; None when the eojeol has none
    content: tuple[str, ...]  # content morpheme forms
    last_tag: str
    last_form: str
    suffix: str  # the characters after core_end (particles, endings, punctuation)


@dataclass(frozen=True)
class Paragraph:
    words: tuple[Word, ...]
    sentences: tuple[tuple[int, int], ...]  # [first word, last word + 1)


@dataclass(frozen=True)
class Question:
    content: frozenset[str]
    text: str
    wh: str
    head: str  # the question's last noun (날, 인물, 연도 ...)


@dataclass(frozen=True)
class Candidate:
    sentence_rank: int
    bm25: float
    first: int
    last: int
    text: str
    sentence: tuple[int, int]  # [first word, last word + 1) of its sentence
    matched: tuple[int, ...]  # the sentence's words that share a content morpheme with the question


def _word(context: str, start: int, end: int, inside: list[Morpheme]) -> Word:
    core_start = next((m.start for m in inside if not m.tag.startswith(_LEADING_TAGS)), start)
    content = [m for m in inside if m.tag.startswith(CONTENT_TAGS) and m.start >= core_start]
    last_content = content[-1] if content else None
    kept = [m for m in inside if not m.tag.startswith(_TRAILING_TAGS)]
    core_end = None
    if last_content is not None:
        core_end = max(min(m.end, end) for m in kept if m.start >= core_start) if kept else last_content.end
        core_end = max(core_end, min(last_content.end, end))
    last = kept[-1] if kept else (inside[-1] if inside else Morpheme(context[start:end], "UNK", start, end - start))
    return Word(start, end, core_start, core_end, tuple(m.form for m in content), last.tag, last.form,
                context[core_end:end] if core_end is not None else context[start:end])


def paragraph(context: str, morphemes: list[Morpheme]) -> Paragraph:
    spans = [(m.start(), m.end()) for m in _WORD.finditer(context)]
    grouped: list[list[Morpheme]] = [[] for _ in spans]
    index = 0
    for morpheme in sorted(morphemes, key=lambda m: m.start):  # one pass: morphemes and words are both in order
        while index < len(spans) and morpheme.start >= spans[index][1]:
            index += 1
        if index < len(spans) and morpheme.start >= spans[index][0]:
            grouped[index].append(morpheme)
    words = tuple(_word(context, a, b, inside) for (a, b), inside in zip(spans, grouped, strict=True))
    sentences, first = [], 0
    for index, word in enumerate(words):
        if _SENTENCE_END.search(context[word.start:word.end]) or index == len(words) - 1:
            sentences.append((first, index + 1))
            first = index + 1
    return Paragraph(words, tuple(sentences))


def question(text: str, morphemes: list[Morpheme]) -> Question:
    wh = next((w for w in _QUESTION_WORDS if w in text), "none")
    nouns = [m.form for m in morphemes if m.tag.startswith("NN")]
    return Question(frozenset(m.form for m in morphemes if m.tag.startswith(CONTENT_TAGS)), text, wh,
                    nouns[-1] if nouns else "none")


def _matches(word: Word, q: Question) -> bool:
    return any(form in q.content for form in word.content)


class SpanRankerMrc:
    name = "bm25-span-logreg"

    def __init__(self, seed: int, top_sentences: int = 3, max_span_words: int = 5,
                 negatives_per_question: int = 30, c: float = 0.5) -> None:
        self.seed = seed
        self.hyperparameters: dict[str, Any] = {
            "retrieval": "BM25 over Kiwi content morphemes", "bm25_k1": _BM25_K1, "bm25_b": _BM25_B,
            "top_sentences": top_sentences, "max_span_words": max_span_words,
            "negatives_per_question": negatives_per_question, "model": "LogisticRegression (lbfgs)", "C": c,
        }
        self._top = top_sentences
        self._max_words = max_span_words
        self._negatives = negatives_per_question
        self._c = c
        self._document_frequency: Counter[str] = Counter()
        self._n_sentences = 0
        self._vectorizer: Any = None
        self._model: Any = None
        self._threshold = 0.0

    # -- analysis ---------------------------------------------------------------------------------
    def _analyse(self, records: list[MrcRecord]) -> tuple[dict[str, Paragraph], list[Question]]:
        contexts = sorted({r.context for r in records})
        paragraphs = {c: paragraph(c, m) for c, m in zip(contexts, analyse(contexts), strict=True)}
        questions = [question(r.question, m) for r, m in zip(records, analyse([r.question for r in records]),
                                                             strict=True)]
        return paragraphs, questions

    @staticmethod
    def _sentence_terms(p: Paragraph) -> list[list[str]]:
        return [[form for word in p.words[a:b] for form in word.content] for a, b in p.sentences]

    def _idf(self, term: str) -> float:
        df = self._document_frequency.get(term, 0)
        return math.log(1 + (self._n_sentences - df + 0.5) / (df + 0.5))

    def _ranked_sentences(self, p: Paragraph, q: Question) -> list[tuple[int, float]]:
        terms = self._sentence_terms(p)
        average = max(1.0, sum(map(len, terms)) / max(1, len(terms)))
        scores = []
        for index, sentence in enumerate(terms):
            counts = Counter(sentence)
            norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * len(sentence) / average)
            score = sum(self._idf(t) * counts[t] * (_BM25_K1 + 1) / (counts[t] + norm) for t in q.content if t in counts)
            scores.append((index, score))
        return sorted(scores, key=lambda item: (-item[1], item[0]))[:self._top]

    def _candidates(self, context: str, p: Paragraph, q: Question) -> list[Candidate]:
        ranked = self._ranked_sentences(p, q)
        best = max((score for _, score in ranked), default=0.0) or 1.0
        out = []
        for rank, (index, score) in enumerate(ranked):
            a, b = p.sentences[index]
            matched = tuple(k for k in range(a, b) if _matches(p.words[k], q))
            for first in range(a, b):
                start = p.words[first].core_start
                for last in range(first, min(b, first + self._max_words)):
                    end = p.words[last].core_end
                    if end is not None and end > start:
                        out.append(Candidate(rank, score / best, first, last, context[start:end], (a, b), matched))
        return out

    @staticmethod
    def _features(p: Paragraph, q: Question, candidate: Candidate) -> dict[str, float]:
        """Indicator features of one candidate (computed only for the candidates a step needs)."""
        rank, bm25, first, last, text = (candidate.sentence_rank, candidate.bm25, candidate.first,
                                         candidate.last, candidate.text)
        (a, b), matched = candidate.sentence, candidate.matched
        words = p.words[first:last + 1]
        content = [form for w in words for form in w.content]
        overlap = sum(form in q.content for form in content) / max(1, len(content))
        left = [first - k for k in matched if k < first]
        right = [k - last for k in matched if k > last]
        inside = sum(1 for k in matched if first <= k <= last)
        near = sum(1 for k in matched if first - 3 <= k < first or last < k <= last + 3)
        tail = words[-1]
        has_number = any(ch.isdigit() for ch in text)
        tail_form = tail.last_form if len(tail.last_form) <= 2 else "*"
        features = {
            f"rank={rank}": 1.0, "bm25": bm25, f"words={len(words)}": 1.0, f"chars={log_bin(len(text), 5)}": 1.0,
            f"overlap={0 if overlap == 0 else (1 if overlap <= 0.5 else 2)}": 1.0,
            f"inside_matches={min(inside, 2)}": 1.0, f"near_matches={min(near, 4)}": 1.0,
            f"left_distance={log_bin(min(left), 4) if left else 'none'}": 1.0,
            f"right_distance={log_bin(min(right), 4) if right else 'none'}": 1.0,
            "left_neighbour_matches": float(first > a and _matches(p.words[first - 1], q)),
            "right_neighbour_matches": float(last + 1 < b and _matches(p.words[last + 1], q)),
            f"last_tag={tail.last_tag}": 1.0, f"suffix={tail.suffix[:3]}": 1.0,
            f"wh={q.wh}|last_tag={tail.last_tag}": 1.0, f"wh={q.wh}|number={has_number}": 1.0,
            f"wh={q.wh}|last_form={tail_form}": 1.0, f"wh={q.wh}|suffix={tail.suffix[:2]}": 1.0,
            f"wh={q.wh}|words={len(words)}": 1.0,
            f"head={q.head}|last_form={tail_form}": 1.0, f"head={q.head}|last_tag={tail.last_tag}": 1.0,
            f"head={q.head}|number={has_number}": 1.0, f"in_question={text in q.text}": 1.0,
        }
        return features

    # -- training and prediction ----------------------------------------------------------------------
    def fit(self, train: list[MrcRecord], selection: list[MrcRecord] | None) -> None:
        from scipy.sparse import vstack
        from sklearn.feature_extraction import FeatureHasher
        from sklearn.linear_model import LogisticRegression

        paragraphs, questions = self._analyse(train)
        self._document_frequency = Counter()
        self._n_sentences = 0
        for p in paragraphs.values():
            for terms in self._sentence_terms(p):
                self._document_frequency.update(set(terms))
                self._n_sentences += 1
        self._vectorizer = FeatureHasher(n_features=_HASHED_FEATURES, alternate_sign=False)
        rng = np.random.default_rng(self.seed)
        blocks: list[Any] = []
        labels: list[int] = []
        rows: list[dict[str, float]] = []
        for index, (record, q) in enumerate(zip(train, questions, strict=True)):
            golds = set(record.answer_texts)
            candidates = self._candidates(record.context, paragraphs[record.context], q)
            positives = [c for c in candidates if c.text in golds]
            negatives = [c for c in candidates if c.text not in golds]
            if len(negatives) > self._negatives:
                keep = rng.choice(len(negatives), size=self._negatives, replace=False)
                negatives = [negatives[i] for i in sorted(keep)]
            rows += [self._features(paragraphs[record.context], q, c) for c in positives + negatives]
            labels += [1] * len(positives) + [0] * len(negatives)
            if (index + 1) % _CHUNK_QUESTIONS == 0 or index + 1 == len(train):
                if rows:
                    blocks.append(self._vectorizer.transform(rows))
                rows = []
        if not any(labels):
            raise RuntimeError("no training question has its answer among the candidate spans")
        self._model = LogisticRegression(C=self._c, max_iter=1000)
        self._model.fit(vstack(blocks, format="csr"), labels)
        self._threshold = self._choose_threshold(train, paragraphs, questions)

    def _best(self, records: list[MrcRecord], paragraphs: dict[str, Paragraph],
              questions: list[Question]) -> list[tuple[str, float]]:
        """Each question's best candidate and its probability, scored `_CHUNK_QUESTIONS` at a time."""
        out: list[tuple[str, float]] = []
        for first in range(0, len(records), _CHUNK_QUESTIONS):
            last = first + _CHUNK_QUESTIONS
            out += self._best_of_chunk(records[first:last], paragraphs, questions[first:last])
        return out

    def _best_of_chunk(self, records: list[MrcRecord], paragraphs: dict[str, Paragraph],
                       questions: list[Question]) -> list[tuple[str, float]]:
        candidates = [self._candidates(r.context, paragraphs[r.context], q) for r, q in zip(records, questions, strict=True)]
        rows = [self._features(paragraphs[r.context], q, c)
                for r, q, cs in zip(records, questions, candidates, strict=True) for c in cs]
        scores = self._model.predict_proba(self._vectorizer.transform(rows))[:, 1] if rows else np.zeros(0)
        out, offset = [], 0
        for cs in candidates:
            if not cs:
                out.append(("", 0.0))
                continue
            best = offset + int(np.argmax(scores[offset:offset + len(cs)]))
            out.append((cs[best - offset].text, float(scores[best])))
            offset += len(cs)
        return out

    def _choose_threshold(self, train: list[MrcRecord], paragraphs: dict[str, Paragraph],
                          questions: list[Question]) -> float:
        """The best-candidate probability below which "" scores best on the training questions."""
        if not any(r.is_impossible for r in train):
            return 0.0
        outcomes = []  # (probability, +1 if answering this question is right, -1 if "" is right, 0 if neither)
        for record, (text, probability) in zip(train, self._best(train, paragraphs, questions), strict=True):
            gain = -1 if record.is_impossible else (1 if text in record.answer_texts else 0)
            outcomes.append((probability, gain))
        outcomes.sort()
        best_threshold, best_total, total = 0.0, 0, 0
        for probability, gain in outcomes:  # abstaining below `probability` gains -gain for each question
            total -= gain
            if total > best_total:
                best_total, best_threshold = total, probability + 1e-9
        return best_threshold

    def predict(self, records: list[MrcRecord]) -> list[MrcPrediction]:
        if self._model is None:
            raise RuntimeError("fit the baseline before predicting")
        paragraphs, questions = self._analyse(records)
        return [MrcPrediction(record.guid, text if probability >= self._threshold else "")
                for record, (text, probability) in zip(records, self._best(records, paragraphs, questions), strict=True)]


def make_baseline(seed: int) -> SpanRankerMrc:
    return SpanRankerMrc(seed)
