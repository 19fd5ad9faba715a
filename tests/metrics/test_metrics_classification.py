"""Shared counts against sklearn, and shard merging."""

from __future__ import annotations

import doctest
import importlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klue.metrics.classification import LabelCounts, accuracy, confusion_matrix, macro_f1, micro_f1

LABELS = ["a", "b", "c", "d", "e"]
pairs = st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), min_size=1, max_size=60)


@settings(max_examples=40, deadline=None)
@given(pairs)
def test_macro_micro_accuracy_match_sklearn(data: list[tuple[str, str]]) -> None:
    from sklearn.metrics import accuracy_score, f1_score

    gold = [g for g, _ in data]
    pred = [p for _, p in data]
    assert macro_f1(gold, pred) == pytest.approx(100 * f1_score(gold, pred, average="macro"), abs=1e-9)
    assert micro_f1(gold, pred) == pytest.approx(100 * f1_score(gold, pred, average="micro"), abs=1e-9)
    some = ["a", "c"]
    assert micro_f1(gold, pred, labels=some) == pytest.approx(
        100 * f1_score(gold, pred, average="micro", labels=some, zero_division=0), abs=1e-9)
    assert macro_f1(gold, pred, labels=LABELS, zero_division=1.0) == pytest.approx(
        100 * f1_score(gold, pred, average="macro", labels=LABELS, zero_division=1), abs=1e-9)
    assert accuracy(gold, pred) == pytest.approx(100 * accuracy_score(gold, pred), abs=1e-9)
    assert LabelCounts.of(gold, pred).accuracy() == pytest.approx(accuracy(gold, pred), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(pairs, st.integers(min_value=0, max_value=60))
def test_shards_merge_to_the_whole(data: list[tuple[str, str]], cut: int) -> None:
    gold = [g for g, _ in data]
    pred = [p for _, p in data]
    whole = LabelCounts.of(gold, pred)
    merged = LabelCounts.of(gold[:cut], pred[:cut]) + LabelCounts.of(gold[cut:], pred[cut:])
    assert merged == whole
    assert merged.macro_f1() == whole.macro_f1()


def test_confusion_rows_are_gold_and_extras_follow() -> None:
    from sklearn.metrics import confusion_matrix as sk_confusion

    gold = ["a", "b", "b", "a", "c"]
    pred = ["a", "b", "z", "b", "c"]
    matrix = confusion_matrix(gold, pred, labels=["a", "b", "c"])
    assert matrix.labels == ("a", "b", "c", "z")
    assert [list(r) for r in matrix.counts] == sk_confusion(gold, pred, labels=["a", "b", "c", "z"]).tolist()


def test_empty_and_misaligned_inputs() -> None:
    assert math.isnan(macro_f1([], []))
    assert math.isnan(accuracy([], []))
    with pytest.raises(ValueError, match="2 gold"):
        macro_f1(["a", "b"], ["a"])


@pytest.mark.parametrize("name", ["classification", "ynat", "nli", "sts", "ner", "re", "dp", "mrc", "wos"])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"klue.metrics.{name}")
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0
