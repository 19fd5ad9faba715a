"""Prompts that fit, shots that do not teach the answer, stops and budgets (klue.llm.fitting, klue.llm.shots),
on a fake backend whose tokens are characters and whose context is small."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.llm import fitting
from klue.llm.backends.base import (
    BackendBase,
    BackendError,
    Capabilities,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    ResultSink,
    Usage,
    hand_over,
)
from klue.llm.run import LlmSettings, run
from klue.llm.shots import BALANCED, draw_shots, shot_label_agreement
from klue.protocols import ProtocolData
from klue.scoring import RunRequest
from klue.tasks.mrc.records import MrcAnswer, MrcRecord
from klue.tasks.nli.records import LABELS as NLI_LABELS
from klue.tasks.nli.records import NliRecord
from klue.tasks.prompting import answer_stops, chat_instruction, completion_prompt, cue_sentence, cut_at_stops


class CharBackend(BackendBase):
    """One token per character; generates `answer` (or raises for a prompt containing `fail_on`)."""

    name = "chars"

    def __init__(self, answer: str = "서울", *, word: str = "함의", fail_on: str | None = None) -> None:
        self.model = "chars"
        self.fingerprint = f"chars:{answer}:{word}"
        self.capabilities = Capabilities(loglik=True)
        self.usage = Usage()
        self.answer, self.word, self.fail_on = answer, word, fail_on
        self.prompts: list[str] = []

    @property
    def token_counter(self) -> str:
        return "characters (a test)"

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(text) for text in texts]

    def loglik(self, requests: Sequence[LoglikRequest], on_result: ResultSink | None = None) -> list[LoglikResult]:
        return hand_over([LoglikResult(-1.0 if r.continuation.strip() == self.word else -5.0, 1)
                          for r in requests], on_result)

    def generate(self, requests: Sequence[GenerateRequest],
                 on_result: ResultSink | None = None) -> list[GenerateResult]:
        for request in requests:
            assert request.prompt is not None
            if self.fail_on is not None and self.fail_on in request.prompt:
                raise BackendError("generate request 1: the server answered HTTP 500")
            self.prompts.append(request.prompt)
        return hand_over([GenerateResult(self.answer, finish_reason="stop") for _ in requests], on_result)


def mrc(guid: str, context: str, question: str = "수도는?", answer: str = "서울") -> MrcRecord:
    start = context.find(answer)
    answers = (MrcAnswer(answer, start),) if start >= 0 else ()
    return MrcRecord(guid, question, answers, 1, not answers, context)


def nli(guid: str, label: str) -> NliRecord:
    return NliRecord(guid, "test", f"전제 {guid}", f"가설 {guid}", label)


def data(train: list[Any], evaluation: list[Any]) -> ProtocolData[Any]:
    return ProtocolData("local:test", False, "synthetic examples (a test)", train, evaluation, None, ())


def outputs(out: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (out / "llm_outputs.jsonl").read_text(encoding="utf-8").splitlines()]
    return {row["guid"]: row for row in rows}


def test_shots_are_dropped_then_the_passage_cut_then_the_example_counted_unfit(tmp_path: Path) -> None:
    task = registry.get("mrc")
    prompts = task.make_prompts()
    backend = CharBackend("서울")
    train = [mrc(f"train-{i}", f"한국의 수도는 서울이다. 예시 지문 {i} " * 3) for i in range(4)]
    short = mrc("short", "한국의 수도는 서울이다.")
    long = mrc("long", "한국의 수도는 서울이다. " + "관계없는 문장이 이어진다. " * 40)
    hopeless = mrc("hopeless", "서울", question="질문이 아주 깁니다 " * 60)
    budget = fitting.token_budget(prompts, train, backend)
    assert budget == 19  # "서울": 2 tokens -> ceil(1.5 x 2) + 16
    reserve = min(budget, prompts.max_new_tokens(short)) + fitting.MARGIN
    # room for the short example with no shots, not with one (a shot is longer than the slack)
    context = len(completion_prompt(prompts, short, [])) + reserve + 10
    results = run(RunRequest(task, "chars:test", data(train, [short, long, hopeless]), 1, tmp_path),
                  settings=LlmSettings(shots=1, max_context=context, progress=False), backend=backend)
    llm = results.llm
    assert results.status == "ok" and llm is not None
    assert (llm.context_length, llm.token_counter) == (context, "characters (a test)")
    assert (llm.n_shots_dropped, llm.n_truncated, llm.n_unfit) == (3, 1, 1)
    assert llm.max_new_tokens == budget and llm.budget_rule == fitting.BUDGET_RULE
    rows = outputs(tmp_path)
    assert rows["short"]["fit"] == {"n_shots_dropped": 1, "truncated": "", "unfit": False,
                                    "n_prompt_tokens": len(completion_prompt(prompts, short, []))}
    cut = rows["long"]["fit"]
    assert cut["n_shots_dropped"] == 1 and cut["truncated"].startswith("the passage, cut from its end: ")
    assert cut["n_prompt_tokens"] <= context - reserve
    assert rows["hopeless"]["fit"]["unfit"] and rows["hopeless"]["prediction"]["answer"] == ""
    assert not any("질문이 아주" in prompt for prompt in backend.prompts)  # the unfit example was never asked
    assert all(len(prompt) + reserve <= context for prompt in backend.prompts)
    # scored wrong, never dropped: 2 of 3 right (exact match)
    assert results.n_eval == 3 and results.scores["exact_match"] == pytest.approx(200 / 3)
    assert llm.parse_failure_rate == 0.0  # an unfit example is no parse failure


def test_wos_history_is_cut_from_the_oldest_utterance() -> None:
    from klue.tasks.wos.prompts import TRUNCATION
    from klue.tasks.wos.records import WosDialogue, WosTurn, WosUtterance

    utterances = tuple(WosUtterance("user" if i % 2 == 0 else "sys", f"발화 {i}", () if i % 2 == 0 else None)
                       for i in range(7))
    turn = WosTurn("d-3", "d", 3, 6, WosDialogue("d", ("관광",), utterances))
    assert TRUNCATION.size(turn) == 6
    short = TRUNCATION.keep(turn, 2)
    assert [u.text for u in short.history] == ["발화 4", "발화 5"] and short.text == "발화 6"
    assert short.guid == turn.guid


def test_an_error_names_the_example_not_the_request(tmp_path: Path) -> None:
    task = registry.get("mrc")
    evaluation = [mrc(f"q-{i}", f"지문 {i}: 한국의 수도는 서울이다.") for i in range(3)]
    with pytest.raises(BackendError, match=r"mrc example q-1: generate request 1: the server answered HTTP 500"):
        run(RunRequest(task, "chars:test", data(evaluation, evaluation), 1, tmp_path),
            settings=LlmSettings(progress=False), backend=CharBackend(fail_on="지문 1:"))


def test_balanced_shots_cover_the_labels_and_repeat_for_the_seed() -> None:
    pool = [nli(f"t-{i}", NLI_LABELS[0] if i < 90 else NLI_LABELS[1 + i % 2]) for i in range(100)]  # 90% one label

    def label_of(record: NliRecord) -> str:
        return record.label

    three = draw_shots(pool, 3, 7, "e-1", lambda r: r.guid, label_of)
    assert sorted(r.label for r in three) == sorted(NLI_LABELS)
    assert draw_shots(pool, 3, 7, "e-1", lambda r: r.guid, label_of) == three
    assert draw_shots(pool, 3, 8, "e-1", lambda r: r.guid, label_of) != three
    last = Counter(draw_shots(pool, 1, 7, f"e-{i}", lambda r: r.guid, label_of)[0].label for i in range(300))
    assert min(last.values()) >= 70, last  # about 100 each, though the pool is 90% one label


def test_shot_label_agreement_and_its_chance_level(tmp_path: Path) -> None:
    assert shot_label_agreement(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx((2 / 3, 4 / 9))
    task = registry.get("nli")
    train = [nli(f"t-{i}", NLI_LABELS[i % 3]) for i in range(30)]
    evaluation = [nli(f"e-{i}", NLI_LABELS[i % 3]) for i in range(30)]
    results = run(RunRequest(task, "chars:test", data(train, evaluation), 1, tmp_path),
                  settings=LlmSettings(shots=1, progress=False), backend=CharBackend(word="함의"))
    llm = results.llm
    assert llm is not None and llm.shot_policy == BALANCED
    rows = outputs(tmp_path)
    last_labels = [next(r.label for r in train if r.guid == row["shots"][-1]) for row in rows.values()]
    share = sum(label == "entailment" for label in last_labels) / len(last_labels)  # every answer is 함의
    assert llm.shot_label_agreement == pytest.approx(share)
    assert llm.shot_label_agreement_chance == pytest.approx(share)  # one label predicted: chance equals it


def test_answers_end_at_the_next_example_marker(tmp_path: Path) -> None:
    task = registry.get("nli")
    prompts = task.make_prompts()
    record = nli("e-0", "neutral")
    stops = answer_stops(prompts, record)
    assert {"\n\n", "\n답:", "\n- 답:", "\n사람:", "\n전제:"} <= set(stops)
    assert cut_at_stops("중립\n- 답: 함의", stops) == "중립"
    evaluation = [nli(f"e-{i}", "neutral") for i in range(3)]
    results = run(RunRequest(task, "chars:test", data(evaluation, evaluation), 1, tmp_path),
                  settings=LlmSettings(method="generate", progress=False),
                  backend=CharBackend("중립\n사람: 전제는 함의"))
    assert results.scores["accuracy"] == pytest.approx(100.0)
    assert results.llm is not None and results.llm.n_parse_failures == 0


def test_chat_instructions_name_no_cue(klue_data_dir: Path, shared_data_dir: Path) -> None:
    from klue.io.locate import roots_from

    roots = roots_from(str(klue_data_dir), str(shared_data_dir))
    for task in registry.all_tasks():
        prompts = task.make_prompts(roots)
        assert prompts.cue not in chat_instruction(prompts), task.name
        assert cue_sentence(prompts.cue) in prompts.instruction or prompts.cue not in prompts.instruction, task.name


def test_an_answer_cut_short_gives_a_floor_of_the_context() -> None:
    # llama-cpp-python 0.3.36, n_ctx 4,096, a Korean answer cut inside a UTF-8 character: 3,464 + 633 tokens
    assert fitting.learned_from_answer(3464, 633, 640, "length") == 4096
    assert fitting.learned_from_answer(3464, 632, 640, "length") == 4095  # a floor: one token too few is safe
    assert fitting.learned_from_answer(2945, 161, 160, "length") is None  # the budget was used: nothing learned
    assert fitting.learned_from_answer(3464, 20, 640, "stop") is None
    assert fitting.learned_from_answer(None, 20, 640, "length") is None
