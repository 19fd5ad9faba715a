"""KLUE-RE: relation classification over a sentence with entity markers, as the official baseline marks it.

The subject and object mentions are wrapped in marker tokens added to the tokenizer as special tokens
(`<subj>`...`</subj>`, `<obj>`...`</obj>`; with `head.markers=typed`, `<subj:PER>`...`</subj:PER>` and so
on, one pair per entity type). Every marker of both styles is added, so one tokenizer serves both.
`head.pooling=entity_start` (default) classifies the concatenated states of the two opening markers;
`head.pooling=cls` classifies the first token. Predictions carry softmax probabilities for all 30
relations (AUPRC needs them).

Inputs longer than max_len (rare at 256) are cut to a window of tokens around the two mentions, never
dropping an opening marker; the count of such cuts is kept in `truncated`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from klue.models.adapter import Adapter, check_head_options
from klue.models.collate import collate_features
from klue.models.features import Feature, FeaturizeContext, SpecialTokens
from klue.models.heads import IGNORE_INDEX, EntityPairHead, HeadOutput, HeadSpec
from klue.tasks.base import Task

from .markers import all_markers, mark

HEAD_OPTIONS: dict[str, tuple[str, ...]] = {"pooling": ("entity_start", "cls"), "markers": ("plain", "typed")}
KIND = "entity_pair_classification"


def window(n_tokens: int, width: int, must: Sequence[int], want: Sequence[int]) -> int:
    """Start of a `width`-token window holding every position of `must`, centred on `want`'s span when
    it fits (must and want are token positions)."""
    lo, hi = min(want), max(want) + 1
    if hi - lo > width:
        lo, hi = min(must), max(must) + 1
    start = lo - (width - (hi - lo)) // 2
    return max(0, min(start, n_tokens - width))


class ReAdapter(Adapter):
    def __init__(self, task: Task[Any, Any]) -> None:
        super().__init__(task)
        self.relations = tuple(task.labels)
        self.relation_index = {r: i for i, r in enumerate(self.relations)}
        self.options: dict[str, Any] = {k: v[0] for k, v in HEAD_OPTIONS.items()}
        self.truncated = 0

    def prepare(self, tokenizer: Any, train_records: Sequence[Any] | None) -> None:
        from tokenizers import AddedToken

        tokenizer.add_tokens([AddedToken(m, special=True, normalized=False) for m in all_markers()],
                             special_tokens=True)

    def head_spec(self, dropout: float | None, options: Mapping[str, Any]) -> HeadSpec:
        self.options = check_head_options(self.task.name, options, HEAD_OPTIONS)
        return HeadSpec(KIND, self.relations, dropout, dict(self.options))

    def build_model(self, encoder: nn.Module, spec: HeadSpec) -> nn.Module:
        self.options = {**self.options, **spec.options}
        return EntityPairHead(encoder, spec)

    def featurize(self, records: Sequence[Any], ctx: FeaturizeContext) -> list[Feature]:
        if not records:
            return []
        specials = SpecialTokens.of(ctx.tokenizer)
        width = ctx.max_len - len(specials)
        typed = self.options["markers"] == "typed"
        marked = [mark(r, typed) for r in records]
        encoded = ctx.tokenizer([m[0] for m in marked], add_special_tokens=False, return_attention_mask=False,
                                return_token_type_ids=False)["input_ids"]
        self.truncated = 0
        features = []
        for index, (record, (_, subj_open, obj_open), ids) in enumerate(zip(records, marked, encoded)):
            positions = {}
            for name, marker in (("subj", subj_open), ("obj", obj_open),
                                 ("/subj", "</" + subj_open[1:]), ("/obj", "</" + obj_open[1:])):
                positions[name] = ids.index(ctx.tokenizer.convert_tokens_to_ids(marker))
            start = 0
            if len(ids) > width:
                self.truncated += 1
                start = window(len(ids), width, (positions["subj"], positions["obj"]), list(positions.values()))
                ids = ids[start:start + width]
            offset = len(specials.prefix) - start
            input_ids = specials.prefix + tuple(ids) + specials.suffix
            features.append(Feature(
                record_index=index, input_ids=input_ids,
                token_type_ids=(0,) * len(input_ids) if ctx.use_token_type_ids else None,
                label=self.relation_index[self.gold_json(record)["label"]] if self.has_gold(record) else IGNORE_INDEX,
                n_items=1,
                extra=(positions["subj"] + offset, positions["obj"] + offset)))
        return features

    def collate(self, features: Sequence[Feature], ctx: FeaturizeContext, with_labels: bool,
                pad_to_multiple_of: int | None = None) -> dict[str, torch.Tensor]:
        batch = collate_features(features, ctx.tokenizer.pad_token_id, with_labels, pad_to_multiple_of)
        batch["subject_index"] = torch.tensor([f.extra[0] for f in features], dtype=torch.int64)
        batch["object_index"] = torch.tensor([f.extra[1] for f in features], dtype=torch.int64)
        return batch

    def to_host(self, output: HeadOutput, batch: Mapping[str, torch.Tensor],
                features: Sequence[Feature]) -> list[Any]:
        return list(torch.softmax(output.logits.float(), dim=-1).cpu().numpy())

    def decode(self, records: Sequence[Any], features: Sequence[Feature], outputs: Sequence[Any]) -> list[Any]:
        by_record = {f.record_index: o for f, o in zip(features, outputs)}
        predictions = []
        for i, record in enumerate(records):
            probs = np.asarray(by_record[i], dtype=np.float64)
            predictions.append(self.prediction({"guid": self.task.guid(record),
                                                "label": self.relations[int(np.argmax(probs))],
                                                "probs": [float(p) for p in probs]}))
        return predictions


def make_adapter(task: Task[Any, Any]) -> ReAdapter:
    return ReAdapter(task)
