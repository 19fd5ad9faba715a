"""KLUE-NER: character IOB2 tags learned and predicted on sub-word tokens, for any fast tokenizer.

Alignment (through the tokenizer's offset mapping, so WordPiece, byte-level BPE and SentencePiece /
Unigram all work): every non-space character belongs to the FIRST token whose offset span covers it.
A token's training label is the tag of its first character; tokens that own no character (a second
byte-level piece of one syllable, a bare SentencePiece `▁`) carry no loss. Decoding, as the official
pipeline does: a token's first character takes the predicted label and its following characters take
`I-<type>` (or `O`); spaces and characters no token covers are `O`.

Sentences longer than max_len are cut into overlapping windows of tokens (never truncated); each token
is decoded from the window where it has the most context on both sides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from klue.models.adapter import Adapter, check_head_options
from klue.models.features import Feature, FeaturizeContext, SpecialTokens
from klue.models.heads import IGNORE_INDEX, HeadOutput, HeadSpec
from klue.tasks.base import Task

SPACE = " "
OUTSIDE = "O"


@dataclass(frozen=True, slots=True)
class Window:
    """Where one feature sits in its sentence's token sequence, and which of its tokens it decodes."""

    token_start: int  # index of the window's first content token in the sentence's tokens
    owned: tuple[tuple[int, ...], ...]  # per content token of the window: the character indices it owns
    keep: tuple[int, int]  # [lo, hi) content-token positions (window-relative) this window decodes
    prefix: int  # special tokens before the content


def char_owners(text: str, offsets: Sequence[tuple[int, int]]) -> list[tuple[int, ...]]:
    """Per token, the non-space characters it owns (each character goes to the first token covering it)."""
    taken = [False] * len(text)
    owned: list[tuple[int, ...]] = []
    for start, end in offsets:
        mine = []
        for c in range(max(start, 0), min(end, len(text))):
            if not taken[c] and text[c] != SPACE:
                taken[c] = True
                mine.append(c)
        owned.append(tuple(mine))
    return owned


def window_starts(n_tokens: int, width: int, overlap: int) -> list[int]:
    if n_tokens <= width:
        return [0]
    stride = width - overlap
    starts = list(range(0, n_tokens - width, stride))
    starts.append(n_tokens - width)  # the last window ends exactly at the last token
    return starts


def keep_ranges(n_tokens: int, width: int, starts: Sequence[int]) -> list[tuple[int, int]]:
    """For each window, the window-relative range of tokens for which it is the most central window."""
    best = np.full(n_tokens, -1)
    best_margin = np.full(n_tokens, -1)
    for w, start in enumerate(starts):
        end = min(start + width, n_tokens)
        positions = np.arange(start, end)
        margin = np.minimum(positions - start, end - 1 - positions)
        better = margin > best_margin[start:end]
        best[start:end][better] = w
        best_margin[start:end][better] = margin[better]
    ranges = []
    for w, start in enumerate(starts):
        mine = np.nonzero(best == w)[0]
        ranges.append((int(mine[0]) - start, int(mine[-1]) - start + 1) if len(mine) else (0, 0))
    return ranges


def continuation(tag: str) -> str:
    return OUTSIDE if tag == OUTSIDE else f"I-{tag[2:]}"


class NerAdapter(Adapter):
    def __init__(self, task: Task[Any, Any]) -> None:
        super().__init__(task)
        self.tags = tuple(task.labels)
        self.tag_index = {tag: i for i, tag in enumerate(self.tags)}
        self.outside_id = self.tag_index[OUTSIDE]

    def head_spec(self, dropout: float | None, options: Mapping[str, Any]) -> HeadSpec:
        check_head_options(self.task.name, options, {})
        return HeadSpec("token_classification", self.tags, dropout)

    def featurize(self, records: Sequence[Any], ctx: FeaturizeContext) -> list[Feature]:
        if not records:
            return []
        specials = SpecialTokens.of(ctx.tokenizer)
        width = ctx.max_len - len(specials)
        texts = [record.text for record in records]
        encoded = ctx.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True,
                                return_attention_mask=False, return_token_type_ids=False)
        features: list[Feature] = []
        for index, (record, ids, offsets) in enumerate(zip(records, encoded["input_ids"],
                                                           encoded["offset_mapping"])):
            owned = char_owners(texts[index], offsets)
            gold = self.has_gold(record)
            token_labels = [self.tag_index[record.tags[chars[0]]] if chars and gold else IGNORE_INDEX
                            for chars in owned]
            starts = window_starts(len(ids), width, ctx.window_overlap)
            for start, keep in zip(starts, keep_ranges(len(ids), width, starts)):
                end = min(start + width, len(ids))
                labels = (IGNORE_INDEX,) * len(specials.prefix) + tuple(token_labels[start:end]) \
                    + (IGNORE_INDEX,) * len(specials.suffix)
                input_ids = specials.prefix + tuple(ids[start:end]) + specials.suffix
                features.append(Feature(
                    record_index=index, input_ids=input_ids,
                    token_type_ids=(0,) * len(input_ids) if ctx.use_token_type_ids else None,
                    label=labels, n_items=sum(label != IGNORE_INDEX for label in labels),
                    extra=Window(start, tuple(owned[start:end]), keep, len(specials.prefix))))
        return features

    def to_host(self, output: HeadOutput, batch: Mapping[str, torch.Tensor],
                features: Sequence[Feature]) -> list[Any]:
        ids = output.logits.argmax(-1).to(torch.int16).cpu().numpy()  # the decoder needs only the argmax
        return [ids[i, : len(f)] for i, f in enumerate(features)]

    def decode(self, records: Sequence[Any], features: Sequence[Feature], outputs: Sequence[Any]) -> list[Any]:
        tags_by_record: list[list[str]] = [[OUTSIDE] * len(record.text) for record in records]
        for feature, label_ids in zip(features, outputs):
            window: Window = feature.extra
            tags = tags_by_record[feature.record_index]
            lo, hi = window.keep
            for position in range(lo, hi):
                chars = window.owned[position]
                if not chars:
                    continue
                tag = self.tags[int(label_ids[window.prefix + position])]
                tags[chars[0]] = tag
                for c in chars[1:]:
                    tags[c] = continuation(tag)
        return [self.prediction({"guid": self.task.guid(record), "tags": tags})
                for record, tags in zip(records, tags_by_record)]

    def roundtrip(self, records: Sequence[Any], ctx: FeaturizeContext) -> list[Any]:
        """The predictions a model would make if it predicted every token's training label exactly: the
        ceiling this tokenizer's alignment allows (gold tags -> sub-word labels -> character tags)."""
        features = self.featurize(records, ctx)
        outputs = [np.array([self.outside_id if x == IGNORE_INDEX else x for x in f.label]) for f in features]
        return self.decode(records, features, outputs)


def make_adapter(task: Task[Any, Any]) -> NerAdapter:
    return NerAdapter(task)
