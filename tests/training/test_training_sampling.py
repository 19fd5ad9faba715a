"""Batch order, micro-batch splits, evaluation points and dynamic padding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from klue.models.collate import collate_features
from klue.models.features import Feature
from klue.models.heads import IGNORE_INDEX
from klue.training.engine import eval_points
from klue.training.recipes import Hyperparameters
from klue.training.sampling import epoch_batches, eval_batches, split_global_batch


def test_epoch_batches_are_a_seeded_partition() -> None:
    a = epoch_batches(103, 10, seed=1, epoch=0)
    assert sorted(np.concatenate(a).tolist()) == list(range(103))
    assert [len(b) for b in a] == [10] * 10 + [3]
    assert all((x == y).all() for x, y in zip(a, epoch_batches(103, 10, seed=1, epoch=0)))
    assert not all((x == y).all() for x, y in zip(a, epoch_batches(103, 10, seed=1, epoch=1)))


def test_length_grouping_keeps_a_partition_and_reduces_padding() -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 500, size=2000).tolist()
    grouped = epoch_batches(2000, 16, seed=3, epoch=0, lengths=lengths)
    plain = epoch_batches(2000, 16, seed=3, epoch=0)
    assert sorted(np.concatenate(grouped).tolist()) == list(range(2000))
    assert all(len(b) == 16 for b in grouped[:-1])

    def padding(batches: list[np.ndarray]) -> int:
        return sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in batches)

    assert padding(grouped) < 0.2 * padding(plain)


@pytest.mark.parametrize(("size", "processes", "accumulation"), [(16, 1, 1), (16, 2, 1), (16, 2, 2), (3, 2, 2)])
def test_global_batch_splits_over_processes_and_steps(size: int, processes: int, accumulation: int) -> None:
    batch = np.arange(100, 100 + size)
    seen = []
    for rank in range(processes):
        micro = split_global_batch(batch, processes, accumulation, rank)
        assert len(micro) == accumulation or processes == 1
        seen.extend(i for m in micro if m.weight for i in m.indices)
        assert all(m.indices for m in micro)  # stand-ins keep every process in each synchronisation
    assert sorted(seen) == batch.tolist()


def test_eval_batches_shard_every_feature_once() -> None:
    lengths = [5, 50, 7, 30, 30, 2, 9]
    shards = [eval_batches(lengths, 2, 3, rank) for rank in range(3)]
    flat = [i for shard in shards for batch in shard for i in batch]
    assert sorted(flat) == list(range(len(lengths)))
    assert shards[0][0][0] == 1  # longest first


def test_eval_points_follow_evals_per_epoch_or_eval_steps() -> None:
    assert eval_points(8, 16, Hyperparameters(evals_per_epoch=4)) == {2, 4, 6, 8, 10, 12, 14, 16}
    assert eval_points(8, 16, Hyperparameters(evals_per_epoch=0)) == {16}
    assert eval_points(8, 16, Hyperparameters(eval_steps=5)) == {5, 10, 15, 16}
    assert eval_points(3, 7, Hyperparameters(evals_per_epoch=4)) == {1, 2, 3, 4, 5, 6, 7}


def test_collate_pads_to_the_longest_feature_of_the_batch() -> None:
    features = [Feature(0, (2, 5, 3), (0, 0, 0), (IGNORE_INDEX, 4, IGNORE_INDEX), 1),
                Feature(1, (2, 5, 6, 7, 3), (0, 0, 1, 1, 1), (IGNORE_INDEX, 1, 2, 3, IGNORE_INDEX), 3)]
    batch = collate_features(features, pad_token_id=0)
    assert batch["input_ids"].tolist() == [[2, 5, 3, 0, 0], [2, 5, 6, 7, 3]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]
    assert batch["token_type_ids"].tolist() == [[0, 0, 0, 0, 0], [0, 0, 1, 1, 1]]
    assert batch["labels"][0].tolist() == [IGNORE_INDEX, 4, IGNORE_INDEX, IGNORE_INDEX, IGNORE_INDEX]
    no_types = [Feature(0, (2, 3), None, 1.5, 1), Feature(1, (2, 4, 3), None, 0.5, 1)]
    batch = collate_features(no_types, pad_token_id=1, pad_to_multiple_of=8)
    assert "token_type_ids" not in batch and batch["input_ids"].shape == (2, 8)
    assert batch["labels"].dtype == torch.float32
