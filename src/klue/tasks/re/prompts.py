"""RE prompts for prompted LLMs (`klue.tasks.prompting`): a sentence with a subject and an object entity in,
one of the 30 relations out, as a Korean description.

The descriptions are written "<subject type>:<what the object is to the subject>" (인물:출생일 = the
object is the subject's date of birth), one per relation of `relation_list.json`, in its order (index 0
관계 없음 = no_relation). They are all distinct, and so are their parts after the colon (the part a model
may answer alone): per:alternate_names and org:alternate_names are 인물:별명 and 단체:다른 이름, never one
word for both. Generated text may also give the official name (per:title).

Probabilities (`RePrediction.probs`) are always 30 numbers in the official relation order: in loglik mode
the normalised choice probabilities, so AUPRC is the official one; in generate mode one-hot at the parsed
relation, since generated text gives no distribution (AUPRC is then computable but says no more than the
labels do: report it from loglik runs only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from klue.tasks.labels import LabelPrompts
from klue.tasks.prompting import CUE_WORDS, GENERATE, argmax

from .records import RELATIONS, Entity, RePrediction, ReRecord

DESCRIPTION: dict[str, str] = {
    "no_relation": "관계 없음",
    "org:dissolved": "단체:해산일",
    "org:founded": "단체:설립일",
    "org:place_of_headquarters": "단체:본부 소재지",
    "org:alternate_names": "단체:다른 이름",
    "org:member_of": "단체:소속 단체",
    "org:members": "단체:구성원",
    "org:political/religious_affiliation": "단체:정치·종교 성향",
    "org:product": "단체:제품",
    "org:founded_by": "단체:설립자",
    "org:top_members/employees": "단체:대표·임원",
    "org:number_of_employees/members": "단체:구성원 수",
    "per:date_of_birth": "인물:출생일",
    "per:date_of_death": "인물:사망일",
    "per:place_of_birth": "인물:출생지",
    "per:place_of_death": "인물:사망지",
    "per:place_of_residence": "인물:거주지",
    "per:origin": "인물:출신지",
    "per:employee_of": "인물:소속 기관",
    "per:schools_attended": "인물:출신 학교",
    "per:alternate_names": "인물:별명",
    "per:parents": "인물:부모",
    "per:children": "인물:자녀",
    "per:siblings": "인물:형제자매",
    "per:spouse": "인물:배우자",
    "per:other_family": "인물:기타 가족",
    "per:colleagues": "인물:동료",
    "per:product": "인물:작품",
    "per:religion": "인물:종교",
    "per:title": "인물:직업·직위",
}
# A KeyError here, at import, if the relation list ever names a relation without a description.
WORDS: tuple[str, ...] = tuple(DESCRIPTION[relation] for relation in RELATIONS)  # index = relation index
# Extra answers a model gives for no relation at all.
_NO_RELATION_FORMS: tuple[str, ...] = ("없음",)
# The answers accepted per relation (index = relation index): its description, its official name, the
# description's part after the colon, and for no_relation the extra forms.
FORMS: tuple[tuple[str, ...], ...] = tuple(
    (WORDS[i], relation, WORDS[i].split(":", 1)[-1], *(_NO_RELATION_FORMS if relation == "no_relation" else ()))
    for i, relation in enumerate(RELATIONS))
ENTITY_TYPE_WORDS: dict[str, str] = {
    "PER": "인물", "ORG": "단체", "LOC": "장소", "DAT": "날짜", "POH": "기타 고유명사", "NOH": "수량",
}


def entity_line(entity: Entity) -> str:
    return f"{entity.word} ({ENTITY_TYPE_WORDS.get(entity.type, entity.type)})"


def render(record: ReRecord) -> str:
    return (f"문장: {record.sentence}\n주체: {entity_line(record.subject_entity)}\n"
            f"대상: {entity_line(record.object_entity)}")


def one_hot(index: int) -> tuple[float, ...]:
    return tuple(float(i == index) for i in range(len(RELATIONS)))


def from_choices(record: ReRecord, probs: Sequence[float]) -> RePrediction:
    """The most probable relation (ties: the earlier one), with the 30 probabilities (one per relation:
    `LabelPrompts` checks it) normalised to sum to 1 in the official relation order, for AUPRC."""
    total = math.fsum(probs)
    if not total > 0 or not math.isfinite(total):
        raise ValueError(f"the probabilities of the relations must have a positive finite sum, got {total}")
    normalised = tuple(p / total for p in probs)
    return RePrediction(record.guid, RELATIONS[argmax(normalised)], normalised)


# A generated answer names one relation: one-hot probabilities at it (see the module docstring).
PROMPTS = LabelPrompts(
    version="re-ko-2", render=render, labels=RELATIONS, words=WORDS, answers_on_lines=True,
    instruction=("문장을 읽고 주체와 대상 두 개체 사이의 관계를 고르세요. "
                 "관계는 주체에게 대상이 무엇인지를 나타냅니다 (예: 인물:출생일은 대상이 주체의 출생일이라는 뜻입니다). "
                 "문장에서 두 개체 사이에 아래의 관계가 드러나지 않으면 관계 없음으로 답하세요."),
    prediction=lambda guid, index: RePrediction(guid, RELATIONS[index], one_hot(index)), noun="relation",
    unparsed="no relation", forms=FORMS, cue_words=(*CUE_WORDS, "관계", "relation"), max_new_tokens=32,
    from_choices=from_choices, notes="AUPRC needs loglik: generated answers give one-hot probabilities",
    not_applicable={GENERATE: ("auprc",)},
)
make_prompts = PROMPTS.make
