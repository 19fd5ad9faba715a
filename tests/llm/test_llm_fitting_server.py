"""Prompts fitted over HTTP: a server that refuses a too-long prompt (HTTP 400, llama-cpp-python's words)
teaches klue its context, and the task runs to the end with what was cut recorded."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="the HTTP backend needs httpx: pip install 'klue[llm]'")

from fake_openai import FakeOpenAI
from klue import registry
from klue.llm.backends.openai import OpenAIBackend
from klue.llm.run import LlmSettings, run
from klue.protocols import ProtocolData
from klue.scoring import RunRequest
from klue.tasks.mrc.records import MrcAnswer, MrcRecord

N_CTX = 130  # the short question fits without its shot (65 toy tokens + the answer's budget), not with it


def mrc(guid: str, context: str) -> MrcRecord:
    return MrcRecord(guid, "수도는 어디인가?", (MrcAnswer("서울", context.find("서울")),), 1, False, context)


def test_a_refused_long_prompt_teaches_the_context_and_the_task_runs(fake_server: Callable[..., FakeOpenAI],
                                                                     tmp_path: Path) -> None:
    server = fake_server(dialect=None, n_ctx=N_CTX, tokenize=True)
    backend = OpenAIBackend("fake", server.url, api_key_env=None, max_attempts=1)
    assert backend.context_length is None  # this server, like llama-cpp-python, states none
    train = [mrc(f"t-{i}", f"한국의 수도는 서울 이다 {i} " + "긴 예시 문장 " * 20) for i in range(3)]
    evaluation = [mrc("short", "한국의 수도는 서울 이다"), mrc("long", "한국의 수도는 서울 이다 " + "다른 말 " * 80)]
    data = ProtocolData("local:test", False, "synthetic questions (a test)", train, evaluation, None, ())
    results = run(RunRequest(registry.get("mrc"), f"openai:fake@{server.url}", data, 1, tmp_path),
                  settings=LlmSettings(shots=1, progress=False), backend=backend)
    llm = results.llm
    assert results.status == "ok" and results.n_eval == 2 and llm is not None
    assert llm.context_length == N_CTX and any("learned from the server's refusal" in n for n in llm.notes)
    assert llm.token_counter == "the server's /extras/tokenize (llama-cpp-python)"
    assert llm.n_shots_dropped == 2 and llm.n_unfit == 0
    rows = {row["guid"]: row for row in map(json.loads, (tmp_path / "llm_outputs.jsonl").read_text(
        encoding="utf-8").splitlines())}
    assert rows["long"]["fit"]["truncated"].startswith("the passage, cut from its end")
    asked = [server.tokens(s.body["prompt"]) for s in server.posts("/completions") if "지문:" in s.body.get("prompt", "")]
    refused, answered = [t for t in asked if len(t) >= N_CTX], [t for t in asked if len(t) < N_CTX]
    assert refused and len(answered) == 2  # the refused prompt(s), then both examples fitted


def test_a_server_without_a_tokenize_endpoint_is_counted_by_the_stated_estimate(
        fake_server: Callable[..., FakeOpenAI]) -> None:
    server = fake_server(dialect=None)
    backend = OpenAIBackend("fake", server.url, api_key_env=None, max_attempts=1)
    assert backend.token_counter.startswith("estimate: UTF-8 bytes + 8")
    assert backend.count_tokens(["서울", "ab"]) == [6 + 8, 2 + 8]
