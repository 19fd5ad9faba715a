"""The single-label task kind (`klue.tasks.labels`): a task declared from its facts gets its prediction
parser, gold prediction, metric binding and statistics; `LabelPrompts` gives the prompt functions."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest

from klue.errors import DataError, ProblemLog
from klue.metrics.classification import ACCURACY, MACRO_F1
from klue.tasks.base import Task
from klue.tasks.labels import LabelPrompts, declare_label_task
from klue.tasks.prompting import GENERATE, LOGLIK, completion_prompt

LABELS = ("cat", "dog", "fish")


@dataclass(frozen=True)
class Pet:
    guid: str
    text: str
    label: str
    labelled: bool = True


@dataclass(frozen=True)
class PetPrediction:
    guid: str
    label: str


def pets_task(refuse_index: bool = False) -> Task[Pet, PetPrediction]:
    # Any task package's task.yaml gives the facts; the code is the toy one.
    return declare_label_task("klue.tasks.nli", labels=LABELS, specs=(MACRO_F1, ACCURACY), record_type=Pet,
                              prediction_type=PetPrediction, nouns=("pet", "pets"), refuse_index=refuse_index,
                              read=lambda path, log: [])


def test_a_label_task_scores_with_its_specs_in_order() -> None:
    task = pets_task()
    golds = [Pet("a", "x", "cat"), Pet("b", "y", "dog"), Pet("c", "z", "dog")]
    preds = [PetPrediction("a", "cat"), PetPrediction("b", "cat"), PetPrediction("c", "dog")]
    report = task.evaluate(golds, preds, "official")
    assert list(report.scores) == ["macro_f1", "accuracy"] and report.task == task.name == "nli"
    assert report.scores["accuracy"] == pytest.approx(200 / 3)
    assert report.scores["macro_f1"] == pytest.approx(100 * (2 / 3 + 2 / 3) / 2)
    assert report.confusion is not None and report.confusion.labels == LABELS
    assert list(task.metric_specs) == ["macro_f1", "accuracy"] and task.labels == LABELS
    stats = task.example_statistics(golds, preds, "official")
    assert stats.n_examples == 3 and stats.totals() == pytest.approx(report.scores)


def test_a_label_task_refuses_records_without_gold() -> None:
    task = pets_task()
    unlabelled = Pet("a", "x", "", labelled=False)
    with pytest.raises(DataError, match="no gold"):
        task.gold_prediction(unlabelled)
    with pytest.raises(DataError, match="1 of the 1 gold records has no gold"):
        task.evaluate([unlabelled], [PetPrediction("a", "cat")], "official")
    with pytest.raises(DataError, match="1 of the 1 gold records has no gold"):
        task.example_statistics([unlabelled], [PetPrediction("a", "cat")], "official")


def test_a_label_task_parses_prediction_lines_by_name() -> None:
    log = ProblemLog("pred.jsonl")
    task, strict = pets_task(), pets_task(refuse_index=True)
    gold = task.gold_prediction(Pet("a", "x", "fish"))
    assert gold == PetPrediction("a", "fish")
    assert task.parse_prediction(task.prediction_to_json(gold), log, "line 1") == gold
    assert task.parse_prediction({"guid": "a", "label": "bird"}, log, "line 2") is None
    assert strict.parse_prediction({"guid": "a", "label": 1}, log, "line 3") is None
    assert [p.location for p in log.errors] == ["line 2", "line 3"]
    assert "unknown pet 'bird'; pets are cat, dog, fish" in log.errors[0].message
    assert "must be a pet name, not an index (1)" in log.errors[1].message


PETS = LabelPrompts(version="pets-1", instruction="고르세요.", render=lambda r: f"글: {r.text}", labels=LABELS,
                    words=("고양이", "개", "물고기"), prediction=lambda guid, i: PetPrediction(guid, LABELS[i]),
                    noun="pet", unparsed="no pet")


def prompts(**changes: Any) -> LabelPrompts:
    return dataclasses.replace(PETS, **changes)


def test_label_prompts_choices_gold_and_parsing() -> None:
    made = prompts().make()
    record = Pet("a", "멍멍", "dog")
    assert made.modes == (LOGLIK, GENERATE) and made.default_mode == LOGLIK
    assert made.choices(record) == ("고양이", "개", "물고기") == made.choice_strings(record)
    assert made.gold_choice(record) == 1 and made.gold_answer(record) == "개"
    assert made.max_new_tokens(record) == 16 and made.cue == "답:"
    instruction = "고르세요. 다음 중 하나로만 답하세요: 고양이, 개, 물고기."
    assert made.instruction == instruction
    assert completion_prompt(made, record, [Pet("b", "야옹", "cat")]) == (
        f"{instruction}\n\n글: 야옹\n답: 고양이\n\n글: 멍멍\n답:")
    assert prompts(answers_on_lines=True).make().instruction == "고르세요. 다음 중 하나로만 답하세요:\n- 고양이\n- 개\n- 물고기"
    # the word or the official name, after an echoed cue and around marks
    assert made.parse(record, "답: **물고기**입니다").prediction == PetPrediction("a", "fish")
    assert made.parse(record, "Cat").prediction == PetPrediction("a", "cat")
    failed = made.parse(record, "모르겠어요")
    assert not failed.ok and failed.note == "no pet in '모르겠어요'"
    assert failed.prediction == PetPrediction("a", "fish")  # the label after the gold: scored as wrong
    assert made.parse(Pet("u", "?", "", labelled=False), "").prediction == PetPrediction("u", "cat")
    with pytest.raises(DataError, match="no gold"):
        made.gold_choice(Pet("u", "?", "", labelled=False))


def test_label_prompts_from_probabilities() -> None:
    record = Pet("a", "x", "cat")
    made = prompts().make()
    assert made.from_choices(record, [0.2, 0.4, 0.4]) == PetPrediction("a", "dog")  # a tie: the earlier
    with pytest.raises(ValueError, match=r"expected 3 probabilities \(one per pet\), got 2"):
        made.from_choices(record, [0.5, 0.5])
    seen: list[list[float]] = []
    own = prompts(from_choices=lambda r, probs: seen.append(list(probs)) or PetPrediction(r.guid, "fish"))
    assert own.make().from_choices(record, [1.0, 0.0, 0.0]) == PetPrediction("a", "fish")
    assert seen == [[1.0, 0.0, 0.0]]


def test_label_prompts_forms_and_facts_are_checked() -> None:
    made = prompts(forms=(("고양이", "냥이"), ("개",), ("물고기",))).make()
    assert made.parse(Pet("a", "x", "dog"), "냥이").prediction == PetPrediction("a", "cat")
    assert not made.parse(Pet("a", "x", "dog"), "cat").ok  # given forms replace word + name
    with pytest.raises(ValueError, match="one word"):
        prompts(words=("고양이", "개"))
    with pytest.raises(ValueError, match="one word"):
        prompts(forms=(("고양이",),))
