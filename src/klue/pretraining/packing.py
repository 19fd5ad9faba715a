"""Texts into masked-LM blocks: tokenize, then pack consecutive texts into sequences of at most `max_len`.

A block is `[CLS] tokens... [SEP]` with, for each position, the masking unit it belongs to (-1 for the
special tokens): its own position (`none`), its whitespace word (`word`) or its Kiwi morpheme
(`morpheme`). Unit ids are numbered from 0 within each block, in text order; masking only compares them
(which positions share a unit, in which order), so a block means the same wherever it was packed, and the
numbers fit 16 bits in a token shard (klue.pretraining.shards). A text longer than a block is cut into
several; units never cross texts.

`iter_blocks` streams: it tokenizes texts in batches (the `tokenizers` batch call; the same ids as one
call per text) and yields each block as it fills, so memory does not grow with the corpus.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from klue.errors import DataError
from klue.pretraining.morphemes import MorphemeSplitter

WholeWord = Literal["none", "word", "morpheme"]
WHOLE_WORD: tuple[WholeWord, ...] = ("none", "word", "morpheme")
_ENCODE_BATCH = 256  # texts per tokenizer call


@dataclass
class Block:
    """One packed training sequence (special tokens included) and the masking unit of each position
    (-1 for special tokens), for whole-word masking."""

    input_ids: list[int]
    word_ids: list[int]


def word_index(text: str, offsets: Sequence[tuple[int, int]], whole_word: WholeWord,
               splitter: MorphemeSplitter | None) -> list[int]:
    """The unit each token belongs to: its own position, its whitespace word, or its Kiwi morpheme."""
    if whole_word == "none":
        return list(range(len(offsets)))
    if whole_word == "word":
        starts = [i for i, ch in enumerate(text) if not ch.isspace() and (i == 0 or text[i - 1].isspace())]
    else:
        assert splitter is not None
        starts = [s for s, _ in splitter.segments(text)]
    return [max(0, bisect.bisect_right(starts, start) - 1) for start, _ in offsets]


def _encoded(tokenizer: Any, texts: Iterable[str], whole_word: WholeWord, splitter: MorphemeSplitter | None
             ) -> Iterator[tuple[list[int], list[int]]]:
    """(token ids, unit of each token) per text, tokenized in batches."""
    # The Rust tokenizer inside a fast tokenizer gives the same ids and offsets as calling the tokenizer,
    # about twice as fast (no conversion to a BatchEncoding); only when it pads or truncates by itself
    # (a tokenizer.json that says so) does the call, which turns both off, have to be used.
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and (backend.truncation is not None or backend.padding is not None):
        backend = None
    iterator = iter(texts)
    while batch := list(itertools.islice(iterator, _ENCODE_BATCH)):
        if backend is not None:
            encodings = backend.encode_batch(batch, add_special_tokens=False)
            pairs = [(e.ids, e.offsets) for e in encodings]
        else:
            encoding = tokenizer(batch, add_special_tokens=False, return_offsets_mapping=True)
            pairs = list(zip(encoding["input_ids"], encoding["offset_mapping"], strict=True))
        for text, (ids, offsets) in zip(batch, pairs, strict=True):
            if ids:
                yield ids, word_index(text, offsets, whole_word, splitter)


def iter_blocks(tokenizer: Any, texts: Iterable[str], max_len: int, whole_word: WholeWord = "none",
                splitter: MorphemeSplitter | None = None) -> Iterator[Block]:
    """Blocks of at most `max_len` tokens from consecutive texts (see the module doc)."""
    if whole_word not in WHOLE_WORD:
        raise DataError(f"whole-word unit {whole_word!r}: one of {', '.join(WHOLE_WORD)}")
    if whole_word == "morpheme" and splitter is None:
        splitter = MorphemeSplitter()
    room = max_len - 2
    if room < 8:
        raise DataError(f"max_len {max_len} is too short for masked-LM blocks")
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    ids: list[int] = []
    words: list[int] = []
    next_word = 0  # units numbered across the texts of a block; renumbered from 0 when a block is made

    def block() -> Block:
        first = words[0]
        return Block([cls_id, *ids, sep_id], [-1, *(w - first for w in words), -1])

    for token_ids, local in _encoded(tokenizer, texts, whole_word, splitter):
        global_words = [next_word + w for w in local]
        next_word += max(local) + 1
        position = 0
        while position < len(token_ids):
            if len(ids) == room:
                yield block()
                ids, words = [], []
            take = min(room - len(ids), len(token_ids) - position)
            ids.extend(token_ids[position:position + take])
            words.extend(global_words[position:position + take])
            position += take
        if len(ids) >= room:
            yield block()
            ids, words = [], []
    if ids:
        yield block()


def pack_blocks(tokenizer: Any, texts: Iterable[str], max_len: int, whole_word: WholeWord = "none",
                splitter: MorphemeSplitter | None = None) -> list[Block]:
    """Every block of `texts`, in memory (small corpora; `klue pretrain prepare` writes token shards)."""
    return list(iter_blocks(tokenizer, texts, max_len, whole_word, splitter))
