"""KLUE-WoS prompts for generative LMs: the model writes the whole cumulative dialogue state after the
record's user turn as one JSON object, `{"domain-slot": "value", ...}` (`{}` for none), with the
`domain-slot` keys of the ontology (the literature's form: the whole state in JSON, keys from the
ontology; the official state's list of `domain-slot-value` strings is read as well).

The ontology comes from the data roots (`wos-v1.1/ontology.json`, the task's resource file): the
instruction lists its slots, `json_schema` allows only its keys, and parsing keeps only its slots. Values
are not restricted to the ontology's lists: those are samples for the open slots (names, times, places),
and a value outside them is simply wrong, as the metric scores it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from klue.io.locate import DataRoots
from klue.tasks.kinds import refuse_unlabelled
from klue.tasks.prompting import GENERATE, Parsed, TaskPrompts, Truncation

from . import ontology as ontology_under
from .records import SPECIAL_VALUES, WosPrediction, WosTurn, split_state_item

VERSION = "wos-ko-2"  # -2: answers end at the next example's marker; chat form without the cue
CUE = "답:"
NONE_VALUE = "none"  # the ontology's "not mentioned", never part of a state
DONTCARE = "dontcare"
_ROLE_NAMES = {"user": "사용자", "sys": "시스템"}
_LISTED_VALUES_MAX = 12  # a slot with at most this many values (and no numbers or times) has them listed
_EXAMPLE_VALUES = 2  # otherwise this many examples
# Per user turn so far, the room of about three new `"domain-slot": "value"` pairs (the dev sample adds
# at most 9 in one turn and holds at most 20; a pair is about 25 characters, up to 60 tokens where each
# Hangul syllable is 3 byte tokens); capped at a whole state of 20 pairs with a margin.
_TOKENS_PER_TURN = 160
_MAX_TOKENS = 1536
# The longest value a constrained answer may write: the ontology's longest value has 23 characters.
VALUE_MAX_CHARS = 32

Ontology = Mapping[str, Sequence[str]]


def _values_hint(values: Sequence[str]) -> str:
    """How the instruction describes a slot's values: all of them for a small closed list, else examples."""
    proper = [v for v in values if v not in SPECIAL_VALUES]
    specials = [v for v in ("yes", "no") if v in values]
    if not proper:
        return ", ".join(specials) or "자유 값"
    if len(proper) <= _LISTED_VALUES_MAX and not any(re.search(r"\d", v) for v in proper):
        return ", ".join(proper + specials)
    return f"자유 값 (예: {', '.join(proper[:_EXAMPLE_VALUES])})"


def instruction(ontology: Ontology) -> str:
    slots = "\n".join(f"- {slot}: {_values_hint(values)}" for slot, values in ontology.items())
    return f"""다음은 사용자와 시스템의 여행 안내 대화입니다. 대화의 마지막 사용자 발화까지 사용자가 밝힌 조건 \
전체(누적된 대화 상태)를 쓰세요.
- 답은 한 줄의 JSON 객체로 {{"영역-슬롯": "값", ...}} 형식으로 씁니다. 앞선 발화에서 정해진 조건도 모두 포함하고, \
조건이 하나도 없으면 {{}}라고 씁니다.
- 값이 나열된 슬롯은 그 가운데 하나를 고릅니다. 이름과 장소는 대화에 나온 표현을 그대로, 시각은 23:20처럼 \
24시간 형식으로, 인원과 기간은 2처럼 숫자로 씁니다. 사용자가 상관없다고 한 조건의 값은 {DONTCARE}, 예/아니오로 \
답하는 조건의 값은 yes 또는 no입니다. 언급되지 않은 슬롯은 쓰지 않습니다.
- 쓸 수 있는 영역-슬롯과 값:
{slots}
예: {{"관광-종류": "박물관", "관광-지역": "서울 중앙", "식당-가격대": "{DONTCARE}"}}
"{CUE}" 뒤에 답만 쓰세요."""


def render(record: WosTurn) -> str:
    """The dialogue up to and including the record's user turn (never its state)."""
    utterances = (*record.history, record.dialogue.dialogue[record.utterance_index])
    lines = [f"{_ROLE_NAMES.get(u.role, u.role)}: {u.text}" for u in utterances]
    return "\n".join(["대화:", *lines])


def state_object(state: Sequence[str]) -> dict[str, str]:
    """`domain-slot-value` strings as `{domain-slot: value}`, in state order."""
    pairs: dict[str, str] = {}
    for item in state:
        parts = split_state_item(item)
        if parts is not None:
            pairs.setdefault(f"{parts[0]}-{parts[1]}", parts[2])
    return pairs


def gold_answer(record: WosTurn) -> str:
    refuse_unlabelled(record)
    return json.dumps(state_object(record.state), ensure_ascii=False)


def _without_fences(text: str) -> str:
    """The text without Markdown code-fence lines (chat models often wrap JSON in them)."""
    return "\n".join(line for line in text.strip().split("\n") if not line.strip().startswith("```")).strip()


def _json_state(text: str) -> Any:
    """The first JSON object or list in `text` (text around it ignored); None when there is none."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text[min(starts):])
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _value(value: Any) -> str | None:
    """A state value from a JSON value: strings stripped, numbers as written, true/false as yes/no; None
    for what is no value (empty, `none`, null, nested)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str) and value.strip() and value.strip() != NONE_VALUE:
        return value.strip()
    return None


def _pairs(value: dict[Any, Any] | list[Any]) -> tuple[list[tuple[str, Any]], int]:
    """(key, value) pairs from the object form, or from the list form's `domain-slot-value` strings, with
    the count of list items of another shape."""
    if isinstance(value, dict):
        return [(str(k).strip(), v) for k, v in value.items()], 0
    pairs = []
    for item in value:
        parts = split_state_item(item) if isinstance(item, str) else None
        if parts is not None:
            pairs.append((f"{parts[0].strip()}-{parts[1].strip()}", parts[2]))
    return pairs, len(value) - len(pairs)


def read_state(slots: frozenset[str], text: str) -> tuple[tuple[str, ...], int] | None:
    """The state a generated answer gives, only ontology slots, first value of a slot kept; with the count
    of entries dropped (unknown slot, no value, a slot repeated); None when the text holds no JSON state."""
    value = _json_state(_without_fences(text))
    if value is None:
        return None
    pairs, dropped = _pairs(value)
    state: dict[str, str] = {}
    for slot, raw in pairs:
        item = _value(raw)
        if slot in slots and item is not None and slot not in state:
            state[slot] = item
        else:
            dropped += 1
    return tuple(f"{slot}-{item}" for slot, item in state.items()), dropped


def make_parse(slots: frozenset[str]) -> Callable[[WosTurn, str], Parsed]:
    def parse(record: WosTurn, text: str) -> Parsed:
        found = read_state(slots, text)
        if found is None:
            return Parsed(WosPrediction(record.guid, ()), False, "no JSON object in the answer; empty state")
        state, dropped = found
        note = f"{dropped} entries dropped (not an ontology slot, no value, or repeated)" if dropped else ""
        return Parsed(WosPrediction(record.guid, state), True, note)

    return parse


def make_unfit_prediction(slots: Sequence[str]) -> Callable[[WosTurn], WosPrediction]:
    """A prompt that cannot fit is scored wrong: the empty state, or (where the gold state is empty) one
    slot set to dontcare."""
    def unfit(record: WosTurn) -> WosPrediction:
        return WosPrediction(record.guid, () if record.state else (f"{slots[0]}-{DONTCARE}",))

    return unfit


def keep_last_utterances(record: WosTurn, n: int) -> WosTurn:
    """The turn with only the last `n` utterances of its history (the oldest dropped first)."""
    drop = len(record.history) - n
    dialogue = replace(record.dialogue, dialogue=record.dialogue.dialogue[drop:])
    return replace(record, utterance_index=record.utterance_index - drop, dialogue=dialogue)


TRUNCATION = Truncation(what="the dialogue history, oldest utterances dropped first", unit="utterances",
                        size=lambda record: len(record.history), keep=keep_last_utterances)
# A model that goes on with the dialogue after its answer starts the next turn's line.
MARKERS = tuple(f"\n{name}:" for name in _ROLE_NAMES.values())


def max_new_tokens(record: WosTurn) -> int:
    # Sized from the turn's position (the state grows with the dialogue), never from its gold state.
    return min(_MAX_TOKENS, _TOKENS_PER_TURN * (record.turn_index + 1))


def make_json_schema(slots: Sequence[str]) -> Callable[[WosTurn], Mapping[str, Any]]:
    """A JSON object whose keys are ontology slots and whose values are strings (no value lists: see the
    module docstring) of at most `VALUE_MAX_CHARS` characters, so a constrained answer ends within budget."""
    value = {"type": "string", "maxLength": VALUE_MAX_CHARS}
    schema = {"type": "object", "properties": {slot: value for slot in slots}, "additionalProperties": False}

    def json_schema(record: WosTurn) -> Mapping[str, Any]:
        return schema

    return json_schema


def make_prompts(roots: DataRoots | None = None) -> TaskPrompts:
    """WoS prompts over the ontology under `roots`; DataError when `roots` is None or holds no ontology."""
    ontology = ontology_under(roots, "wos prompts")
    return TaskPrompts(
        version=VERSION, instruction=instruction(ontology), cue=CUE, render=render, gold_answer=gold_answer,
        parse=make_parse(frozenset(ontology)), modes=(GENERATE,), default_mode=GENERATE,
        max_new_tokens=max_new_tokens, stop=("\n\n",), json_schema=make_json_schema(list(ontology)),
        unfit_prediction=make_unfit_prediction(list(ontology)), truncation=TRUNCATION, markers=MARKERS,
        notes="the whole cumulative state as one JSON object; keys outside the ontology are dropped; needs "
              "the ontology from the data roots",
    )
