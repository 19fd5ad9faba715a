"""KLUE-MRC (extractive reading comprehension with unanswerable questions): exact match and "ROUGE-W".

Every question has a list of gold answer texts (empty for an unanswerable question, whose only right
answer is ""); a prediction is one text ("" = no answer). Scores are the max over the golds of each
question, then the mean over questions.

The official "ROUGE-W" is a misnomer: it is the F1 of the longest common CONTIGUOUS substring, found by
`difflib.SequenceMatcher(None, pred, gold).find_longest_match`, whose "autojunk" heuristic (on by
default) ignores characters that are frequent in a gold of 200+ characters. Corrected mode reports true
ROUGE-W (weighted LCS, Lin 2004), ROUGE-L (LCS) and the exact substring F1 beside it.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np

from klue.metrics.classification import check_aligned, check_mode
from klue.metrics.report import MetricMode, MetricReport, MetricSpec
from klue.metrics.statistics import ExampleStatistics, Formula, column, combine

TASK_NAME = "mrc"
EXACT_MATCH = MetricSpec("exact_match", "EM")
ROUGE_W = MetricSpec("rouge_w", "ROUGE-W")  # a misnomer: an LCS-substring F1 (see `rouge_w`)
ROUGE_L = MetricSpec("rouge_l", "ROUGE-L")  # corrected mode only
SUBSTRING_F1 = MetricSpec("substring_f1", "substring F1")  # corrected mode only
SPECS = (EXACT_MATCH, ROUGE_W, ROUGE_L, SUBSTRING_F1)
QUESTION_TYPES = {1: "paraphrase", 2: "multi-sentence reasoning", 3: "unanswerable"}

# The official pattern: one quote/bracket character FOLLOWED BY the literal four characters `()‘’` (the
# intended character class was closed too early), so in practice it never matches.
_OFFICIAL_QUOTES = re.compile("[" + re.escape("'\"《》<>〈〉") + "]" + re.escape("()‘’"))
# What it meant: any one of these characters becomes a space.
_INTENDED_QUOTES = re.compile("[" + re.escape("'\"《》<>〈〉()‘’") + "]")
_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str, mode: MetricMode = "official") -> str:
    """The official answer normalisation (mode "official") or the intended one ("corrected").

    Lower-case; replace the quote/bracket pattern by a space (official: the literal 5-character pattern,
    a no-op in practice; corrected: each of ' " 《 》 < > 〈 〉 ( ) ‘ ’ alone); delete ASCII
    `string.punctuation`; collapse whitespace with `" ".join(text.split())` (which also splits on NBSP and
    U+3000, as `str.split` does).

    >>> normalize_answer("〈한국〉의  'ABC' 사(社)")
    '〈한국〉의 abc 사社'
    >>> normalize_answer("〈한국〉의  'ABC' 사(社)", mode="corrected")
    '한국 의 abc 사 社'
    """
    check_mode(mode)
    pattern = _OFFICIAL_QUOTES if mode == "official" else _INTENDED_QUOTES
    text = pattern.sub(" ", text.lower())
    return " ".join(text.translate(_ASCII_PUNCTUATION).split())


def longest_common_substring(a: str, b: str) -> int:
    """Length of the longest common contiguous substring of `a` and `b` (exact; O(len a * len b)).

    >>> longest_common_substring("서울특별시청", "특별시")
    3
    """
    best = 0
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0] * (len(b) + 1)
        for j, cb in enumerate(b, start=1):
            if ca == cb:
                value = current[j] = previous[j - 1] + 1
                best = max(best, value)
        previous = current
    return best


def longest_common_subsequence(a: str, b: str) -> int:
    """Length of the longest common subsequence (characters in order, gaps allowed).

    >>> longest_common_subsequence("abcde", "ace")
    3
    """
    previous = [0] * (len(b) + 1)
    for ca in a:
        current = [0]
        for j, cb in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if ca == cb else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def weighted_lcs(candidate: str, reference: str) -> float:
    """WLCS score of Lin (2004) with weight f(k) = k^2: consecutive matches are rewarded quadratically.

    >>> weighted_lcs("abcd", "abcd"), weighted_lcs("abxcd", "abcd")
    (16.0, 8.0)
    """
    n = len(reference)
    score = [[0.0] * (n + 1) for _ in range(2)]
    run = [[0] * (n + 1) for _ in range(2)]
    for i, ca in enumerate(candidate, start=1):
        cur, prev = i % 2, (i - 1) % 2
        for j, cb in enumerate(reference, start=1):
            if ca == cb:
                k = run[prev][j - 1]
                score[cur][j] = score[prev][j - 1] + (k + 1) ** 2 - k ** 2
                run[cur][j] = k + 1
            elif score[prev][j] > score[cur][j - 1]:
                score[cur][j], run[cur][j] = score[prev][j], 0
            else:
                score[cur][j], run[cur][j] = score[cur][j - 1], 0
    return score[len(candidate) % 2][n]


def _f1(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0.0 else 2.0 * precision * recall / (precision + recall)


def substring_f1(pred: str, gold: str, autojunk: bool = True) -> float:
    """F1 (0-1) of the longest common contiguous substring L: P = L/len(pred), R = L/len(gold). For gold ""
    the score is exact match. With `autojunk` (official) L is what difflib finds, which for golds of 200+
    characters can be shorter than the true L; without it, the exact L.

    >>> substring_f1("서울 특별시", "서울특별시청")  # L = 3 ("특별시"): P 3/6, R 3/6
    0.5
    """
    if gold == "":
        return float(pred == gold)
    if autojunk:
        size = SequenceMatcher(None, pred, gold).find_longest_match(0, len(pred), 0, len(gold)).size
    else:
        size = longest_common_substring(pred, gold)
    return _f1(size / len(pred) if pred else 0.0, size / len(gold))


def rouge_l_f1(pred: str, gold: str) -> float:
    """ROUGE-L F1 (0-1) over characters: LCS / len(pred), LCS / len(gold); exact match for gold ""."""
    if gold == "":
        return float(pred == gold)
    if not pred:
        return 0.0
    lcs = longest_common_subsequence(pred, gold)
    return _f1(lcs / len(pred), lcs / len(gold))


def rouge_w_f1(pred: str, gold: str) -> float:
    """True ROUGE-W F1 (0-1) over characters (Lin 2004, f(k) = k^2, beta 1): R = sqrt(WLCS / len(gold)^2),
    P = sqrt(WLCS / len(pred)^2); exact match for gold "".

    >>> round(rouge_w_f1("abxcd", "abcd"), 6)  # WLCS 8: R = sqrt(8/16), P = sqrt(8/25)
    0.628539
    """
    if gold == "":
        return float(pred == gold)
    if not pred:
        return 0.0
    wlcs = weighted_lcs(pred, gold)
    return _f1(math.sqrt(wlcs) / len(pred), math.sqrt(wlcs) / len(gold))


def _golds(answers: Sequence[str], mode: MetricMode) -> list[str]:
    # Official: an unanswerable question (no answer) has the single gold "".
    return [normalize_answer(a, mode) for a in answers] or [""]


def _best(pred: str, golds: Sequence[str], score: Callable[[str, str], float]) -> float:
    # Official `compute_em_and_rouge_w_score_for_klue_mrc` starts the max from 0.0.
    return max([0.0, *(score(pred, g) for g in golds)])


def _exact(pred: str, gold: str) -> float:
    return float(pred == gold)


def _official_substring(pred: str, gold: str) -> float:
    return substring_f1(pred, gold, autojunk=True)


def _exact_substring(pred: str, gold: str) -> float:
    return substring_f1(pred, gold, autojunk=False)


# Per mode: the metrics computed per question, by score name.
_PER_QUESTION: dict[str, dict[str, Callable[[str, str], float]]] = {
    "official": {"exact_match": _exact, "rouge_w": _official_substring},
    "corrected": {"exact_match": _exact, "rouge_w": rouge_w_f1, "rouge_l": rouge_l_f1,
                  "substring_f1": _exact_substring},
}


@dataclass(frozen=True)
class MrcSums:
    """Sums of the per-question scores (0-1) and the number of questions; add with `+`."""

    sums: tuple[tuple[str, float], ...] = ()
    n: int = 0

    def __add__(self, other: MrcSums) -> MrcSums:
        if not self.sums:
            return other
        if not other.sums:
            return self
        merged = tuple((k, v + dict(other.sums)[k]) for k, v in self.sums)
        return MrcSums(merged, self.n + other.n)

    def means(self) -> dict[str, float]:
        return {k: math.nan if self.n == 0 else 100.0 * v / self.n for k, v in self.sums}


def per_question_scores(gold_answers: Sequence[Sequence[str]], pred: Sequence[str],
                        mode: MetricMode = "official") -> dict[str, list[float]]:
    """Each question's score (0-1) per metric name: the max over its golds after normalisation."""
    check_mode(mode)
    check_aligned(gold_answers, pred, "questions")
    metrics = _PER_QUESTION[mode]
    scores: dict[str, list[float]] = {name: [] for name in metrics}
    for answers, raw in zip(gold_answers, pred):
        prediction = normalize_answer(raw, mode)
        golds = _golds(answers, mode)
        for name, score in metrics.items():
            scores[name].append(_best(prediction, golds, score))
    return scores


def sums(gold_answers: Sequence[Sequence[str]], pred: Sequence[str], mode: MetricMode = "official") -> MrcSums:
    scores = per_question_scores(gold_answers, pred, mode)
    return MrcSums(tuple((k, math.fsum(v)) for k, v in scores.items()), len(pred))


def exact_match(gold_answers: Sequence[Sequence[str]], pred: Sequence[str], mode: MetricMode = "official") -> float:
    """KLUE-MRC `exact_match` (0-100): share of questions whose normalised prediction equals one of the
    normalised golds ("" for an unanswerable question). See `normalize_answer` for the official
    normalisation and its no-op punctuation regex (corrected mode applies the intended one).

    >>> exact_match([["서울의 봄"], []], ["서울의 봄!", ""])  # ASCII "!" is removed; "" answers "no answer"
    100.0
    >>> exact_match([["〈한국〉"]], ["한국"]), exact_match([["〈한국〉"]], ["한국"], mode="corrected")
    (0.0, 100.0)
    """
    return _mean(per_question_scores(gold_answers, pred, mode)["exact_match"])


def rouge_w(gold_answers: Sequence[Sequence[str]], pred: Sequence[str], mode: MetricMode = "official") -> float:
    """KLUE-MRC `rouge_w` (0-100).

    Official (a misnomer): per gold, L = the longest common contiguous substring of prediction and gold
    as `difflib.SequenceMatcher(None, pred, gold).find_longest_match` finds it (autojunk on: in a gold
    of 200+ characters, characters occurring more than 1% + 1 times cannot seed a match, so L can come
    out shorter than the truth), P = L / len(pred), R = L / len(gold), F1; for gold "" exact match; max
    over golds (from 0), mean over questions.
    Corrected: true character ROUGE-W (weighted LCS with f(k) = k^2, F1) on the corrected normalisation;
    the same report carries `rouge_l` (LCS F1) and `substring_f1` (the official idea without autojunk).

    >>> rouge_w([["서울특별시청"]], ["서울 특별시"])  # L = 3 ("특별시"), P 3/6, R 3/6
    50.0
    >>> round(rouge_w([["서울특별시청"]], ["서울 특별시"], mode="corrected"), 6)
    60.092521
    """
    return _mean(per_question_scores(gold_answers, pred, mode)["rouge_w"])


def _mean(values: Sequence[float]) -> float:
    return math.nan if not values else 100.0 * math.fsum(values) / len(values)


def compute(gold_answers: Sequence[Sequence[str]], pred: Sequence[str], question_types: Sequence[int] | None = None,
            mode: MetricMode = "official") -> MetricReport:
    """Scores `exact_match`, `rouge_w` (+ `rouge_l`, `substring_f1` in corrected mode); breakdown
    `per_question_type` ({"1/exact_match": .., "1/rouge_w": .., "1/n_questions": .., ...})."""
    scores = per_question_scores(gold_answers, pred, mode)
    breakdown: dict[str, dict[str, float]] = {}
    if question_types is not None:
        check_aligned(gold_answers, question_types, "question types")
        per_type: dict[str, float] = {}
        for qtype in sorted(set(question_types)):
            positions = [i for i, t in enumerate(question_types) if t == qtype]
            for name, values in scores.items():
                per_type[f"{qtype}/{name}"] = _mean([values[i] for i in positions])
            per_type[f"{qtype}/n_questions"] = float(len(positions))
        breakdown["per_question_type"] = per_type
    return MetricReport(
        task=TASK_NAME,
        mode=mode,
        scores={name: _mean(values) for name, values in scores.items()},
        breakdown=breakdown,
        n_examples=len(pred),
    )


def statistics(gold_answers: Sequence[Sequence[str]], pred: Sequence[str], mode: MetricMode = "official") -> (
        ExampleStatistics):
    """Per-question statistics of `compute`'s scores: 1 and each per-question score (0-1, `q:<metric>`);
    each metric is their mean."""
    scores = per_question_scores(gold_answers, pred, mode)
    parts = [column("n", np.ones(len(pred)))] + [column(f"q:{name}", values) for name, values in scores.items()]
    return combine(parts, [Formula(name, "ratio", {"num": f"q:{name}", "den": "n"}) for name in scores])
