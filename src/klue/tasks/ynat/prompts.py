"""YNAT prompts for prompted LLMs (`klue.tasks.prompting`): a headline in, one of the 7 topics out.

The official category names are Korean already, so they are the label words themselves: choice i is
`LABELS[i]`, in the official order. Only the title is shown: `predefined_news_category` (the publisher's
section) and the url (its `sid1` names the section) say too much about the gold for a fair test.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.io.locate import DataRoots
from klue.tasks.kinds import refuse_unlabelled
from klue.tasks.prompting import GENERATE, LOGLIK, Parsed, TaskPrompts, answer_line, argmax, match_label

from .records import LABELS, YnatPrediction, YnatRecord

VERSION = "ynat-ko-1"
CUE = "답:"
WORDS: tuple[str, ...] = LABELS  # official names, official order: index = label index
INSTRUCTION = (
    "다음 뉴스 기사 제목을 읽고 기사의 주제를 분류하세요. "
    f"다음 중 하나로만 답하세요: {', '.join(WORDS)}."
)


def render(record: YnatRecord) -> str:
    return f"제목: {record.title}"


def gold_answer(record: YnatRecord) -> str:
    return WORDS[gold_choice(record)]


def gold_choice(record: YnatRecord) -> int:
    refuse_unlabelled(record)  # few-shot examples and guards need a gold; a record read for prediction has none
    return LABELS.index(record.label)


def choices(record: YnatRecord) -> tuple[str, ...]:
    return WORDS


def from_choices(record: YnatRecord, probs: Sequence[float]) -> YnatPrediction:
    """The most probable category (ties: the earlier one in the official order)."""
    if len(probs) != len(LABELS):
        raise ValueError(f"expected {len(LABELS)} probabilities (one per category), got {len(probs)}")
    return YnatPrediction(record.guid, LABELS[argmax(probs)])


def wrong_prediction(record: YnatRecord) -> YnatPrediction:
    """A prediction that is wrong for `record`: the category after the gold in the official order (the
    first one for a record without gold, which is never scored)."""
    index = (LABELS.index(record.label) + 1) % len(LABELS) if record.label in LABELS else 0
    return YnatPrediction(record.guid, LABELS[index])


def parse(record: YnatRecord, text: str) -> Parsed:
    answer = answer_line(text)
    index = match_label(answer, [(word,) for word in WORDS])
    if index is None:
        return Parsed(wrong_prediction(record), False, f"no category in {answer[:40]!r}")
    return Parsed(YnatPrediction(record.guid, LABELS[index]), True)


def make_prompts(roots: DataRoots | None = None) -> TaskPrompts:
    """YNAT's prompts; `roots` is unused (the prompts need no resource file)."""
    return TaskPrompts(
        version=VERSION, instruction=INSTRUCTION, cue=CUE, render=render, gold_answer=gold_answer, parse=parse,
        modes=(LOGLIK, GENERATE), default_mode=LOGLIK, choices=choices, from_choices=from_choices,
        gold_choice=gold_choice, max_new_tokens=lambda record: 16, choice_strings=choices,
    )
