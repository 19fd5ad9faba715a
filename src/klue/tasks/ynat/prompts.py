"""YNAT prompts for prompted LLMs (`klue.tasks.prompting`): a headline in, one of the 7 topics out.

The official category names are Korean already, so they are the label words themselves: choice i is
`LABELS[i]`, in the official order. Only the title is shown: `predefined_news_category` (the publisher's
section) and the url (its `sid1` names the section) say too much about the gold for a fair test.
"""

from __future__ import annotations

from klue.tasks.labels import LabelPrompts

from .records import CATEGORY, LABELS, YnatPrediction, YnatRecord

WORDS: tuple[str, ...] = LABELS  # official names, official order: index = label index


def render(record: YnatRecord) -> str:
    return f"제목: {record.title}"


PROMPTS = LabelPrompts(
    version="ynat-ko-2", instruction="다음 뉴스 기사 제목을 읽고 기사의 주제를 분류하세요.", render=render,
    labels=LABELS, words=WORDS, prediction=lambda guid, index: YnatPrediction(guid, LABELS[index]),
    noun=CATEGORY[0], unparsed="no category",
)
make_prompts = PROMPTS.make
