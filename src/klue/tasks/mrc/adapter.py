"""KLUE-MRC and KorQuAD (SQuAD v1.1): span extraction over sliding windows of the context.

Windows come from the fast tokenizer itself (`truncation="only_second"`, `stride`, overflowing tokens:
the library does this, so it is not written by hand): the question, then up to max_len tokens of
context, consecutive windows sharing `window_overlap` tokens. A window's label is the token span of the
first gold answer when the window holds all of it, else position 0 (the first token: "not here").
Offsets map token spans back to exact context characters.

Decoding, per question over all its windows: the best span among the `N_BEST` top start and end
positions of context tokens with end >= start and at most `MAX_ANSWER_TOKENS` tokens, scored start + end
logit. Unanswerable questions (KLUE MRC v1.1 question type 3): when the training data had any, the answer
is "" if the lowest null score of the question's windows (position 0's start + end) exceeds the best span
score by more than `head.null_threshold` (default 0; raise it to answer more often). Without unanswerable
training questions (KorQuAD) the model never answers "".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from klue.models.adapter import Adapter, check_head_options
from klue.models.collate import collate_features
from klue.models.features import Feature, FeaturizeContext
from klue.models.heads import HeadOutput, HeadSpec, SpanHead
from klue.tasks.base import Task

KIND = "span_extraction"
N_BEST = 20
MAX_ANSWER_TOKENS = 64
HEAD_OPTIONS: dict[str, tuple[Any, ...]] = {"null_threshold": (float, 0.0)}


class MrcAdapter(Adapter):
    def __init__(self, task: Task[Any, Any]) -> None:
        super().__init__(task)
        self.null_answers = False  # set from the training data; saved in the head options
        self.options: dict[str, Any] = {"null_threshold": 0.0}

    def prepare(self, tokenizer: Any, train_records: Sequence[Any] | None) -> None:
        if train_records is not None:
            self.null_answers = any(r.is_impossible for r in train_records)

    def head_spec(self, dropout: float | None, options: Mapping[str, Any]) -> HeadSpec:
        self.options = check_head_options(self.task.name, options, HEAD_OPTIONS)
        return HeadSpec(KIND, ("start", "end"), dropout, {**self.options, "null_answers": self.null_answers})

    def build_model(self, encoder: nn.Module, spec: HeadSpec) -> nn.Module:
        self.options = {"null_threshold": float(spec.options.get("null_threshold", 0.0))}
        self.null_answers = bool(spec.options.get("null_answers", False))
        return SpanHead(encoder, spec)

    def featurize(self, records: Sequence[Any], ctx: FeaturizeContext) -> list[Feature]:
        if not records:
            return []
        encoded = ctx.tokenizer([r.question for r in records], [r.context for r in records],
                                truncation="only_second", max_length=ctx.max_len, stride=ctx.window_overlap,
                                return_overflowing_tokens=True, return_offsets_mapping=True,
                                return_token_type_ids=ctx.use_token_type_ids, return_attention_mask=False)
        features = []
        for k, ids in enumerate(encoded["input_ids"]):
            index = encoded["overflow_to_sample_mapping"][k]
            record = records[index]
            sequence = encoded.sequence_ids(k)
            offsets: tuple[Any, ...] = tuple(tuple(o) if s == 1 else None for o, s in zip(encoded["offset_mapping"][k], sequence))
            start = end = 0
            if record.answers and not record.is_impossible:
                answer = record.answers[0]
                a_start, a_end = answer.answer_start, answer.answer_start + len(answer.text)
                inside = [i for i, o in enumerate(offsets) if o is not None and o[1] > o[0]]
                if inside and offsets[inside[0]][0] <= a_start and offsets[inside[-1]][1] >= a_end:
                    start = next(i for i in inside if offsets[i][1] > a_start)
                    end = next(i for i in reversed(inside) if offsets[i][0] < a_end)
            types = encoded["token_type_ids"][k] if ctx.use_token_type_ids else None
            features.append(Feature(index, tuple(ids), tuple(types) if types is not None else None, (start, end), 1,
                                    extra=offsets))
        return features

    def collate(self, features: Sequence[Feature], ctx: FeaturizeContext, with_labels: bool,
                pad_to_multiple_of: int | None = None) -> dict[str, torch.Tensor]:
        batch = collate_features(features, ctx.tokenizer.pad_token_id, False, pad_to_multiple_of)
        if with_labels:
            batch["start_positions"] = torch.tensor([f.label[0] for f in features], dtype=torch.int64)
            batch["end_positions"] = torch.tensor([f.label[1] for f in features], dtype=torch.int64)
        return batch

    def to_host(self, output: HeadOutput, batch: Mapping[str, torch.Tensor], features: Sequence[Feature]) -> list[Any]:
        logits = output.logits.cpu().numpy()
        return [logits[i, : len(f)] for i, f in enumerate(features)]

    def best_answer(self, context: str, windows: Sequence[tuple[Feature, np.ndarray]]) -> str:
        best_score, best_text = -np.inf, ""
        null_score = np.inf
        for feature, logits in windows:
            offsets = feature.extra
            null_score = min(null_score, float(logits[0, 0] + logits[0, 1]))
            context_positions = np.array([i for i, o in enumerate(offsets) if o is not None and o[1] > o[0]])
            if not len(context_positions):
                continue
            starts = context_positions[np.argsort(-logits[context_positions, 0])[:N_BEST]]
            ends = context_positions[np.argsort(-logits[context_positions, 1])[:N_BEST]]
            for s in starts:
                for e in ends:
                    if e < s or e - s + 1 > MAX_ANSWER_TOKENS:
                        continue
                    score = float(logits[s, 0] + logits[e, 1])
                    if score > best_score:
                        best_score, best_text = score, context[offsets[s][0]:offsets[e][1]]
        if self.null_answers and null_score > best_score + float(self.options["null_threshold"]):
            return ""
        return best_text

    def decode(self, records: Sequence[Any], features: Sequence[Feature], outputs: Sequence[Any]) -> list[Any]:
        windows: list[list[tuple[Feature, np.ndarray]]] = [[] for _ in records]
        for feature, logits in zip(features, outputs):
            windows[feature.record_index].append((feature, logits))
        return [self.prediction({"guid": self.task.guid(r), "answer": self.best_answer(r.context, w)})
                for r, w in zip(records, windows)]

    def roundtrip(self, records: Sequence[Any], ctx: FeaturizeContext) -> list[str | None]:
        """Per record, the context text its labelled window's gold token span maps back to (None when no
        window holds the whole first answer): the check that windows and offsets lose nothing."""
        out: list[str | None] = [None] * len(records)
        for feature in self.featurize(records, ctx):
            start, end = feature.label
            if start > 0 and out[feature.record_index] is None:
                offsets = feature.extra
                out[feature.record_index] = records[feature.record_index].context[offsets[start][0]:offsets[end][1]]
        return out


def make_adapter(task: Task[Any, Any]) -> MrcAdapter:
    return MrcAdapter(task)
