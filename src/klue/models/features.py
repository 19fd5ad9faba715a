"""Features: what an adapter makes of a record, ready to be padded into a batch.

Records -> `Feature`s (token ids + a label already in model space) -> batches (collate.py). One record may
give several features (NER windows over a long sentence); `record_index` ties each back to its record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Feature:
    record_index: int  # position of the source record in the list that was featurized
    input_ids: tuple[int, ...]  # special tokens included
    token_type_ids: tuple[int, ...] | None  # None for models with one token type (RoBERTa)
    label: Any  # int (class), float (regression), tuple[int, ...] (per token; IGNORE_INDEX = none) or None
    n_items: int  # how many loss terms the label makes (1 per example, or labelled tokens): loss normaliser
    extra: Any = None  # adapter-specific data for decoding or a custom collate (e.g. NER token->char map)

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass(frozen=True)
class SpecialTokens:
    """The ids the tokenizer puts around one sequence ([CLS] ... [SEP], <s> ... </s>, ...), found by
    encoding a probe, so windows cut by hand get exactly what the tokenizer would have added."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]

    @classmethod
    def of(cls, tokenizer: Any) -> SpecialTokens:
        encoded = tokenizer("a", add_special_tokens=True, return_special_tokens_mask=True)
        ids, mask = encoded["input_ids"], encoded["special_tokens_mask"]
        start = next((i for i, m in enumerate(mask) if not m), len(ids))
        end = len(ids) - next((i for i, m in enumerate(reversed(mask)) if not m), len(ids))
        return cls(tuple(ids[:start]), tuple(ids[end:]))

    def __len__(self) -> int:
        return len(self.prefix) + len(self.suffix)


@dataclass(frozen=True)
class FeaturizeContext:
    """Everything featurization needs besides the records."""

    tokenizer: Any
    max_len: int  # tokens per feature, special tokens included
    use_token_type_ids: bool
    window_overlap: int = 32  # tokens shared by consecutive windows of a long sequence

    def special_tokens(self) -> SpecialTokens:
        return SpecialTokens.of(self.tokenizer)
