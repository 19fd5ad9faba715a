"""The scan: stream the corpus once, look each document's n-grams up in the benchmark's index, and keep, per
example, what the corpus shows of it (docs/contamination.md).

A chunk of documents is scanned by `scan_chunk` wherever it runs (this process, a spawned worker, a Ray
actor); its result (`Findings`) merges by union, maximum and minimum with fixed tie-breaks, so the merged
findings do not depend on the order chunks finish in, the worker count or the executor. Every hash hit is
checked against the units themselves before it counts: a hash collision never makes an example dirty.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from klue.contamination.corpus import Chunk, documents, line_counts, line_offsets, plain_lines
from klue.contamination.index import BenchmarkIndex
from klue.contamination.units import Hasher, Ngrams, tables
from klue.errors import DataError, Problem


@dataclass(order=True, slots=True)
class Location:
    """Where a match is: the corpus file (its index in the scan's order, and as shown), the line (or row)
    and the byte offset of that line in the decompressed stream (None for parquet and `datasets` rows).
    Not frozen: a span's lines are moved into place once its result comes back (`shift_lines`)."""

    file_index: int
    line: int
    file: str = field(compare=False)
    offset: int | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "offset": self.offset}

    @staticmethod
    def from_json(obj: dict[str, Any], file_index: int) -> Location:
        return Location(file_index, int(obj["line"]), str(obj["file"]), obj.get("offset"))


@dataclass(slots=True)  # one per example per chunk hit: slots build faster
class Found:
    """What the corpus shows of one example so far."""

    positions: dict[int, set[int]]  # input part -> first units of its n-grams found in the corpus
    longest: int  # the longest match, in units
    # where the matches are in the example, (input part, first unit): their texts are cut from the example's
    # units when the outputs are written (`BenchmarkIndex.text_of`), not for each chunk that finds them
    longest_from: tuple[int, int]
    longest_at: Location
    first_at: Location  # the first match in corpus order
    first_from: tuple[int, int]
    with_answer_at: Location | None = None  # the first document holding the whole input and the answer

    def merge(self, other: Found) -> None:
        for part, positions in other.positions.items():
            self.positions.setdefault(part, set()).update(positions)
        if (other.longest, _reverse(other.longest_at)) > (self.longest, _reverse(self.longest_at)):
            self.longest, self.longest_from, self.longest_at = other.longest, other.longest_from, other.longest_at
        if other.first_at < self.first_at:
            self.first_at, self.first_from = other.first_at, other.first_from
        if other.with_answer_at is not None and (self.with_answer_at is None or other.with_answer_at <
                                                 self.with_answer_at):
            self.with_answer_at = other.with_answer_at

    def to_json(self) -> dict[str, Any]:
        return {"positions": {str(p): sorted(v) for p, v in self.positions.items()}, "longest": self.longest,
                "longest_from": list(self.longest_from), "longest_at": self.longest_at.to_json(),
                "first_at": self.first_at.to_json(), "first_from": list(self.first_from),
                "with_answer_at": None if self.with_answer_at is None else self.with_answer_at.to_json()}

    @staticmethod
    def from_json(obj: dict[str, Any], file_index: int) -> Found:
        answer = obj.get("with_answer_at")
        part, position = obj["longest_from"]
        first_part, first_position = obj["first_from"]
        return Found({int(p): set(v) for p, v in obj["positions"].items()}, int(obj["longest"]),
                     (int(part), int(position)), Location.from_json(obj["longest_at"], file_index),
                     Location.from_json(obj["first_at"], file_index), (int(first_part), int(first_position)),
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


def lines_moved(error: DataError, lines_before: int) -> DataError:
    """An error of a piece of a file, its line numbered `lines_before` further on (in the file, not the piece)."""
    def moved(problem: Problem) -> Problem:
        number = problem.location.removeprefix("line ")
        if not number.isdigit():
            return problem
        return dataclasses.replace(problem, location=f"line {int(number) + lines_before}")

    return DataError([moved(p) for p in error.problems])


def shift_lines(findings: Findings, lines: int) -> None:
    """Every line number of the findings `lines` further on, in place (a span's, numbered within it, put in
    place; building new Locations was most of the hit path's Python on a corpus with many copies, measured)."""
    if not lines:
        return
    done: set[int] = set()  # the first and the longest match often share one Location
    for found in findings.values():
        for at in (found.longest_at, found.first_at, found.with_answer_at):
            if at is not None and id(at) not in done:
                done.add(id(at))
                at.line += lines


@dataclass(frozen=True)
class ChunkResult:
    file_index: int
    consumed: int
    documents: int
    findings: Findings
    lines: int | None = None  # a span's chunk: how many lines it held (its findings' lines count within it)
    cpu_seconds: float = 0.0  # CPU time of the process that scanned it, on this chunk
    block_digest: bytes | None = None  # a span's chunk: the sha256 of its bytes (corpus.BlockDigest)


class ChunkScanner:
    """Scans chunks against one index (one per process: the hasher's power tables are reused)."""

    def __init__(self, index: BenchmarkIndex, compiled: bool = False) -> None:
        """`compiled`: plain text goes through the compiled pass (`kernel`, numba), loaded now (0.5-0.7 CPU-s
        a process, measured: numba's import and its cached machine code) so a worker is ready when built."""
        self.index = index
        self.hasher = Hasher(index.settings)
        self.compiled = compiled
        tables(index.settings.normalise)  # built now: a worker is ready when it is built
        if compiled:
            self.hasher.line_candidates(b"\n", index.bits, index.shift)

    def ready(self) -> bool:
        """True: the scanner is built (a Ray actor answers once its constructor ran)."""
        return True

    def scan(self, chunk: Chunk) -> ChunkResult:
        cpu = time.process_time()
        result = self._scan(chunk) if chunk.span is None else self._scan_span(chunk)
        return dataclasses.replace(result, cpu_seconds=time.process_time() - cpu)

    def _scan_span(self, chunk: Chunk) -> ChunkResult:
        """A block of a file, read and scanned a piece at a time (the numpy path's arrays of a piece stay in the
        caches), its lines numbered within the block and its bytes hashed as they are read. The compiled pass
        reads plain text once whatever the size, so it takes the block whole (one result to merge, not four)."""
        digest = hashlib.sha256()
        findings: Findings = {}
        count = lines = 0
        if self.compiled and chunk.kind == "text" and chunk.span is not None:
            chunk = dataclasses.replace(chunk, piece_bytes=max(chunk.piece_bytes, chunk.span[2] - chunk.span[1]))
        try:
            for piece in chunk.pieces(digest):
                part = self._scan(piece)
                shift_lines(part.findings, lines)
                merge_findings(findings, part.findings)
                count += part.documents
                lines += part.lines or 0
        except DataError as error:
            raise lines_moved(error, lines) from None
        return ChunkResult(chunk.file_index, chunk.consumed, count, findings, lines=lines,
                           block_digest=digest.digest())

    def _scan(self, chunk: Chunk) -> ChunkResult:
        if chunk.kind == "text":
            return self._scan_lines(chunk)
        docs = documents(chunk)
        findings: Findings = {}
        if docs.texts and len(self.index.keys):
            ngrams = self.hasher.ngrams(docs.texts)
            hit, keys = self.index.lookup(ngrams.hashes)
            if len(hit):
                findings = self._findings(chunk, ngrams, docs.lines, docs.offsets, ngrams.text[hit],
                                          ngrams.position[hit], keys)
        return ChunkResult(chunk.file_index, chunk.consumed, len(docs.texts), findings,
                           lines=docs.line_count if chunk.relative else None)

    def _scan_lines(self, chunk: Chunk) -> ChunkResult:
        """A plain-text chunk hashed whole (no list of lines to build and join again, measured 10-15% of a
        scan), in one compiled pass over its bytes where numba is installed (`kernel`); its lines are split
        only where a hit needs them."""
        data = memoryview(chunk.data)[:len(chunk.data) - chunk.data.endswith(b"\n")]  # a view: no copy
        ngrams = None
        if self.compiled and data and len(self.index.keys):  # None when not UTF-8: plain_lines names the line
            ngrams = self.hasher.line_candidates(data, self.index.bits, self.index.shift)
        if ngrams is not None and ngrams.byte_starts is not None:
            count, lines = line_counts(ngrams.byte_starts)
        else:
            text, count, lines = plain_lines(chunk)
            ngrams = self.hasher.line_ngrams(text) if count and len(self.index.keys) else None
        findings: Findings = {}
        if ngrams is not None:
            hit, keys = self.index.lookup(ngrams.hashes)
            if len(hit):
                doc_of = ngrams.text[hit]
                numbers = np.unique(doc_of).tolist()
                offsets = line_offsets(chunk, numbers, ngrams.byte_starts)
                findings = self._findings(chunk, ngrams, {d: chunk.first_line + d for d in numbers},
                                          dict(zip(numbers, offsets)), doc_of, ngrams.position[hit], keys)
        return ChunkResult(chunk.file_index, chunk.consumed, count, findings, lines=lines if chunk.relative else None)

    def _findings(self, chunk: Chunk, ngrams: Ngrams, lines: Mapping[int, int] | list[int],
                  offsets: Mapping[int, int] | list[int] | None, doc_of: np.ndarray, doc_position: np.ndarray,
                  keys: np.ndarray) -> Findings:
        """Each hit (document, position, index key) checked unit by unit and gathered per example; `lines` and
        `offsets` give at least the documents hit, by document number. The documents' units are cut from the
        code points already normalised for hashing (normalising the hit documents again, and decoding their
        lines, were a third of the hit path, measured)."""
        settings, index = self.index.settings, self.index
        n, joiner = settings.n, settings.joiner
        hit_docs = np.unique(doc_of).tolist()
        doc_units = dict(zip(hit_docs, ngrams.units_in(hit_docs, settings.unit)))
        matches = self._checked(doc_units, doc_of, doc_position, keys)
        if matches is None:
            return {}
        summary = _summarise(matches, n)
        doc_l, part_l, position_l = matches.doc.tolist(), matches.part.tolist(), matches.position.tolist()
        example_l = matches.example[summary.examples].tolist()
        groups = [*summary.groups, len(doc_l)]
        findings: Findings = {}
        joined: dict[int, str] = {}
        unit_sets: dict[int, set[str]] = {}
        located: dict[int, Location] = {}

        def location(d: int) -> Location:  # one per document hit (the first and the longest match often share it)
            if d not in located:
                located[d] = Location(chunk.file_index, lines[d], chunk.shown, None if offsets is None else offsets[d])
            return located[d]

        group = 0
        for k, hi in enumerate([*summary.examples[1:], len(doc_l)]):
            e = example_l[k]
            positions = summary.positions[k]
            r, size, f = summary.longest[k], summary.longest_units[k], summary.first[k]
            with_answer = None
            check = index.answer_check(e)
            # no document can hold the whole input when a part long enough for an n-gram has none in any
            hopeless = not check.parts.issubset(positions)
            while groups[group] < hi:  # the example's documents, in order
                g_lo, g_hi = groups[group], groups[group + 1]
                group += 1
                if with_answer is not None or hopeless:
                    continue
                d = doc_l[g_lo]
                if check.parts.issubset(part_l[g_lo:g_hi]):
                    if d not in unit_sets:
                        unit_sets[d] = set(doc_units[d])
                    if not check.units.issubset(unit_sets[d]):
                        continue
                    if d not in joined:
                        joined[d] = f"{joiner}{joiner.join(doc_units[d])}{joiner}"
                    text = joined[d]
                    if all(needle in text for needle in check.needles):
                        with_answer = location(d)
            findings[e] = Found(positions, size, (part_l[r], position_l[r]), location(doc_l[r]), location(doc_l[f]),
                                (part_l[f], position_l[f]), with_answer)
        return findings

    def _checked(self, doc_units: dict[int, list[str]], doc_of: np.ndarray, doc_position: np.ndarray,
                 keys: np.ndarray) -> Matches | None:
        """Every posting of every hit whose n units are the example's (None if none is), gathered with numpy
        (one Python object per posting was most of the time on a corpus with many hits)."""
        index, n = self.index, self.index.settings.n
        part_units = index.part_units
        starts, ends = index.offsets[keys], index.offsets[keys + 1]
        counts = ends - starts
        posting = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))
        columns = (np.repeat(doc_of, counts), np.repeat(doc_position, counts), index.example_of[posting],
                   index.part_of[posting], index.position_of[posting])
        doc, where, example, part, position = columns
        order = np.lexsort((position, where - position, part, doc, example))
        doc, where, example, part, position = (c[order] for c in columns)
        # consecutive n-grams on one diagonal are checked as one slice: equal slices make every n-gram in them
        # equal (a run fails only on a hash collision: then its n-grams one by one); measured 3-4x fewer
        # comparisons than one per posting on a corpus with many copies
        run_start = _starts(example) | _starts(doc) | _starts(part) | _starts(where - position)
        run_start[1:] |= position[1:] != position[:-1] + 1
        runs = np.flatnonzero(run_start)
        bounds = np.append(runs, len(doc)).tolist()
        ok = np.ones(len(doc), dtype=bool)
        d_l, w_l, e_l, p_l, q_l = (c[runs].tolist() for c in (doc, where, example, part, position))
        for k, (d, w, e, p, q) in enumerate(zip(d_l, w_l, e_l, p_l, q_l)):
            size = bounds[k + 1] - bounds[k] + n - 1
            if part_units[e][p][q:q + size] != doc_units[d][w:w + size]:
                for i in range(bounds[k], bounds[k + 1]):
                    o = i - bounds[k]
                    ok[i] = part_units[e][p][q + o:q + o + n] == doc_units[d][w + o:w + o + n]
        if not ok.any():
            return None
        return Matches(doc[ok], where[ok], example[ok], part[ok], position[ok])


@dataclass(frozen=True)
class Matches:
    """A chunk's checked matches, ordered by (example, document, part, diagonal, position): a group is one
    example in one document, a run consecutive n-grams on one diagonal (where - position)."""

    doc: np.ndarray
    where: np.ndarray  # the n-gram's first unit in the document
    example: np.ndarray
    part: np.ndarray
    position: np.ndarray  # the n-gram's first unit in the example's part


@dataclass(frozen=True)
class Summary:
    """Per example of a chunk's matches (in their order): where its matches start, its positions per part, its
    longest run (a match index and its length in units) and its first match; and where each group starts."""

    examples: list[int]
    positions: list[dict[int, set[int]]]
    longest: list[int]
    longest_units: list[int]
    first: list[int]
    groups: list[int]


def _summarise(matches: Matches, n: int) -> Summary:
    """Each example's positions, longest run and first match once per chunk, in numpy (per-match Python, and a
    result per document merged, were most of the time of a corpus with many hits)."""
    doc, where, example, part, position = matches.doc, matches.where, matches.example, matches.part, matches.position
    example_start = _starts(example)
    group_start = example_start | _starts(doc)
    run_start = group_start | _starts(part) | _starts(where - position)
    run_start[1:] |= position[1:] != position[:-1] + 1
    runs = np.flatnonzero(run_start)
    run_units = np.diff(runs, append=len(doc)) + n - 1
    example_of = np.cumsum(example_start) - 1
    # the longest run: ties to the earlier document (as Found.merge keeps), then part, then position
    best = _first_per_group(np.lexsort((position[runs], part[runs], doc[runs], -run_units, example_of[runs])),
                            example_of[runs])
    # the first match: the earliest document, then its earliest position, then part and position
    first = _first_per_group(np.lexsort((position, part, where, doc, example_of)), example_of)
    # each example's positions per part: (example, part, position) sorted, a set per (example, part)
    by_part = np.lexsort((position, part, example))
    example_sorted, part_sorted, position_sorted = example_of[by_part], part[by_part], position[by_part].tolist()
    bounds = np.flatnonzero(_starts(example_sorted) | _starts(part_sorted))
    positions: list[dict[int, set[int]]] = [{} for _ in range(int(example_of[-1]) + 1)]
    for lo, hi, e, p in zip(bounds.tolist(), [*bounds[1:].tolist(), len(position_sorted)],
                            example_sorted[bounds].tolist(), part_sorted[bounds].tolist()):
        positions[e][p] = set(position_sorted[lo:hi])
    return Summary(np.flatnonzero(example_start).tolist(), positions, runs[best].tolist(), run_units[best].tolist(),
                   first.tolist(), np.flatnonzero(group_start).tolist())


def _starts(values: np.ndarray) -> np.ndarray:
    """Where a sorted array's value changes (the first item included)."""
    changed = np.ones(len(values), dtype=bool)
    changed[1:] = values[1:] != values[:-1]
    return changed


def _first_per_group(order: np.ndarray, group_of: np.ndarray) -> np.ndarray:
    """The first of each group's items in `order` (a sort whose first key is the group), groups in order."""
    grouped = group_of[order]
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = grouped[1:] != grouped[:-1]
    return order[keep]
