"""KLUE-DP (and UD Korean CoNLL-U): a biaffine arc / label scorer over word representations.

Each word (eojeol) is represented by the encoder states of its first and last sub-word (through the fast
tokenizer's offset mapping over the words joined by spaces). Head options:
- `head.pos`: `gold` (default; the POS tag of each word's last morpheme from the file, as the official
  baseline feeds it), `kiwi` (the same tag predicted by the kiwipiepy analyser, for text without gold POS)
  or `none`.
- `head.decoding`: `mst` (default; Chu-Liu/Edmonds, always a tree with one root) or `greedy` (each
  word's best head on its own, as the official baseline decodes; may give cycles or several roots).

Labels: KLUE's 38 DEPRELs for KLUE records; for UD records the labels seen in the training records
(a label seen only in evaluation carries no label loss and cannot be predicted). A sentence longer than
max_len tokens keeps its first max_len tokens: its later words are read from the last kept token; the
count of such sentences is kept in `truncated` (none in KLUE DP dev at 256).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from klue.errors import DataError
from klue.models.adapter import Adapter, check_head_options
from klue.models.biaffine import KIND, BiaffineDependencyHead, DependencyOutput
from klue.models.collate import collate_features, pad_ids
from klue.models.features import Feature, FeaturizeContext, SpecialTokens
from klue.models.heads import IGNORE_INDEX, HeadSpec
from klue.models.mst import mst_decode
from klue.tasks.base import Task

HEAD_OPTIONS: dict[str, tuple[str, ...]] = {"pos": ("gold", "kiwi", "none"), "decoding": ("mst", "greedy")}

# Sejong tags (the KLUE DP and UD Korean XPOS tag set); Kiwi uses the same names for the same classes,
# plus a few of its own (W_URL, Z_CODA, ...) and suffixes like VV-R, which are cut at '-' or go to unknown.
POS_TAGS: tuple[str, ...] = (
    "NNG", "NNP", "NNB", "NR", "NP", "VV", "VA", "VX", "VCP", "VCN", "MM", "MAG", "MAJ", "IC",
    "JKS", "JKC", "JKG", "JKO", "JKB", "JKV", "JKQ", "JX", "JC", "EP", "EF", "EC", "ETN", "ETM",
    "XPN", "XSN", "XSV", "XSA", "XR", "SF", "SP", "SS", "SE", "SO", "SW", "SH", "SL", "SN", "NF", "NV", "NA",
)
_POS_INDEX = {tag: i + 2 for i, tag in enumerate(POS_TAGS)}  # 0 padding, 1 root (BiaffineDependencyHead)
_UNKNOWN_POS = 2 + len(POS_TAGS)


def pos_id(tag: str) -> int:
    return _POS_INDEX.get(tag.split("-")[0], _UNKNOWN_POS)


def gold_last_pos(record: Any) -> list[str]:
    """Each word's last morpheme tag from the file's `+`-joined POS field."""
    return [pos.split("+")[-1] for pos in record.pos]


def word_spans(words: Sequence[str]) -> list[tuple[int, int]]:
    """Character span of each word in `" ".join(words)`."""
    spans, position = [], 0
    for word in words:
        spans.append((position, position + len(word)))
        position += len(word) + 1
    return spans


def word_token_ends(spans: Sequence[tuple[int, int]], offsets: Sequence[tuple[int, int]]
                    ) -> tuple[list[int], list[int]]:
    """Index of the first and last token overlapping each word (the previous word's last token when a
    word got no token, so every word has a representation)."""
    first, last = [], []
    token = 0
    for start, end in spans:
        while token < len(offsets) and offsets[token][1] <= start:
            token += 1
        k, found = token, []
        while k < len(offsets) and offsets[k][0] < end:
            if offsets[k][1] > offsets[k][0]:
                found.append(k)
            k += 1
        if found:
            first.append(found[0])
            last.append(found[-1])
        else:
            fallback = last[-1] if last else 0
            first.append(fallback)
            last.append(fallback)
    return first, last


@dataclass(frozen=True, slots=True)
class WordIndex:
    first: tuple[int, ...]  # token position (in the feature) of each word's first sub-word
    last: tuple[int, ...]
    pos: tuple[int, ...]  # POS ids (empty when the head takes no POS)
    heads: tuple[int, ...]  # gold heads (0 = root), or () without gold
    deprels: tuple[int, ...]  # gold label ids (IGNORE_INDEX for a label outside the head's label set)


class DpAdapter(Adapter):
    def __init__(self, task: Task[Any, Any]) -> None:
        super().__init__(task)
        self.labels: tuple[str, ...] = tuple(task.labels)
        self.options: dict[str, Any] = {k: v[0] for k, v in HEAD_OPTIONS.items()}
        self.truncated = 0
        self._kiwi: Any = None

    def prepare(self, tokenizer: Any, train_records: Sequence[Any] | None) -> None:
        if not train_records:
            return
        label_sets = {r.label_set for r in train_records}
        if len(label_sets) > 1:
            raise DataError("dp: the training records mix KLUE and UD dependency labels")
        if label_sets == {"ud"}:
            self.labels = tuple(sorted({d for r in train_records for d in r.deprels}))

    def head_spec(self, dropout: float | None, options: Mapping[str, Any]) -> HeadSpec:
        self.options = check_head_options(self.task.name, options, HEAD_OPTIONS)
        head_options: dict[str, Any] = dict(self.options)
        head_options["pos_tags"] = list(POS_TAGS) if self.options["pos"] != "none" else []
        return HeadSpec(KIND, self.labels, dropout, head_options)

    def build_model(self, encoder: nn.Module, spec: HeadSpec) -> nn.Module:
        self.labels = tuple(spec.labels)
        self.options = {k: spec.options.get(k, v) for k, v in self.options.items()}
        return BiaffineDependencyHead(encoder, spec)

    def _pos_tags(self, record: Any) -> list[str]:
        if self.options["pos"] == "gold":
            return gold_last_pos(record)
        if self._kiwi is None:
            from klue.text.kiwi import analyser

            self._kiwi = analyser()
        text = " ".join(record.words)
        tags = ["NA"] * len(record.words)
        spans = word_spans(record.words)
        w = 0
        for token in self._kiwi.tokenize(text):
            while w < len(spans) and spans[w][1] <= token.start:
                w += 1
            if w < len(spans) and token.start < spans[w][1]:
                tags[w] = token.tag  # the last morpheme starting inside the word wins
        return tags

    def featurize(self, records: Sequence[Any], ctx: FeaturizeContext) -> list[Feature]:
        if not records:
            return []
        specials = SpecialTokens.of(ctx.tokenizer)
        width = ctx.max_len - len(specials)
        label_index = {label: i for i, label in enumerate(self.labels)}
        texts = [" ".join(r.words) for r in records]
        encoded = ctx.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True,
                                return_attention_mask=False, return_token_type_ids=False)
        self.truncated = 0
        features = []
        for index, (record, ids, offsets) in enumerate(zip(records, encoded["input_ids"], encoded["offset_mapping"])):
            first, last = word_token_ends(word_spans(record.words), offsets)
            if len(ids) > width:
                self.truncated += 1
                ids = ids[:width]
                first = [min(t, width - 1) for t in first]
                last = [min(t, width - 1) for t in last]
            shift = len(specials.prefix)
            pos = tuple(pos_id(t) for t in self._pos_tags(record)) if self.options["pos"] != "none" else ()
            words = WordIndex(tuple(t + shift for t in first), tuple(t + shift for t in last), pos,
                              tuple(record.heads),
                              tuple(label_index.get(d, IGNORE_INDEX) for d in record.deprels))
            input_ids = specials.prefix + tuple(ids) + specials.suffix
            features.append(Feature(
                record_index=index, input_ids=input_ids,
                token_type_ids=(0,) * len(input_ids) if ctx.use_token_type_ids else None,
                label=None, n_items=len(record.words), extra=words))
        return features

    def collate(self, features: Sequence[Feature], ctx: FeaturizeContext, with_labels: bool,
                pad_to_multiple_of: int | None = None) -> dict[str, torch.Tensor]:
        batch = collate_features(features, ctx.tokenizer.pad_token_id, False, pad_to_multiple_of)
        words: list[WordIndex] = [f.extra for f in features]
        n_words = max(len(w.first) for w in words)
        batch["word_first"] = pad_ids([w.first for w in words], 0, n_words)
        batch["word_last"] = pad_ids([w.last for w in words], 0, n_words)
        mask = np.zeros((len(words), n_words), dtype=np.int64)
        for i, w in enumerate(words):
            mask[i, : len(w.first)] = 1
        batch["word_mask"] = torch.from_numpy(mask)
        if self.options["pos"] != "none":
            batch["pos_ids"] = pad_ids([w.pos for w in words], 0, n_words)
        if with_labels:
            batch["heads"] = pad_ids([w.heads for w in words], IGNORE_INDEX, n_words)
            batch["deprels"] = pad_ids([w.deprels for w in words], IGNORE_INDEX, n_words)
        return batch

    def to_host(self, output: Any, batch: Mapping[str, torch.Tensor], features: Sequence[Feature]) -> list[Any]:
        assert isinstance(output, DependencyOutput) and output.label_logits is not None
        arcs = output.logits.float().cpu().numpy()
        labels = output.label_logits.argmax(-1).to(torch.int16).cpu().numpy()  # the label of every (d, h)
        host = []
        for i, feature in enumerate(features):
            n = len(feature.extra.first)
            host.append((arcs[i, : n + 1, : n + 1], labels[i, 1 : n + 1, : n + 1]))
        return host

    def decode(self, records: Sequence[Any], features: Sequence[Feature], outputs: Sequence[Any]) -> list[Any]:
        by_record = {f.record_index: o for f, o in zip(features, outputs)}
        predictions = []
        for i, record in enumerate(records):
            arcs, labels = by_record[i]
            if self.options["decoding"] == "mst":
                heads = mst_decode(arcs.T)  # mst_decode wants scores[head, dependent]
            else:
                heads = np.argmax(arcs[1:], axis=1)
            deprels = [self.labels[int(labels[d, h])] for d, h in enumerate(heads)]
            predictions.append(self.prediction({"guid": self.task.guid(record), "heads": [int(h) for h in heads],
                                                "deprels": deprels}))
        return predictions


def make_adapter(task: Task[Any, Any]) -> DpAdapter:
    return DpAdapter(task)
