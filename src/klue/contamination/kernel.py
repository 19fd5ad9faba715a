"""One compiled pass over a plain-text chunk's UTF-8 bytes (numba): decode, fold, unit and n-gram hashes and the
index's bitmap in a single loop (docs/contamination.md, "Why it is fast").

Written by hand because it is measurably faster (benchmarks/contamination_janitor.py and contamination_speed.py,
RESULTS.md issue 41): the numpy path in `units` decodes the chunk in Python, encodes it again as UTF-32 and
makes about ten passes over arrays of the chunk's size; here each byte is read once, and only the n-grams the
bitmap lets through are written out. The hashes are `units.Hasher`'s, bit for bit (tests/contamination/
test_scan_kernel.py compares them on Korean text and on random Unicode); `Hasher` remains the reference and
hashes the benchmark's side, JSON fields and the lines this pass leaves to it (a character that NFC or a
multi-character case fold changes: those lines go through Python, as in the numpy path).

numba comes with `pip install 'klue[contamination]'`; without it the scan uses the numpy path and says so.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

AVAILABLE = importlib.util.find_spec("numba") is not None


@dataclass(frozen=True)
class LinePass:
    """What the pass found in a chunk of lines (its final newline dropped): each line's normalised code points
    (a SPACE between lines; a line needing Python holds its code points folded but not composed), where each
    line starts in them and in the bytes, the n-grams the bitmap let through (hash, line, first unit) outside
    the lines needing Python, and those lines."""

    points: np.ndarray  # uint32
    starts: np.ndarray  # int64 per line, in `points`
    byte_starts: np.ndarray  # int64 per line, and the end of the bytes
    hashes: np.ndarray  # uint64
    line: np.ndarray  # int64
    position: np.ndarray  # int64
    python_lines: np.ndarray  # int64


def line_pass(data: bytes | memoryview, fold: np.ndarray, n: int, char_unit: bool, constants: tuple[int, int, int, int],
              bits: np.ndarray, shift: int) -> LinePass | None:
    """The pass over `data` (None if it is not strict UTF-8: the caller decodes it to name the line). `fold` is
    `units.Tables.flagged`; `constants` the bases (32 and 64 bits), the inverse of the 64-bit one and its power
    n - 1; `bits` the index's bitmap packed 8 slots a byte (empty: every n-gram comes out)."""
    base32, base64, inverse64, top64 = (np.uint64(c) for c in constants)
    status, *arrays = _compiled()(np.frombuffer(data, dtype=np.uint8), fold, n, char_unit, base32, base64,
                                  inverse64, top64, bits, shift)
    if status != 0:
        return None
    return LinePass(*arrays)


_KERNEL: list[Callable[..., tuple[Any, ...]]] = []  # compiled once per process (numba's disk cache: not again)


def _compiled() -> Callable[..., tuple[Any, ...]]:
    if not _KERNEL:
        import numba

        _KERNEL.append(numba.njit(cache=True, nogil=True)(_line_pass))
    return _KERNEL[0]


_SPACE = 32
_DELETED = 0xFFFFFFFF
_SLOW = 1 << 31
_LOW32 = 0xFFFFFFFF
_MIX = 0xBF58476D1CE4E5B9


def _line_pass(data, fold, n, char_unit, base32, base64, inverse64, top64, bits, shift):  # numba types it
    # No array is reassigned inside the loop (numba would count references on every byte: 3x slower, measured)
    # and every output is sized for the worst case (untouched pages of np.empty cost nothing).
    size = data.shape[0]
    points = np.empty(size + 1, dtype=np.uint32)
    starts = np.empty(size + 2, dtype=np.int64)
    byte_starts = np.empty(size + 2, dtype=np.int64)
    hashes = np.empty(size + 1, dtype=np.uint64)
    lines = np.empty(size + 1, dtype=np.int64)
    positions = np.empty(size + 1, dtype=np.int64)
    python_lines = np.empty(size + 1, dtype=np.int64)
    ring = np.zeros(n, dtype=np.uint64)  # the window's last n unit hashes
    use_bits = bits.shape[0] > 0
    low32, mix, one = np.uint64(_LOW32), np.uint64(_MIX), np.uint64(1)
    space, deleted, slow = np.uint64(_SPACE), np.uint64(_DELETED), np.uint64(_SLOW)  # typed: no float compares
    slot_shift = np.uint64(shift)
    status = found = python_count = npoints = line = units = slot = i = 0
    starts[0] = byte_starts[0] = 0
    unit_hash, unit_power, window, power = np.uint64(0), np.uint64(1), np.uint64(0), np.uint64(1)
    in_unit = needs_python = False
    line_found = 0
    finished = False
    while True:
        end_line = False
        if i < size:
            b0 = np.int64(data[i])
            if b0 >= 0xE0 and b0 < 0xF0:  # 3 bytes, every Hangul syllable: tested first (4% faster, measured)
                if i + 2 >= size:
                    status = -1
                    break
                b1, b2 = np.int64(data[i + 1]), np.int64(data[i + 2])
                if ((b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80 or (b0 == 0xE0 and b1 < 0xA0)
                        or (b0 == 0xED and b1 >= 0xA0)):  # overlong, or a surrogate
                    status = -1
                    break
                point = ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
                i += 3
            elif b0 < 0x80:
                point = b0
                i += 1
            elif b0 < 0xC2:
                status = -1
                break
            elif b0 < 0xE0:
                if i + 1 >= size or (np.int64(data[i + 1]) & 0xC0) != 0x80:
                    status = -1
                    break
                point = ((b0 & 0x1F) << 6) | (np.int64(data[i + 1]) & 0x3F)
                i += 2
            elif b0 < 0xF5:
                if i + 3 >= size:
                    status = -1
                    break
                b1, b2, b3 = np.int64(data[i + 1]), np.int64(data[i + 2]), np.int64(data[i + 3])
                if ((b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80 or (b3 & 0xC0) != 0x80
                        or (b0 == 0xF0 and b1 < 0x90) or (b0 == 0xF4 and b1 >= 0x90)):  # overlong, or past U+10FFFF
                    status = -1
                    break
                point = ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                i += 4
            else:
                status = -1
                break
            if point == 10:
                end_line = True
                folded = space
            else:
                folded = np.uint64(fold[point])
                if folded == deleted:
                    continue
                if folded >= slow:
                    needs_python = True
                    folded = folded ^ slow
                points[npoints] = folded
                npoints += 1
        else:  # the last line ends with the bytes (a final newline, if any, began an empty line)
            end_line = finished = True
            folded = space
        unit_done = False
        value = np.uint64(0)
        if folded != space:
            if char_unit:
                value = folded + one
                unit_done = True
            else:  # a unit's hash: sum of (point + 1) * base32**k over its points, mod 2**32
                unit_hash = (unit_hash + (folded + one) * unit_power) & low32
                unit_power = (unit_power * base32) & low32
                in_unit = True
        elif in_unit:
            value, unit_hash, unit_power, in_unit, unit_done = unit_hash, np.uint64(0), one, False, True
        if unit_done:  # the window's hash: sum of value * base64**k over its n units, mod 2**64, rolled
            if units >= n:
                window = (window - ring[slot]) * inverse64 + value * top64
            else:
                window = window + value * power
                power = power * base64
            ring[slot] = value
            slot = 0 if slot + 1 == n else slot + 1
            units += 1
            if units >= n:
                mixed = window ^ (window >> np.uint64(30))  # splitmix64's finaliser, as units._mix
                mixed = mixed * mix
                mixed = mixed ^ (mixed >> np.uint64(31))
                slot_of = mixed >> slot_shift
                if not use_bits or (bits[slot_of >> np.uint64(3)] >> (slot_of & np.uint64(7))) & one:
                    hashes[found] = mixed
                    lines[found] = line
                    positions[found] = units - n
                    found += 1
        if end_line:
            if needs_python:  # its n-grams are made in Python, from its composed text
                found = line_found
                python_lines[python_count] = line
                python_count += 1
            line += 1
            byte_starts[line] = i
            if finished:
                break
            starts[line] = npoints + 1
            points[npoints] = space
            npoints += 1
            units = slot = 0
            window, power = np.uint64(0), np.uint64(1)
            needs_python = False
            line_found = found
    return (status, points[:npoints], starts[:line], byte_starts[:line + 1], hashes[:found], lines[:found],
            positions[:found], python_lines[:python_count])
