"""The scan: stream the corpus once, look each document's n-grams up in the benchmark's index, and keep, per
example, what the corpus shows of it (docs/contamination.md).

A chunk of documents is scanned by `scan_chunk` wherever it runs (this process, a spawned worker, a Ray
actor); its result (`Findings`) merges by union, maximum and minimum with fixed tie-breaks, so the merged
findings do not depend on the order chunks finish in, the worker count or the executor. Every hash hit is
checked against the units themselves before it counts: a hash collision never makes an example dirty.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from klue.contamination.corpus import Chunk, documents, line_starts, plain_lines
from klue.contamination.index import BenchmarkIndex
from klue.contamination.units import Hasher, tables, units_of


@dataclass(frozen=True, order=True)
class Location:
    """Where a match is: the corpus file (its index in the scan's order, and as shown), the line (or row)
    and the byte offset of that line in the decompressed stream (None for parquet and `datasets` rows)."""

    file_index: int
    line: int
    file: str = field(compare=False)
    offset: int | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "offset": self.offset}

    @staticmethod
    def from_json(obj: dict[str, Any], file_index: int) -> Location:
        return Location(file_index, int(obj["line"]), str(obj["file"]), obj.get("offset"))


@dataclass
class Found:
    """What the corpus shows of one example so far."""

    positions: dict[int, set[int]]  # input part -> first units of its n-grams found in the corpus
    longest: int  # the longest match, in units
    longest_text: str
    longest_at: Location
    first_at: Location  # the first match in corpus order
    first_text: str
    with_answer_at: Location | None = None  # the first document holding the whole input and the answer

    def merge(self, other: Found) -> None:
        for part, positions in other.positions.items():
            self.positions.setdefault(part, set()).update(positions)
        if (other.longest, _reverse(other.longest_at)) > (self.longest, _reverse(self.longest_at)):
            self.longest, self.longest_text, self.longest_at = other.longest, other.longest_text, other.longest_at
        if other.first_at < self.first_at:
            self.first_at, self.first_text = other.first_at, other.first_text
        if other.with_answer_at is not None and (self.with_answer_at is None or other.with_answer_at <
                                                 self.with_answer_at):
            self.with_answer_at = other.with_answer_at

    def to_json(self) -> dict[str, Any]:
        return {"positions": {str(p): sorted(v) for p, v in self.positions.items()}, "longest": self.longest,
                "longest_text": self.longest_text, "longest_at": self.longest_at.to_json(),
                "first_at": self.first_at.to_json(), "first_text": self.first_text,
                "with_answer_at": None if self.with_answer_at is None else self.with_answer_at.to_json()}

    @staticmethod
    def from_json(obj: dict[str, Any], file_index: int) -> Found:
        answer = obj.get("with_answer_at")
        return Found({int(p): set(v) for p, v in obj["positions"].items()}, int(obj["longest"]),
                     str(obj["longest_text"]), Location.from_json(obj["longest_at"], file_index),
                     Location.from_json(obj["first_at"], file_index), str(obj["first_text"]),
                     None if answer is None else Location.from_json(answer, file_index))


def _reverse(location: Location) -> tuple[int, int]:
    """A sort key under which an earlier location is larger (ties of length go to the earlier match)."""
    return (-location.file_index, -location.line)


Findings = dict[int, Found]  # example number -> what was found


def merge_findings(into: Findings, other: Findings) -> None:
    for example, found in other.items():
        if example in into:
            into[example].merge(found)
        else:
            into[example] = found


@dataclass(frozen=True)
class ChunkResult:
    file_index: int
    consumed: int
    documents: int
    findings: Findings


class ChunkScanner:
    """Scans chunks against one index (one per process: the hasher's power tables are reused)."""

    def __init__(self, index: BenchmarkIndex) -> None:
        self.index = index
        self.hasher = Hasher(index.settings)
        tables(index.settings.normalise)  # built now: a worker is ready when it is built

    def ready(self) -> bool:
        """True: the scanner is built (a Ray actor answers once its constructor ran)."""
        return True

    def scan(self, chunk: Chunk) -> ChunkResult:
        chunk = chunk.loaded()
        if chunk.kind == "text":
            return self._scan_lines(chunk)
        docs = documents(chunk)
        findings: Findings = {}
        if docs.texts and len(self.index.keys):
            ngrams = self.hasher.ngrams(docs.texts)
            hit, keys = self.index.lookup(ngrams.hashes)
            if len(hit):
                findings = self._findings(chunk, docs.texts, docs.lines, docs.offsets, ngrams.text[hit],
                                          ngrams.position[hit], keys)
        return ChunkResult(chunk.file_index, chunk.consumed, len(docs.texts), findings)

    def _scan_lines(self, chunk: Chunk) -> ChunkResult:
        """A plain-text chunk hashed whole (no list of lines to build and join again, measured 10-15% of a
        scan); its lines are split only where a hit needs them."""
        text, count = plain_lines(chunk)
        findings: Findings = {}
        if count and len(self.index.keys):
            ngrams = self.hasher.line_ngrams(text)
            hit, keys = self.index.lookup(ngrams.hashes)
            if len(hit):
                texts = text.split("\n")
                lines = list(range(chunk.first_line, chunk.first_line + len(texts)))
                findings = self._findings(chunk, texts, lines, line_starts(chunk), ngrams.text[hit],
                                          ngrams.position[hit], keys)
        return ChunkResult(chunk.file_index, chunk.consumed, count, findings)

    def _findings(self, chunk: Chunk, texts: list[str], lines: list[int], offsets: list[int] | None,
                  doc_of: np.ndarray, doc_position: np.ndarray, keys: np.ndarray) -> Findings:
        settings, index = self.index.settings, self.index
        n = settings.n
        # (document, example) -> [(part, example position, document position)], checked unit by unit
        matches: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
        hit_docs = sorted(set(doc_of.tolist()))
        doc_units = dict(zip(hit_docs, units_of([texts[d] for d in hit_docs], settings)))
        # every posting of every hit, gathered with numpy (one Python object per posting was most of the
        # time on a corpus with many hits)
        starts, ends = index.offsets[keys], index.offsets[keys + 1]
        counts = ends - starts
        posting = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        rows = zip(np.repeat(doc_of, counts).tolist(), np.repeat(doc_position, counts).tolist(),
                   index.example_of[posting].tolist(), index.part_of[posting].tolist(),
                   index.position_of[posting].tolist())
        for doc, where, example, part, position in rows:
            if index.part_units[example][part][position:position + n] == doc_units[doc][where:where + n]:
                matches[(doc, example)].append((part, position, where))
        joined: dict[int, str] = {}
        findings: Findings = {}
        for (doc, example), found in sorted(matches.items()):
            at = Location(chunk.file_index, lines[doc], chunk.shown, None if offsets is None else offsets[doc])
            if doc not in joined:
                joined[doc] = f"{settings.joiner}{settings.joiner.join(doc_units[doc])}{settings.joiner}"
            result = self._found(example, found, joined[doc], at)
            if example in findings:
                findings[example].merge(result)
            else:
                findings[example] = result
        return findings

    def _found(self, example: int, matches: list[tuple[int, int, int]], doc: str, at: Location) -> Found:
        settings, n = self.index.settings, self.index.settings.n
        parts = self.index.part_units[example]
        positions: dict[int, set[int]] = defaultdict(set)
        for part, position, _ in matches:
            positions[part].add(position)
        longest, longest_text = _longest_run(matches, parts, n, settings.joiner)
        first_part, first_position, _ = min(matches, key=lambda m: (m[2], m[0], m[1]))
        first_text = settings.joiner.join(parts[first_part][first_position:first_position + n])
        with_answer = at if self._holds_answer(example, positions, doc) else None
        return Found(dict(positions), longest, longest_text, at, at, first_text, with_answer)

    def _holds_answer(self, example: int, positions: dict[int, set[int]], text: str) -> bool:
        """Whether this document (its units joined, with a joiner at both ends) holds the example's whole input
        and its answer: each input part long enough for an n-gram has one here, each shorter part and each
        answer part is here as it is (whole units)."""
        settings = self.index.settings
        joiner = settings.joiner
        for part, part_units in enumerate(self.index.part_units[example]):
            if len(part_units) >= settings.n:
                if not positions.get(part):
                    return False
            elif part_units and f"{joiner}{joiner.join(part_units)}{joiner}" not in text:
                return False
        return all(f"{joiner}{answer}{joiner}" in text for answer in self.index.answer_texts[example])


def _longest_run(matches: Iterable[tuple[int, int, int]], parts: list[list[str]], n: int,
                 joiner: str) -> tuple[int, str]:
    """The longest contiguous match in one document, in units, and its text: n-grams found at consecutive
    positions of both the example part and the document make one match of (count + n - 1) units."""
    by_diagonal: dict[tuple[int, int], list[int]] = defaultdict(list)
    for part, position, doc_position in matches:
        by_diagonal[(part, doc_position - position)].append(position)
    best = (0, -1, 0, 0)  # (units, -part, -start, ...): the longest, then the earliest part and position
    for (part, _), starts in by_diagonal.items():
        starts.sort()
        run_start = previous = starts[0]
        for position in [*starts[1:], -1]:  # -1 ends the last run
            if position == previous + 1:
                previous = position
                continue
            best = max(best, (previous - run_start + n, -part, -run_start, part))
            run_start = previous = position
    length, _, start, part = best
    return length, joiner.join(parts[part][-start:-start + length])
