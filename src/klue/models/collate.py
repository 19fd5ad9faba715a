"""Dynamic padding: each batch is padded to its own longest feature, never to max_len.

Hand-written rather than `DataCollatorWithPadding` because features are already token ids and labels may
be per token: filling one preallocated numpy array per field is a few microseconds per batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from klue.models.features import Feature
from klue.models.heads import IGNORE_INDEX


def pad_ids(rows: Sequence[Sequence[int]], value: int, length: int | None = None) -> torch.Tensor:
    width = length if length is not None else max(len(r) for r in rows)
    out = np.full((len(rows), width), value, dtype=np.int64)
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return torch.from_numpy(out)


def collate_features(features: Sequence[Feature], pad_token_id: int, with_labels: bool = True,
                     pad_to_multiple_of: int | None = None) -> dict[str, torch.Tensor]:
    """input_ids, attention_mask, token_type_ids (when the features carry them) and labels."""
    width = max(len(f.input_ids) for f in features)
    if pad_to_multiple_of:
        width = -(-width // pad_to_multiple_of) * pad_to_multiple_of
    input_ids = pad_ids([f.input_ids for f in features], pad_token_id, width)
    mask = np.zeros((len(features), width), dtype=np.int64)
    for i, f in enumerate(features):
        mask[i, : len(f.input_ids)] = 1
    batch = {"input_ids": input_ids, "attention_mask": torch.from_numpy(mask)}
    if features[0].token_type_ids is not None:
        batch["token_type_ids"] = pad_ids([f.token_type_ids or () for f in features], 0, width)
    if with_labels and features[0].label is not None:
        first = features[0].label
        if isinstance(first, tuple):
            batch["labels"] = pad_ids([f.label for f in features], IGNORE_INDEX, width)
        elif isinstance(first, float):
            batch["labels"] = torch.tensor([f.label for f in features], dtype=torch.float32)
        else:
            batch["labels"] = torch.tensor([f.label for f in features], dtype=torch.int64)
    return batch
