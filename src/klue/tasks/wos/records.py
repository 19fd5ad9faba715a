"""KLUE-WoS records and readers: the official JSON dialogues, the ontology, and the Hugging Face copy.

File format (docs/tasks.md, WoS): a JSON list of dialogues `{guid, domains, dialogue: [{role: user|sys,
text, state?}]}`; every user turn carries the cumulative state, a list of `domain-slot-value` strings,
and system turns carry none. `ontology.json` maps the 45 `domain-slot` keys to their value lists.

Records: the unit of prediction and scoring is the user turn, so the task's records are `WosTurn`s,
one per user turn, guid `<dialogue guid>-<k>` with k the 0-based index among the dialogue's user
turns. Each turn holds a reference to its whole `WosDialogue` (shared, not copied), from which its
history, text and state are read; `group_key` is the dialogue guid, so a local split never separates a
dialogue's turns. `read_dialogues` gives the dialogues themselves, `expand_turns` turns them into
examples and `dialogues_of` collects them back.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from klue.errors import DataError, ProblemLog
from klue.io import hf
from klue.io.fields import Fields, describe, item_path, read_json_objects
from klue.io.formats import ReadPurpose
from klue.io.locate import beside
from klue.io.text import check_unique_guids, load_json
from klue.tasks.kinds import gold_absent, gold_prediction_of, prediction_parser, present

ROLES: tuple[str, ...] = ("user", "sys")
ONTOLOGY_FILE = "ontology.json"
# The 45 domain-slot keys of the official ontology.json, in its order (used when no ontology file sits
# next to the data).
DEFAULT_SLOTS: tuple[str, ...] = (
    "관광-경치 좋은", "관광-교육적", "관광-도보 가능", "관광-문화 예술", "관광-역사적", "관광-이름", "관광-종류",
    "관광-주차 가능", "관광-지역", "숙소-가격대", "숙소-도보 가능", "숙소-수영장 유무", "숙소-스파 유무",
    "숙소-예약 기간", "숙소-예약 명수", "숙소-예약 요일", "숙소-이름", "숙소-인터넷 가능", "숙소-조식 가능",
    "숙소-종류", "숙소-주차 가능", "숙소-지역", "숙소-헬스장 유무", "숙소-흡연 가능", "식당-가격대",
    "식당-도보 가능", "식당-야외석 유무", "식당-예약 명수", "식당-예약 시간", "식당-예약 요일", "식당-이름",
    "식당-인터넷 가능", "식당-종류", "식당-주류 판매", "식당-주차 가능", "식당-지역", "식당-흡연 가능",
    "지하철-도착지", "지하철-출발 시간", "지하철-출발지", "택시-도착 시간", "택시-도착지", "택시-종류",
    "택시-출발 시간", "택시-출발지",
)
DOMAINS: tuple[str, ...] = ("관광", "숙소", "식당", "지하철", "택시")
# Values every closed slot of the ontology lists besides its own; `none` is never part of a state.
SPECIAL_VALUES = frozenset({"none", "dontcare", "yes", "no"})
# A slot whose ontology lists more values than this (names, times, places: 49-641 in v1.1, against at most
# 13 for the others) is open: its ontology is a sample of values, not the set of allowed ones.
OPEN_SLOT_MIN_VALUES = 40
_DIALOGUE_FIELDS = frozenset({"guid", "domains", "dialogue"})
_UTTERANCE_FIELDS = frozenset({"role", "text", "state"})


@dataclass(frozen=True)
class WosUtterance:
    role: str  # "user" or "sys"
    text: str
    # user turns: the cumulative state (None only for a turn read for prediction without it); sys turns: None
    state: tuple[str, ...] | None


@dataclass(frozen=True)
class WosDialogue:
    """One dialogue with every field of the official file."""

    guid: str
    domains: tuple[str, ...]
    dialogue: tuple[WosUtterance, ...]

    @property
    def user_positions(self) -> tuple[int, ...]:
        return tuple(i for i, u in enumerate(self.dialogue) if u.role == "user")


@dataclass(frozen=True)
class WosTurn:
    """One user turn: the example predictions and metrics count."""

    guid: str  # "<dialogue guid>-<k>"
    dialogue_guid: str
    turn_index: int  # k: 0-based among the dialogue's user turns
    utterance_index: int  # position of this user utterance in `dialogue.dialogue`
    dialogue: WosDialogue = field(repr=False, compare=False)

    @property
    def text(self) -> str:
        return self.dialogue.dialogue[self.utterance_index].text

    @property
    def labelled(self) -> bool:
        """False for a turn read for prediction without its `state`: never scored."""
        return self.dialogue.dialogue[self.utterance_index].state is not None

    @property
    def state(self) -> tuple[str, ...]:
        """The gold state; () for a turn without gold (`labelled` False), the "no gold" placeholder."""
        return self.dialogue.dialogue[self.utterance_index].state or ()

    @property
    def history(self) -> tuple[WosUtterance, ...]:
        """The utterances before this user turn (user and system alternating)."""
        return self.dialogue.dialogue[:self.utterance_index]

    @property
    def system_text(self) -> str:
        """The system utterance right before this turn ("" at the first turn)."""
        before = self.history
        return before[-1].text if before and before[-1].role == "sys" else ""

    @property
    def previous_state(self) -> tuple[str, ...]:
        """The state at the previous user turn (() at the first)."""
        for utterance in reversed(self.history):
            if utterance.role == "user" and utterance.state is not None:
                return utterance.state
        return ()

    @property
    def domains(self) -> tuple[str, ...]:
        return self.dialogue.domains


@dataclass(frozen=True)
class WosPrediction:
    guid: str
    state: tuple[str, ...]


def split_state_item(item: str) -> tuple[str, str, str] | None:
    """`domain-slot-value` -> (domain, slot, value); None when the string has not that shape. Domains and
    slots never contain `-`; values may."""
    parts = item.split("-", 2)
    if len(parts) != 3 or not all(p.strip() for p in parts):
        return None
    return parts[0], parts[1], parts[2]


def state_problem(item: str, slots: frozenset[str]) -> str | None:
    """Why a state string is not valid, or None."""
    parts = split_state_item(item)
    if parts is None:
        return f"state item {item!r} is not `domain-slot-value`"
    key = f"{parts[0]}-{parts[1]}"
    if key not in slots:
        return f"state item {item!r} names the slot {key!r}, which is not in the ontology"
    return None


def read_ontology(path: Path, log: ProblemLog) -> dict[str, tuple[str, ...]] | None:
    """`ontology.json`: an object mapping `domain-slot` keys to lists of value strings."""
    data = load_json(path, log)
    if data is None:
        return None
    fields = Fields(data, "$", log)
    ontology = {}
    for key in fields.data:
        values = fields.str_list(key)
        if len(key.split("-")) != 2:
            fields.fail(fields.at(key), f"ontology key {key!r} is not `domain-slot`")
        if values is not None:
            ontology[key] = values
    if not fields.data and fields.ok:
        log.error(location="$", message="the ontology is empty")
        return None
    return ontology if fields.ok else None


def load_ontology(path: Path) -> dict[str, tuple[str, ...]]:
    """`read_ontology` for callers that need it: a DataError (with the file) when missing or invalid."""
    if not path.is_file():
        raise DataError("the WoS ontology is missing (`klue data download wos` fetches it)", path)
    log = ProblemLog(str(path))
    ontology = read_ontology(path, log)
    log.raise_if_errors()
    assert ontology is not None  # read_ontology logs an error whenever it returns None
    return ontology


def is_open_slot(values: Collection[str]) -> bool:
    return len(values) > OPEN_SLOT_MIN_VALUES


def squash(text: str) -> tuple[str, list[int]]:
    """The text without spaces, and for each kept character its index in the original text (values are
    compared this way: "투투 모엘" and "투투모엘" are one value)."""
    kept = [(i, c) for i, c in enumerate(text) if not c.isspace()]
    return "".join(c for _, c in kept), [i for i, _ in kept]


def slots_for(path: Path, log: ProblemLog) -> frozenset[str]:
    """The slot keys of the ontology next to a data file when present, else the official 45."""
    found = beside(path, ONTOLOGY_FILE)
    if found is None:
        return frozenset(DEFAULT_SLOTS)
    ontology_log = ProblemLog(str(found))
    ontology = read_ontology(found, ontology_log)
    log.problems.extend(ontology_log.problems)
    return frozenset(ontology) if ontology is not None else frozenset(DEFAULT_SLOTS)


def _state(fields: Fields, slots: frozenset[str]) -> tuple[str, ...] | None:
    state = fields.str_list("state")
    if state is None:
        return None
    seen: dict[str, int] = {}
    for i, item in enumerate(state):
        problem = state_problem(item, slots)
        if problem is not None:
            fields.fail(f"{fields.at('state')}[{i}]", problem)
            continue
        parts = split_state_item(item)
        assert parts is not None  # checked by state_problem
        domain, slot, _ = parts
        key = f"{domain}-{slot}"
        if key in seen:
            fields.log.warning(f"{fields.at('state')}[{i}]", f"slot {key!r} appears twice in one state "
                               f"(first at [{seen[key]}])")
        else:
            seen[key] = i
    return state if fields.ok else None


def dialogue_from(fields: Fields, slots: Iterable[str], purpose: ReadPurpose,
                  empty_sys_state_ok: bool = False) -> WosDialogue | None:
    """A dialogue object checked: roles, states on user turns only, state strings against `slots` (read
    for prediction, a user turn may come without its state).

    `empty_sys_state_ok`: accept `state: []` on system turns (the Hugging Face copy stores one).
    """
    slot_set = frozenset(slots)
    guid = fields.str("guid", nonempty=True)
    domains = fields.str_list("domains")
    if domains is not None:
        unknown = [d for d in domains if d not in DOMAINS]
        if unknown:
            fields.log.warning(fields.at("domains"), f"unusual domains {unknown} (official: {', '.join(DOMAINS)})")
    utterances: list[WosUtterance] = []
    items = fields.items("dialogue")
    if items is not None and not items:
        fields.fail(fields.at("dialogue"), "the dialogue has no turns")
    for turn in items or []:
        role = turn.str("role")
        text = turn.str("text")
        turn.warn_unknown(_UTTERANCE_FIELDS)
        state: tuple[str, ...] | None = None
        if role == "user":
            if gold_absent(turn, purpose, "state"):
                pass  # read for prediction: a user turn without its gold state (the turn is unlabelled)
            elif not turn.has("state"):
                turn.fail(turn.at("state"), "a user turn has no `state`")
            else:
                state = _state(turn, slot_set)
        elif role == "sys":
            if turn.has("state") and not (empty_sys_state_ok and turn.data["state"] == []):
                turn.fail(turn.at("state"), f"a system turn must not carry a state, found "
                          f"{describe(turn.data['state'])}")
        elif role is not None:
            turn.fail(turn.at("role"), f"`role` must be user or sys, found {role!r}")
        if turn.ok and role is not None and text is not None:
            utterances.append(WosUtterance(role, text, state))
    if items is not None and items and not any(u.role == "user" for u in utterances) and fields.ok:
        fields.fail(fields.at("dialogue"), "the dialogue has no user turn")
    fields.warn_unknown(_DIALOGUE_FIELDS)
    if not fields.ok or guid is None or domains is None:
        return None
    return WosDialogue(guid, domains, tuple(utterances))


def read_dialogues(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[WosDialogue]:
    """Read an official WoS JSON file as dialogues (slots checked against the ontology next to the file,
    else the official 45 keys); every problem goes to `log` with its JSON path."""
    slots: list[frozenset[str]] = []  # read at the first object, once the file is known to be a list

    def dialogue(fields: Fields) -> WosDialogue | None:
        if not slots:
            slots.append(slots_for(path, log))
        return dialogue_from(fields, slots[0], purpose)

    return read_json_objects(path, log, "WoS dialogues", dialogue)


def turn_guid(dialogue_guid: str, k: int) -> str:
    return f"{dialogue_guid}-{k}"


def expand_turns(dialogues: Iterable[WosDialogue]) -> list[WosTurn]:
    """One example per user turn, guid `<dialogue guid>-<k>` (k 0-based among user turns)."""
    return [WosTurn(turn_guid(d.guid, k), d.guid, k, position, d)
            for d in dialogues for k, position in enumerate(d.user_positions)]


def dialogues_of(turns: Iterable[WosTurn]) -> list[WosDialogue]:
    """The dialogues the turns come from, each once, in first-seen order."""
    seen: dict[str, WosDialogue] = {}
    for turn in turns:
        seen.setdefault(turn.dialogue_guid, turn.dialogue)
    return list(seen.values())


def read(path: Path, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[WosTurn]:
    """Read an official WoS JSON file as turn examples (see `read_dialogues`). Read for prediction
    (`klue.tasks.kinds.reads_for_prediction`), a user turn may come without its `state`."""
    return expand_turns(read_dialogues(path, log, purpose))


def to_json(dialogue: WosDialogue) -> dict[str, Any]:
    turns = []
    for u in dialogue.dialogue:
        turn: dict[str, Any] = {"role": u.role, "text": u.text}
        if u.state is not None:
            turn["state"] = list(u.state)
        turns.append(turn)
    return {"guid": dialogue.guid, "domains": list(dialogue.domains), "dialogue": turns}


def _predicted_state(fields: Fields) -> tuple[tuple[str, ...]] | None:
    """`state` a list of strings. Items that are not `domain-slot-value` over the official slots are
    warnings, not errors: the metric scores them as ordinary false positives."""
    state = fields.str_list("state")
    if state is not None:
        slots = frozenset(DEFAULT_SLOTS)
        problems = [p for p in (state_problem(item, slots) for item in state) if p is not None]
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            fields.warn(f"{problems[0]}{more}; scored as false positives")
    return present(state)


parse_prediction = prediction_parser(WosPrediction, _predicted_state)


gold_prediction = gold_prediction_of(WosPrediction, "state")


def from_hf(dataset: Any, log: ProblemLog, purpose: ReadPurpose = "validate") -> list[WosTurn]:
    """HF `klue/klue` wos rows (`guid, domains, dialogue: [{role, text, state}]`, where system turns
    carry an empty state list; a dict of lists is accepted too) -> WoS turn records."""
    dialogues = []
    for index, row in hf.rows(dataset):
        if isinstance(row, dict) and "dialogue" in row:
            row = {**row, "dialogue": hf.as_rows(row["dialogue"])}
        fields = Fields(row, item_path("$", index), log)
        dialogue = dialogue_from(fields, DEFAULT_SLOTS, purpose, empty_sys_state_ok=True)
        if dialogue is not None:
            dialogues.append(dialogue)
    check_unique_guids(((d.guid, d.guid) for d in dialogues), log)
    return expand_turns(dialogues)


def to_hf(turns: Sequence[WosTurn]) -> list[dict[str, Any]]:
    """One row per dialogue in the klue/klue wos layout (system turns with an empty state list, as the hub
    copy stores them; `from_hf` reads them back as stateless)."""
    rows = []
    for dialogue in dialogues_of(turns):
        utterances = [{"role": u.role, "text": u.text, "state": list(u.state or ())} for u in dialogue.dialogue]
        rows.append({"guid": dialogue.guid, "domains": list(dialogue.domains), "dialogue": utterances})
    return rows


# The hub's columns hold every official field.
HF_FEATURES: dict[str, Any] = {"guid": "string", "domains": ["string"],
                               "dialogue": [{"role": "string", "text": "string", "state": ["string"]}]}
HF_LAYOUT = hf.HfLayout(HF_FEATURES, to_hf, from_hf)
