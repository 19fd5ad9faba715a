"""The benchmark side of a scan: the examples, their units, and a hash index of their input n-grams.

The index is small (the benchmark's n-grams, not the corpus's): a sorted array of the distinct n-gram hashes,
where each hash occurs (example, input part, first unit) in CSR form, and a bitmap of hash prefixes that
turns most corpus n-grams away before the binary search (measured: about 4x fewer searches' cost on a
corpus that rarely matches, which is every real one).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from klue.contamination.units import Hasher, Settings, units_of


@dataclass(frozen=True)
class Example:
    """One example as the scan reads it: its task and guid, its input parts and its answer parts."""

    task: str
    guid: str
    input: tuple[str, ...]
    answer: tuple[str, ...]


@dataclass(frozen=True)
class AnswerCheck:
    """What a document must hold to hold an example's whole input and its answer."""

    parts: frozenset[int]  # the input parts long enough for an n-gram: the document has one of each
    # the shorter parts and the answers, as they are: whole units, a joiner at both ends, as a document's joined
    # units have
    needles: tuple[str, ...]
    # every unit of the needles: a document without one of them holds not all the needles (tested first: cheaper
    # than joining the document's units and searching it, which most documents hit fail)
    units: frozenset[str]


@dataclass
class BenchmarkIndex:
    """The examples (in order), each input part's units, each answer's and short part's normalised text,
    and the hash index of every input n-gram. Built once; workers receive it whole."""

    settings: Settings
    examples: list[Example]
    part_units: list[list[list[str]]]  # example -> input part -> units
    answer_texts: list[list[str]]  # example -> answer part -> units joined (empty parts left out)
    keys: np.ndarray  # uint64, sorted, distinct
    offsets: np.ndarray  # int64, len(keys) + 1: postings of keys[k] are [offsets[k], offsets[k + 1])
    example_of: np.ndarray  # int64 per posting
    part_of: np.ndarray  # int64 per posting
    position_of: np.ndarray  # int64 per posting
    shift: int = 40  # bitmap slot of a hash: its top (64 - shift) bits
    bitmap: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)
    bits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8), repr=False)  # bitmap, 8 a byte
    _checks: dict[int, AnswerCheck] = field(default_factory=dict, repr=False,
                                                                       compare=False)

    def __post_init__(self) -> None:
        if not len(self.bitmap):
            self.bitmap = self._bitmap()

    def _bitmap(self) -> np.ndarray:
        # about 64 slots per key: a random n-gram passes with probability about 1/64
        bits = int(min(27, max(16, np.ceil(np.log2(max(1, len(self.keys)) * 64)))))
        self.shift = 64 - bits
        bitmap = np.zeros(1 << bits, dtype=bool)
        bitmap[(self.keys >> np.uint64(self.shift)).astype(np.int64)] = True
        # packed for the compiled pass: 8x smaller, so most of it stays in the caches (its lookups are random)
        self.bits = np.packbits(bitmap, bitorder="little")
        return bitmap

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["bitmap"] = np.zeros(0, dtype=bool)  # rebuilt on arrival: cheaper than sending 2**27 bytes
        state["bits"] = np.zeros(0, dtype=np.uint8)
        state["_checks"] = {}
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.bitmap = self._bitmap()
        self._checks = {}

    def lookup(self, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(indices into `hashes` of those in the index, their key numbers)."""
        if not len(self.keys) or not len(hashes):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        maybe = np.flatnonzero(self.bitmap[(hashes >> np.uint64(self.shift)).astype(np.int64)])
        where = np.searchsorted(self.keys, hashes[maybe])
        where[where == len(self.keys)] = 0
        found = self.keys[where] == hashes[maybe]
        return maybe[found], where[found]

    def answer_check(self, example: int) -> AnswerCheck:
        """What a document must hold to hold the example's whole input and its answer. Kept per example."""
        if example not in self._checks:
            joiner, n = self.settings.joiner, self.settings.n
            parts = self.part_units[example]
            texts = [joiner.join(units) for units in parts if 0 < len(units) < n] + self.answer_texts[example]
            units = frozenset(u for text in texts for u in (text.split(joiner) if joiner else text))
            self._checks[example] = AnswerCheck(frozenset(i for i, units in enumerate(parts) if len(units) >= n),
                                                tuple(f"{joiner}{text}{joiner}" for text in texts), units)
        return self._checks[example]

    def text_of(self, example: int, at: tuple[int, int], units: int) -> str:
        """The example's `units` units from `at` (input part, first unit), joined as a match's text."""
        part, position = at
        return self.settings.joiner.join(self.part_units[example][part][position:position + units])

    def input_units(self, example: int) -> int:
        return sum(len(u) for u in self.part_units[example])

    def fingerprint(self) -> str:
        """What a resumed scan must share with the one it resumes: the settings and every example's text."""
        digest = hashlib.sha256(json.dumps([self.settings.unit, self.settings.n, self.settings.normalise]).encode())
        separator = "\x1f"  # unit separator: in no example's text
        for example in self.examples:
            digest.update(separator.join([example.task, example.guid, *example.input, "\x1e", *example.answer,
                                          "\x1d"]).encode("utf-8", "surrogatepass"))
        return digest.hexdigest()


def build_index(examples: Sequence[Example], settings: Settings) -> BenchmarkIndex:
    """The index of every input n-gram of `examples` (parts shorter than n have none)."""
    flat_units = iter(units_of([part for example in examples for part in example.input], settings))
    part_units = [[next(flat_units) for _ in example.input] for example in examples]
    flat_answers = iter(units_of([answer for example in examples for answer in example.answer], settings))
    answers = [[settings.joiner.join(u) for u in (next(flat_answers) for _ in example.answer) if u]
               for example in examples]
    flat = [(e, p, part) for e, example in enumerate(examples) for p, part in enumerate(example.input)]
    hasher = Hasher(settings)
    texts = [part for _, _, part in flat]  # normalised by the hasher as every corpus document is
    ngrams = hasher.ngrams(texts) if texts else None
    if ngrams is None or not len(ngrams.hashes):
        empty = np.zeros(0, dtype=np.int64)
        return BenchmarkIndex(settings, list(examples), part_units, answers, np.zeros(0, dtype=np.uint64),
                              np.zeros(1, dtype=np.int64), empty, empty, empty)
    owner = np.array([(e, p) for e, p, _ in flat], dtype=np.int64)
    order = np.argsort(ngrams.hashes, kind="stable")
    hashes = ngrams.hashes[order]
    keys, starts = np.unique(hashes, return_index=True)
    offsets = np.append(starts, len(hashes)).astype(np.int64)
    text = ngrams.text[order]
    return BenchmarkIndex(settings, list(examples), part_units, answers, keys, offsets, owner[text, 0],
                          owner[text, 1], ngrams.position[order])
