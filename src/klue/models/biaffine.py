"""Biaffine dependency parsing head (Dozat & Manning) over word representations from any encoder.

A word (eojeol) is the concatenation of the encoder states at its first and last sub-word, optionally
with an embedding of its POS tag; the root is the first token ([CLS] / <s>) with a root POS embedding.
Arc scores `arc[b, d, h]` (dependent d, head h; index 0 is the root) come from a biaffine product of a
dependent MLP and a head MLP; label scores `labels[b, d, h, l]` from a bilinear + linear product of two
smaller MLPs, for every (d, h) pair so that any decoder (greedy or MST) can read the label of the head it
chose. The loss is the SUM over words of the arc cross-entropy over candidate heads and the label
cross-entropy at the gold head (the engine normalises by the number of words).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from klue.models.heads import IGNORE_INDEX, EncoderWithHead, HeadOutput, HeadSpec, head_dropout

KIND = "biaffine_dependency"


@dataclass
class DependencyOutput(HeadOutput):
    """`logits`: arc scores (batch, words + 1, words + 1); `label_logits`: (batch, words + 1, words + 1,
    labels). Row 0 (the root as a dependent) is never used."""

    label_logits: torch.Tensor | None = None


class Mlp(nn.Module):
    def __init__(self, width_in: int, width_out: int, dropout: float) -> None:
        super().__init__()
        self.linear = nn.Linear(width_in, width_out)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(F.leaky_relu(self.linear(x), 0.1))


class BiaffineDependencyHead(EncoderWithHead):
    """`spec.labels`: dependency labels; `spec.options`: `pos_tags` (the POS vocabulary, empty for no POS
    input), `pos_dim`, `arc_dim`, `label_dim`."""

    def __init__(self, encoder: nn.Module, spec: HeadSpec) -> None:
        super().__init__(encoder, spec)
        p = head_dropout(self.config, spec)
        self.n_pos = len(spec.options.get("pos_tags", ()))
        pos_dim = int(spec.options.get("pos_dim", 64)) if self.n_pos else 0
        arc_dim = int(spec.options.get("arc_dim", 512))
        label_dim = int(spec.options.get("label_dim", 128))
        width = 2 * self.hidden_size + pos_dim
        # POS ids: 0 padding, 1 root, 2 .. n_pos + 1 the tags of spec.options["pos_tags"], n_pos + 2 unknown.
        self.pos = nn.Embedding(self.n_pos + 3, pos_dim, padding_idx=0) if self.n_pos else None
        self.dropout = nn.Dropout(p)
        self.arc_dep, self.arc_head = Mlp(width, arc_dim, p), Mlp(width, arc_dim, p)
        self.label_dep, self.label_head = Mlp(width, label_dim, p), Mlp(width, label_dim, p)
        n_labels = len(spec.labels)
        self.arc_weight = nn.Parameter(torch.zeros(arc_dim, arc_dim))
        self.arc_head_bias = nn.Parameter(torch.zeros(arc_dim))
        self.label_weight = nn.Parameter(torch.zeros(n_labels, label_dim, label_dim))
        # The linear term W [dep; head] + b, kept as two maps so no (words x words x 2 dim) tensor is built.
        self.label_dep_linear = nn.Linear(label_dim, n_labels)
        self.label_head_linear = nn.Linear(label_dim, n_labels, bias=False)

    def words(self, hidden: torch.Tensor, word_first: torch.Tensor, word_last: torch.Tensor,
              pos_ids: torch.Tensor | None) -> torch.Tensor:
        """(batch, words + 1, width): the root, then every word."""
        rows = torch.arange(hidden.size(0), device=hidden.device)[:, None]
        words = torch.cat([hidden[rows, word_first], hidden[rows, word_last]], dim=-1)
        root = torch.cat([hidden[:, :1], hidden[:, :1]], dim=-1)
        nodes = torch.cat([root, words], dim=1)
        if self.pos is not None and pos_ids is not None:
            root_pos = torch.ones_like(pos_ids[:, :1])
            nodes = torch.cat([nodes, self.pos(torch.cat([root_pos, pos_ids], dim=1))], dim=-1)
        return self.dropout(nodes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, word_first: torch.Tensor,
                word_last: torch.Tensor, word_mask: torch.Tensor, pos_ids: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, heads: torch.Tensor | None = None,
                deprels: torch.Tensor | None = None) -> DependencyOutput:
        hidden = self.encode(input_ids, attention_mask, token_type_ids)
        nodes = self.words(hidden, word_first, word_last, pos_ids)
        dep, head = self.arc_dep(nodes), self.arc_head(nodes)
        arc = torch.einsum("bda,ae,bhe->bdh", dep, self.arc_weight, head) + (head @ self.arc_head_bias)[:, None, :]
        # Candidate heads: the root and the real words, never the dependent itself.
        valid = torch.cat([torch.ones_like(word_mask[:, :1]), word_mask], dim=1).bool()
        arc = arc.float().masked_fill(~valid[:, None, :], float("-inf"))
        eye = torch.eye(arc.size(1), dtype=torch.bool, device=arc.device)
        arc = arc.masked_fill(eye[None], float("-inf"))
        label_dep, label_head = self.label_dep(nodes), self.label_head(nodes)
        labels = (torch.einsum("bdr,lrs,bhs->bdhl", label_dep, self.label_weight, label_head)
                  + self.label_dep_linear(label_dep)[:, :, None] + self.label_head_linear(label_head)[:, None])
        loss = None
        if heads is not None and deprels is not None:
            dependents = arc[:, 1:]  # (batch, words, words + 1)
            gold_heads = heads.masked_fill(~word_mask.bool(), IGNORE_INDEX)
            loss = F.cross_entropy(dependents.flatten(0, 1), gold_heads.flatten(), ignore_index=IGNORE_INDEX,
                                   reduction="sum")
            at_gold = labels[:, 1:].gather(2, heads.clamp(min=0)[:, :, None, None].expand(-1, -1, 1, labels.size(-1)))
            gold_labels = deprels.masked_fill(~word_mask.bool(), IGNORE_INDEX)
            loss = loss + F.cross_entropy(at_gold.squeeze(2).flatten(0, 1).float(), gold_labels.flatten(),
                                          ignore_index=IGNORE_INDEX, reduction="sum")
        return DependencyOutput(arc, loss, labels)
