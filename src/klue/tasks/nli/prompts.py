"""NLI prompts for prompted LLMs (`klue.tasks.prompting`): a premise and a hypothesis in, one of three
Korean label words out.

Label words, in the official label order (entailment, contradiction, neutral): 함의, 모순, 중립. Note
that this order is not the Hugging Face copy's (entailment, neutral, contradiction): a choice index is an
index into `LABELS`, nothing else. Generated text may also give the official English name.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.io.locate import DataRoots
from klue.tasks.kinds import refuse_unlabelled
from klue.tasks.prompting import GENERATE, LOGLIK, Parsed, TaskPrompts, answer_line, argmax, match_label

from .records import LABELS, NliPrediction, NliRecord

VERSION = "nli-ko-1"
CUE = "답:"
WORD_OF: dict[str, str] = {"entailment": "함의", "contradiction": "모순", "neutral": "중립"}
WORDS: tuple[str, ...] = tuple(WORD_OF[label] for label in LABELS)  # index = label index
INSTRUCTION = (
    "전제와 가설을 읽고 두 문장의 관계를 판단하세요. "
    "전제가 참일 때 가설도 반드시 참이면 함의, 가설이 반드시 거짓이면 모순, "
    "전제만으로는 가설이 참인지 거짓인지 알 수 없으면 중립입니다. "
    f"다음 중 하나로만 답하세요: {', '.join(WORDS)}."
)


def render(record: NliRecord) -> str:
    return f"전제: {record.premise}\n가설: {record.hypothesis}"


def gold_answer(record: NliRecord) -> str:
    return WORDS[gold_choice(record)]


def gold_choice(record: NliRecord) -> int:
    refuse_unlabelled(record)  # few-shot examples and guards need a gold; a record read for prediction has none
    return LABELS.index(record.gold_label)


def choices(record: NliRecord) -> tuple[str, ...]:
    return WORDS


def from_choices(record: NliRecord, probs: Sequence[float]) -> NliPrediction:
    """The most probable label (ties: the earlier one in the official order)."""
    if len(probs) != len(LABELS):
        raise ValueError(f"expected {len(LABELS)} probabilities (one per label), got {len(probs)}")
    return NliPrediction(record.guid, LABELS[argmax(probs)])


def wrong_prediction(record: NliRecord) -> NliPrediction:
    """A prediction that is wrong for `record`: the label after the gold in the official order (the first
    one for a record without gold, which is never scored)."""
    gold = record.gold_label
    index = (LABELS.index(gold) + 1) % len(LABELS) if gold in LABELS else 0
    return NliPrediction(record.guid, LABELS[index])


def parse(record: NliRecord, text: str) -> Parsed:
    answer = answer_line(text)
    index = match_label(answer, [(word, label) for word, label in zip(WORDS, LABELS, strict=True)])
    if index is None:
        return Parsed(wrong_prediction(record), False, f"no NLI label in {answer[:40]!r}")
    return Parsed(NliPrediction(record.guid, LABELS[index]), True)


def make_prompts(roots: DataRoots | None = None) -> TaskPrompts:
    """NLI's prompts; `roots` is unused (the prompts need no resource file)."""
    return TaskPrompts(
        version=VERSION, instruction=INSTRUCTION, cue=CUE, render=render, gold_answer=gold_answer, parse=parse,
        modes=(LOGLIK, GENERATE), default_mode=LOGLIK, choices=choices, from_choices=from_choices,
        gold_choice=gold_choice, max_new_tokens=lambda record: 16, choice_strings=choices,
    )
