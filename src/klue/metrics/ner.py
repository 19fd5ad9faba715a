"""KLUE-NER (character-level IOB2 over 6 entity types): entity macro F1 and character macro F1.

Inputs are one tag list per sentence over the sentence's NON-SPACE characters (the official reader drops
spaces). Following the official code, each sentence is padded with one `O` on each side (standing for
[CLS] and [SEP]) and all sentences are concatenated into one flat sequence.

Speed: the official entity F1 runs seqeval strict mode over that one flat sequence of ~235k tags, which
takes 37-207 s on the dev set. Here entities are extracted with a handful of vectorised numpy operations
over integer tag codes (hand-written because no library does this fast) and matched as int64 keys; the
values are identical to seqeval's (tested on random sequences, benchmarked on the real dev set).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from klue.metrics.classification import LabelCounts, check_aligned, check_mode, confusion_counts, f1_ratio
from klue.metrics.report import MetricMode, MetricReport, MetricSpec
from klue.metrics.statistics import ExampleStatistics, Formula, combine, label_count_columns

TASK_NAME = "ner"
ENTITY_MACRO_F1 = MetricSpec("entity_macro_f1", "entity macro F1")
CHARACTER_MACRO_F1 = MetricSpec("character_macro_f1", "character macro F1")
SPECS = (ENTITY_MACRO_F1, CHARACTER_MACRO_F1)
ENTITY_TYPES: tuple[str, ...] = ("PS", "LC", "OG", "DT", "TI", "QT")
# The official label order (label_list of the KLUE baseline): B-/I- per type, then O.
TAGS: tuple[str, ...] = tuple(f"{p}-{t}" for t in ENTITY_TYPES for p in "BI") + ("O",)
OUTSIDE = "O"
_TAG_CODE: dict[str, int] = {tag: i for i, tag in enumerate(TAGS)}
# Per tag code: 1 for B-, 2 for I-, 0 for O; and the entity type index (-1 for O).
_KIND = np.array([1 if t.startswith("B-") else 2 if t.startswith("I-") else 0 for t in TAGS], dtype=np.int8)
_TYPE = np.array([ENTITY_TYPES.index(t[2:]) if t != OUTSIDE else -1 for t in TAGS], dtype=np.int64)


def _codes(sentences: Sequence[Sequence[str]], pad: bool) -> np.ndarray:
    """Tag codes of the flat sequence: `O` + tags + `O` per sentence when `pad` (the official layout)."""
    pad_code = _TAG_CODE[OUTSIDE]
    try:
        if pad:
            flat = chain.from_iterable(chain((pad_code,), map(_TAG_CODE.__getitem__, s), (pad_code,))
                                       for s in sentences)
        else:
            flat = chain.from_iterable(map(_TAG_CODE.__getitem__, s) for s in sentences)
        return np.fromiter(flat, dtype=np.int64)
    except KeyError as error:
        raise ValueError(f"unknown NER tag {error.args[0]!r}; tags are {' '.join(TAGS)}") from None


def _check_lengths(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> None:
    check_aligned(gold, pred, "sentences")
    for i, (g, p) in enumerate(zip(gold, pred)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted tags")


def extract_entities(codes: np.ndarray) -> np.ndarray:
    """Strict IOB2 entities of a flat tag-code sequence, as int64 keys (start, end, type) packed together.

    An entity is a `B-X` followed by the longest run of `I-X` (same type); an `I-X` that does not continue
    a `B-X`/`I-X` of the same type starts nothing (seqeval `mode="strict", scheme=IOB2`).
    """
    n = len(codes)
    kinds = _KIND[codes]
    types = _TYPE[codes]
    # cont[i]: tag i is I-X continuing an X-typed tag at i-1 (within a run opened by B-X this is exactly
    # "tag i is I-X"); the run of an entity starting at s ends at the first j > s with cont[j] False.
    cont = np.zeros(n + 1, dtype=bool)
    cont[1:n] = (kinds[1:] == 2) & (kinds[:-1] != 0) & (types[1:] == types[:-1])
    starts = np.flatnonzero(kinds == 1)
    breaks = np.flatnonzero(~cont)  # includes n, a sentinel end
    ends = breaks[np.searchsorted(breaks, starts, side="right")]
    n_types = len(ENTITY_TYPES)
    return (starts * (n + 1) + ends) * n_types + types[starts]


@dataclass(frozen=True)
class EntityCounts:
    """Per entity type: entities found in both (tp), predicted, and gold; add with `+`.

    Sentences are independent (the `O` padding stops entities at sentence ends), so counts of shards of
    sentences add up to the counts of the whole set.
    """

    tp: Mapping[str, int] = field(default_factory=dict)
    n_pred: Mapping[str, int] = field(default_factory=dict)
    n_gold: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> EntityCounts:
        _check_lengths(gold, pred)
        gold_keys = extract_entities(_codes(gold, pad=True))
        pred_keys = extract_entities(_codes(pred, pad=True))
        tp_keys = np.intersect1d(gold_keys, pred_keys, assume_unique=True)
        n_types = len(ENTITY_TYPES)

        def per_type(keys: np.ndarray) -> dict[str, int]:
            counts = np.bincount(keys % n_types, minlength=n_types)
            return {t: int(c) for t, c in zip(ENTITY_TYPES, counts) if c}

        return cls(per_type(tp_keys), per_type(pred_keys), per_type(gold_keys))

    def __add__(self, other: EntityCounts) -> EntityCounts:
        def add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
            return {t: a.get(t, 0) + b.get(t, 0) for t in ENTITY_TYPES if a.get(t, 0) + b.get(t, 0)}

        return EntityCounts(add(self.tp, other.tp), add(self.n_pred, other.n_pred), add(self.n_gold, other.n_gold))

    @property
    def types(self) -> list[str]:
        """Types with at least one entity in gold or prediction, in the official order."""
        return [t for t in ENTITY_TYPES if self.n_pred.get(t, 0) or self.n_gold.get(t, 0)]

    def f1_per_type(self) -> dict[str, float]:
        return {t: 100.0 * f1_ratio(self.tp.get(t, 0), self.n_pred.get(t, 0), self.n_gold.get(t, 0))
                for t in self.types}

    def macro_f1(self) -> float:
        scores = list(self.f1_per_type().values())
        return float(np.mean(scores)) if scores else math.nan


def entity_macro_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """KLUE-NER `entity_macro_f1` (0-100): entity-level F1 per type, macro-averaged.

    Definition (official: seqeval `f1_score([gold_flat], [pred_flat], average="macro", mode="strict",
    scheme=IOB2)` on the padded flat sequence): an entity is (type, start, end) of a `B-X` followed by
    its run of `I-X`; an `I-X` not continuing a `B-X`/`I-X` of the same type is no entity at all (strict
    mode; lenient/conlleval reading is a known misreading, -12 points). Per type F1 = 2tp / (#pred +
    #gold), averaged over the types with at least one entity in gold or prediction; NaN when there is
    no entity anywhere (seqeval averages an empty list). Same in both modes.

    >>> gold = [["B-PS", "I-PS", "O", "B-LC"], ["B-DT", "I-DT"]]
    >>> pred = [["B-PS", "I-PS", "O", "I-LC"], ["B-DT", "B-DT"]]  # I-LC starts no entity
    >>> round(entity_macro_f1(gold, pred), 6)  # PS 1, LC 0, DT 0 (two one-char entities, no match)
    33.333333
    """
    return EntityCounts.of(gold, pred).macro_f1()


def character_counts(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], pad: bool = True) -> (
        LabelCounts):
    """Per-tag counts over the flat character sequence (with the official `O` padding when `pad`)."""
    _check_lengths(gold, pred)
    matrix = confusion_counts(_codes(gold, pad), _codes(pred, pad), len(TAGS))
    return LabelCounts.from_confusion(matrix, TAGS)


def character_macro_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
                       mode: MetricMode = "official") -> float:
    """KLUE-NER `character_macro_f1` (0-100): per-character tag F1, macro-averaged.

    Official (sklearn `f1_score(labels=all 13 tag indices, average="macro", zero_division=True)` on the
    padded flat sequence): the average runs over ALL 13 tags INCLUDING `O` (although the official
    docstring says "except O"), the two padding `O`s per sentence count as correct `O`s, and a tag absent
    from both gold and prediction counts as F1 = 1 (0/0 -> zero_division=1).
    Corrected: what the docstring says: the 12 entity tags only, no padding, averaged over the tags
    present in gold or prediction (an absent tag is not averaged in as 1). Averaging without `O` lowers
    the value (-1.9 points on real cases).

    >>> gold = [["B-PS", "I-PS", "O", "O"]]
    >>> pred = [["B-PS", "O", "O", "O"]]
    >>> round(character_macro_f1(gold, pred), 6)  # B-PS 1, I-PS 0, O 8/9, 10 absent tags 1
    91.452991
    >>> round(character_macro_f1(gold, pred, mode="corrected"), 6)  # B-PS 1, I-PS 0
    50.0
    """
    check_mode(mode)
    if mode == "official":
        return character_counts(gold, pred, pad=True).macro_f1(TAGS, zero_division=1.0)
    counts = character_counts(gold, pred, pad=False)
    return counts.macro_f1([t for t in counts.labels if t != OUTSIDE])


def compute(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], mode: MetricMode = "official") -> (
        MetricReport):
    """Scores `entity_macro_f1` and `character_macro_f1`; breakdown `f1_per_type` (entity F1 per type
    present in gold or prediction) and `f1_per_tag` (character F1 per tag present)."""
    check_mode(mode)
    entities = EntityCounts.of(gold, pred)
    characters = character_counts(gold, pred, pad=(mode == "official"))
    if mode == "official":
        char_f1 = characters.macro_f1(TAGS, zero_division=1.0)
    else:
        char_f1 = characters.macro_f1([t for t in characters.labels if t != OUTSIDE])
    return MetricReport(
        task=TASK_NAME,
        mode=mode,
        scores={"entity_macro_f1": entities.macro_f1(), "character_macro_f1": char_f1},
        breakdown={
            "f1_per_type": entities.f1_per_type(),
            "f1_per_tag": {str(t): v for t, v in characters.f1_per_label(
                [t for t in TAGS if t in set(characters.labels)]).items()},
        },
        n_examples=len(gold),
    )


def statistics(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], mode: MetricMode = "official") -> (
        ExampleStatistics):
    """Per-sentence statistics of `compute`'s scores: entity tp / predicted / gold per type (`ent.*`) and
    character tp / predicted / gold per tag (`chr.*`; official: the 13 tags over the padded sentence,
    corrected: the 12 entity tags without padding). Sentences never share an entity (the padding), so
    the sums over sentences are `EntityCounts` and `character_counts` of the whole set."""
    check_mode(mode)
    _check_lengths(gold, pred)
    n = len(gold)
    lengths = np.fromiter((len(s) + 2 for s in gold), dtype=np.int64, count=n)
    offsets = np.r_[0, np.cumsum(lengths)[:-1]]
    gold_codes, pred_codes = _codes(gold, pad=True), _codes(pred, pad=True)
    gold_keys, pred_keys = extract_entities(gold_codes), extract_entities(pred_codes)
    tp_keys = np.intersect1d(gold_keys, pred_keys, assume_unique=True)
    n_types = len(ENTITY_TYPES)
    width = len(gold_codes) + 1

    def per_sentence(keys: np.ndarray) -> np.ndarray:
        sentence = np.searchsorted(offsets, keys // n_types // width, side="right") - 1
        return np.bincount(sentence * n_types + keys % n_types, minlength=n * n_types).reshape(n, n_types)

    entity_block = np.concatenate([per_sentence(tp_keys), per_sentence(pred_keys), per_sentence(gold_keys)], axis=1)
    entity_names = [f"ent.{part}:{t}" for part in ("tp", "pred", "gold") for t in ENTITY_TYPES]
    if mode == "official":
        sentence_of = np.repeat(np.arange(n), lengths)
        characters = label_count_columns("chr", TAGS, sentence_of, gold_codes, pred_codes, n)
        char_formula = Formula("character_macro_f1", "macro_f1",
                               {"prefix": "chr", "labels": list(TAGS), "zero_division": 1.0})
    else:
        sentence_of = np.repeat(np.arange(n), lengths - 2)
        outside = _TAG_CODE[OUTSIDE]
        g, p = _codes(gold, pad=False), _codes(pred, pad=False)
        entity_tags = [t for t in TAGS if t != OUTSIDE]
        characters = label_count_columns("chr", entity_tags, sentence_of, np.where(g == outside, -1, g),
                                         np.where(p == outside, -1, p), n, correct=g == p)
        char_formula = Formula("character_macro_f1", "macro_f1", {"prefix": "chr"})
    return combine([(entity_names, entity_block), characters],
                   [Formula("entity_macro_f1", "macro_f1", {"prefix": "ent"}), char_formula])
