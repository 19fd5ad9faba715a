"""Text features shared by the CPU baselines: Kiwi morphemes, character n-grams, set overlaps."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from klue.text.kiwi import analyser

# Tag prefixes (Sejong tag set, as Kiwi emits it) of morphemes that carry content: nouns, verbs,
# adjectives, roots, numbers, foreign words, adverbs and determiners.
CONTENT_TAGS = ("NN", "NR", "NP", "VV", "VA", "XR", "SN", "SL", "SH", "MA", "MM")
NOMINAL_TAGS = ("NN", "NR", "NP", "SN", "SL", "SH", "XR")
PREDICATE_TAGS = ("VV", "VA")
# Negation cues: the auxiliary/predicate morphemes and adverbs that flip a statement's polarity.
NEGATION_FORMS = frozenset({"않", "없", "못", "안", "아니", "말", "금지", "불가", "불가능", "별로", "전혀"})


class Morpheme(NamedTuple):  # a tuple, not a dataclass: contexts give hundreds of thousands of them
    form: str
    tag: str
    start: int  # character offset into the analysed text
    length: int

    @property
    def end(self) -> int:
        return self.start + self.length

    @property
    def key(self) -> str:
        return f"{self.form}/{self.tag}"

    def is_content(self) -> bool:
        return self.tag.startswith(CONTENT_TAGS)


def analyse(texts: Sequence[str]) -> list[list[Morpheme]]:
    """Kiwi's best analysis of each text, with character offsets. Each distinct text is analysed once (Kiwi
    reads every text on its own, so a repeat gets the same analysis): an NLI premise comes with three
    hypotheses, and a third of the NLI baseline's Kiwi time went to analysing premises again."""
    if not texts:
        return []
    distinct = list(dict.fromkeys(texts))
    analysed = {text: [Morpheme(t.form, t.tag, t.start, t.len) for t in tokens]
                for text, tokens in zip(distinct, analyser().tokenize(distinct), strict=True)}
    return [list(analysed[text]) for text in texts]


def char_ngrams(text: str, n: int) -> list[str]:
    """Character n-grams of the text without its spaces (Korean spacing varies between writers)."""
    compact = text.replace(" ", "")
    return [compact[i:i + n] for i in range(len(compact) - n + 1)]


def jaccard(a: Iterable[Any], b: Iterable[Any]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa or sb else 1.0


def dice(a: Iterable[Any], b: Iterable[Any]) -> float:
    sa, sb = set(a), set(b)
    return 2 * len(sa & sb) / (len(sa) + len(sb)) if sa or sb else 1.0


def containment(part: Iterable[Any], whole: Iterable[Any]) -> float:
    """Share of the distinct items of `part` that occur in `whole` (1 when `part` is empty)."""
    sp, sw = set(part), set(whole)
    return len(sp & sw) / len(sp) if sp else 1.0


def log_bin(value: float, cap: int = 8) -> int:
    """A small integer bucket for a count or distance, for indicator features."""
    return min(cap, int(math.log2(value + 1)))
