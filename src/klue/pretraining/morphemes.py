"""Morpheme boundaries from Kiwi (kiwipiepy), as character offsets into the text Kiwi was given.

Kiwi analyses contracted forms into morphemes that share characters ("했다" = 하/VV + 었/EP + 다/EF, the
first two both on "했"), so a morpheme is not always a substring. What a tokenizer can use is the set of
*surface cut points*: the starts and ends of Kiwi's tokens, minus any point that falls strictly inside
another token's span ("다녔다": 다니 covers "다녔" and 었 covers "녔", so the cut is "다녔|다", not
"다|녔|다").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


def cut_points(text: str, spans: Iterable[tuple[int, int]]) -> list[int]:
    """Sorted cut points strictly inside `text` from morpheme `spans` (start, end); see the module doc."""
    spans = [(s, e) for s, e in spans if 0 <= s < e <= len(text)]
    candidates = {p for span in spans for p in span if 0 < p < len(text)}
    inside = {p for s, e in spans for p in range(s + 1, e)}
    return sorted(p for p in candidates - inside if not text[p - 1].isspace() and not text[p].isspace())


@dataclass
class MorphemeSplitter:
    """Kiwi, loaded once (about 3 s); one worker thread by default (kiwipiepy >= 0.21: -1 = every core)."""

    num_workers: int = 1
    _kiwi: Any = field(default=None, init=False, repr=False)

    @property
    def kiwi(self) -> Any:
        if self._kiwi is None:
            from klue.text.kiwi import analyser

            self._kiwi = analyser(self.num_workers)
        return self._kiwi

    def spans(self, text: str) -> list[tuple[int, int, str, str]]:
        """(start, end, form, tag) for each Kiwi token, offsets in code points of `text`."""
        # kiwipiepy reports offsets in code points of the Python string (checked with astral characters).
        return [(t.start, t.start + t.len, t.form, t.tag) for t in self.kiwi.tokenize(text)]

    def cuts(self, text: str) -> list[int]:
        """Morpheme cut points inside the words of `text` (never at a space)."""
        return cut_points(text, ((s, e) for s, e, _, _ in self.spans(text)))

    def segments(self, text: str) -> list[tuple[int, int]]:
        """The non-space pieces of `text` after cutting at whitespace and at morpheme cut points."""
        cuts = set(self.cuts(text))
        pieces: list[tuple[int, int]] = []
        start: int | None = None
        for index, ch in enumerate(text):
            if ch.isspace():
                if start is not None:
                    pieces.append((start, index))
                start = None
                continue
            if start is None:
                start = index
            elif index in cuts:
                pieces.append((start, index))
                start = index
        if start is not None:
            pieces.append((start, len(text)))
        return pieces
