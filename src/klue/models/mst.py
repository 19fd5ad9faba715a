"""Maximum spanning tree decoding for dependency parsing (Chu-Liu/Edmonds), one root word.

Hand-written because neither numpy nor scipy ships a directed maximum spanning arborescence, and the
parsers need the single-root variant that KLUE DP gold trees obey (exactly one word attaches to 0).
"""

from __future__ import annotations

import numpy as np

__all__ = ["mst_decode", "tree_score"]


def mst_decode(scores: np.ndarray) -> np.ndarray:
    """The highest-scoring dependency tree with exactly one word attached to the root.

    `scores` has shape (n + 1, n + 1); `scores[h, d]` is the score of the arc from head `h` to
    dependent `d`, index 0 being the artificial root and 1..n the words. Column 0 and the diagonal are
    ignored; `-inf` marks an arc that is not allowed (a finite tree must remain possible).
    Returns `heads`, an int64 array of length n: `heads[d - 1]` is the head of word `d` (0 = root),
    so exactly one entry is 0 and following heads from any word reaches 0 without a cycle.

    The single-root constraint is exact, not a repair: every tree has at least one root arc, so
    lowering all root arcs by a constant larger than the spread of any two trees' scores makes the best
    tree of the shifted problem the best single-root tree of the original.

    >>> mst_decode(np.array([[0., 5., 1.], [0., 0., 4.], [0., 3., 0.]])).tolist()
    [0, 1]
    """
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] < 2:
        raise ValueError(f"scores must be a square (n+1, n+1) matrix with n >= 1, got shape {matrix.shape}")
    if np.isnan(matrix).any():
        raise ValueError("scores contain NaN")
    n_nodes = matrix.shape[0]
    work = matrix.copy()
    np.fill_diagonal(work, -np.inf)
    work[:, 0] = -np.inf
    finite = work[np.isfinite(work)]
    if finite.size == 0 or not np.isfinite(work[0, 1:]).any():
        raise ValueError("no spanning tree: every root arc (or every arc) is -inf")
    spread = float(finite.max() - finite.min())
    work[0, 1:] -= (n_nodes - 1) * spread + 1.0
    heads = _chu_liu_edmonds(work)
    if not np.isfinite(work[heads[1:], np.arange(1, n_nodes)]).all():
        raise ValueError("no spanning tree uses only finite arcs")
    return heads[1:].astype(np.int64)


def tree_score(scores: np.ndarray, heads: np.ndarray) -> float:
    """Sum of `scores[heads[d-1], d]` over words d (the objective `mst_decode` maximises)."""
    heads = np.asarray(heads)
    return float(np.asarray(scores, dtype=np.float64)[heads, np.arange(1, len(heads) + 1)].sum())


def _find_cycle(heads: np.ndarray) -> list[int] | None:
    """One cycle among the words (node 0 excluded) of a head-per-node array, or None."""
    n_nodes = len(heads)
    state = np.zeros(n_nodes, dtype=np.int8)  # 0 unvisited, 1 on the current path, 2 done
    state[0] = 2
    for start in range(1, n_nodes):
        path: list[int] = []
        node = start
        while state[node] == 0:
            state[node] = 1
            path.append(node)
            node = int(heads[node])
        if state[node] == 1:  # walked back into the current path: a cycle from `node`
            return path[path.index(node):]
        state[path] = 2
    return None


def _chu_liu_edmonds(scores: np.ndarray) -> np.ndarray:
    """Unconstrained maximum arborescence rooted at 0; returns a head for every node (heads[0] = 0).

    `scores` must already have -inf on the diagonal and in column 0.
    """
    n_nodes = scores.shape[0]
    heads = scores.argmax(axis=0)
    heads[0] = 0
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads

    in_cycle = np.zeros(n_nodes, dtype=bool)
    in_cycle[cycle] = True
    outside = np.flatnonzero(~in_cycle)  # includes the root, which stays at new index 0
    cycle_nodes = np.array(cycle)
    n_out = len(outside)
    contracted = n_out  # index of the contracted node in the reduced graph

    reduced = np.full((n_out + 1, n_out + 1), -np.inf)
    reduced[:n_out, :n_out] = scores[np.ix_(outside, outside)]
    # arcs leaving the cycle: the best member of the cycle as head
    out_scores = scores[np.ix_(cycle_nodes, outside)]
    best_source = out_scores.argmax(axis=0)
    reduced[contracted, :n_out] = out_scores[best_source, np.arange(n_out)]
    # arcs entering the cycle at member d: gain over d's cycle arc (the cycle's own score is a constant)
    cycle_arc = scores[heads[cycle_nodes], cycle_nodes]
    in_scores = scores[np.ix_(outside, cycle_nodes)] - cycle_arc[None, :]
    best_entry = in_scores.argmax(axis=1)
    reduced[:n_out, contracted] = in_scores[np.arange(n_out), best_entry]
    reduced[:, 0] = -np.inf
    np.fill_diagonal(reduced, -np.inf)

    reduced_heads = _chu_liu_edmonds(reduced)

    result = heads.copy()  # cycle members keep their cycle heads except the entry point
    for new_dep, old_dep in enumerate(outside):
        if new_dep == 0:
            continue
        new_head = reduced_heads[new_dep]
        result[old_dep] = cycle_nodes[best_source[new_dep]] if new_head == contracted else outside[new_head]
    entering_head = reduced_heads[contracted]
    entry = cycle_nodes[best_entry[entering_head]]
    result[entry] = outside[entering_head]
    result[0] = 0
    return result
