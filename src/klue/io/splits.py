"""Stable hash splits: a key's place in [0, 1) comes from sha1 of its UTF-8 bytes.

Never Python's `hash()` (salted per process) and never a seed: the same key lands on the same side of
a split on every machine and in every run, so local protocols are reproducible and groups (the records
that share a group key) never straddle a split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

_SCALE = float(1 << 64)


def hash_fraction(key: str) -> float:
    """A number in [0, 1) fixed by `key`: the first 8 bytes of sha1(key) as a fraction of 2**64.

    >>> hash_fraction("klue-nli-v1_dev_00000") == hash_fraction("klue-nli-v1_dev_00000")
    True
    >>> 0.0 <= hash_fraction("") < 1.0
    True
    """
    digest = hashlib.sha1(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / _SCALE


def split_by_key(items: Iterable[T], key: Callable[[T], str], fraction: float) -> tuple[list[T], list[T]]:
    """(items whose key hashes below `fraction`, the rest), each in input order."""
    below: list[T] = []
    above: list[T] = []
    for item in items:
        (below if hash_fraction(key(item)) < fraction else above).append(item)
    return below, above
