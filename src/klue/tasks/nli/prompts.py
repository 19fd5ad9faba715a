"""NLI prompts for prompted LLMs (`klue.tasks.prompting`): a premise and a hypothesis in, one of three
Korean label words out.

Label words, in the official label order (entailment, contradiction, neutral): 함의, 모순, 중립. Note
that this order is not the Hugging Face copy's (entailment, neutral, contradiction): a choice index is an
index into `LABELS`, nothing else. Generated text may also give the official English name.
"""

from __future__ import annotations

from klue.tasks.labels import LabelPrompts

from .records import LABELS, NliPrediction, NliRecord

WORD_OF: dict[str, str] = {"entailment": "함의", "contradiction": "모순", "neutral": "중립"}
WORDS: tuple[str, ...] = tuple(WORD_OF[label] for label in LABELS)  # index = label index


def render(record: NliRecord) -> str:
    return f"전제: {record.premise}\n가설: {record.hypothesis}"


PROMPTS = LabelPrompts(
    version="nli-ko-2", render=render, labels=LABELS, words=WORDS, unparsed="no NLI label",
    instruction=("전제와 가설을 읽고 두 문장의 관계를 판단하세요. "
                 "전제가 참일 때 가설도 반드시 참이면 함의, 가설이 반드시 거짓이면 모순, "
                 "전제만으로는 가설이 참인지 거짓인지 알 수 없으면 중립입니다."),
    prediction=lambda guid, index: NliPrediction(guid, LABELS[index]),
)
make_prompts = PROMPTS.make
