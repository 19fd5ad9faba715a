"""The LLM prompts of the four classification-like tasks (YNAT, NLI, STS, RE; `klue.tasks.prompting`).

Guards that would have caught the defects of earlier Korean harnesses (docs/llm.md): choice index = label
index and label words unique, written out per task so that a swapped word fails; the input block never
depends on the gold; on real records a perfect answer, parsed back, scores the maximum on every metric
through `Task.evaluate` and through a written prediction file scored as `klue score` scores it; a
(near) one-hot at the gold choice does too; text that names no label is counted as a failure and scored
as wrong, never dropped.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.errors import DataError
from klue.io.locate import DataRoots
from klue.predictions import write_predictions
from klue.scoring import score_files
from klue.tasks import prompting
from klue.tasks.base import Task
from klue.tasks.prompting import (
    CHAT,
    COMPLETION,
    GENERATE,
    LOGLIK,
    Parsed,
    TaskPrompts,
    chat_messages,
    completion_prompt,
)
from klue.tasks.re import prompts as re_prompts
from klue.tasks.reading import read
from klue.tasks.sts import prompts as sts_prompts

NAMES = ("ynat", "nli", "sts", "re")
LABEL_TASKS = ("ynat", "nli", "re")

# The label words written out, official name -> word, so that a swapped or shifted mapping fails here.
EXPECTED_WORDS: dict[str, dict[str, str]] = {
    "ynat": {"정치": "정치", "경제": "경제", "사회": "사회", "생활문화": "생활문화", "세계": "세계",
             "IT과학": "IT과학", "스포츠": "스포츠"},
    "nli": {"entailment": "함의", "contradiction": "모순", "neutral": "중립"},
    "re": {
        "no_relation": "관계 없음", "org:dissolved": "단체:해산일", "org:founded": "단체:설립일",
        "org:place_of_headquarters": "단체:본부 소재지", "org:alternate_names": "단체:다른 이름",
        "org:member_of": "단체:소속 단체", "org:members": "단체:구성원",
        "org:political/religious_affiliation": "단체:정치·종교 성향", "org:product": "단체:제품",
        "org:founded_by": "단체:설립자", "org:top_members/employees": "단체:대표·임원",
        "org:number_of_employees/members": "단체:구성원 수", "per:date_of_birth": "인물:출생일",
        "per:date_of_death": "인물:사망일", "per:place_of_birth": "인물:출생지", "per:place_of_death": "인물:사망지",
        "per:place_of_residence": "인물:거주지", "per:origin": "인물:출신지", "per:employee_of": "인물:소속 기관",
        "per:schools_attended": "인물:출신 학교", "per:alternate_names": "인물:별명", "per:parents": "인물:부모",
        "per:children": "인물:자녀", "per:siblings": "인물:형제자매", "per:spouse": "인물:배우자",
        "per:other_family": "인물:기타 가족", "per:colleagues": "인물:동료", "per:product": "인물:작품",
        "per:religion": "인물:종교", "per:title": "인물:직업·직위",
    },
}

# Real records of each task: (task, root, path, reader). NLI and STS: the official dev files; YNAT: the
# official 10-example dev sample and the re-split titles; RE: the 10% train sample (all 30 relations).
REAL_FILES: tuple[tuple[str, str, str, str | None], ...] = (
    ("ynat", "extra", "klue-partial/ynat-v1.1/ynat-v1_dev_sample_10.json", None),
    ("ynat", "extra", "klue-derived/ynat-resplit/ynat-resplit_test.json", "ynat-resplit"),
    ("nli", "klue", "klue-nli-v1.1/klue-nli-v1.1_dev.json", None),
    ("sts", "klue", "klue-sts-v1.1/klue-sts-v1.1_dev.json", None),
    ("re", "extra", "klue-derived/re-train-sample/klue-re-v1.1_train.sample3247.json", None),
)
GARBAGE: dict[str, tuple[str, ...]] = {
    "label": ("", "  \n\n ", "모르겠습니다", "???", "답:", "**", "이 문장은 판단하기 어렵습니다."),
    "sts": ("", "  \n\n ", "모르겠습니다", "???", "답:", "매우 비슷함", "점수를 매길 수 없습니다."),
}
# Per metric, how far below 100 a perfect STS answer written with one decimal may score: rounding the
# annotators' mean (4.857 -> 4.9) moves Pearson r a little; the binary F1 must stay exact.
ONE_DECIMAL_SLACK = {"pearsonr": 0.05}


@dataclasses.dataclass(frozen=True)
class Real:
    task: Task[Any, Any]
    prompts: TaskPrompts
    records: list[Any]
    path: Path
    reader: str | None


def prompts_of(name: str) -> TaskPrompts:
    return registry.get(name).make_prompts(None)


@pytest.fixture(scope="module", params=REAL_FILES, ids=lambda case: f"{case[0]}:{Path(case[2]).name}")
def real(request: pytest.FixtureRequest, klue_data_dir: Path, shared_data_dir: Path) -> Real:
    name, root, relative, reader = request.param
    path = DataRoots(klue_data_dir, shared_data_dir).of(root) / relative  # type: ignore[operator]
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    task = registry.get(name)
    records = read(task, path, reader, purpose="score").records
    return Real(task, task.make_prompts(None), records, path, reader)


def with_gold(name: str, record: Any, value: Any) -> Any:
    """`record` with its gold replaced (a label name, or an STS score)."""
    if name == "sts":
        return dataclasses.replace(record, label=value, real_label=value, binary_label=int(value >= 3.0))
    field = "gold_label" if name == "nli" else "label"
    return dataclasses.replace(record, **{field: value})


def other_golds(name: str, record: Any) -> list[Any]:
    if name == "sts":
        return [s for s in (0.0, 1.3, 2.5, 3.0, 4.2, 5.0) if s != record.real_label]
    task = registry.get(name)
    return [label for label in task.labels if label != record.label]


def assert_maximum(task: Task[Any, Any], scores: dict[str, float], slack: dict[str, float] | None = None) -> None:
    """Every metric of the report at 100 (within `slack` points where given)."""
    assert set(task.metrics) <= set(scores), scores
    for metric, value in scores.items():
        allowed = (slack or {}).get(metric, 1e-9)
        assert 100.0 - allowed <= value <= 100.0 + 1e-9, (task.name, metric, value)


def scored_as_file(real: Real, predictions: Sequence[Any], tmp_path: Path) -> dict[str, float]:
    """The scores of `predictions` written to a prediction file and scored by `klue score`'s path."""
    path = tmp_path / f"{real.task.name}-predictions.jsonl"
    write_predictions(path, real.task, real.records, predictions, "prompts test")
    result = score_files(real.task, real.path, path, gold_format=real.reader)
    assert result.report.n_examples == len(real.records)
    return dict(result.report.scores)


# ------------------------------------------------------------------------------ declaration and words


@pytest.mark.parametrize("name", NAMES)
def test_prompts_are_declared_in_korean_with_a_version(name: str) -> None:
    prompts = prompts_of(name)
    module = importlib.import_module(f"klue.tasks.{name}.prompts")
    assert isinstance(prompts, TaskPrompts) and module.make_prompts().version == prompts.version
    assert prompts.version == f"{name}-ko-2" and prompts.cue == "답:"
    assert prompts.modes == (LOGLIK, GENERATE) and prompts.default_mode == LOGLIK
    assert prompts.supports(LOGLIK) and prompts.supports(GENERATE)
    assert any("\uac00" <= ch <= "\ud7a3" for ch in prompts.instruction)  # Hangul
    assert prompts.json_schema is None


@pytest.mark.parametrize("name", LABEL_TASKS)
def test_choice_index_is_the_label_index_and_words_are_unique(name: str) -> None:
    task, prompts = registry.get(name), prompts_of(name)
    expected = EXPECTED_WORDS[name]
    assert tuple(expected) == task.labels  # the table above is in the official order
    for gold_index, label in enumerate(task.labels):
        record = with_gold(name, synthetic(name), label)
        words = tuple(prompts.choices(record))
        assert words == tuple(expected[x] for x in task.labels)
        assert len(set(words)) == len(words) and prompts.choice_strings(record) == words
        assert prompts.gold_choice(record) == gold_index and prompts.gold_answer(record) == expected[label]
        # Each word, and each official name, parses back to its own label; a one-hot picks it.
        for index, (word, official) in enumerate(zip(words, task.labels, strict=True)):
            for text in (word, official):
                parsed = prompts.parse(record, text)
                assert parsed.ok and parsed.prediction.label == official, (text, parsed)
            one_hot = [float(i == index) for i in range(len(words))]
            assert prompts.from_choices(record, one_hot).label == official


def test_the_instructions_list_every_allowed_answer() -> None:
    for name in LABEL_TASKS:
        prompts = prompts_of(name)
        assert all(word in prompts.instruction for word in EXPECTED_WORDS[name].values()), name
    assert all(word in prompts_of("nli").instruction for word in ("함의", "모순", "중립"))
    assert "0" in prompts_of("sts").instruction and "5" in prompts_of("sts").instruction


def test_re_descriptions_and_their_parts_after_the_colon_are_distinct() -> None:
    words = list(re_prompts.WORDS)
    tails = [w.split(":", 1)[-1] for w in words]
    assert len(set(words)) == 30 == len(set(tails))
    assert re_prompts.DESCRIPTION["per:alternate_names"] != re_prompts.DESCRIPTION["org:alternate_names"]
    # The type written before the colon is the subject's type of the official name.
    for relation, word in re_prompts.DESCRIPTION.items():
        prefix = relation.split(":", 1)[0]
        assert word.startswith({"per": "인물:", "org": "단체:"}.get(prefix, "관계 없음")), relation
    # No answer form of one relation is the form of another, after the parser's normalisation.
    keys = [(i, prompting._ANSWER_NOISE.sub("", form).casefold()) for i, forms in enumerate(re_prompts.FORMS)
            for form in forms]
    owners: dict[str, set[int]] = {}
    for index, key in keys:
        owners.setdefault(key, set()).add(index)
    assert all(len(indices) == 1 for indices in owners.values())


# ------------------------------------------------------------------------------------ tolerant parsing


@pytest.mark.parametrize(("name", "text", "label"), [
    ("nli", "  함의  ", "entailment"), ("nli", "함의.", "entailment"), ("nli", "**모순**", "contradiction"),
    ("nli", "'중립'", "neutral"), ("nli", "답: 함의", "entailment"), ("nli", "정답 : 모순", "contradiction"),
    ("nli", "함의입니다.", "entailment"), ("nli", "Entailment", "entailment"), ("nli", "entail", "entailment"),
    ("nli", "\n중립\n\n전제: 다음 문장", "neutral"), ("nli", "NEUTRAL.", "neutral"), ("nli", "모", "contradiction"),
    ("ynat", "IT/과학", "IT과학"), ("ynat", "it 과학", "IT과학"), ("ynat", "IT", "IT과학"),
    ("ynat", "스포츠 기사입니다", "스포츠"), ("ynat", "생활", "생활문화"), ("ynat", "「세계」", "세계"),
    ("re", "per:title", "per:title"), ("re", "인물: 직업/직위", "per:title"), ("re", "직업·직위", "per:title"),
    ("re", "관계 없음", "no_relation"), ("re", "없음", "no_relation"), ("re", "no_relation", "no_relation"),
    ("re", "- 단체:구성원 수", "org:number_of_employees/members"), ("re", "단체:구성원", "org:members"),
    ("re", "구성원입니다", "org:members"), ("re", "인물:별명", "per:alternate_names"),
    ("re", "다른 이름", "org:alternate_names"), ("re", "답: 인물:출생일입니다", "per:date_of_birth"),
    ("re", "ORG:TOP_MEMBERS/EMPLOYEES", "org:top_members/employees"),
])
def test_generated_labels_parse_tolerantly(name: str, text: str, label: str) -> None:
    prompts = prompts_of(name)
    record = synthetic(name)
    parsed = prompts.parse(record, text)
    assert parsed.ok and parsed.prediction.label == label, parsed
    assert parsed.prediction.guid == record.guid


@pytest.mark.parametrize(("name", "text", "ok"), [
    ("nli", "함", True), ("ynat", "정", True), ("ynat", "사", True), ("re", "인물:", False), ("re", "출신", False),
    ("re", "단체:구성", False), ("nli", "e", True), ("ynat", "생", True), ("re", "인물:출생", False),
])
def test_a_prefix_parses_only_when_one_label_has_it(name: str, text: str, ok: bool) -> None:
    assert prompts_of(name).parse(synthetic(name), text).ok == ok


@pytest.mark.parametrize(("text", "score", "clipped"), [
    ("3.4", 3.4, False), ("3.4점", 3.4, False), ("점수: 4", 4.0, False), ("답: 2.5\n설명: 비슷하다", 2.5, False),
    ("  5  ", 5.0, False), ("0", 0.0, False), ("7", 5.0, True), ("-1", 0.0, True), ("4.5/5", 4.5, False),
])
def test_sts_numbers_parse_and_out_of_range_is_clipped(text: str, score: float, clipped: bool) -> None:
    parsed = prompts_of("sts").parse(synthetic("sts"), text)
    assert parsed.ok and parsed.prediction.score == pytest.approx(score)
    assert ("clipped" in parsed.note) == clipped


def test_sts_expected_value_and_gold_formats() -> None:
    prompts, record = prompts_of("sts"), synthetic("sts")
    assert list(prompts.choices(record)) == ["0", "1", "2", "3", "4", "5"]
    assert prompts.choice_strings is None  # a closed set of integers would forbid the decimals asked for
    for k in range(6):
        assert prompts.from_choices(record, [float(i == k) for i in range(6)]).score == pytest.approx(k)
    assert prompts.from_choices(record, [1 / 6] * 6).score == pytest.approx(2.5)
    assert prompts.from_choices(record, [2.0, 2.0, 0, 0, 0, 0]).score == pytest.approx(0.5)  # renormalised
    assert [sts_prompts.one_decimal(x) for x in (4.857142857142857, 2.96, 2.949, 3.04, 0.0, 5.0)] == \
        ["4.9", "2.9", "2.9", "3.0", "0.0", "5.0"]
    assert [prompts.gold_choice(with_gold("sts", record, x)) for x in (0.2, 2.5, 2.49, 4.857, 5.0)] == [0, 3, 2, 5, 5]


def test_re_probabilities_are_in_the_official_order_and_normalised() -> None:
    prompts, record, task = prompts_of("re"), synthetic("re"), registry.get("re")
    weights = [float(i + 1) for i in range(30)]
    prediction = prompts.from_choices(record, weights)
    assert prediction.label == task.labels[29] and math.fsum(prediction.probs) == pytest.approx(1.0)
    assert prediction.probs == pytest.approx([w / sum(weights) for w in weights])
    generated = prompts.parse(record, "인물:종교").prediction
    assert generated.label == "per:religion" and generated.probs[task.labels.index("per:religion")] == 1.0
    assert math.fsum(generated.probs) == 1.0 and len(generated.probs) == 30


@pytest.mark.parametrize("name", NAMES)
def test_wrong_lengths_of_probabilities_are_refused(name: str) -> None:
    prompts = prompts_of(name)
    with pytest.raises(ValueError, match="probabilities"):
        prompts.from_choices(synthetic(name), [1.0, 0.0])


@pytest.mark.parametrize("name", NAMES)
def test_a_record_without_gold_has_no_gold_answer_but_parses(name: str) -> None:
    blank = dataclasses.replace(synthetic(name), labelled=False)
    prompts = prompts_of(name)
    with pytest.raises(DataError, match="no gold"):
        prompts.gold_answer(blank)
    assert isinstance(prompts.parse(blank, "???"), Parsed)  # a failed parse still gives a prediction


# ------------------------------------------------------------------------------------- on real records


def test_the_input_block_never_depends_on_the_gold(real: Real) -> None:
    name, prompts = real.task.name, real.prompts
    for record in real.records[:1000]:
        shown = prompts.render(record)
        assert prompts.cue not in shown and f"{prompts.cue} {prompts.gold_answer(record)}" not in shown
        assert all(prompts.render(with_gold(name, record, other)) == shown for other in other_golds(name, record))


def test_gold_answers_parse_back_to_the_maximum(real: Real, tmp_path: Path) -> None:
    task, prompts = real.task, real.prompts
    parsed = [prompts.parse(r, prompts.gold_answer(r)) for r in real.records]
    assert all(p.ok and type(p.prediction) is task.prediction_type for p in parsed)
    predictions = [p.prediction for p in parsed]
    slack = ONE_DECIMAL_SLACK if task.name == "sts" else None
    for mode in ("official", "corrected"):
        assert_maximum(task, dict(task.evaluate(real.records, predictions, mode).scores), slack)
    assert_maximum(task, scored_as_file(real, predictions, tmp_path), slack)
    # The same answer as a chat model writes it, or followed by the next example of the pattern.
    noisy = [prompts.parse(r, f" **{prompts.gold_answer(r)}**\n\n{prompts.render(r)}").prediction
             for r in real.records[:200]]
    assert noisy == predictions[:200]


def perfect_distribution(name: str, prompts: TaskPrompts, record: Any) -> list[float]:
    """Near one-hot at the gold choice; for STS the split between the two integers around the gold whose
    expectation is the gold (a one-hot at the nearest integer predicts that integer, not the gold)."""
    if name == "sts":
        low = min(math.floor(record.real_label), 4)
        high_weight = record.real_label - low
        return [1.0 - high_weight if i == low else high_weight if i == low + 1 else 0.0 for i in range(6)]
    n, gold = len(prompts.choices(record)), prompts.gold_choice(record)
    return [0.9 if i == gold else 0.1 / (n - 1) for i in range(n)]


def test_the_gold_choice_scores_the_maximum(real: Real, tmp_path: Path) -> None:
    task, prompts, name = real.task, real.prompts, real.task.name
    predictions = [prompts.from_choices(r, perfect_distribution(name, prompts, r)) for r in real.records]
    assert all(type(p) is task.prediction_type for p in predictions)
    assert_maximum(task, dict(task.evaluate(real.records, predictions, "official").scores))
    assert_maximum(task, scored_as_file(real, predictions, tmp_path))
    if name == "sts":
        nearest = [prompts.from_choices(r, [float(i == prompts.gold_choice(r)) for i in range(6)])
                   for r in real.records]
        assert all(p.score == prompts.gold_choice(r) for p, r in zip(nearest, real.records, strict=True))


def test_garbage_is_a_counted_failure_scored_as_wrong(real: Real) -> None:
    task, prompts, name = real.task, real.prompts, real.task.name
    garbage = GARBAGE["sts" if name == "sts" else "label"]
    records = real.records[:500]
    for text in garbage:
        parsed = [prompts.parse(r, text) for r in records]
        assert all(not p.ok and p.note for p in parsed), text
        predictions = [p.prediction for p in parsed]
        assert all(type(p) is task.prediction_type for p in predictions)
        scores = task.evaluate(records, predictions, "official").scores
        if name == "sts":
            assert all(abs(p.score - r.real_label) >= 2.0 for p, r in zip(predictions, records, strict=True))
            assert scores["f1"] == 0.0
        else:
            assert all(p.label != r.label for p, r in zip(predictions, records, strict=True))
            assert scores["micro_f1" if name == "re" else "accuracy"] == 0.0
        if name == "re":
            assert all(p.probs[task.labels.index(r.label)] == 0.0 for p, r in zip(predictions, records, strict=True))


@pytest.mark.parametrize("form", [COMPLETION, CHAT])
def test_prompt_forms_build_with_two_shots(real: Real, form: str) -> None:
    prompts = real.prompts
    shots, record = real.records[:2], real.records[2]
    if form == COMPLETION:
        text = completion_prompt(prompts, record, shots)
        assert text.startswith(prompts.instruction) and text.endswith(f"{prompts.render(record)}\n{prompts.cue}")
        assert all(f"{prompts.render(s)}\n{prompts.cue} {prompts.gold_answer(s)}" in text for s in shots)
        assert text.count(prompts.cue) == 3
    else:
        messages = chat_messages(prompts, record, shots)
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
        assert messages[2]["content"] == prompts.gold_answer(shots[0])
        assert messages[-1]["content"] == prompts.render(record)
        assert all(isinstance(m["content"], str) and m["content"] for m in messages)


# ------------------------------------------------------------------------------------ synthetic records


def synthetic(name: str) -> Any:
    """One record of the task, built in code (the parsing tests need no data on disk)."""
    return SYNTHETIC[name]()


def _ynat() -> Any:
    from klue.tasks.ynat.records import YnatRecord

    return YnatRecord("ynat-test_0", "국회, 내년 예산안 처리 합의", "정치")


def _nli() -> Any:
    from klue.tasks.nli.records import NliRecord

    return NliRecord("nli-test_0", "test", "비가 와서 경기가 취소되었다.", "경기는 열리지 않았다.", "entailment")


def _sts() -> Any:
    from klue.tasks.sts.records import StsRecord

    return StsRecord("sts-test_0", "test", "숙소가 깨끗했어요.", "방이 청결했습니다.", 4.1, 4.142857142857143, 1)


def _re() -> Any:
    from klue.tasks.re.records import Entity, ReRecord

    sentence = "이순신은 1545년 한성에서 태어났다."
    return ReRecord("re-test_0", sentence, Entity("이순신", 0, 2, "PER"), Entity("1545년", 5, 9, "DAT"),
                    "per:date_of_birth", "test")


SYNTHETIC: dict[str, Callable[[], Any]] = {"ynat": _ynat, "nli": _nli, "sts": _sts, "re": _re}
