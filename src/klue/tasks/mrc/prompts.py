"""KLUE-MRC prompts for generative LMs: the model copies the answer span out of the context, or writes
nothing for an unanswerable question (the prediction format's `""`).

Parsing strips the text and keeps its first line. Any text is a prediction the official metrics can
score, so the answer is always kept as written; `ok` is False (with a note) when it is not a span of the
context, spaces ignored: that flags a model that does not copy, without changing its score. Keeping the
text also keeps a garbage answer wrong on an unanswerable question, where `""` would score as right.
"""

from __future__ import annotations

from dataclasses import replace

from klue.io.locate import DataRoots
from klue.tasks.kinds import refuse_unlabelled
from klue.tasks.prompting import GENERATE, Parsed, TaskPrompts, Truncation

from .records import MrcPrediction, MrcRecord

VERSION = "mrc-ko-2"  # -2: answers end at the next example's marker; chat form without the cue
CUE = "답:"
NO_ANSWER = ""  # the prediction format's answer for an unanswerable question
# The longest answer a model may write: KLUE-MRC and KorQuAD answers are phrases (KorQuAD dev: 43
# characters at most); 160 tokens hold 53 Hangul syllables even where each takes 3 byte tokens.
_MAX_TOKENS = 160

INSTRUCTION = f"""다음 지문을 읽고 질문에 답하세요.
- 답은 지문에 나오는 표현을 그대로 복사해서, 질문에 답이 되는 가장 짧은 구절로 한 줄에 씁니다.
- 지문의 내용으로 답할 수 없는 질문이면 아무것도 쓰지 않고 비워 둡니다.
"{CUE}" 뒤에 답만 쓰세요."""


def render(record: MrcRecord) -> str:
    return f"지문: {record.context}\n질문: {record.question}"


def gold_answer(record: MrcRecord) -> str:
    """The first gold answer's text, or nothing for an unanswerable question."""
    refuse_unlabelled(record)
    return record.answers[0].text if record.answers else NO_ANSWER


def _squashed(text: str) -> str:
    return "".join(text.split())


def answer_text(text: str) -> str:
    """The answer in generated text: the first line once the text is stripped."""
    return text.strip().split("\n", 1)[0].strip()


def parse(record: MrcRecord, text: str) -> Parsed:
    answer = answer_text(text)
    prediction = MrcPrediction(record.guid, answer)
    if answer == NO_ANSWER:
        return Parsed(prediction, True, "no answer (unanswerable)")
    if _squashed(answer) not in _squashed(record.context):
        return Parsed(prediction, False, "the answer is not a span of the context (scored as written)")
    return Parsed(prediction, True)


def unfit_prediction(record: MrcRecord) -> MrcPrediction:
    """A prompt that cannot fit is scored wrong: no answer for an answerable question, a text that is no
    answer ("답 없음", "no answer" written out) for an unanswerable one."""
    return MrcPrediction(record.guid, NO_ANSWER if record.answers else "답 없음")


# A passage too long for the model's context keeps its beginning (the question is asked of the whole passage,
# and no gold-free rule says where its answer is), cut at a character.
TRUNCATION = Truncation(what="the passage, cut from its end", unit="characters",
                        size=lambda record: len(record.context),
                        keep=lambda record, n: replace(record, context=record.context[:n]))


def max_new_tokens(record: MrcRecord) -> int:
    # An answer is a span of the context: 3 tokens a character of it (byte-level Hangul) always suffice.
    return min(_MAX_TOKENS, 8 + 3 * len(record.context))


def make_prompts(roots: DataRoots | None = None) -> TaskPrompts:
    """MRC prompts; `roots` is unused (the prompts need no resource file)."""
    return TaskPrompts(
        version=VERSION, instruction=INSTRUCTION, cue=CUE, render=render, gold_answer=gold_answer, parse=parse,
        modes=(GENERATE,), default_mode=GENERATE, max_new_tokens=max_new_tokens, stop=("\n\n",),
        span_of=lambda record: record.context, unfit_prediction=unfit_prediction, truncation=TRUNCATION,
        notes="the first line of the answer is scored as written; ok is False when it is not a span of the "
              "context; an empty answer means unanswerable",
    )
