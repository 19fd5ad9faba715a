"""KLUE-DP (dependency parsing of eojeols): UAS/LAS macro and micro F1 as the official code defines them.

All words of all sentences are pooled. Heads are integers (0 = root); dependency labels are names from
`DEPRELS`, whose order matters: the official LAS collapses every label with index >= 15 into one class.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from klue.metrics.classification import (
    LabelCounts,
    check_aligned,
    check_mode,
    confusion_counts,
    encode,
    f1_ratio,
)
from klue.metrics.report import MetricMode, MetricReport, MetricSpec
from klue.metrics.statistics import (
    ExampleStatistics,
    Formula,
    column,
    combine,
    label_codes,
    label_count_columns,
)

TASK_NAME = "dp"
UAS_MACRO_F1 = MetricSpec("uas_macro_f1", "UAS macro F1")
LAS_MACRO_F1 = MetricSpec("las_macro_f1", "LAS macro F1")
UAS_MICRO_F1 = MetricSpec("uas_micro_f1", "UAS micro F1")
LAS_MICRO_F1 = MetricSpec("las_micro_f1", "LAS micro F1")
UAS = MetricSpec("uas", "UAS")  # standard attachment accuracy, reported beside the official ones
# Version 2: on UD labels `las` compares the universal part of a label only (CoNLL 2018); KLUE labels
# have no subtypes, so their `las` is as in version 1.
LAS = MetricSpec("las", "LAS", version="2")
LAS_FULL = MetricSpec("las_full", "LAS (full UD labels)")  # UD gold only: subtypes compared too
SPECS = (UAS_MACRO_F1, LAS_MACRO_F1, UAS_MICRO_F1, LAS_MICRO_F1, UAS, LAS, LAS_FULL)
UD_SUBTYPE_SEPARATOR = ":"  # `flat:name` is the universal relation `flat` with the subtype `name`
# Official DEPREL order (docs/tasks.md, DP): indices 0-14 are kept apart, 15-37 collapse into "others".
DEPRELS: tuple[str, ...] = (
    "NP", "NP_AJT", "VP", "NP_SBJ", "VP_MOD", "NP_OBJ", "AP", "NP_CNJ", "NP_MOD", "VNP", "DP", "VP_AJT",
    "VNP_MOD", "NP_CMP", "VP_SBJ", "VP_CMP", "VP_OBJ", "VNP_CMP", "AP_MOD", "X_AJT", "VP_CNJ", "VNP_AJT", "IP",
    "X", "X_SBJ", "VNP_OBJ", "VNP_SBJ", "X_OBJ", "AP_AJT", "L", "X_MOD", "X_CNJ", "VNP_CNJ", "X_CMP", "AP_CMP",
    "AP_SBJ", "R", "NP_SVJ",
)
OTHERS_FROM = 15  # official `others_idx`
_OTHERS = -3  # the official code's codes for the collapsed class and for "head wrong"
_PAD = -2
_DEPREL_CODE = {label: i for i, label in enumerate(DEPRELS)}


def _flat_heads(sentences: Sequence[Sequence[int]], what: str) -> np.ndarray:
    try:
        return np.fromiter(chain.from_iterable(sentences), dtype=np.int64)
    except (TypeError, ValueError):
        raise ValueError(f"{what} heads must be integers") from None


def _flat_deprels(sentences: Sequence[Sequence[str]], what: str) -> np.ndarray:
    try:
        return np.fromiter(map(_DEPREL_CODE.__getitem__, chain.from_iterable(sentences)), dtype=np.int64)
    except KeyError as error:
        raise ValueError(f"unknown {what} dependency label {error.args[0]!r}") from None


def _check_shapes(reference: Sequence[Sequence[object]], *others: Sequence[Sequence[object]]) -> None:
    for other in others:
        check_aligned(reference, other, "sentences")
        for i, (a, b) in enumerate(zip(reference, other)):
            if len(a) != len(b):
                raise ValueError(f"sentence {i}: {len(a)} gold words but {len(b)} predicted")


def uas_counts(gold_heads: Sequence[Sequence[int]], pred_heads: Sequence[Sequence[int]]) -> LabelCounts:
    """Per-head-value counts (head indices used as class labels), mergeable with `+`."""
    _check_shapes(gold_heads, pred_heads)
    gold, pred, labels = encode(_flat_heads(gold_heads, "gold").tolist(), _flat_heads(pred_heads, "predicted").tolist())
    return LabelCounts.from_confusion(confusion_counts(gold, pred, len(labels)), labels)


def las_counts(gold_heads: Sequence[Sequence[int]], gold_deprels: Sequence[Sequence[str]],
               pred_heads: Sequence[Sequence[int]], pred_deprels: Sequence[Sequence[str]]) -> LabelCounts:
    """Counts over the official LAS classes: labels 0-14 by index, -3 for every label >= 15, and -2 (PAD)
    as the prediction of every word whose head is wrong. Mergeable with `+`."""
    _check_shapes(gold_heads, gold_deprels, pred_heads, pred_deprels)
    head_right = _flat_heads(gold_heads, "gold") == _flat_heads(pred_heads, "predicted")
    gold = _flat_deprels(gold_deprels, "gold")
    pred = _flat_deprels(pred_deprels, "predicted")
    gold = np.where(gold >= OTHERS_FROM, _OTHERS, gold)
    pred = np.where(head_right, np.where(pred >= OTHERS_FROM, _OTHERS, pred), _PAD)
    codes, pred_codes, labels = encode(gold.tolist(), pred.tolist())
    return LabelCounts.from_confusion(confusion_counts(codes, pred_codes, len(labels)), labels)


@dataclass(frozen=True)
class AttachmentCounts:
    """Standard attachment counts, no collapse: per label, words labelled-attached correctly (tp), predicted
    with the label, and gold with the label; plus words and correct heads. Add with `+`."""

    tp: Mapping[str, int] = field(default_factory=dict)
    n_pred: Mapping[str, int] = field(default_factory=dict)
    n_gold: Mapping[str, int] = field(default_factory=dict)
    n_words: int = 0
    n_head_right: int = 0

    @classmethod
    def of(cls, gold_heads: Sequence[Sequence[int]], gold_deprels: Sequence[Sequence[str]],
           pred_heads: Sequence[Sequence[int]], pred_deprels: Sequence[Sequence[str]]) -> AttachmentCounts:
        _check_shapes(gold_heads, gold_deprels, pred_heads, pred_deprels)
        head_right = _flat_heads(gold_heads, "gold") == _flat_heads(pred_heads, "predicted")
        gold = _flat_deprels(gold_deprels, "gold")
        pred = _flat_deprels(pred_deprels, "predicted")
        k = len(DEPRELS)
        tp = np.bincount(gold[head_right & (gold == pred)], minlength=k)
        n_pred = np.bincount(pred, minlength=k)
        n_gold = np.bincount(gold, minlength=k)

        def named(counts: np.ndarray) -> dict[str, int]:
            return {DEPRELS[i]: int(c) for i, c in enumerate(counts) if c}

        return cls(named(tp), named(n_pred), named(n_gold), len(gold), int(head_right.sum()))

    def __add__(self, other: AttachmentCounts) -> AttachmentCounts:
        def add(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
            return {k: a.get(k, 0) + b.get(k, 0) for k in DEPRELS if a.get(k, 0) + b.get(k, 0)}

        return AttachmentCounts(add(self.tp, other.tp), add(self.n_pred, other.n_pred),
                                add(self.n_gold, other.n_gold), self.n_words + other.n_words,
                                self.n_head_right + other.n_head_right)

    def uas(self) -> float:
        return math.nan if self.n_words == 0 else 100.0 * self.n_head_right / self.n_words

    def las(self) -> float:
        return math.nan if self.n_words == 0 else 100.0 * sum(self.tp.values()) / self.n_words

    def las_macro_f1(self) -> float:
        labels = [k for k in DEPRELS if self.n_pred.get(k, 0) or self.n_gold.get(k, 0)]
        if not labels:
            return math.nan
        return 100.0 * float(np.mean([f1_ratio(self.tp.get(k, 0), self.n_pred.get(k, 0), self.n_gold.get(k, 0))
                                      for k in labels]))


def uas_macro_f1(gold_heads: Sequence[Sequence[int]], pred_heads: Sequence[Sequence[int]]) -> float:
    """KLUE-DP `uas_macro_f1` (0-100): macro F1 treating head INDICES as class labels.

    Official: sklearn `f1_score(gold_heads, pred_heads, average="macro")` over all words pooled; the
    classes are the head values present in gold or prediction ("head 3" is one class across all
    sentences). A peculiar definition rather than a bug: same in both modes.

    >>> uas_macro_f1([[2, 0, 2]], [[2, 0, 0]])  # class 0: F1 2/3, class 2: F1 2/3
    66.66666666666666
    """
    return uas_counts(gold_heads, pred_heads).macro_f1()


def uas_micro_f1(gold_heads: Sequence[Sequence[int]], pred_heads: Sequence[Sequence[int]]) -> float:
    """KLUE-DP `uas_micro_f1` (0-100): micro F1 over head classes, which is head accuracy (standard UAS).

    >>> uas_micro_f1([[2, 0, 2]], [[2, 0, 0]])
    66.66666666666667
    """
    return uas_counts(gold_heads, pred_heads).accuracy()


def las_macro_f1(gold_heads: Sequence[Sequence[int]], gold_deprels: Sequence[Sequence[str]],
                 pred_heads: Sequence[Sequence[int]], pred_deprels: Sequence[Sequence[str]],
                 mode: MetricMode = "official") -> float:
    """KLUE-DP `las_macro_f1` (0-100).

    Official: labels with index >= 15 in `DEPRELS` (gold and predicted) collapse into one "others"
    class; a word whose head is wrong gets the label PAD in the prediction; sklearn macro F1 over the
    classes present (PAD, never gold, counts with F1 0 whenever some head is wrong). Skipping the
    collapse is a known misreading (-34 points on real cases).
    Corrected: per-label labelled-attachment F1 without collapse or PAD class: for label L, tp = words
    with gold L, predicted L and the right head; F1 = 2tp / (#pred L + #gold L); macro over the labels
    present in gold or prediction.

    >>> heads, deprels = [[2, 0, 2]], [["NP_SBJ", "VP", "X_AJT"]]
    >>> las_macro_f1(heads, deprels, [[2, 0, 1]], [["NP_SBJ", "VP", "X_AJT"]])  # NP_SBJ 1, VP 1, others 0, PAD 0
    50.0
    >>> las_macro_f1(heads, deprels, [[2, 0, 2]], [["NP_SBJ", "VP", "X_CNJ"]])  # X_CNJ, X_AJT both "others"
    100.0
    >>> round(las_macro_f1(heads, deprels, [[2, 0, 2]], [["NP_SBJ", "VP", "X_CNJ"]], mode="corrected"), 6)
    50.0
    """
    check_mode(mode)
    if mode == "official":
        return las_counts(gold_heads, gold_deprels, pred_heads, pred_deprels).macro_f1()
    return AttachmentCounts.of(gold_heads, gold_deprels, pred_heads, pred_deprels).las_macro_f1()


def las_micro_f1(gold_heads: Sequence[Sequence[int]], gold_deprels: Sequence[Sequence[str]],
                 pred_heads: Sequence[Sequence[int]], pred_deprels: Sequence[Sequence[str]],
                 mode: MetricMode = "official") -> float:
    """KLUE-DP `las_micro_f1` (0-100).

    Official: share of words whose head is right AND whose label equals gold after the >= 15 collapse
    (two different labels of index >= 15 count as equal). Corrected: standard LAS (head right and label
    identical, no collapse).

    >>> heads, deprels = [[2, 0, 2]], [["NP_SBJ", "VP", "X_AJT"]]
    >>> las_micro_f1(heads, deprels, [[2, 0, 2]], [["NP_SBJ", "VP", "X_CNJ"]])
    100.0
    >>> las_micro_f1(heads, deprels, [[2, 0, 2]], [["NP_SBJ", "VP", "X_CNJ"]], mode="corrected")
    66.66666666666667
    """
    check_mode(mode)
    if mode == "official":
        return las_counts(gold_heads, gold_deprels, pred_heads, pred_deprels).accuracy()
    return AttachmentCounts.of(gold_heads, gold_deprels, pred_heads, pred_deprels).las()


def compute(gold_heads: Sequence[Sequence[int]], gold_deprels: Sequence[Sequence[str]],
            pred_heads: Sequence[Sequence[int]], pred_deprels: Sequence[Sequence[str]],
            mode: MetricMode = "official") -> MetricReport:
    """Scores `uas_macro_f1`, `las_macro_f1`, `uas_micro_f1`, `las_micro_f1` and the standard `uas`, `las`
    (attachment accuracy, no collapse, in both modes); breakdown `las_f1_per_label` (labelled-attachment
    F1 per gold/predicted label, no collapse)."""
    check_mode(mode)
    heads = uas_counts(gold_heads, pred_heads)
    attachment = AttachmentCounts.of(gold_heads, gold_deprels, pred_heads, pred_deprels)
    if mode == "official":
        las = las_counts(gold_heads, gold_deprels, pred_heads, pred_deprels)
        las_macro, las_micro = las.macro_f1(), las.accuracy()
    else:
        las_macro, las_micro = attachment.las_macro_f1(), attachment.las()
    per_label = {k: 100.0 * f1_ratio(attachment.tp.get(k, 0), attachment.n_pred.get(k, 0),
                                     attachment.n_gold.get(k, 0))
                 for k in DEPRELS if attachment.n_pred.get(k, 0) or attachment.n_gold.get(k, 0)}
    return MetricReport(
        task=TASK_NAME,
        mode=mode,
        scores={
            "uas_macro_f1": heads.macro_f1(),
            "las_macro_f1": las_macro,
            "uas_micro_f1": heads.accuracy(),
            "las_micro_f1": las_micro,
            "uas": attachment.uas(),
            "las": attachment.las(),
        },
        breakdown={"las_f1_per_label": per_label},
        n_examples=len(gold_heads),
    )


def universal_deprel(label: str) -> str:
    """The universal part of a UD label, the part the CoNLL 2018 shared task's evaluation compares (it
    drops language-specific subtypes): `flat:name` -> `flat`, `nsubj` -> `nsubj`."""
    return label.split(UD_SUBTYPE_SEPARATOR, 1)[0]


def compute_ud(gold_heads: Sequence[Sequence[int]], gold_deprels: Sequence[Sequence[str]],
               pred_heads: Sequence[Sequence[int]], pred_deprels: Sequence[Sequence[str]],
               mode: MetricMode = "official") -> MetricReport:
    """Scores for any other label set (UD Korean CoNLL-U), which has no KLUE label order to collapse by.

    Head scores are the official ones (they only use head indices). `las` is LAS as the CoNLL 2018 shared
    task computes it: right head and the same universal label (the part before ':', so `flat:name` and
    `flat` agree); `las_full` compares the full labels. Without a label order there is no collapse, so
    both modes give the same figures: `las_micro_f1` = `las_full`, and `las_macro_f1` = labelled-attachment
    F1 per full label (the breakdown `las_f1_per_label`), macro over the labels in gold or prediction.
    """
    check_mode(mode)
    _check_shapes(gold_heads, gold_deprels, pred_heads, pred_deprels)
    heads = uas_counts(gold_heads, pred_heads)
    tp: dict[str, int] = {}
    n_gold: dict[str, int] = {}
    n_pred: dict[str, int] = {}
    n_words = n_head_right = n_universal_right = 0
    for gh_row, gd_row, ph_row, pd_row in zip(gold_heads, gold_deprels, pred_heads, pred_deprels):
        for gh, gd, ph, pd in zip(gh_row, gd_row, ph_row, pd_row):
            n_words += 1
            n_gold[gd] = n_gold.get(gd, 0) + 1
            n_pred[pd] = n_pred.get(pd, 0) + 1
            if gh == ph:
                n_head_right += 1
                n_universal_right += universal_deprel(gd) == universal_deprel(pd)
                if gd == pd:
                    tp[gd] = tp.get(gd, 0) + 1
    per_label = {k: 100.0 * f1_ratio(tp.get(k, 0), n_pred.get(k, 0), n_gold.get(k, 0))
                 for k in sorted(set(n_gold) | set(n_pred))}
    las_full = _percent(sum(tp.values()), n_words)
    return MetricReport(
        task=TASK_NAME,
        mode=mode,
        scores={
            "uas_macro_f1": heads.macro_f1(),
            "las_macro_f1": float(np.mean(list(per_label.values()))) if per_label else math.nan,
            "uas_micro_f1": heads.accuracy(),
            "las_micro_f1": las_full,
            "uas": _percent(n_head_right, n_words),
            "las": _percent(n_universal_right, n_words),
            "las_full": las_full,
        },
        breakdown={"las_f1_per_label": per_label},
        n_examples=len(gold_heads),
    )


def _percent(count: int, total: int) -> float:
    return math.nan if total == 0 else 100.0 * count / total


# ------------------------------------------------------------------------------ per-sentence statistics

_LAS_CLASSES = (*DEPRELS[:OTHERS_FROM], "others", "PAD")  # the official LAS classes, as statistics labels


def _head_block(gold_heads: Sequence[Sequence[int]], pred_heads: Sequence[Sequence[int]], sentence_of: np.ndarray,
                n: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """`uas.*` columns (head indices as class labels) and the per-word head-right mask."""
    gold = _flat_heads(gold_heads, "gold")
    pred = _flat_heads(pred_heads, "predicted")
    values = sorted(set(gold.tolist()) | set(pred.tolist()))
    labels = [str(v) for v in values]
    names, block = label_count_columns("uas", labels, sentence_of, np.searchsorted(values, gold),
                                       np.searchsorted(values, pred), n)
    return names, block, gold == pred


def _per_sentence(mask: np.ndarray, sentence_of: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(sentence_of, weights=mask.astype(np.float64), minlength=n)


def statistics(gold_heads: Sequence[Sequence[int]], gold_deprels: Sequence[Sequence[str]],
               pred_heads: Sequence[Sequence[int]], pred_deprels: Sequence[Sequence[str]],
               mode: MetricMode = "official") -> ExampleStatistics:
    """Per-sentence statistics of `compute`'s scores: counts per head class (`uas.*`), per official LAS
    class (`las.*`: labels 0-14, others, PAD; official mode) or per label of the uncollapsed labelled
    attachment (`att.*`), words, right heads and right labelled attachments."""
    check_mode(mode)
    _check_shapes(gold_heads, gold_deprels, pred_heads, pred_deprels)
    n = len(gold_heads)
    sentence_of = np.repeat(np.arange(n), [len(h) for h in gold_heads])
    head_names, head_block, head_right = _head_block(gold_heads, pred_heads, sentence_of, n)
    gold = _flat_deprels(gold_deprels, "gold")
    pred = _flat_deprels(pred_deprels, "predicted")
    attached = head_right & (gold == pred)
    parts = [(head_names, head_block), column("words", np.bincount(sentence_of, minlength=n)),
             column("head_right", _per_sentence(head_right, sentence_of, n)),
             column("att.correct", _per_sentence(attached, sentence_of, n)),
             label_count_columns("att", DEPRELS, sentence_of, gold, pred, n, correct=attached)]
    others, pad = OTHERS_FROM, OTHERS_FROM + 1
    las_gold = np.minimum(gold, others)
    las_pred = np.where(head_right, np.minimum(pred, others), pad)
    parts += [column("las.correct", _per_sentence(las_gold == las_pred, sentence_of, n)),
              label_count_columns("las", _LAS_CLASSES, sentence_of, las_gold, las_pred, n)]
    if mode == "official":
        las_macro = Formula("las_macro_f1", "macro_f1", {"prefix": "las"})
        las_micro = Formula("las_micro_f1", "ratio", {"num": "las.correct", "den": "words"})
    else:
        las_macro = Formula("las_macro_f1", "macro_f1", {"prefix": "att"})
        las_micro = Formula("las_micro_f1", "ratio", {"num": "att.correct", "den": "words"})
    formulas = [Formula("uas_macro_f1", "macro_f1", {"prefix": "uas"}), las_macro,
                Formula("uas_micro_f1", "ratio", {"num": "head_right", "den": "words"}), las_micro,
                Formula("uas", "ratio", {"num": "head_right", "den": "words"}),
                Formula("las", "ratio", {"num": "att.correct", "den": "words"})]
    return combine(parts, formulas)


def statistics_ud(gold_heads: Sequence[Sequence[int]], gold_deprels: Sequence[Sequence[str]],
                  pred_heads: Sequence[Sequence[int]], pred_deprels: Sequence[Sequence[str]],
                  mode: MetricMode = "official") -> ExampleStatistics:
    """Per-sentence statistics of `compute_ud`'s scores (same in both modes): head classes, words, right
    heads, right universal labels, and per full label the labelled-attachment counts (`ud.*`)."""
    check_mode(mode)
    _check_shapes(gold_heads, gold_deprels, pred_heads, pred_deprels)
    n = len(gold_heads)
    sentence_of = np.repeat(np.arange(n), [len(h) for h in gold_heads])
    head_names, head_block, head_right = _head_block(gold_heads, pred_heads, sentence_of, n)
    gold_labels = [d for row in gold_deprels for d in row]
    pred_labels = [d for row in pred_deprels for d in row]
    labels = sorted(set(gold_labels) | set(pred_labels))
    gold, pred = label_codes(gold_labels, labels), label_codes(pred_labels, labels)
    attached = head_right & (gold == pred)
    universal = np.fromiter((universal_deprel(g) == universal_deprel(p) for g, p in zip(gold_labels, pred_labels)),
                            dtype=bool, count=len(gold_labels))
    parts = [(head_names, head_block), column("words", np.bincount(sentence_of, minlength=n)),
             column("head_right", _per_sentence(head_right, sentence_of, n)),
             column("universal_right", _per_sentence(head_right & universal, sentence_of, n)),
             column("ud.correct", _per_sentence(attached, sentence_of, n)),
             label_count_columns("ud", labels, sentence_of, gold, pred, n, correct=attached)]
    formulas = [Formula("uas_macro_f1", "macro_f1", {"prefix": "uas"}),
                Formula("las_macro_f1", "macro_f1", {"prefix": "ud"}),
                Formula("uas_micro_f1", "ratio", {"num": "head_right", "den": "words"}),
                Formula("las_micro_f1", "ratio", {"num": "ud.correct", "den": "words"}),
                Formula("uas", "ratio", {"num": "head_right", "den": "words"}),
                Formula("las", "ratio", {"num": "universal_right", "den": "words"}),
                Formula("las_full", "ratio", {"num": "ud.correct", "den": "words"})]
    return combine(parts, formulas)
