"""Text to units and unit n-grams, the same way for a benchmark's examples and a corpus (docs/contamination.md).

Two normalisations: `klue` (NFC, case-folded, every Unicode punctuation character and whitespace a unit
break) and `gpt3` (lm-evaluation-harness's `Janitor.normalize_string`: ASCII letters lower-cased, ASCII
punctuation deleted, nothing else touched; then `str.split`). Three units: `eojeol` and `word` (the
whitespace-separated tokens; the two differ in their default n only: 8 eojeols, 13 words as GPT-3) and
`char` (code points with every break removed, so a copy spaced differently still matches).

Why numpy and not Python tokens: a corpus is hashed here, and per-token Python work (`str.split`, a tuple
or string per n-gram, a set lookup each) runs at a few MB/s of Korean text. Here a batch of documents is
one UTF-32 array of code points; folding and breaks are one table lookup per code point, a unit's hash is
a polynomial over its code points from one prefix sum (mod 2**32), and an n-gram's hash a polynomial over
its units' mixed hashes from a second prefix sum (mod 2**64): no Python object per token or n-gram. Korean
gains twice: a Hangul syllable is 3 UTF-8 bytes but one UTF-32 element. Measured in benchmarks/
contamination_speed.py (RESULTS.md, issue 41).
"""

from __future__ import annotations

import functools
import itertools
import sys
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from klue.contamination import kernel
from klue.errors import DataError

Unit = Literal["eojeol", "word", "char"]
Normalisation = Literal["klue", "gpt3"]
UNITS: tuple[str, ...] = ("eojeol", "char", "word")
NORMALISATIONS: tuple[str, ...] = ("klue", "gpt3")
DEFAULT_N: dict[str, int] = {"eojeol": 8, "word": 13, "char": 25}

SPACE = 32
DELETED = 0xFFFFFFFF  # no code point: a character the normalisation drops
_NEWLINE = np.array([10], dtype=np.uint32)
SLOW_BIT = np.uint32(1 << 31)  # in `Tables.flagged`: above every code point (klue deletes nothing)
_ASCII_PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"  # string.punctuation, as the Janitor deletes it
_MAX_POINT = sys.maxunicode + 1
# The polynomial bases (odd, so invertible mod 2**k) and the mixing constant of splitmix64's finaliser.
_BASE32 = np.uint32(0x01000193)
_BASE64 = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)


@dataclass(frozen=True)
class Settings:
    """What counts as the same text: the normalisation, the unit and the n-gram length."""

    unit: Unit = "eojeol"
    n: int = DEFAULT_N["eojeol"]
    normalise: Normalisation = "klue"

    @staticmethod
    def of(unit: str, n: int | None, normalise: str) -> Settings:
        """Checked settings (DataError naming the option); n defaults by unit."""
        if unit not in UNITS:
            raise DataError(f"--unit must be one of {', '.join(UNITS)}, not {unit!r}")
        if normalise not in NORMALISATIONS:
            raise DataError(f"--normalise must be one of {', '.join(NORMALISATIONS)}, not {normalise!r}")
        size = DEFAULT_N[unit] if n is None else n
        if not 1 <= size <= 1000:
            raise DataError(f"--n must be between 1 and 1000, not {size}")
        return Settings(unit, size, normalise)  # type: ignore[arg-type]  # both checked against their lists

    @property
    def joiner(self) -> str:
        """How units are joined in a match's text: characters touch, eojeols and words take a space."""
        return "" if self.unit == "char" else " "


@dataclass(frozen=True)
class Tables:
    """Per code point: what it becomes (its fold; SPACE for a break, DELETED when dropped), and whether a text
    holding it needs Python's NFC and `str.casefold` (a character NFC may change, or whose fold is several
    characters: ß -> ss); most texts hold none, and then the table does all."""

    fold: np.ndarray  # uint32
    deletes: bool  # whether any character is DELETED
    # the fold with SLOW_BIT set on the characters that need Python (none for gpt3, which neither composes nor
    # folds beyond ASCII): one lookup per code point finds both (a second table was 10-15% of hashing, measured)
    flagged: np.ndarray


# Where Unicode assigns characters other than private use: planes 0-3 and the tags and variation selectors of
# plane 14. Every code point beyond them keeps itself (no category P, no fold, no decomposition).
_ASSIGNED = (range(0x32400), range(0xE0000, 0xE1000))


@functools.cache  # a pure function of the Unicode database: built once per process (under a second)
def tables(normalise: Normalisation) -> Tables:
    fold = np.arange(_MAX_POINT, dtype=np.uint32)
    slow = np.zeros(_MAX_POINT, dtype=bool)
    spaces = [i for block in _ASSIGNED for i in block if chr(i).isspace()]
    if normalise == "gpt3":
        upper = np.arange(ord("A"), ord("Z") + 1)
        fold[upper] = upper + 32
        fold[[ord(c) for c in _ASCII_PUNCTUATION]] = DELETED
        fold[spaces] = SPACE
        return Tables(fold, True, fold)
    category, combining, decomposition, normalize = (unicodedata.category, unicodedata.combining,
                                                     unicodedata.decomposition, unicodedata.normalize)
    for i in (i for block in _ASSIGNED for i in block):
        c = chr(i)
        kind = category(c)
        if kind[0] == "P":
            fold[i] = SPACE
            continue
        if kind in ("Cn", "Co", "Cs"):
            continue
        if combining(c) or normalize("NFC", c) != c:
            slow[i] = True
        parts = decomposition(c)
        if parts and parts[0] != "<" and parts.count(" ") == 1:  # its second half composes with what precedes
            slow[int(parts.split()[1], 16)] = True
        folded = c.casefold()
        if folded != c:
            if len(folded) == 1:
                fold[i] = ord(folded)
            else:
                slow[i] = True  # a fold of several characters
    slow[0x1160:0x1200] = True  # Hangul medial and final jamo compose with the syllable before them
    fold[spaces] = SPACE
    flagged = fold.copy()
    flagged[slow] |= SLOW_BIT
    return Tables(fold, False, flagged)


def codepoints(texts: Sequence[str], normalise: Normalisation) -> tuple[np.ndarray, np.ndarray]:
    """The normalised code points of `texts` joined by one break each, and where each text starts in them.

    Every break is SPACE and deleted characters are gone, so a text never runs into the next. NFC and
    `str.casefold` run only on a batch holding a character they change beyond the fold table (decomposed
    Hangul, combining marks, a fold of several characters): most batches need neither."""
    table = tables(normalise)
    raw = _utf32(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    starts = np.zeros(len(texts), dtype=np.int64)
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    if normalise != "klue":
        return _folded(raw, starts, table)
    points = table.flagged[raw]
    slow = np.flatnonzero(points >= SLOW_BIT)
    if not len(slow):
        return points, starts  # klue deletes nothing
    texts = list(texts)  # only the texts holding such a character go through Python
    for i in np.unique(np.searchsorted(starts, slow, side="right") - 1).tolist():
        texts[i] = unicodedata.normalize("NFC", texts[i]).casefold()
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    np.cumsum(lengths[:-1] + 1, out=starts[1:])
    return table.fold[_utf32(texts)], starts


def line_codepoints(text: str, normalise: Normalisation) -> tuple[np.ndarray, np.ndarray]:
    """`codepoints(text.split("\\n"))` without splitting: the lines of a plain-text chunk are its documents, and
    a newline is a break like the space `codepoints` joins texts with, so the layout is the same."""
    table = tables(normalise)
    raw = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    newlines = np.flatnonzero(raw == 10)
    if normalise != "klue":
        return _folded(raw, np.concatenate(([0], newlines + 1)), table)
    points = table.flagged[raw]
    slow = np.flatnonzero(points >= SLOW_BIT)
    if len(slow):
        points, newlines = _normalised_lines(text, points, newlines, slow, table)
    return points, np.concatenate(([0], newlines + 1))  # klue deletes nothing


def _normalised_lines(text: str, points: np.ndarray, newlines: np.ndarray, slow: np.ndarray,
                      table: Tables) -> tuple[np.ndarray, np.ndarray]:
    """`points` (the folded code points of `text`) with the lines holding a character of `slow` replaced by
    their NFC casefold, folded, and its newlines moved by what those lines grew or shrank: only those lines go
    through Python and are encoded again (splitting, joining and encoding the whole chunk again cost as much as
    hashing it, measured), and a line keeps its place."""
    ends = np.append(newlines, len(points))  # line i is points[ends[i - 1] + 1:ends[i]]
    grown = np.zeros(len(ends), dtype=np.int64)
    pieces, at = [], 0
    for line in np.unique(np.searchsorted(newlines, slow)).tolist():
        start, end = (int(ends[line - 1]) + 1 if line else 0), int(ends[line])
        fixed = unicodedata.normalize("NFC", text[start:end]).casefold()
        folded = table.fold[np.frombuffer(fixed.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)]
        pieces += [points[at:start], folded]
        grown[line] = len(folded) - (end - start)
        at = end
    points = np.concatenate([*pieces, points[at:]])
    return points, newlines + np.cumsum(grown)[:len(newlines)]


def _folded(raw: np.ndarray, starts: np.ndarray, table: Tables) -> tuple[np.ndarray, np.ndarray]:
    points = table.fold[raw]
    if table.deletes:
        gone = np.flatnonzero(points == DELETED)  # few: a search per text start beats a prefix sum over all
        if len(gone):
            starts = starts - np.searchsorted(gone, starts)
            points = np.delete(points, gone)
    return points, starts


def _utf32(texts: Sequence[str]) -> np.ndarray:
    return np.frombuffer(" ".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _tokens(texts: Sequence[str], normalise: Normalisation) -> list[list[str]]:
    """The whitespace-separated tokens of each text once normalised. Every break is SPACE by then (the fold
    table sends every `str.isspace` character there), so `str.split()` splits exactly at breaks, in C (a
    Python step per token was most of the time of a corpus with many hits)."""
    if not texts:
        return []
    points, starts = codepoints(texts, normalise)
    joined = points.tobytes().decode("utf-32-le", "surrogatepass")
    bounds = [*starts.tolist(), len(joined) + 1]
    return [joined[start:end - 1].split() for start, end in itertools.pairwise(bounds)]


def normalised_texts(texts: Sequence[str], normalise: Normalisation) -> list[str]:
    """Each text normalised, every break a single space, none at either end (for matching in Python)."""
    return [" ".join(tokens) for tokens in _tokens(texts, normalise)]


def normalised(text: str, normalise: Normalisation) -> str:
    return normalised_texts([text], normalise)[0]


def units_of(texts: Sequence[str], settings: Settings) -> list[list[str]]:
    """The units of each text: its tokens, or its characters with the breaks removed."""
    if settings.unit == "char":
        return [list("".join(tokens)) for tokens in _tokens(texts, settings.normalise)]
    return _tokens(texts, settings.normalise)


def units(text: str, settings: Settings) -> list[str]:
    return units_of([text], settings)[0]


@dataclass(frozen=True)
class Ngrams:
    """The n-grams of a batch of texts: a hash, the text's index in the batch, and the position of the
    n-gram's first unit in its text (in units)."""

    hashes: np.ndarray  # uint64
    text: np.ndarray  # int64
    position: np.ndarray  # int64
    # the normalised code points hashed (breaks as SPACE) and where each text starts in them: a hit document's
    # units are cut from these, not normalised again (`units_in`)
    points: np.ndarray
    starts: np.ndarray
    byte_starts: np.ndarray | None = None  # from the compiled pass: each line's first byte in the chunk, and the end
    # from the compiled pass: the lines composed in Python, by number, with their code points (which `points`
    # holds uncomposed: putting them in place copied the chunk's code points, 10% of a scan, measured)
    composed: dict[int, np.ndarray] | None = None

    def units_in(self, texts: list[int], unit: Unit) -> list[list[str]]:
        """The units of these texts (by their number in the batch), as `units_of` gives them."""
        ends = np.append(self.starts[1:] - 1, len(self.points))  # one break before each next text
        composed = self.composed or {}
        pieces = []
        for text, start, end in zip(texts, self.starts[texts].tolist(), ends[texts].tolist()):
            # no newline is left in normalised code points
            pieces += [composed[text] if text in composed else self.points[start:end], _NEWLINE]
        # decoded at once, then cut: a decode per document cost 2-3x as much (measured)
        joined = np.concatenate(pieces).tobytes().decode("utf-32-le", "surrogatepass").split("\n")
        if unit == "char":
            return [list("".join(text.split())) for text in joined[:-1]]
        return [text.split() for text in joined[:-1]]


class Hasher:
    """Unit n-gram hashes of batches of texts (see the module doc for why numpy). Holds the powers of the
    bases, grown as a longer batch comes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._p32 = self._i32 = np.ones(1, dtype=np.uint32)
        self._p64 = self._i64 = np.ones(1, dtype=np.uint64)

    def _powers(self, size: int) -> None:
        if len(self._p32) >= size:
            return
        self._p32, self._i32, self._p64, self._i64 = _powers(1 << (size - 1).bit_length())

    def ngrams(self, texts: Sequence[str]) -> Ngrams:
        return self._ngrams(*codepoints(texts, self.settings.normalise))

    def line_ngrams(self, text: str) -> Ngrams:
        """The n-grams of each line of `text` (a line's index is its text number)."""
        return self._ngrams(*line_codepoints(text, self.settings.normalise))

    def line_candidates(self, data: bytes | memoryview, bits: np.ndarray, shift: int) -> Ngrams | None:
        """`line_ngrams(data.decode())` restricted to the n-grams a bitmap lets through (`bits`, 8 slots a byte,
        a hash's slot its top 64 - `shift` bits; empty: every n-gram), from one compiled pass over the bytes
        (`kernel`, numba); None if `data` is not UTF-8. Lines holding a character that NFC or a
        multi-character fold changes are hashed here in Python, as `line_ngrams` does."""
        table = tables(self.settings.normalise)
        found = self._pass(data, table.flagged, bits, shift)
        if found is None:
            return None
        if not len(found.python_lines):
            return Ngrams(found.hashes, found.line, found.position, found.points, found.starts,
                          found.byte_starts)
        return self._python_lines(data, found, table, bits, shift)

    def _python_lines(self, data: bytes | memoryview, found: kernel.LinePass, table: Tables, bits: np.ndarray,
                      shift: int) -> Ngrams:
        """The pass's findings with its lines needing Python composed and case-folded here, then hashed together
        by a second pass over them with the plain fold table (what the numpy path does to such a line; a numpy
        call per line cost more than the whole pass, measured), their code points kept beside the chunk's."""
        numbers = found.python_lines.tolist()
        fixed = [unicodedata.normalize("NFC", bytes(data[found.byte_starts[line]:found.byte_starts[line + 1]])
                                       .decode("utf-8").removesuffix("\n")).casefold() for line in numbers]
        again = self._pass("\n".join(fixed).encode("utf-8"), table.fold, bits, shift)
        assert again is not None and not len(again.python_lines)  # the plain table flags nothing
        fixed_ends = np.append(again.starts[1:] - 1, len(again.points)).tolist()
        composed = {line: again.points[start:end] for line, start, end in zip(numbers, again.starts.tolist(), fixed_ends)}
        return Ngrams(np.concatenate([found.hashes, again.hashes]),
                      np.concatenate([found.line, found.python_lines[again.line]]),
                      np.concatenate([found.position, again.position]), found.points, found.starts, found.byte_starts,
                      composed)

    def _pass(self, data: bytes | memoryview, fold: np.ndarray, bits: np.ndarray, shift: int) -> kernel.LinePass | None:
        """The compiled pass over `data` with this hasher's settings and the fold table `fold`."""
        settings = self.settings
        return kernel.line_pass(data, fold, settings.n, settings.unit == "char", _constants(settings.n), bits, shift)

    def _ngrams(self, points: np.ndarray, starts: np.ndarray) -> Ngrams:
        if self.settings.unit == "char":
            return self._char_ngrams(points, starts)
        return self._token_ngrams(points, starts)

    def _token_ngrams(self, points: np.ndarray, text_starts: np.ndarray) -> Ngrams:
        n = self.settings.n
        self._powers(len(points) + 1)
        # a unit starts and ends where a break and a non-break meet (a break before the first and after the last
        # point); comparing booleans in place is 3-4x cheaper than np.diff with prepend and append (measured)
        gaps = np.empty(len(points) + 2, dtype=bool)
        gaps[0] = gaps[-1] = True
        np.equal(points, SPACE, out=gaps[1:-1])
        edges = np.flatnonzero(gaps[1:] != gaps[:-1])
        starts, ends = edges[0::2], edges[1::2]  # a unit starts and ends in turn
        prefix = np.empty(len(points) + 1, dtype=np.uint32)
        prefix[0] = 0
        terms = points + np.uint32(1)
        np.multiply(terms, self._p32[:len(points)], out=terms)
        np.cumsum(terms, out=prefix[1:])
        # a unit's hash, mod 2**32 (a collision of two units only costs a check: every hit is checked)
        tokens = ((prefix[ends] - prefix[starts]) * self._i32[starts]).astype(np.uint64)
        count = len(tokens)
        if count < n:
            return _empty(points, text_starts)
        token_prefix = np.zeros(count + 1, dtype=np.uint64)
        np.cumsum(tokens * self._p64[:count], out=token_prefix[1:])
        token_start = np.searchsorted(starts, text_starts)  # index of each text's first token
        text_of = np.repeat(np.arange(len(text_starts)), np.diff(token_start, append=count))
        first = np.flatnonzero(text_of[:count - n + 1] == text_of[n - 1:])
        hashes = _mix((token_prefix[first + n] - token_prefix[first]) * self._i64[first])
        text = text_of[first]
        return Ngrams(hashes, text, first - token_start[text], points, text_starts)

    def _char_ngrams(self, spaced: np.ndarray, text_starts: np.ndarray) -> Ngrams:
        n = self.settings.n
        breaks = np.flatnonzero(spaced == SPACE)
        starts = text_starts - np.searchsorted(breaks, text_starts)  # where each text starts once breaks go
        points = np.delete(spaced, breaks)
        count = len(points)
        if count < n:
            return _empty(spaced, text_starts)
        self._powers(count + 1)
        prefix = np.zeros(count + 1, dtype=np.uint64)
        np.cumsum((points.astype(np.uint64) + np.uint64(1)) * self._p64[:count], out=prefix[1:])
        text_of = np.repeat(np.arange(len(starts)), np.diff(starts, append=count))
        first = np.flatnonzero(text_of[:count - n + 1] == text_of[n - 1:])
        hashes = _mix((prefix[first + n] - prefix[first]) * self._i64[first])
        text = text_of[first]
        return Ngrams(hashes, text, first - starts[text], spaced, text_starts)


def _empty(points: np.ndarray, starts: np.ndarray) -> Ngrams:
    return Ngrams(np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), points,
                  starts)


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every output bit depends on every input bit (the polynomials alone leave the
    high bits of short inputs nearly constant)."""
    values = values ^ (values >> np.uint64(30))
    values = values * _MIX
    return values ^ (values >> np.uint64(31))


@functools.cache
def _constants(n: int) -> tuple[int, int, int, int]:
    """The kernel's constants for n-grams of n units: both bases, the 64-bit one's inverse and its power n - 1."""
    return (int(_BASE32), int(_BASE64), int(_inverse(_BASE64, 64)), pow(int(_BASE64), n - 1, 1 << 64))


def _inverse(base: np.integer, bits: int) -> np.integer:
    """The inverse of an odd `base` mod 2**bits (Newton's iteration)."""
    modulus, value = 1 << bits, int(base)
    inverse = value
    for _ in range(7):
        inverse = inverse * (2 - value * inverse) % modulus
    return base.dtype.type(inverse)


@functools.lru_cache(maxsize=4)  # a few sizes (powers of two) per process; each scan reuses them
def _powers(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The powers of both bases and of their inverses, 0 .. size - 1 (read-only: shared)."""
    tables = (_power_table(_BASE32, size), _power_table(_inverse(_BASE32, 32), size),
              _power_table(_BASE64, size), _power_table(_inverse(_BASE64, 64), size))
    for table in tables:
        table.flags.writeable = False
    return tables


def _power_table(base: np.integer, size: int) -> np.ndarray:
    powers = np.full(size, base, dtype=base.dtype)
    powers[0] = 1
    return np.cumprod(powers, dtype=base.dtype)  # wraps mod 2**bits, as intended
