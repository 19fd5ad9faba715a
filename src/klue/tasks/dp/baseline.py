"""DP baseline: an arc-factored parser trained from scratch (no pretrained weights).

Arcs are scored by a linear model over hashed head-dependent pair features in the style of McDonald et
al. (2005): word forms, first and last morphemes, first/last/whole POS of each word (the records carry
gold POS, as the official KLUE baseline uses), the POS of neighbouring words, signed distance, and counts
of predicates, connective endings, adnominal endings and commas between head and dependent. Weights
are learned by an averaged structured perceptron with cost-augmented Chu-Liu/Edmonds decoding
(`klue.models.mst`), so every prediction is a tree with exactly one root. A logistic regression over
the dependent's and its predicted head's features then assigns the label: a linear SVM (liblinear),
which measured as accurate as multinomial logistic regression here at a tenth of the time.

Hand-written: the feature hashing and the perceptron (vectorised with numpy per sentence, which is what
keeps training to a few seconds); the label classifier is scikit-learn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from klue.models.mst import mst_decode

from .records import DpPrediction, DpRecord

# Tags that end a word without carrying its grammar: sentence-final and other punctuation, symbols.
_PUNCT_TAGS = frozenset({"SF", "SP", "SS", "SE", "SO", "SW", "SSO", "SSC", "PUNCT"})
_PREDICATE_TAGS = frozenset({"VV", "VA", "VX", "VCP", "VCN", "XSV", "XSA"})

# Atom values: 0 = outside the sentence, 1 = the root, 2 = unseen in training, 3+ = vocabulary.
_PAD, _ROOT, _UNK = 0, 1, 2
_ATTRIBUTES = ("form", "m_first", "m_last", "p_first", "p_last", "p_end", "p_full")
# Between-word indicators: counted over the words strictly between head and dependent.
_BETWEEN = ("predicate", "ec", "etm", "comma")

# A template is a tuple of atoms; an atom is (position, attribute) with position one of h, d, h-1, h+1,
# d-1, d+1, or ("dd", "") for the signed distance bucket, or ("bt", kind) for a between count.
_Atom = tuple[str, str]
_BASE_TEMPLATES: tuple[tuple[_Atom, ...], ...] = (
    (("h", "form"),), (("h", "p_full"),), (("h", "p_first"),), (("h", "m_first"),),
    (("d", "form"),), (("d", "p_full"),), (("d", "p_last"),), (("d", "m_last"),),
    (("h", "p_full"), ("d", "p_full")),
    (("h", "p_first"), ("d", "p_last")),
    (("h", "p_last"), ("d", "p_last")),
    (("h", "p_end"), ("d", "p_end")),
    (("h", "form"), ("d", "form")),
    (("h", "form"), ("d", "p_last")),
    (("h", "p_full"), ("d", "form")),
    (("h", "m_first"), ("d", "m_last")),
    (("h", "m_first"), ("d", "p_last")),
    (("h", "p_last"), ("d", "m_last")),
    (("h", "m_last"), ("d", "m_last")),
    (("h", "p_first"), ("h", "p_last"), ("d", "p_last")),
    (("h", "p_first"), ("h", "p_last"), ("d", "p_first"), ("d", "p_last")),
    (("h", "p_last"), ("h+1", "p_first"), ("d-1", "p_last"), ("d", "p_last")),
    (("h", "p_last"), ("h-1", "p_last"), ("d", "p_last"), ("d+1", "p_first")),
    (("h", "p_last"), ("h+1", "p_first"), ("d", "p_last"), ("d+1", "p_first")),
    (("h-1", "p_last"), ("h", "p_last"), ("d-1", "p_last"), ("d", "p_last")),
    (("d", "p_last"), ("d+1", "p_full")),
    (("h", "p_full"), ("h-1", "p_last")),
    *((("bt", kind), ("d", "p_last")) for kind in _BETWEEN),
    *((("bt", kind), ("h", "p_last"), ("d", "p_last")) for kind in _BETWEEN),
)
# Every template also appears conjoined with the signed distance bucket.
TEMPLATES: tuple[tuple[_Atom, ...], ...] = (
    (("dd", ""),),
    *_BASE_TEMPLATES,
    *((*template, ("dd", "")) for template in _BASE_TEMPLATES),
)

_MIX_MULT = np.uint64(0x9E3779B97F4A7C15)
_MIX_PRIME = np.uint64(1_000_003)


def _hash_columns(template_index: int, columns: Sequence[np.ndarray], n_buckets: int) -> np.ndarray:
    """Deterministic 64-bit mix of a template index and its atom values, reduced to bucket ids."""
    with np.errstate(over="ignore"):
        value = np.full(columns[0].shape, np.uint64(template_index + 1) * _MIX_MULT, dtype=np.uint64)
        for column in columns:
            value = (value ^ column.astype(np.uint64)) * _MIX_PRIME
        value ^= value >> np.uint64(31)
        value *= _MIX_MULT
        value ^= value >> np.uint64(29)
    return (value % np.uint64(n_buckets)).astype(np.int32)


def _content_end(tags: Sequence[str]) -> int:
    """Index of the last morpheme that is not punctuation (the one carrying the word's grammar)."""
    for index in range(len(tags) - 1, -1, -1):
        if tags[index] not in _PUNCT_TAGS:
            return index
    return len(tags) - 1


def word_strings(record: DpRecord) -> list[dict[str, str]]:
    """The string attributes of each word the arc and label features are built from."""
    words = []
    for form, lemma, pos in zip(record.words, record.lemmas, record.pos, strict=True):
        tags = pos.split("+")
        morphemes = lemma.split(" ")
        end = _content_end(tags)
        last_morpheme = morphemes[min(end, len(morphemes) - 1)]
        words.append({
            "form": form,
            "m_first": f"{morphemes[0]}/{tags[0]}",
            "m_last": f"{last_morpheme}/{tags[end]}",
            "p_first": tags[0],
            "p_last": tags[end],
            "p_end": tags[-1],
            "p_full": pos,
        })
    return words


def _bucket_distance(signed: np.ndarray) -> np.ndarray:
    magnitude = np.abs(signed)
    bucket = np.where(magnitude <= 5, magnitude, np.where(magnitude <= 10, 6, 7))
    return np.sign(signed) * bucket + 8  # 1..15, all positive


def _count_bucket(counts: np.ndarray) -> np.ndarray:
    return np.minimum(counts, 3) + 1


@dataclass
class _Vocabulary:
    """String -> id per attribute, grown on the training records in their order (deterministic)."""

    ids: dict[str, dict[str, int]] = field(default_factory=lambda: {a: {} for a in _ATTRIBUTES})
    frozen: bool = False

    def lookup(self, attribute: str, value: str) -> int:
        table = self.ids[attribute]
        found = table.get(value)
        if found is not None:
            return found
        if self.frozen:
            return _UNK
        table[value] = len(table) + 3
        return table[value]


@dataclass(frozen=True)
class _Sentence:
    features: np.ndarray  # (n+1, n+1, n_templates) int32 bucket ids; [h, d] is the arc h -> d
    heads: np.ndarray  # (n,) gold heads (zeros when unknown)


def _sentence_features(record: DpRecord, vocabulary: _Vocabulary, n_buckets: int) -> np.ndarray:
    n = len(record.words)
    strings = word_strings(record)
    values = {a: np.array([_ROOT] + [vocabulary.lookup(a, w[a]) for w in strings] + [_PAD], dtype=np.int64)
              for a in _ATTRIBUTES}  # index 0 = root, 1..n = words, n+1 = past the end
    tags = [pos.split("+") for pos in record.pos]
    indicators = {
        "predicate": [any(t in _PREDICATE_TAGS for t in word) for word in tags],
        "ec": [word[_content_end(word)] == "EC" for word in tags],
        "etm": [word[_content_end(word)] == "ETM" for word in tags],
        "comma": ["SP" in word or "," in form for word, form in zip(tags, record.words)],
    }
    heads_grid = np.arange(n + 1)[:, None] * np.ones((1, n + 1), dtype=np.int64)
    deps_grid = heads_grid.T
    low = np.minimum(heads_grid, deps_grid)
    high = np.maximum(heads_grid, deps_grid)
    between: dict[str, np.ndarray] = {}
    for kind, flags in indicators.items():
        cumulative = np.concatenate([[0, 0], np.cumsum(np.array(flags, dtype=np.int64))])  # [i] = sum < i
        counts = cumulative[high] - cumulative[np.minimum(low + 1, high)]
        counts[heads_grid == 0] = cumulative[deps_grid[heads_grid == 0]]  # root arcs: words before d
        between[kind] = _count_bucket(counts)
    distance = _bucket_distance(heads_grid - deps_grid)
    distance[0, :] = 0  # root arcs carry their own distance value

    def atom(position: str, attribute: str) -> np.ndarray:
        if position == "dd":
            return distance
        if position == "bt":
            return between[attribute]
        array = values[attribute]
        grid = heads_grid if position[0] == "h" else deps_grid
        offset = int(position[1:]) if len(position) > 1 else 0
        shifted = grid + offset
        # h-1 of the root and d-1 of word 1 are the root (the sentence start); past the end is padding.
        shifted = np.clip(shifted, 0, n + 1)
        if position[0] == "h":
            shifted = np.where(grid == 0, 0 if offset == 0 else n + 1, shifted)
        return array[shifted]

    return np.stack([_hash_columns(index, [atom(*a) for a in template], n_buckets)
                     for index, template in enumerate(TEMPLATES)], axis=-1)


class ArcPerceptron:
    """Averaged structured perceptron over hashed arc features, decoded by single-root MST."""

    def __init__(self, epochs: int, n_buckets: int, cost_augmented: bool, seed: int) -> None:
        self.epochs = epochs
        self.n_buckets = n_buckets
        self.cost_augmented = cost_augmented
        self.seed = seed
        self.vocabulary = _Vocabulary()
        self.weights = np.zeros(n_buckets)

    def _scores(self, features: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return weights[features].sum(axis=-1)

    def fit(self, records: Sequence[DpRecord]) -> None:
        self.vocabulary = _Vocabulary()
        sentences = [_Sentence(_sentence_features(r, self.vocabulary, self.n_buckets),
                               np.array(r.heads, dtype=np.int64)) for r in records]
        self.vocabulary.frozen = True
        weights = np.zeros(self.n_buckets)
        accumulated = np.zeros(self.n_buckets)  # sum of step * update, for the averaging trick
        step = 1
        rng = np.random.default_rng(self.seed)
        for _ in range(self.epochs):
            for index in rng.permutation(len(sentences)):
                sentence = sentences[index]
                n = len(sentence.heads)
                dependents = np.arange(1, n + 1)
                scores = self._scores(sentence.features, weights)
                if self.cost_augmented:  # Hamming cost: a margin of one per wrong arc
                    scores = scores + 1.0
                    scores[sentence.heads, dependents] -= 1.0
                predicted = mst_decode(scores)
                wrong = predicted != sentence.heads
                if wrong.any():
                    gold_ids = sentence.features[sentence.heads[wrong], dependents[wrong]].ravel()
                    pred_ids = sentence.features[predicted[wrong], dependents[wrong]].ravel()
                    np.add.at(weights, gold_ids, 1.0)
                    np.add.at(weights, pred_ids, -1.0)
                    np.add.at(accumulated, gold_ids, float(step))
                    np.add.at(accumulated, pred_ids, -float(step))
                step += 1
        self.weights = weights - accumulated / step

    def predict_heads(self, record: DpRecord) -> np.ndarray:
        features = _sentence_features(record, self.vocabulary, self.n_buckets)
        return mst_decode(self._scores(features, self.weights))


def _as_given(features: list[str]) -> list[str]:
    """The analyzer for pre-extracted string features (a named function, so the model pickles)."""
    return features


def _label_features(record: DpRecord, heads: Sequence[int]) -> list[list[str]]:
    """String features of each (dependent, head) pair for the label classifier."""
    strings = word_strings(record)
    n = len(strings)
    rows = []
    for d, head in enumerate(heads):
        word = strings[d]
        head_word = strings[head - 1] if head > 0 else None
        row = [f"d.{k}={word[k]}" for k in ("form", "m_last", "p_last", "p_end", "p_full", "p_first")]
        row.append(f"d.last2={'+'.join(record.pos[d].split('+')[-2:])}")
        if head_word is None:
            row.append("h=ROOT")
        else:
            row += [f"h.{k}={head_word[k]}" for k in ("m_first", "p_first", "p_last", "p_full")]
            row.append(f"dp={word['p_last']}|{head_word['p_first']}")
            row.append(f"dph={word['p_last']}|{head_word['p_last']}")
            row.append(f"dist={min(head - (d + 1), 6)}")
        row.append(f"next={strings[d + 1]['p_first'] if d + 1 < n else 'END'}")
        rows.append(row)
    return rows


class DpBaseline:
    """The DP baseline: `ArcPerceptron` heads, then a logistic-regression labeller."""

    name = "arc-perceptron-mst"

    def __init__(self, seed: int, epochs: int = 10, n_buckets: int = 1 << 22, cost_augmented: bool = True,
                 label_c: float = 0.5) -> None:
        self.seed = seed
        self.hyperparameters: dict[str, Any] = {
            "arc_model": "averaged structured perceptron, cost-augmented single-root Chu-Liu/Edmonds",
            "epochs": epochs, "n_buckets": n_buckets, "cost_augmented": cost_augmented,
            "n_arc_templates": len(TEMPLATES),
            "label_model": "linear SVM (liblinear, one-vs-rest) on binary word-pair features",
            "label_c": label_c,
            "pos": "gold POS from the records (as the official baseline)",
        }
        self._parser = ArcPerceptron(epochs, n_buckets, cost_augmented, seed)
        self._label_c = label_c
        self._labeller: Any = None
        self._vectorizer: Any = None
        self._single_label: str | None = None

    def fit(self, train: list[DpRecord], selection: list[DpRecord] | None) -> None:
        # `selection` is not used: the perceptron runs a fixed number of epochs.
        from sklearn.feature_extraction.text import CountVectorizer
        from sklearn.svm import LinearSVC

        self._parser.fit(train)
        rows = [row for record in train for row in _label_features(record, record.heads)]
        labels = [label for record in train for label in record.deprels]
        self._vectorizer = CountVectorizer(analyzer=_as_given, binary=True, lowercase=False)
        matrix = self._vectorizer.fit_transform(rows)
        if len(set(labels)) == 1:
            self._single_label = labels[0]
            return
        self._labeller = LinearSVC(C=self._label_c, random_state=self.seed)
        self._labeller.fit(matrix, labels)

    def predict(self, records: list[DpRecord]) -> list[DpPrediction]:
        if self._vectorizer is None:
            raise RuntimeError("DpBaseline.predict called before fit")
        heads = [self._parser.predict_heads(record) for record in records]
        rows = [row for record, h in zip(records, heads) for row in _label_features(record, h.tolist())]
        if self._single_label is not None:
            flat = [self._single_label] * len(rows)
        else:
            flat = list(self._labeller.predict(self._vectorizer.transform(rows))) if rows else []
        predictions = []
        start = 0
        for record, h in zip(records, heads):
            stop = start + len(record.words)
            predictions.append(DpPrediction(record.guid, tuple(int(x) for x in h), tuple(flat[start:stop])))
            start = stop
        return predictions


def make_baseline(seed: int) -> DpBaseline:
    return DpBaseline(seed)
