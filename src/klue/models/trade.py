"""TRADE-style dialogue state tracker head (Wu et al. 2019), the design of the official KLUE WoS baseline.

Over the encoder's states H of the dialogue history, every slot runs a GRU decoder that starts from the
first token's state and reads, as its first input, the slot's embedding (the sum of the word embeddings
of its `domain slot` name). After the first step, the slot's gate is read from [decoder state; attention
context] over none / dontcare / yes / no / ptr (gates the ontology does not allow for a slot are masked).
For ptr slots the decoder goes on generating the value's tokens: each step mixes a distribution over the
vocabulary (the decoder state against the encoder's own word embeddings, tied as in TRADE) with a copy
distribution (the attention over the history, summed per token id), weighted by a learned switch p_gen.

The loss per example is the mean gate cross-entropy over the slots plus the mean negative log-likelihood
of the gold value tokens of its ptr slots (teacher forcing); only ptr slots are decoded, in training and
in inference, so the cost grows with the values a turn holds rather than with the 45 slots.
Hand-written: no library provides a copy-augmented slot decoder.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from klue.models.heads import IGNORE_INDEX, EncoderWithHead, HeadOutput, HeadSpec, head_dropout

KIND = "trade_state_tracker"
GATES: tuple[str, ...] = ("none", "dontcare", "yes", "no", "ptr")
PTR = GATES.index("ptr")
# Decoder steps x vocabulary entries scored at once in training (about 256 MB of float32 logits): a
# 250,000-token vocabulary (XLM-R, multilingual-e5) over every gold step of a batch took 16 GB at once.
LOGIT_BUDGET = 2**26


@dataclass
class TradeOutput(HeadOutput):
    """`logits`: gate logits (batch, slots, gates); `value_tokens`: in inference, the generated token ids
    of every slot (batch, slots, max_value_tokens), -1 after the end token and for slots not gated ptr."""

    value_tokens: torch.Tensor | None = None


class TradeHead(EncoderWithHead):
    """`spec.options`: `slot_token_ids` (token ids of each slot's name), `gate_mask` (per slot, a 0/1 per
    gate in GATES order), `max_value_tokens` (generation limit, end token included), `end_token_id`."""

    slot_ids: torch.Tensor  # buffers (register_buffer), typed for the checker
    slot_id_mask: torch.Tensor
    gate_mask: torch.Tensor

    def __init__(self, encoder: nn.Module, spec: HeadSpec) -> None:
        super().__init__(encoder, spec)
        options = spec.options
        hidden = self.hidden_size
        embedding_dim = int(self.word_embeddings.embedding_dim)
        self.max_value_tokens = int(options["max_value_tokens"])
        self.end_token_id = int(options["end_token_id"])
        slot_ids = nn.utils.rnn.pad_sequence([torch.tensor(ids, dtype=torch.int64) for ids in options["slot_token_ids"]],
                                             batch_first=True, padding_value=-1)
        self.register_buffer("slot_ids", slot_ids.clamp(min=0), persistent=False)
        self.register_buffer("slot_id_mask", (slot_ids >= 0).float(), persistent=False)
        self.register_buffer("gate_mask", torch.tensor(options["gate_mask"], dtype=torch.bool), persistent=False)
        # Encoders whose embeddings are narrower than their states (ALBERT, ELECTRA-small) get projections.
        self.from_embedding = nn.Identity() if embedding_dim == hidden else nn.Linear(embedding_dim, hidden)
        self.to_embedding = nn.Identity() if embedding_dim == hidden else nn.Linear(hidden, embedding_dim)
        self.dropout = nn.Dropout(head_dropout(self.config, spec))
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.gate = nn.Linear(2 * hidden, len(GATES))
        self.switch = nn.Linear(3 * hidden, 1)  # p_gen from [state; context; input]
        std = float(getattr(self.config, "initializer_range", 0.02))
        for layer in (self.gate, self.switch):
            nn.init.normal_(layer.weight, std=std)
            nn.init.zeros_(layer.bias)

    @property
    def num_slots(self) -> int:
        return int(self.slot_ids.size(0))

    @property
    def word_embeddings(self) -> nn.Embedding:
        embeddings: nn.Embedding = self.encoder.get_input_embeddings()
        return embeddings

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        return self.from_embedding(self.word_embeddings(ids))

    def slot_embeddings(self) -> torch.Tensor:
        """(slots, hidden): the sum of each slot name's token embeddings."""
        return (self.embed(self.slot_ids) * self.slot_id_mask[..., None]).sum(1)

    def vocabulary_logits(self, states: torch.Tensor) -> torch.Tensor:
        return self.to_embedding(states) @ self.word_embeddings.weight.t()

    @staticmethod
    def attend(queries: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor,
               example: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Attention of decoder rows (rows, steps, hidden) over their example's encoder states; `example`
        (rows,), sorted, says which. The rows of one example are packed side by side so that one batched
        product per example serves them all (no copy of the encoder states per row)."""
        batch = memory.size(0)
        counts = torch.bincount(example, minlength=batch)
        starts = torch.cumsum(counts, 0) - counts
        rank = torch.arange(example.numel(), device=example.device) - starts[example]
        width = int(counts.max().item()) if example.numel() else 0
        steps, hidden = queries.shape[1:]
        packed = queries.new_zeros(batch, width, steps, hidden)
        packed[example, rank] = queries
        scores = torch.bmm(packed.view(batch, width * steps, hidden), memory.transpose(1, 2)).float()
        scores = scores.masked_fill(~memory_mask[:, None, :], float("-inf"))
        weights = scores.softmax(-1)
        context = torch.bmm(weights.to(memory.dtype), memory).view(batch, width, steps, hidden)
        weights = weights.view(batch, width, steps, -1)
        return context[example, rank], weights[example, rank]

    def gates(self, states: torch.Tensor, mask: torch.Tensor, slots: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """Gate logits (batch, slots, gates) from the first decoder step of every slot, and the start
        state h0 (batch, hidden) every slot's decoder begins from."""
        batch, count, hidden = states.size(0), self.num_slots, self.hidden_size
        start = states[:, 0]
        first_input = slots[None].expand(batch, count, hidden).reshape(batch * count, 1, hidden)
        output, _ = self.gru(self.dropout(first_input), start.repeat_interleave(count, 0)[None].contiguous())
        every_slot = torch.arange(batch, device=states.device).repeat_interleave(count)
        context, _ = self.attend(output, states, mask, every_slot)
        logits = self.gate(self.dropout(torch.cat([output, context], -1))).float().view(batch, count, -1)
        return logits.masked_fill(~self.gate_mask[None], float("-inf")), start

    def copy_and_switch(self, outputs: torch.Tensor, inputs: torch.Tensor, states: torch.Tensor,
                        mask: torch.Tensor, example: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per decoder step: the attention (rows, steps, length) and p_gen (rows, steps)."""
        context, attention = self.attend(outputs, states, mask, example)
        p_gen = torch.sigmoid(self.switch(torch.cat([outputs, context, inputs], -1))).float().squeeze(-1)
        return attention, p_gen

    def gold_log_vocab(self, outputs: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
        """log p_vocab of the gold token at every decoder step (rows, steps), in chunks of steps under activation
        checkpointing, so that the full (rows, steps, vocabulary) distribution is never held: only a chunk's
        logits exist at a time, in the forward pass and again in the backward pass."""
        flat, flat_gold = outputs.reshape(-1, outputs.size(-1)), gold.reshape(-1)
        chunk = max(1, LOGIT_BUDGET // self.word_embeddings.num_embeddings)
        pieces = []
        for start in range(0, flat.size(0), chunk):
            piece, piece_gold = flat[start:start + chunk], flat_gold[start:start + chunk]
            if torch.is_grad_enabled() and flat.size(0) > chunk:
                pieces.append(checkpoint(self._gold_log_vocab, piece, piece_gold, use_reentrant=False))
            else:
                pieces.append(self._gold_log_vocab(piece, piece_gold))
        return torch.cat(pieces).view(gold.shape)

    def _gold_log_vocab(self, states: torch.Tensor, gold: torch.Tensor) -> torch.Tensor:
        logits = self.vocabulary_logits(states).float()
        return logits.gather(-1, gold[:, None]).squeeze(-1) - logits.logsumexp(-1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None, gate_labels: torch.Tensor | None = None,
                value_rows: torch.Tensor | None = None, value_ids: torch.Tensor | None = None) -> TradeOutput:
        states = self.dropout(self.encode(input_ids, attention_mask, token_type_ids))
        mask = attention_mask.bool()
        slots = self.slot_embeddings()
        gate_logits, start = self.gates(states, mask, slots)
        if gate_labels is None:
            return TradeOutput(gate_logits, None, self.generate(input_ids, states, mask, slots, start, gate_logits))
        batch, count = gate_labels.shape
        loss = F.cross_entropy(gate_logits.flatten(0, 1), gate_labels.flatten(), reduction="none")
        loss = loss.view(batch, count).mean(1)
        if value_rows is not None and value_ids is not None and value_rows.numel():
            example, slot = value_rows // count, value_rows % count
            targets = value_ids
            previous = targets[:, :-1].clamp(min=0)  # teacher forcing; positions after the end carry no loss
            inputs = torch.cat([slots[slot][:, None], self.embed(previous)], 1)
            outputs, _ = self.gru(self.dropout(inputs), start[example][None].contiguous())
            attention, p_gen = self.copy_and_switch(outputs, inputs, states, mask, example)
            gold = targets.clamp(min=0)
            valid = targets != IGNORE_INDEX
            # The vocabulary logits, the head's largest product, only at the steps that carry a loss (up to
            # each value's end token): the padded steps are about half of a WoS batch's (rows, steps).
            p_vocab = torch.zeros(gold.shape, dtype=torch.float32, device=gold.device).masked_scatter(
                valid, self.gold_log_vocab(outputs[valid], gold[valid]).exp())
            p_copy = (attention * (input_ids[example][:, None, :] == gold[..., None])).sum(-1)
            nll = -torch.log((p_gen * p_vocab + (1 - p_gen) * p_copy).clamp_min(1e-12))
            token_loss = torch.zeros(batch, device=loss.device).index_add(0, example, nll.masked_fill(~valid, 0).sum(1))
            tokens = torch.zeros(batch, device=loss.device).index_add(0, example, valid.sum(1).float())
            loss = loss + token_loss / tokens.clamp_min(1)
        else:
            # No ptr slot in this batch: touch the generator's own weights so that under DDP every parameter
            # still takes part in the backward pass (DDP fails on parameters left without a gradient).
            loss = loss + 0.0 * sum(p.sum() for p in (*self.switch.parameters(), *self.to_embedding.parameters()))
        return TradeOutput(gate_logits, loss.sum())

    def generate(self, input_ids: torch.Tensor, states: torch.Tensor, mask: torch.Tensor, slots: torch.Tensor,
                 start: torch.Tensor, gate_logits: torch.Tensor) -> torch.Tensor:
        """Greedy decoding of the value tokens of every slot gated ptr."""
        batch, count = gate_logits.shape[:2]
        tokens = torch.full((batch, count, self.max_value_tokens), -1, dtype=torch.int64, device=states.device)
        rows = (gate_logits.argmax(-1) == PTR).flatten().nonzero().squeeze(-1)  # sorted: row-major
        if not rows.numel():
            return tokens
        # Rows decoded together are bounded so that the few (rows, vocabulary) tensors of a step stay near
        # LOGIT_BUDGET entries: a 250,000-token vocabulary over every ptr slot of an evaluation batch (an
        # untrained gate says ptr often) held 10+ GB and was killed.
        chunk = max(1, LOGIT_BUDGET // self.word_embeddings.num_embeddings)
        generated = torch.cat([self._decode(input_ids, states, mask, slots, start, piece // count, piece % count)
                               for piece in rows.split(chunk)])
        tokens.view(batch * count, -1)[rows] = generated
        return tokens

    def _decode(self, input_ids: torch.Tensor, states: torch.Tensor, mask: torch.Tensor, slots: torch.Tensor,
                start: torch.Tensor, example: torch.Tensor, slot: torch.Tensor) -> torch.Tensor:
        """Greedy value tokens (rows, max_value_tokens) of the given (example, slot) rows; -1 after the end."""
        history = input_ids[example]
        hidden = start[example][None].contiguous()
        step_input = slots[slot][:, None]
        finished = torch.zeros(example.numel(), dtype=torch.bool, device=states.device)
        generated = torch.full((example.numel(), self.max_value_tokens), -1, dtype=torch.int64, device=states.device)
        for step in range(self.max_value_tokens):
            output, hidden = self.gru(step_input, hidden)
            attention, p_gen = self.copy_and_switch(output, step_input, states, mask, example)
            p_vocab = self.vocabulary_logits(output[:, 0]).float().softmax(-1)
            p_copy = torch.zeros_like(p_vocab).scatter_add_(1, history, attention[:, 0])
            mixed = p_gen[:, 0, None] * p_vocab + (1 - p_gen[:, 0, None]) * p_copy
            token = mixed.argmax(-1)
            generated[:, step] = token.masked_fill(finished, -1)
            finished |= token == self.end_token_id
            if bool(finished.all()):
                break
            step_input = self.embed(token)[:, None]
        return generated
