"""Stable hash splits."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from klue.io.splits import hash_fraction, split_by_key


@pytest.mark.slow
@given(st.text())
def test_hash_fraction_is_in_unit_interval_and_sha1_based(key: str) -> None:
    value = hash_fraction(key)
    assert 0.0 <= value < 1.0
    assert value == int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:16], 16) / 2**64


def test_hash_fraction_is_the_same_in_another_process() -> None:
    # Python's hash() of a str changes between processes (PYTHONHASHSEED); this must not.
    code = "from klue.io.splits import hash_fraction; print(repr(hash_fraction('흡연자분들은')))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert float(other) == hash_fraction("흡연자분들은")


def test_split_by_key_keeps_groups_and_order() -> None:
    items = [(f"group-{i % 50}", i) for i in range(1000)]
    below, above = split_by_key(items, lambda item: item[0], 0.8)
    assert len(below) + len(above) == 1000
    assert {g for g, _ in below}.isdisjoint({g for g, _ in above})
    assert [i for _, i in below] == sorted(i for _, i in below)
    assert 0.6 < len(below) / 1000 < 0.95
