"""Task heads on top of any Hugging Face encoder (`AutoModel`).

A head model takes the encoder's usual inputs plus optional `labels` and returns a `HeadOutput` whose
`loss_sum` is the SUM of per-item losses (an item is an example for sequence heads, a labelled token
for token heads). The training engine divides by the number of items in the whole global batch, so
one process, several processes and gradient accumulation all optimise the same mean loss.

Sequence heads read the first token ([CLS] / <s>) and pass it through dense + tanh + linear: it works for
every encoder, including those without a pooler, so the encoder is built without one (an unused pooler
would also break DDP's gradient reduction). Where a BERT-type checkpoint holds a pooler (KLUE-BERT), the
dense layer starts from its weights (`start_from_pooler`), which is BertForSequenceClassification's head. Dropout is placed as the encoder family's own head in
transformers places it, the heads the official KLUE baseline fine-tuned (AutoModelForSequenceClassification):
BERT-type encoders drop out once, on the pooled (dense + tanh) vector (BertForSequenceClassification);
the others also drop out on the first token before the dense layer (RobertaClassificationHead).
`head.pooling=mean` (opt-in) reads the mean of the encoder states over the attention mask instead of the
first token, the pooling sentence-embedding encoders (E5, SBERT) are trained with.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F

HeadKind = Literal["sequence_classification", "sequence_regression", "token_classification"]
HEAD_KINDS: tuple[str, ...] = ("sequence_classification", "sequence_regression", "token_classification")
IGNORE_INDEX = -100  # label of a token that carries no loss (special tokens, continuation sub-words)


@dataclass(frozen=True)
class HeadSpec:
    """What a saved model needs to rebuild its head: the kind, the label names (in output order)."""

    kind: str  # one of HEAD_KINDS, or a custom kind an adapter builds itself
    labels: tuple[str, ...] = ()
    dropout: float | None = None  # None: the encoder config's classifier_dropout / hidden_dropout_prob
    options: dict[str, Any] = field(default_factory=dict)  # head-specific settings (custom heads)

    @property
    def num_outputs(self) -> int:
        return 1 if self.kind == "sequence_regression" else len(self.labels)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "labels": list(self.labels)}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> HeadSpec:
        return cls(kind=obj["kind"], labels=tuple(obj.get("labels", ())), dropout=obj.get("dropout"),
                   options=dict(obj.get("options", {})))


@dataclass
class HeadOutput:
    """`logits`: (batch, outputs) for sequence heads, (batch, length, labels) for token heads;
    `loss_sum`: summed loss over the items of the batch, present when labels were given."""

    logits: torch.Tensor
    loss_sum: torch.Tensor | None = None


def head_dropout(config: Any, spec: HeadSpec) -> float:
    if spec.dropout is not None:
        return spec.dropout
    for name in ("classifier_dropout", "hidden_dropout_prob", "dropout"):
        value = getattr(config, name, None)
        if value is not None:
            return float(value)
    return 0.1


class EncoderWithHead(nn.Module):
    """Base for head models: holds the encoder and forwards the inputs the encoder accepts."""

    encoder: Any  # a transformers encoder: its methods are typed by transformers, not nn.Module

    def __init__(self, encoder: nn.Module, spec: HeadSpec) -> None:
        super().__init__()
        self.encoder = encoder
        self.spec = spec
        self.config: Any = encoder.config  # an encoder module has a config

    @property
    def hidden_size(self) -> int:
        return int(self.config.hidden_size)

    def start_from_pooler(self, pooler: dict[str, torch.Tensor]) -> bool:
        """Start the head's dense layer from a checkpoint's pooler where the head reads it as transformers'
        does; True if it did. This head has none to start."""
        return False

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               token_type_ids: torch.Tensor | None) -> torch.Tensor:
        inputs: dict[str, torch.Tensor] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        return self.encoder(**inputs).last_hidden_state


# Encoder families whose transformers head pools [CLS] with dense + tanh and drops out once, after pooling
# (BertPooler + BertForSequenceClassification); every other family gets RoBERTa's two dropouts.
POOLED_DROPOUT_ONLY = frozenset({"bert"})
SEQUENCE_POOLINGS = ("cls", "mean")


def masked_mean(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of `hidden` (batch, length, width) over the positions the mask keeps."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


class SequenceHead(EncoderWithHead):
    """Classification (cross-entropy) or regression (squared error) over the first token (or the mean of
    the tokens, `options["pooling"] == "mean"`)."""

    def __init__(self, encoder: nn.Module, spec: HeadSpec) -> None:
        super().__init__(encoder, spec)
        self.pooling = str(spec.options.get("pooling", "cls"))
        if self.pooling not in SEQUENCE_POOLINGS:
            raise ValueError(f"unknown pooling {self.pooling!r}; expected one of {', '.join(SEQUENCE_POOLINGS)}")
        self.dropout_before_dense = self.config.model_type not in POOLED_DROPOUT_ONLY
        p = head_dropout(self.config, spec)
        self.dropout = nn.Dropout(p)
        self.dense = nn.Linear(self.hidden_size, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, spec.num_outputs)
        std = float(getattr(self.config, "initializer_range", 0.02))
        for layer in (self.dense, self.out):
            nn.init.normal_(layer.weight, std=std)
            nn.init.zeros_(layer.bias)

    def start_from_pooler(self, pooler: dict[str, torch.Tensor]) -> bool:
        """BERT-type encoders pooling the first token: dense + tanh over [CLS] is BertPooler, so the dense
        layer starts from the checkpoint's pooler, as BertForSequenceClassification (the paper's baseline)
        fine-tunes through it. Mean pooling and the other families' heads start fresh, as transformers'."""
        if self.pooling != "cls" or self.dropout_before_dense:
            return False
        with torch.no_grad():
            self.dense.weight.copy_(pooler["weight"])
            self.dense.bias.copy_(pooler["bias"])
        return True

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None) -> HeadOutput:
        states = self.encode(input_ids, attention_mask, token_type_ids)
        pooled = masked_mean(states, attention_mask) if self.pooling == "mean" else states[:, 0]
        if self.dropout_before_dense:
            pooled = self.dropout(pooled)
        logits = self.out(self.dropout(torch.tanh(self.dense(pooled))))
        loss = None
        if labels is not None:
            if self.spec.kind == "sequence_regression":
                loss = F.mse_loss(logits.squeeze(-1).float(), labels.float(), reduction="sum")
            else:
                loss = F.cross_entropy(logits.float(), labels, reduction="sum")
        return HeadOutput(logits, loss)


class TokenHead(EncoderWithHead):
    """One label per token; tokens labelled IGNORE_INDEX carry no loss."""

    def __init__(self, encoder: nn.Module, spec: HeadSpec) -> None:
        super().__init__(encoder, spec)
        self.dropout = nn.Dropout(head_dropout(self.config, spec))
        self.out = nn.Linear(self.hidden_size, spec.num_outputs)
        nn.init.normal_(self.out.weight, std=float(getattr(self.config, "initializer_range", 0.02)))
        nn.init.zeros_(self.out.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None) -> HeadOutput:
        logits = self.out(self.dropout(self.encode(input_ids, attention_mask, token_type_ids)))
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE_INDEX,
                                   reduction="sum")
        return HeadOutput(logits, loss)


def build_head(encoder: nn.Module, spec: HeadSpec) -> EncoderWithHead:
    """The standard head for `spec.kind`; adapters with custom heads build their own."""
    if spec.kind in ("sequence_classification", "sequence_regression"):
        return SequenceHead(encoder, spec)
    if spec.kind == "token_classification":
        return TokenHead(encoder, spec)
    raise ValueError(f"no standard head of kind {spec.kind!r}; standard kinds: {', '.join(HEAD_KINDS)}")


class EntityPairHead(EncoderWithHead):
    """Relation classification over a marked sentence (`<subj>`...`</subj>`, `<obj>`...`</obj>`).

    `options["pooling"]`: "entity_start" concatenates the encoder states at the subject's and the object's
    opening markers (2 x hidden) before dense + tanh + linear; "cls" reads the first token instead, like
    the sequence heads. The batch carries `subject_index` and `object_index` (token positions of the
    opening markers) either way."""

    def __init__(self, encoder: nn.Module, spec: HeadSpec) -> None:
        super().__init__(encoder, spec)
        self.pooling = str(spec.options.get("pooling", "entity_start"))
        if self.pooling not in ("entity_start", "cls"):
            raise ValueError(f"unknown pooling {self.pooling!r}")
        width = 2 * self.hidden_size if self.pooling == "entity_start" else self.hidden_size
        self.dropout = nn.Dropout(head_dropout(self.config, spec))
        self.dense = nn.Linear(width, self.hidden_size)
        self.out = nn.Linear(self.hidden_size, spec.num_outputs)
        std = float(getattr(self.config, "initializer_range", 0.02))
        for layer in (self.dense, self.out):
            nn.init.normal_(layer.weight, std=std)
            nn.init.zeros_(layer.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, subject_index: torch.Tensor,
                object_index: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                labels: torch.Tensor | None = None) -> HeadOutput:
        hidden = self.encode(input_ids, attention_mask, token_type_ids)
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            rows = torch.arange(hidden.size(0), device=hidden.device)
            pooled = torch.cat([hidden[rows, subject_index], hidden[rows, object_index]], dim=-1)
        logits = self.out(self.dropout(torch.tanh(self.dense(self.dropout(pooled)))))
        loss = F.cross_entropy(logits.float(), labels, reduction="sum") if labels is not None else None
        return HeadOutput(logits, loss)


class SpanHead(EncoderWithHead):
    """Extractive QA: a start and an end logit per token. Position 0 (the first token) stands for "no
    answer in this window". The loss is the sum over examples of (start CE + end CE) / 2; padding
    positions are masked out of both."""

    def __init__(self, encoder: nn.Module, spec: HeadSpec) -> None:
        super().__init__(encoder, spec)
        self.dropout = nn.Dropout(head_dropout(self.config, spec))
        self.out = nn.Linear(self.hidden_size, 2)
        nn.init.normal_(self.out.weight, std=float(getattr(self.config, "initializer_range", 0.02)))
        nn.init.zeros_(self.out.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                start_positions: torch.Tensor | None = None, end_positions: torch.Tensor | None = None) -> HeadOutput:
        logits = self.out(self.dropout(self.encode(input_ids, attention_mask, token_type_ids))).float()
        logits = logits.masked_fill(~attention_mask.bool()[..., None], float("-inf"))  # (batch, length, 2)
        loss = None
        if start_positions is not None and end_positions is not None:
            loss = (F.cross_entropy(logits[..., 0], start_positions, reduction="sum")
                    + F.cross_entropy(logits[..., 1], end_positions, reduction="sum")) / 2
        return HeadOutput(logits, loss)
