"""STS prompts for prompted LLMs (`klue.tasks.prompting`): two sentences in, a similarity score 0-5 out.

- loglik (default): the choices are the integers "0" .. "5"; the prediction is their expected value
  sum(p_i * i) under the normalised probabilities, a real number as the metric wants (Pearson r needs a
  graded score, and the expectation is the score that minimises the squared error under the model's
  distribution). A one-hot at one integer therefore predicts that integer.
- generate: the first number of the answer's first line; a number outside 0-5 is clipped to the range
  (`Parsed.ok` True, the note says so), because the prediction file only warns about such scores and an
  unclipped "10" would weigh on Pearson r far beyond what the model said ("very similar").
- gold_answer: the gold (`labels.real-label`) with one decimal, as the official `labels.label` writes it,
  never rounded across the binary threshold 3.0 (2.96 is written 2.9), so a perfect answer keeps its
  binary label; gold_choice: the nearest integer (halves up).
- A text with no number predicts the scale's end on the other side of the threshold from the gold (0 for
  a gold >= 3, else 5): at least 2 points off, and its binary label wrong too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from klue.io.locate import DataRoots
from klue.metrics.sts import THRESHOLD as BINARY_THRESHOLD
from klue.tasks.kinds import refuse_unlabelled
from klue.tasks.prompting import GENERATE, LOGLIK, Parsed, TaskPrompts

from .records import MAX_SCORE, MIN_SCORE, StsPrediction, StsRecord

VERSION = "sts-ko-2"  # -2: answers end at the next example's marker; chat form without the cue
CUE = "답:"
SCORES: tuple[int, ...] = tuple(range(int(MIN_SCORE), int(MAX_SCORE) + 1))  # the loglik choices 0 .. 5
INSTRUCTION = (
    "두 문장의 의미가 얼마나 비슷한지 0에서 5 사이의 점수로 평가하세요. "
    "0은 두 문장의 의미가 전혀 다름, 5는 의미가 완전히 같음을 뜻합니다. "
    "점수 하나로만 답하세요 (소수점 한 자리까지 쓸 수 있습니다)."
)
# A model that repeats the answer slot's label ("답: 3", "점수: 3") still answered.
_ECHOED_CUE = re.compile(r"^(?:정?답|점수|answer|score)\s*[:：]\s*", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def render(record: StsRecord) -> str:
    return f"문장 1: {record.sentence1}\n문장 2: {record.sentence2}"


def one_decimal(score: float) -> str:
    """`score` with one decimal, rounded down instead where rounding would cross the binary threshold."""
    text = f"{score:.1f}"
    if (float(text) >= BINARY_THRESHOLD) != (score >= BINARY_THRESHOLD):
        text = f"{math.floor(score * 10) / 10:.1f}"
    return text


def gold_answer(record: StsRecord) -> str:
    refuse_unlabelled(record)  # few-shot examples and guards need a gold; a record read for prediction has none
    return one_decimal(record.real_label)


def gold_choice(record: StsRecord) -> int:
    """The integer choice nearest the gold (halves up). A one-hot there predicts that integer, which is not
    a perfect score: the expectation of the distribution that splits between the two integers around the
    gold is."""
    refuse_unlabelled(record)
    return min(max(math.floor(record.real_label + 0.5), SCORES[0]), SCORES[-1])


def choices(record: StsRecord) -> tuple[str, ...]:
    return tuple(str(score) for score in SCORES)


def from_choices(record: StsRecord, probs: Sequence[float]) -> StsPrediction:
    """The expected score sum(p_i * i), the probabilities normalised to sum to 1."""
    if len(probs) != len(SCORES):
        raise ValueError(f"expected {len(SCORES)} probabilities (scores {SCORES[0]}-{SCORES[-1]}), got {len(probs)}")
    total = math.fsum(probs)
    if not total > 0 or not math.isfinite(total):
        raise ValueError(f"the probabilities of the scores must have a positive finite sum, got {total}")
    return StsPrediction(record.guid, math.fsum(p * s for p, s in zip(probs, SCORES, strict=True)) / total)


def wrong_prediction(record: StsRecord) -> StsPrediction:
    """The end of the scale on the other side of the binary threshold from the gold (NaN gold: 5)."""
    score = MIN_SCORE if record.real_label >= BINARY_THRESHOLD else MAX_SCORE
    return StsPrediction(record.guid, score)


def answer_line(text: str) -> str:
    """The first non-empty line of generated text, without an echoed cue."""
    line = next((part.strip() for part in text.strip().splitlines() if part.strip()), "")
    return _ECHOED_CUE.sub("", line)


def parse(record: StsRecord, text: str) -> Parsed:
    answer = answer_line(text)
    found = _NUMBER.search(answer)
    if found is None:
        return Parsed(wrong_prediction(record), False, f"no score in {answer[:40]!r}")
    value = float(found.group())
    clipped = min(max(value, MIN_SCORE), MAX_SCORE)
    note = f"score {found.group()} clipped to {clipped:g}" if clipped != value else ""
    return Parsed(StsPrediction(record.guid, clipped), True, note)


# The answers constrained decoding allows: a score 0-5 with at most one decimal, as the instruction asks.
ANSWER_REGEX = r"[0-4](?:\.[0-9])?|5(?:\.0)?"


def make_prompts(roots: DataRoots | None = None) -> TaskPrompts:
    """STS's prompts; `roots` is unused (the prompts need no resource file)."""
    return TaskPrompts(
        version=VERSION, instruction=INSTRUCTION, cue=CUE, render=render, gold_answer=gold_answer, parse=parse,
        modes=(LOGLIK, GENERATE), default_mode=LOGLIK, choices=choices, from_choices=from_choices,
        gold_choice=gold_choice, unfit_prediction=wrong_prediction, max_new_tokens=lambda record: 8, regex=lambda record: ANSWER_REGEX,
        notes="loglik: the expected value of the scores 0-5; generate: the first number, clipped to 0-5",
    )
