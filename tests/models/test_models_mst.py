"""Chu-Liu/Edmonds decoding: always a single-root tree, and the best one (checked by brute force)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from klue.models.mst import mst_decode, tree_score


def _is_single_root_tree(heads: np.ndarray) -> bool:
    n = len(heads)
    if int((heads == 0).sum()) != 1 or heads.min() < 0 or heads.max() > n:
        return False
    if any(heads[d - 1] == d for d in range(1, n + 1)):
        return False
    for start in range(1, n + 1):
        node, steps = start, 0
        while node != 0:
            node = int(heads[node - 1])
            steps += 1
            if steps > n:
                return False
    return True


def _brute_force_best(scores: np.ndarray) -> float:
    n = scores.shape[0] - 1
    best = -np.inf
    for candidate in itertools.product(range(n + 1), repeat=n):
        heads = np.array(candidate)
        if _is_single_root_tree(heads):
            best = max(best, tree_score(scores, heads))
    return best


def test_tree_checker_rejects_cycles_and_two_roots() -> None:
    assert _is_single_root_tree(np.array([0, 1, 2]))
    assert not _is_single_root_tree(np.array([0, 3, 2]))  # 2 <-> 3 cycle
    assert not _is_single_root_tree(np.array([0, 0, 2]))  # two roots


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_equals_brute_force_on_small_matrices(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(40 if n < 5 else 12):
        scores = rng.normal(size=(n + 1, n + 1))
        heads = mst_decode(scores)
        assert _is_single_root_tree(heads)
        assert tree_score(scores, heads) == pytest.approx(_brute_force_best(scores), abs=1e-9)


def test_single_root_even_when_every_word_prefers_the_root() -> None:
    scores = np.zeros((5, 5))
    scores[0, 1:] = 10.0  # unconstrained best: all four words on the root
    scores[2, [1, 3, 4]] = 1.0
    heads = mst_decode(scores)
    assert heads.tolist() == [2, 0, 2, 2]


def test_integer_ties_still_give_trees() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 6))
        scores = rng.integers(0, 3, size=(n + 1, n + 1)).astype(float)
        heads = mst_decode(scores)
        assert _is_single_root_tree(heads)
        assert tree_score(scores, heads) == pytest.approx(_brute_force_best(scores))


def test_random_large_matrices_give_trees() -> None:
    rng = np.random.default_rng(0)
    for n in (10, 40, 120):
        scores = rng.normal(size=(n + 1, n + 1)) * 5
        heads = mst_decode(scores)
        assert _is_single_root_tree(heads)
        assert heads.dtype == np.int64 and heads.shape == (n,)


def test_forbidden_arcs_are_avoided() -> None:
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(5, 5))
    scores[0, [1, 2, 4]] = -np.inf  # only word 3 may be the root
    scores[1, 2] = -np.inf
    heads = mst_decode(scores)
    assert heads[2] == 0 and heads[1] != 1
    assert tree_score(scores, heads) == pytest.approx(_brute_force_best(scores))


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="square"):
        mst_decode(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="NaN"):
        mst_decode(np.full((3, 3), np.nan))
    blocked = np.zeros((3, 3))
    blocked[0, :] = -np.inf
    with pytest.raises(ValueError, match="root arc"):
        mst_decode(blocked)
