"""KLUE-WoS: a TRADE-style state tracker (models/trade.py) over the dialogue history, as the official baseline.

Input per user turn: every utterance so far, oldest first, separated by the tokenizer's separator and
ending with this user turn (token type 1 where the model has token types); when that exceeds max_len the
OLDEST tokens are cut, as the official `--truncate` does, and the feature is marked truncated.

Labels, per slot of the ontology (its 45 keys, in file order): the gate (none / dontcare / yes / no / ptr;
a gate the slot's values never take is masked) and, for ptr slots, the value's tokens plus an end token.
The predicted state of a turn is the full cumulative state (TRADE predicts it from the whole history).

States carried turn to turn, `head.carry_state`: `truncated` (default) keeps, on a turn whose history was
cut, the previous turn's predicted values of the slots the model now gates none (their evidence may have
been cut away); `always` does so on every turn; `never` trusts each turn's prediction alone.

Value normalisation with the ontology: a generated value is compared without spaces to the slot's known
values (the ontology's and the training states'); a match takes that spelling. A closed slot (at most
OPEN_SLOT_MIN_VALUES values: prices, kinds, areas, days, counts, yes/no) only ever takes one of its
ontology values, the closest by character similarity; an open slot (names, times, places) otherwise takes
the text as it is written in the dialogue when found there, else the decoded text.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from klue.errors import DataError
from klue.io.locate import DataRoots
from klue.models.adapter import Adapter, check_head_options
from klue.models.collate import collate_features, pad_ids
from klue.models.features import Feature, FeaturizeContext
from klue.models.heads import IGNORE_INDEX, HeadOutput, HeadSpec
from klue.models.trade import GATES, KIND, PTR, TradeHead, TradeOutput
from klue.tasks.base import Task

from . import ontology
from .records import (
    SPECIAL_VALUES,
    WosTurn,
    is_open_slot,
    split_state_item,
    squash,
)

HEAD_OPTIONS: dict[str, tuple[Any, ...]] = {"carry_state": ("truncated", "always", "never")}


def gate_of(value: str, allowed: Sequence[bool]) -> int:
    """The gate of a gold value: its own gate when the slot allows it, else ptr (generate the text)."""
    if value in GATES and value != "ptr" and value != "none" and allowed[GATES.index(value)]:
        return GATES.index(value)
    return PTR


class ValueNormaliser:
    """Maps generated value text onto the spelling the ontology, the training data or the dialogue uses."""

    def __init__(self, known: Mapping[str, Sequence[str]], open_slots: frozenset[str]) -> None:
        self.open_slots = open_slots
        self.known = {slot: tuple(v for v in values if v not in SPECIAL_VALUES) for slot, values in known.items()}
        self.by_squashed = {slot: {squash(v)[0]: v for v in values} for slot, values in self.known.items()}

    def __call__(self, slot: str, text: str, dialogue_text: str) -> str | None:
        key = squash(text)[0]
        if not key or "\ufffd" in key:  # nothing, or a byte-level token cut inside a character
            return None
        spelled = self.by_squashed.get(slot, {}).get(key)
        if spelled is not None:
            return spelled
        if slot not in self.open_slots:
            candidates = self.known.get(slot, ())
            if not candidates:
                return None
            return max(candidates, key=lambda v: (difflib.SequenceMatcher(None, key, squash(v)[0]).ratio(), v))
        squashed, positions = squash(dialogue_text)
        at = squashed.find(key)
        if at >= 0:
            return dialogue_text[positions[at]:positions[at + len(key) - 1] + 1]
        return text.strip()


class WosAdapter(Adapter):
    def __init__(self, task: Task[Any, Any]) -> None:
        super().__init__(task)
        self.ontology: dict[str, tuple[str, ...]] | None = None
        self.tokenizer: Any = None
        self.options: dict[str, Any] = {}
        self.slots: tuple[str, ...] = ()
        self.slot_index: dict[str, int] = {}
        self.gate_mask: list[list[bool]] = []
        self.known_values: dict[str, list[str]] = {}
        self.open_slots: frozenset[str] = frozenset()
        self.max_value_tokens = 0
        self.normaliser: ValueNormaliser | None = None
        self.truncated = 0  # features of the last featurize call whose oldest tokens were cut
        self._value_ids: dict[str, tuple[int, ...]] = {}  # value text -> token ids (no specials)

    # Setup -------------------------------------------------------------------------------------------
    def attach_data(self, roots: DataRoots | None) -> None:
        self.ontology = ontology(roots, "wos")

    def prepare(self, tokenizer: Any, train_records: Sequence[Any] | None) -> None:
        self.tokenizer = tokenizer
        self._value_ids = {}
        if train_records is None:
            return  # a saved model: build_model restores the slots and values from its head spec
        if self.ontology is None:
            raise DataError("wos: fine-tuning needs the ontology (wos-v1.1/ontology.json under the KLUE data "
                            "root; `klue data download wos` fetches it)")
        known = {slot: list(values) for slot, values in self.ontology.items()}
        self._tokenize_values(train_records, tokenizer)
        longest = 1
        for turn in train_records:
            for item in turn.state:
                domain, name, value = split_state_item(item) or ("", "", "")
                slot = f"{domain}-{name}"
                if slot not in known:
                    raise DataError(f"wos: the training state of {turn.guid} names {slot!r}, which is not in "
                                    "the ontology")
                if value not in known[slot]:
                    known[slot].append(value)
                if value not in SPECIAL_VALUES:
                    longest = max(longest, len(self._value_ids[value]))
        self._set_slots(list(self.ontology), known, sorted(s for s, v in self.ontology.items() if is_open_slot(v)),
                        longest + 1)

    def _set_slots(self, slots: list[str], known: Mapping[str, Sequence[str]], open_slots: Sequence[str],
                   max_value_tokens: int) -> None:
        self.slots = tuple(slots)
        self.slot_index = {slot: i for i, slot in enumerate(slots)}
        self.known_values = {slot: list(known[slot]) for slot in slots}
        self.open_slots = frozenset(open_slots)
        self.max_value_tokens = max_value_tokens
        self.gate_mask = []
        for slot in slots:
            values = set(known[slot])
            self.gate_mask.append([True, "dontcare" in values, "yes" in values, "no" in values,
                                   bool(values - SPECIAL_VALUES)])
        self.normaliser = ValueNormaliser(self.known_values, self.open_slots)

    def head_spec(self, dropout: float | None, options: Mapping[str, Any]) -> HeadSpec:
        self.options = check_head_options(self.task.name, options, HEAD_OPTIONS)
        slot_token_ids = [self.tokenizer(slot.replace("-", " "), add_special_tokens=False)["input_ids"]
                          for slot in self.slots]
        return HeadSpec(KIND, GATES, dropout, {
            **self.options, "slots": list(self.slots), "slot_token_ids": slot_token_ids,
            "gate_mask": self.gate_mask, "known_values": self.known_values, "open_slots": sorted(self.open_slots),
            "max_value_tokens": self.max_value_tokens, "end_token_id": self.end_token_id})

    @property
    def end_token_id(self) -> int:
        return int(self.tokenizer.sep_token_id if self.tokenizer.sep_token_id is not None
                   else self.tokenizer.eos_token_id)

    def build_model(self, encoder: nn.Module, spec: HeadSpec) -> nn.Module:
        options = spec.options
        self.options = {"carry_state": str(options.get("carry_state", "truncated"))}
        self._set_slots(list(options["slots"]), options["known_values"], options["open_slots"],
                        int(options["max_value_tokens"]))
        return TradeHead(encoder, spec)

    # Features ----------------------------------------------------------------------------------------
    def _tokenize_values(self, turns: Iterable[WosTurn], tokenizer: Any) -> None:
        """Token ids of every state value not seen yet, in one batched call: states are cumulative, so a
        value comes back turn after turn and would otherwise be tokenized again each time."""
        new: dict[str, None] = {}
        for turn in turns:
            for item in turn.state:
                parts = split_state_item(item)
                if parts is not None and parts[2] not in self._value_ids:
                    new[parts[2]] = None
        if new:
            encoded = tokenizer(list(new), add_special_tokens=False)["input_ids"]
            self._value_ids.update((value, tuple(ids)) for value, ids in zip(new, encoded))

    def featurize(self, records: Sequence[Any], ctx: FeaturizeContext) -> list[Feature]:
        self.truncated = 0
        if not records:
            return []
        tokenizer = ctx.tokenizer
        self._tokenize_values(records, tokenizer)
        specials = ctx.special_tokens()
        separator = self.end_token_id
        budget = ctx.max_len - len(specials)
        texts: dict[tuple[str, int], str] = {}
        for turn in records:
            for position in range(turn.utterance_index + 1):
                texts.setdefault((turn.dialogue_guid, position), turn.dialogue.dialogue[position].text)
        keys = list(texts)
        encoded = tokenizer([texts[k] for k in keys], add_special_tokens=False)["input_ids"]
        ids_of = dict(zip(keys, encoded))
        features = []
        for index, turn in enumerate(records):
            history: list[int] = []
            for position in range(turn.utterance_index):
                history.extend(ids_of[(turn.dialogue_guid, position)])
                history.append(separator)
            current = ids_of[(turn.dialogue_guid, turn.utterance_index)]
            body = history + list(current)
            types = [0] * len(history) + [1] * len(current)
            cut = len(body) > budget
            if cut:
                body, types = body[-budget:], types[-budget:]
                self.truncated += 1
            ids = (*specials.prefix, *body, *specials.suffix)
            type_ids = (0,) * len(specials.prefix) + tuple(types) + (1,) * len(specials.suffix)
            features.append(Feature(index, ids, type_ids if ctx.use_token_type_ids else None,
                                    self.labels(turn, tokenizer), 1, extra=cut))
        return features

    def labels(self, turn: WosTurn, tokenizer: Any) -> tuple[tuple[int, ...], tuple[tuple[int, tuple[int, ...]], ...]]:
        """Gate per slot, and (slot index, value tokens + end token) for the ptr slots."""
        gates = [GATES.index("none")] * len(self.slots)
        values = []
        for item in turn.state:
            domain, name, value = split_state_item(item) or ("", "", "")
            k = self.slot_index.get(f"{domain}-{name}")
            if k is None:
                raise DataError(f"wos: {turn.guid} has a state item {item!r} whose slot the model does not know")
            gates[k] = gate_of(value, self.gate_mask[k])
            if gates[k] == PTR:
                if value not in self._value_ids:
                    self._tokenize_values([turn], tokenizer)
                tokens = self._value_ids[value][: self.max_value_tokens - 1]
                values.append((k, (*tokens, self.end_token_id)))
        return tuple(gates), tuple(sorted(values))

    def collate(self, features: Sequence[Feature], ctx: FeaturizeContext, with_labels: bool,
                pad_to_multiple_of: int | None = None) -> dict[str, torch.Tensor]:
        batch = collate_features(features, ctx.tokenizer.pad_token_id, False, pad_to_multiple_of)
        if with_labels:
            count = len(self.slots)
            batch["gate_labels"] = torch.tensor([f.label[0] for f in features], dtype=torch.int64)
            rows = [(i * count + k, tokens) for i, f in enumerate(features) for k, tokens in f.label[1]]
            batch["value_rows"] = torch.tensor([r for r, _ in rows], dtype=torch.int64)
            batch["value_ids"] = (pad_ids([t for _, t in rows], IGNORE_INDEX) if rows
                                  else torch.zeros((0, 1), dtype=torch.int64))
        return batch

    def to_host(self, output: HeadOutput, batch: Mapping[str, torch.Tensor], features: Sequence[Feature]) -> list[Any]:
        gates = output.logits.argmax(-1).cpu().numpy().astype(np.int8)
        assert isinstance(output, TradeOutput) and output.value_tokens is not None  # the TRADE head's, in inference
        tokens = output.value_tokens.cpu().numpy()
        return [(gates[i], tokens[i]) for i in range(len(features))]

    # Decoding ----------------------------------------------------------------------------------------
    def value_text(self, ids: np.ndarray) -> str:
        kept = []
        for token in ids.tolist():
            if token < 0 or token == self.end_token_id:
                break
            kept.append(token)
        return str(self.tokenizer.decode(kept, skip_special_tokens=True, clean_up_tokenization_spaces=False))

    def turn_state(self, turn: WosTurn, gates: np.ndarray, tokens: np.ndarray) -> dict[str, str]:
        assert self.normaliser is not None
        dialogue_text = "\n".join(u.text for u in turn.dialogue.dialogue[: turn.utterance_index + 1])
        state = {}
        for k, gate in enumerate(gates.tolist()):
            if GATES[gate] == "none":
                continue
            slot = self.slots[k]
            value = (self.normaliser(slot, self.value_text(tokens[k]), dialogue_text) if gate == PTR
                     else GATES[gate])
            if value:
                state[slot] = value
        return state

    def decode(self, records: Sequence[Any], features: Sequence[Feature], outputs: Sequence[Any]) -> list[Any]:
        by_record = {f.record_index: (f, out) for f, out in zip(features, outputs)}
        order = sorted(range(len(records)), key=lambda i: (records[i].dialogue_guid, records[i].turn_index))
        carry = self.options.get("carry_state", "truncated")
        states: dict[int, dict[str, str]] = {}
        previous: tuple[str, int, dict[str, str]] | None = None
        for i in order:
            turn: WosTurn = records[i]
            feature, (gates, tokens) = by_record[i]
            state = self.turn_state(turn, gates, tokens)
            follows = previous is not None and previous[0] == turn.dialogue_guid and previous[1] == turn.turn_index - 1
            if follows and (carry == "always" or (carry == "truncated" and feature.extra)):
                assert previous is not None
                state = {**previous[2], **state}
            states[i] = state
            previous = (turn.dialogue_guid, turn.turn_index, state)
        return [self.prediction({"guid": records[i].guid,
                                 "state": [f"{slot}-{value}" for slot, value in states[i].items()]})
                for i in range(len(records))]


def make_adapter(task: Task[Any, Any]) -> WosAdapter:
    return WosAdapter(task)
