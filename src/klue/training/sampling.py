"""The order in which training sees its features, as a pure function of (seed, epoch).

Because the order is recomputed rather than drawn from a stateful sampler, a resumed run finds its place
from the step counter alone, and every process knows the whole global batch (so the loss normaliser needs
no communication). One global batch = one optimizer step = `batch_size` features, split evenly over
processes and gradient-accumulation micro-steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Length grouping sorts by length inside windows of this many global batches, then shuffles the batches:
# batches of similar lengths (less padding) while the order of batches stays random.
LENGTH_GROUP_WINDOW = 50


@dataclass(frozen=True)
class MicroBatch:
    indices: tuple[int, ...]  # feature indices
    weight: float  # 0.0 for a stand-in batch given to a process that has no feature in this step


def epoch_batches(n: int, batch_size: int, seed: int, epoch: int,
                  lengths: Sequence[int] | None = None) -> list[np.ndarray]:
    """The global batches of one epoch; `lengths` given = length-grouped (see LENGTH_GROUP_WINDOW)."""
    rng = np.random.default_rng([seed, epoch])
    order = rng.permutation(n)
    if lengths is None:
        return [order[i : i + batch_size] for i in range(0, n, batch_size)]
    lengths_arr = np.asarray(lengths)
    window = batch_size * LENGTH_GROUP_WINDOW
    batches: list[np.ndarray] = []
    for start in range(0, n, window):
        chunk = order[start : start + window]
        chunk = chunk[np.argsort(-lengths_arr[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    full = [b for b in batches if len(b) == batch_size]
    partial = [b for b in batches if len(b) != batch_size]
    picks = rng.permutation(len(full))
    return [full[i] for i in picks] + partial  # an incomplete batch only ever comes last


def split_global_batch(batch: np.ndarray, num_processes: int, accumulation_steps: int,
                       process_index: int) -> list[MicroBatch]:
    """This process's micro-batches of one global batch, one per accumulation step.

    A segment left empty (a short last batch) becomes a weight-0 stand-in so that every process still
    takes part in each gradient synchronisation."""
    segments = np.array_split(batch, num_processes * accumulation_steps)
    out = []
    for step in range(accumulation_steps):
        segment = segments[step * num_processes + process_index]
        if len(segment):
            out.append(MicroBatch(tuple(int(i) for i in segment), 1.0))
        elif num_processes > 1:
            out.append(MicroBatch((int(batch[0]),), 0.0))
    return out


def eval_batches(lengths: Sequence[int], batch_size: int, num_processes: int, process_index: int
                 ) -> list[tuple[int, ...]]:
    """This process's inference batches: longest first (little padding; memory peaks show up at once),
    features dealt round-robin over processes; outputs are matched back by feature index."""
    order = np.argsort(-np.asarray(lengths), kind="stable")[process_index::num_processes]
    return [tuple(int(i) for i in order[i : i + batch_size]) for i in range(0, len(order), batch_size)]
