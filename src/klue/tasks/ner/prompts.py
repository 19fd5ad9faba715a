"""KLUE-NER prompts for generative LMs: the model lists the sentence's entity mentions with their types, and
the list is mapped back to per-character IOB2 tags (the task's prediction).

Answer format: one JSON list on one line, `[{"text": "이순신", "type": "PS"}, ...]` in sentence order, `[]`
for none (one line, so the `"\\n\\n"` stop never cuts it; a JSON list also gives `json_schema`). Lines
`mention<TAB>TYPE` are read as well. Mentions are placed LEFT TO RIGHT: each is searched (spaces ignored,
as the metric ignores them) after the end of the previous match; one not found there is skipped and
counted in the note. A sentence where a gold mention's text also occurs, not as that mention, between the
previous mention and it cannot be told apart in this format (13 of the 5,000 dev sentences), nor can the
2 dev sentences whose gold starts an entity with I-X (no mention list writes that tag sequence).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from klue.io.locate import DataRoots
from klue.metrics.ner import ENTITY_TYPES
from klue.tasks.kinds import refuse_unlabelled
from klue.tasks.prompting import GENERATE, Parsed, TaskPrompts

from .records import SPACE, NerPrediction, NerRecord

VERSION = "ner-ko-2"  # -2: answers end at the next example's marker; chat form without the cue
CUE = "답:"
OUTSIDE = "O"
Mention = tuple[str, str]  # (text as the sentence writes it, entity type)

# Korean names a model may write instead of the codes; the instruction asks for the codes.
_TYPE_NAMES: dict[str, str] = {
    "인물": "PS", "사람": "PS", "인명": "PS", "지명": "LC", "장소": "LC", "지역": "LC", "위치": "LC",
    "기관": "OG", "조직": "OG", "단체": "OG", "날짜": "DT", "시간": "TI", "시각": "TI", "수량": "QT",
}

INSTRUCTION = f"""다음 문장에서 개체명을 모두 찾아 유형과 함께 쓰세요. 개체명 유형은 다음 여섯 가지입니다.
- PS: 사람 이름 (인물, 성만 쓴 경우 포함)
- LC: 장소와 지역 (나라, 도시, 지명, 건물이나 시설의 위치)
- OG: 기관과 단체 (회사, 정부 기관, 학교, 정당, 스포츠 팀, 언론사)
- DT: 날짜와 기간 (연, 월, 일, 요일, 세기, '지난해' 같은 날짜 표현)
- TI: 시각과 시간 (시, 분, 초, '오전' 같은 시간 표현)
- QT: 수량 (개수, 인원, 나이, 금액, 비율, 순위, 거리 등 수를 나타내는 표현)
답은 한 줄의 JSON 목록으로, 문장에 나오는 순서대로 {{"text": 문장에 쓰인 그대로의 개체명, "type": 유형}}을 \
씁니다. 개체명이 없으면 []라고 씁니다.
예: [{{"text": "이순신", "type": "PS"}}, {{"text": "서울", "type": "LC"}}]
"{CUE}" 뒤에 답만 쓰세요."""


def render(record: NerRecord) -> str:
    return f"문장: {record.text}"


def gold_mentions(record: NerRecord) -> list[Mention]:
    """The gold entities as the official (strict IOB2) metric counts them, in order: a run opened by B-X
    and continued by I-X of the same type; an I-X that continues nothing is no entity there either."""
    refuse_unlabelled(record)
    positions = record.nonspace_positions
    tags = record.nonspace_tags
    mentions: list[Mention] = []
    i = 0
    while i < len(tags):
        if not tags[i].startswith("B-"):
            i += 1
            continue
        kind = tags[i][2:]
        end = i + 1
        while end < len(tags) and tags[end] == f"I-{kind}":
            end += 1
        # the text between the first and last character, inner spaces included, as the sentence shows it
        mentions.append(("".join(record.chars[positions[i]:positions[end - 1] + 1]), kind))
        i = end
    return mentions


def format_mentions(mentions: Sequence[Mention]) -> str:
    return json.dumps([{"text": text, "type": kind} for text, kind in mentions], ensure_ascii=False)


def gold_answer(record: NerRecord) -> str:
    return format_mentions(gold_mentions(record))


def _entity_type(value: Any) -> str | None:
    """An official type code from what a model wrote (the code in any case, or a Korean name)."""
    if not isinstance(value, str):
        return None
    name = value.strip()
    code = name.upper()
    if code in ENTITY_TYPES:
        return code
    return _TYPE_NAMES.get(name)


def _without_fences(text: str) -> str:
    """The text without Markdown code-fence lines (chat models often wrap JSON in them)."""
    return "\n".join(line for line in text.strip().split("\n") if not line.strip().startswith("```")).strip()


def _json_mentions(text: str) -> tuple[list[Mention], int] | None:
    """Mentions from a JSON list at the start of `text` (trailing text ignored), with the number of items
    that were not `{"text": str, "type": type}`; None when no JSON list starts there."""
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    if not isinstance(value, list):
        return None
    mentions: list[Mention] = []
    for item in value:
        kind = _entity_type(item.get("type")) if isinstance(item, Mapping) else None
        mention = item.get("text") if isinstance(item, Mapping) else None
        if kind is not None and isinstance(mention, str):
            mentions.append((mention, kind))
    return mentions, len(value) - len(mentions)


def _line_mentions(text: str) -> tuple[list[Mention], int]:
    """Mentions from `mention<TAB>TYPE` lines, with the number of non-empty lines of another shape."""
    mentions: list[Mention] = []
    bad = 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        mention, _, kind = line.rpartition("\t")
        code = _entity_type(kind)
        if mention.strip() and code is not None:
            mentions.append((mention, code))
        else:
            bad += 1
    return mentions, bad


def read_mentions(text: str) -> tuple[list[Mention], int] | None:
    """The mentions a generated answer lists (JSON list first, then tab lines, then a JSON list further
    in), with the count of unreadable items; None when the text is none of these."""
    body = _without_fences(text)
    if body.startswith("["):
        found = _json_mentions(body)
        if found is not None:
            return found
    mentions, bad = _line_mentions(body)
    if mentions:
        return mentions, bad
    if "[" in body:
        return _json_mentions(body[body.index("["):])
    return None


def place_mentions(record: NerRecord, mentions: Sequence[Mention]) -> tuple[tuple[str, ...], int]:
    """Per-character tags (spaces included, tagged O) from mentions placed left to right over the
    non-space characters, and how many mentions were not found after the previous one."""
    positions = record.nonspace_positions
    squashed = "".join(record.chars[p] for p in positions)
    tags = [OUTSIDE] * len(record.chars)
    cursor = 0
    missed = 0
    for mention, kind in mentions:
        # spaces are not scored (the official reader drops them), so a mention may be spaced differently
        key = mention.strip("\t\r\n").replace(SPACE, "")
        start = squashed.find(key, cursor) if key else -1
        if start < 0:
            missed += 1
            continue
        for offset in range(len(key)):
            tags[positions[start + offset]] = f"{'B' if offset == 0 else 'I'}-{kind}"
        cursor = start + len(key)
    return tuple(tags), missed


def empty_prediction(record: NerRecord) -> NerPrediction:
    """No mentions at all: what a failed parse predicts (every gold entity missed)."""
    return NerPrediction(record.guid, tuple(OUTSIDE for _ in record.chars))


def parse(record: NerRecord, text: str) -> Parsed:
    found = read_mentions(text)
    if found is None:
        what = "an empty answer" if not text.strip() else "neither a JSON list nor `mention<TAB>TYPE` lines"
        return Parsed(empty_prediction(record), False, f"{what}; read as no mentions")
    mentions, unreadable = found
    tags, missed = place_mentions(record, mentions)
    notes = []
    if unreadable:
        notes.append(f"{unreadable} items without a text and a known type skipped")
    if missed:
        notes.append(f"{missed} of {len(mentions)} mentions not found in the sentence after the previous one")
    return Parsed(NerPrediction(record.guid, tags), True, "; ".join(notes))


def max_new_tokens(record: NerRecord) -> int:
    # Sized from the sentence only (never its gold): on the dev set the gold answer, counted pessimistically
    # (2.5 ASCII characters a token, 3 tokens a Hangul syllable as byte-level tokenizers split it), needs
    # at most 83% of this.
    return 64 + 3 * len(record.text)


def json_schema(record: NerRecord) -> Mapping[str, Any]:
    """A JSON list of {text, type} with the official type codes (for backends that constrain output); a
    mention is no longer than the sentence, which also keeps a constrained answer from running on."""
    text = {"type": "string", "maxLength": len(record.text)}
    item = {"type": "object", "properties": {"text": text, "type": {"enum": list(ENTITY_TYPES)}},
            "required": ["text", "type"], "additionalProperties": False}
    return {"type": "array", "items": item}


def make_prompts(roots: DataRoots | None = None) -> TaskPrompts:
    """NER prompts; `roots` is unused (the prompts need no resource file)."""
    return TaskPrompts(
        version=VERSION, instruction=INSTRUCTION, cue=CUE, render=render, gold_answer=gold_answer, parse=parse,
        modes=(GENERATE,), default_mode=GENERATE, max_new_tokens=max_new_tokens, stop=("\n\n",),
        json_schema=json_schema,
        notes="mentions are placed left to right over the non-space characters; a mention not found after "
              "the previous one is skipped (counted in the parse note)",
    )
