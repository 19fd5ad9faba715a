"""The HTTP backend against a fake OpenAI-compatible server (tests/fake_openai.py): the continuation
boundary (offset shifts, a straddling token), retries, the concurrency bound, the API key, ordering,
constraints and the capability probe; and the boundary functions on answers shaped like llama-cpp-python's."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("httpx", reason="the HTTP backend needs httpx: pip install 'klue[llm]'")

from fake_openai import FakeOpenAI, toy_logprob
from klue.errors import DataError
from klue.io.endpoints import api_root
from klue.llm.backends.base import BackendError, GenerateRequest, GenerateResult, LoglikRequest
from klue.llm.backends.echo import Echo, continuation_span, loglik_from_answer, measure_shift
from klue.llm.backends.openai import OpenAIBackend
from klue.llm.backends.probe import gbnf_choices
from klue.scoring import RunRequest

Start = Callable[..., FakeOpenAI]


def backend(server: FakeOpenAI, **options: Any) -> OpenAIBackend:
    options.setdefault("api_key_env", None)
    options.setdefault("backoff_s", 0.01)
    return OpenAIBackend("fake", server.url, **options)


def expected(server: FakeOpenAI, context: str, continuation: str) -> float:
    """The toy log-likelihood: the prompt's tokens minus the context's (no token spans the boundary)."""
    whole, head = server.tokens(context + continuation), server.tokens(context)
    return sum(toy_logprob(t) for t in whole[len(head):])


# -- the probe ----------------------------------------------------------------------------------------------


def test_the_probe_fills_capabilities_and_the_fingerprint(fake_server: Start) -> None:
    server = fake_server(model_id="org/model-7b")
    b = backend(server)
    caps = b.capabilities
    assert (caps.loglik, caps.completion, caps.chat, caps.choices, caps.json_schema) == (True, True, True, True, True)
    assert b.fingerprint == "org/model-7b"  # a one-model server's id, whatever name was asked for
    assert b.usage.requests == 0 and b.usage.extra["probe_requests"] >= 3


def test_a_server_without_prompt_logprobs_has_no_loglik(fake_server: Start) -> None:
    b = backend(fake_server(echo=False, dialect=None))
    assert not b.capabilities.loglik and b.capabilities.completion
    assert not b.capabilities.choices and not b.capabilities.json_schema
    assert any("no prompt log-probs" in note for note in b.capabilities.notes)


@pytest.mark.parametrize("prefix", ["", "dummy", "bos"])
def test_echoed_log_probs_that_match_the_generated_ones_keep_log_likelihood(fake_server: Start, prefix: str) -> None:
    b = backend(fake_server(prefix=prefix))
    assert b.capabilities.loglik and not b.capabilities.loglik_why_not
    assert not any("cross-checked" in note for note in b.capabilities.notes)  # the check was made, and passed


def test_an_echo_shifted_by_one_token_is_refused_and_the_cause_named(fake_server: Start) -> None:
    from klue import registry
    from klue.llm.run import choose_method

    nli = registry.get("nli").make_prompts(None)
    b = backend(fake_server(shifted=True))  # llama-cpp-python 0.3.36 serving a model without a BOS token
    caps = b.capabilities
    assert not caps.loglik and caps.completion
    assert "shifted by one token" in caps.loglik_why_not and "without a BOS token" in caps.loglik_why_not
    assert "truncated" not in caps.loglik_why_not and caps.to_json()["loglik_why_not"] == caps.loglik_why_not
    mode, notes = choose_method(nli, "auto", caps.loglik, "nli", caps.loglik_why_not)
    assert mode == "generate" and notes == [f"{caps.loglik_why_not}: generate-and-parse instead of log-likelihood"]
    with pytest.raises(DataError, match="shifted by one token"):
        choose_method(nli, "loglik", caps.loglik, "nli", caps.loglik_why_not)


def test_the_echo_check_reads_values_by_offset() -> None:
    from klue.llm.backends.echo import ALIGNED, MISMATCH, SHIFTED, UNKNOWN, check_echo

    def generation(text: str, value: float) -> dict[str, Any]:
        return {"choices": [{"text": text, "logprobs": {"tokens": [text], "token_logprobs": [value],
                                                        "top_logprobs": [{text: value}]}}]}

    def echo(values: list[float | None], tops: list[Any]) -> dict[str, Any]:
        return {"choices": [{"logprobs": {"tokens": ["a", " b", " c"], "text_offset": [0, 1, 3],
                                          "token_logprobs": values, "top_logprobs": tops}}]}

    assert check_echo(generation(" c", -0.5), echo([None, -2.0, -0.52], [None, {}, {}]), "a b").verdict == ALIGNED
    shifted = check_echo(generation(" c", -0.5), echo([None, -9.0, -12.0], [None, {" c": -0.5}, {}]), "a b")
    assert (shifted.verdict, shifted.generated, shifted.echoed) == (SHIFTED, -0.5, -12.0)
    assert "-12.000 echoed vs -0.500 generated for ' c'" in shifted.reason()
    assert check_echo(generation(" c", -0.5), echo([None, -9.0, -12.0], [None, {" x": -0.1}, {}]),
                      "a b").verdict == MISMATCH
    assert check_echo({"choices": [{"text": " c"}]}, None, "a b").verdict == UNKNOWN  # no generated log-probs


def test_vllm_structured_outputs_are_found_by_the_probe(fake_server: Start) -> None:
    server = fake_server(dialect="structured_outputs", chat=False)
    b = backend(server)
    assert b.capabilities.choices and b.capabilities.json_schema and not b.capabilities.chat
    [result] = b.generate([GenerateRequest(prompt="답:", choices=("긍정", "부정"))])
    assert result.constrained and result.text == "긍정"
    assert server.posts("/completions")[-1].body["structured_outputs"] == {"choice": ["긍정", "부정"]}


def test_an_unreachable_server_is_one_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(BackendError, match=rf"cannot reach http://127\.0\.0\.1:{port}/v1: ") as caught:
        OpenAIBackend("m", f"http://127.0.0.1:{port}/v1", api_key_env=None, max_attempts=2, backoff_s=0.01)
    assert isinstance(caught.value, DataError)  # the CLI prints it as one line, exit 2
    assert "\n" not in str(caught.value)


def test_base_urls() -> None:
    assert api_root("http://h:8000") == "http://h:8000/v1"
    assert api_root("http://h:8000/v1/") == "http://h:8000/v1"
    assert api_root("https://proxy/openai/v1") == "https://proxy/openai/v1"
    with pytest.raises(DataError, match="use http://HOST:PORT/v1"):
        api_root("localhost:8000")


# -- the continuation boundary ------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "dummy", "bos"])
def test_loglik_sums_the_continuation_whatever_the_offset_shift(fake_server: Start, prefix: str) -> None:
    server = fake_server(prefix=prefix)
    requests = [LoglikRequest("문장: 좋은 영화 답:", " 긍정"), LoglikRequest("문장: 좋은 영화 답:", " 아주 긍정"),
                LoglikRequest("질문", "?")]
    results = backend(server).loglik(requests)
    for request, result in zip(requests, results):
        assert result.logprob == pytest.approx(expected(server, request.context, request.continuation))
        assert result.n_tokens == len(server.tokens(request.context + request.continuation)) - len(
            server.tokens(request.context))
        assert result.is_greedy is True  # the fake's top token is always the one given
    body = server.posts("/completions")[-1].body
    assert body["echo"] is True and body["max_tokens"] == 1 and body["temperature"] == 0 and body["logprobs"] == 1


@pytest.mark.parametrize("usage", [True, False])
@pytest.mark.parametrize("generated", [0, 1, 3])
def test_the_generated_tokens_are_told_apart_from_the_prompt(fake_server: Start, usage: bool, generated: int) -> None:
    # llama-cpp-python generates past max_tokens 1 until its bytes make a whole character (6 tokens seen),
    # or nothing at all when the first token ends the sequence; usage says how many, else the offsets do.
    server = fake_server(prefix="dummy", usage=usage, echo_generated=generated)
    [result] = backend(server).loglik([LoglikRequest("문장 답:", " 부정")])
    assert result.logprob == pytest.approx(toy_logprob(" 부정")) and result.n_tokens == 1


def test_a_token_straddling_the_boundary_is_an_error_naming_the_request(fake_server: Start) -> None:
    server = fake_server(prefix="dummy")
    requests = [LoglikRequest("답:", " 긍정"), LoglikRequest("답: 긍", "정")]  # " 긍정" is one token
    with pytest.raises(BackendError, match=r"loglik request 1 .*the token ' 긍정' spans the end of the context"):
        backend(server).loglik(requests)


def test_an_empty_continuation_or_context_is_refused_before_asking(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    before = len(server.posts())
    with pytest.raises(BackendError, match="loglik request 1: the continuation is empty"):
        b.loglik([LoglikRequest("답:", " 긍정"), LoglikRequest("답:", "")])
    with pytest.raises(BackendError, match="loglik request 0: the context is empty"):
        b.loglik([LoglikRequest("", "답")])
    assert len(server.posts()) == before


def llama_cpp_answer(tokens: list[tuple[str, int, float | None]], generated: int = 1) -> dict[str, Any]:
    """An echo answer as llama-cpp-python shapes it: byte tokens as '' sharing their character's offset."""
    return {"model": "m", "usage": {"prompt_tokens": len(tokens) + 1 - generated, "completion_tokens": generated},
            "choices": [{"text": "", "logprobs": {
                "tokens": [t for t, _, _ in tokens], "text_offset": [o for _, o, _ in tokens],
                "token_logprobs": [v for _, _, v in tokens],
                "top_logprobs": [None if v is None else {t: v} for t, _, v in tokens]}}]}


def test_byte_tokens_keep_their_characters_offset() -> None:
    # " 답:" then " 긍" as a dummy prefix + three byte tokens, then one generated token: what the real
    # server gave for "답: 긍" (shift 1, from the dummy-prefix space).
    tokens = [(" 답", 0, None), (":", 2, -1.0), (" ", 3, -2.0), ("", 4, -3.0), ("", 4, -4.0), ("", 4, -5.0),
              ("x", 5, -9.0)]
    result, kept = loglik_from_answer(llama_cpp_answer(tokens), LoglikRequest("답:", " 긍"))
    assert result.logprob == pytest.approx(-14.0) and result.n_tokens == 4
    assert kept["shift"] == 1 and kept["boundary"] == 3 and kept["tokens"] == [" ", "", "", ""]
    assert result.is_greedy is None  # a lone '' key in top_logprobs could hide another byte token


def test_the_shift_from_the_first_token_when_nothing_was_generated() -> None:
    # The model stopped at once (end of sequence): no generated token marks the prompt's end, and the last
    # token is a byte token (''), so the first token's dummy-prefix space gives the shift.
    echo = Echo([" 답", ":", ""], [0, 2, 3], [None, -1.0, -2.0], None, None)
    assert measure_shift(echo, "답:가") == 1
    assert continuation_span(echo, "답:", "답:가").first == 2
    bos = Echo(["<s>", "Hi", " there"], [0, 3, 5], [None, -1.0, -2.0], None, 11)
    assert measure_shift(bos, "Hi there") == 3


def test_a_truncated_prompt_is_an_error() -> None:
    echo = Echo(["ere"], [0], [None], None, 3)
    with pytest.raises(BackendError, match="cut to fit the model.s context, or an echo without the generated token"):
        measure_shift(echo, "Hi there")


def test_missing_fields_are_named() -> None:
    with pytest.raises(BackendError, match="the answer has no choices.0"):
        loglik_from_answer({"model": "m"}, LoglikRequest("a", " b"))
    with pytest.raises(BackendError, match="the server ignores echo"):
        loglik_from_answer({"choices": [{"text": "x", "logprobs": None}]}, LoglikRequest("a", " b"))


# -- retries, errors, timeouts ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_busy_answers_are_retried(fake_server: Start, status: int) -> None:
    server = fake_server()
    b = backend(server)
    before = len(server.posts("/completions"))
    server.switch.failures = [(status, {"Retry-After": "0"})] * 2
    [result] = b.loglik([LoglikRequest("문장 답:", " 긍정")])
    assert result.logprob == pytest.approx(toy_logprob(" 긍정"))
    assert len(server.posts("/completions")) - before == 3
    assert b.usage.extra["retries"] == 2 and b.usage.requests == 1


@pytest.mark.parametrize("status", [400, 404, 500])
def test_refusals_are_not_retried_and_carry_the_servers_message(fake_server: Start, status: int) -> None:
    server = fake_server()
    b = backend(server)
    before = len(server.posts())
    server.switch.failures = [(status, {})]
    server.switch.error_message = lambda headers: "prompt too long for the context window"
    with pytest.raises(BackendError, match=rf"answered HTTP {status}: prompt too long for the context window"):
        b.generate([GenerateRequest(prompt="x")])
    assert len(server.posts()) - before == 1


def test_a_server_busy_past_every_attempt_says_so(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server, max_attempts=3)
    server.switch.failures = [(503, {})] * 5
    with pytest.raises(BackendError, match="answered HTTP 503 after 3 attempts: failure 503"):
        b.generate([GenerateRequest(prompt="x")])


def test_a_dropped_connection_is_retried(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    server.switch.drops = 2
    [result] = b.generate([GenerateRequest(prompt="abc", max_new_tokens=4)])
    assert result.text == "outabc" and b.usage.extra["retries"] == 2


def test_a_slow_answer_times_out_without_retrying(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server, timeout_s=0.3)
    before = len(server.posts())
    server.switch.delay_s = 1.0
    with pytest.raises(BackendError, match=r"no answer within 0\.3 s \(generate request 0\)"):
        b.generate([GenerateRequest(prompt="x")])
    assert len(server.posts()) - before == 1


def test_the_deadline_stops_a_batch(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server, deadline_s=0.8, concurrency=1)
    server.switch.delay_s = 0.3
    with pytest.raises(BackendError, match=r"the deadline passed with \d of 10 requests of this batch answered"):
        b.generate([GenerateRequest(prompt=f"p{i}") for i in range(10)])


# -- concurrency and order ----------------------------------------------------------------------------------


def test_concurrency_is_bounded_and_reached(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server, concurrency=3)
    server.switch.delay_s = 0.05
    started = time.perf_counter()
    results = b.generate([GenerateRequest(prompt=f"p{i:02d}") for i in range(24)])
    assert server.max_in_flight == 3
    assert time.perf_counter() - started < 24 * 0.05  # concurrent, not one by one
    assert [r.text for r in results] == [f"outp{i:02d}" for i in range(24)]


def test_results_keep_request_order_when_answers_come_back_out_of_order(fake_server: Start) -> None:
    server = fake_server(prefix="dummy")
    b = backend(server, concurrency=6)
    requests = [LoglikRequest(f"{'단어 ' * (i + 1)}x{i}", " 끝") for i in range(12)]
    # Earlier requests answer later: the first waits longest.
    server.switch.delay_of = lambda body: 0.02 * (12 - int(body["prompt"].split("x")[-1].split()[0]))
    seen: list[int] = []
    results = b.loglik(requests, on_result=lambda i, result, raw: seen.append(i))
    assert seen != sorted(seen)  # answers did arrive out of order
    for request, result in zip(requests, results):
        assert result.logprob == pytest.approx(expected(server, request.context, request.continuation))


def test_a_call_from_inside_a_running_event_loop_works(fake_server: Start) -> None:
    b = backend(fake_server())

    async def inside() -> list[GenerateResult]:  # a notebook's loop: asyncio.run cannot nest
        return b.generate([GenerateRequest(prompt="abc")])

    assert [r.text for r in asyncio.run(inside())] == ["outabc"]


# -- the API key --------------------------------------------------------------------------------------------


def test_the_api_key_is_a_bearer_header_and_in_no_message(fake_server: Start, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-9f8e7d6c5b4a"
    monkeypatch.setenv("KLUE_TEST_KEY", secret)
    server = fake_server()
    b = backend(server, api_key_env="KLUE_TEST_KEY")
    assert all(s.headers.get("Authorization") == f"Bearer {secret}" for s in server.seen)
    assert secret not in repr(b) and secret not in str(vars(b))
    # A server that echoes the request's headers into its error text: the message still hides the key.
    server.switch.failures = [(401, {})]
    server.switch.error_message = lambda headers: f"bad key {headers.get('Authorization')}"
    with pytest.raises(BackendError) as caught:
        b.generate([GenerateRequest(prompt="x")])
    text = str(caught.value)
    assert secret not in text and "HTTP 401" in text and "$KLUE_TEST_KEY" in text


def test_no_key_no_header(fake_server: Start) -> None:
    server = fake_server()
    backend(server, api_key_env="KLUE_TEST_KEY_THAT_IS_NOT_SET")
    assert all("Authorization" not in s.headers for s in server.seen)


# -- generation ---------------------------------------------------------------------------------------------


def test_choices_are_constrained_by_a_gbnf_grammar(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    [result] = b.generate([GenerateRequest(prompt="답:", choices=('"인용"', "부정"), stop=("\n",))])
    assert result.constrained and result.text == '"인용"'
    body = server.posts("/completions")[-1].body
    assert body["grammar"] == 'root ::= "\\"인용\\"" | "부정"' and "stop" not in body
    assert body["temperature"] == 0


def test_json_schema_on_chat_uses_response_format(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    schema = '{"properties": {"label": {"enum": ["긍정", "부정"]}}, "type": "object"}'
    chat, prompt = b.generate([GenerateRequest(messages=(("system", "분류"), ("user", "좋다")), json_schema=schema),
                               GenerateRequest(prompt="좋다 ->", json_schema=schema, stop=("\n",))])
    assert chat.constrained and chat.text == '{"label": "긍정"}'
    sent = server.posts("/chat/completions")[-1].body
    assert sent["response_format"]["type"] == "json_object" and sent["messages"][0] == {"role": "system",
                                                                                       "content": "분류"}
    # llama-cpp-python constrains JSON on chat only: a prompt request goes unconstrained, and says so.
    # The two requests go concurrently: pick the prompt's by its endpoint, not by arrival order.
    completion = [s for s in server.posts("/completions") if "/chat/" not in s.path][-1]
    assert not prompt.constrained and completion.body["stop"] == ["\n"]


def test_without_a_dialect_generation_falls_back_unconstrained(fake_server: Start) -> None:
    server = fake_server(dialect=None)
    b = backend(server)
    [result] = b.generate([GenerateRequest(prompt="답:", choices=("긍정", "부정"), max_new_tokens=3)])
    assert not result.constrained and result.text == "out답:"
    body = server.posts("/completions")[-1].body
    assert "grammar" not in body and "structured_outputs" not in body and body["max_tokens"] == 3


def test_usage_counts_requests_and_tokens(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    b.generate([GenerateRequest(messages=(("user", "안녕"),)), GenerateRequest(prompt="안녕 하세요")])
    assert b.usage.requests == 2
    assert b.usage.prompt_tokens == 3 + 2 and b.usage.completion_tokens == 2 + 1


def test_a_generation_without_text_is_an_error(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    server.chat_answer = lambda body: {"choices": [{"index": 0}]}  # type: ignore[method-assign]
    with pytest.raises(BackendError, match=r"generate request 0: the answer has no message.content"):
        b.generate([GenerateRequest(messages=(("user", "x"),))])


def test_gbnf_literals_escape_what_gbnf_needs() -> None:
    assert gbnf_choices(["a\\b", "줄\n바꿈", "\x01"]) == 'root ::= "a\\\\b" | "줄\\n바꿈" | "\\x01"'
    with pytest.raises(BackendError):
        gbnf_choices([])


def test_a_run_that_generates_for_want_of_log_likelihoods_records_it(fake_server: Start, tmp_path: Any) -> None:
    """`--mode auto` on a log-likelihood task with a server that echoes no log-probs: the summary's field says
    so (the report reads the field, not the note), and an asked `--mode generate` is no fallback."""
    from klue import registry
    from klue.llm.run import LlmSettings, run
    from klue.protocols import ProtocolData
    from klue.tasks.nli.records import NliRecord

    server = fake_server(echo=False, dialect=None)
    records = [NliRecord(f"g{i}", "test", "전제 문장이다", f"가설 {i}", ("entailment", "neutral", "contradiction")[i % 3])
               for i in range(6)]
    data = ProtocolData("local:x", False, "synthetic", records[:3], records[3:], None, ())
    for asked, fallback in (("auto", True), ("generate", False)):
        results = run(RunRequest(registry.get("nli"), f"openai:fake@{server.url}", data, 1, tmp_path / asked),
                      settings=LlmSettings(method=asked, progress=False), backend=backend(server))
        assert results.llm is not None and results.llm.mode == "generate"
        assert results.llm.instead_of_loglik is fallback


# -- per-token scores of a text (klue.contamination.mink) ------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "bos", "dummy"])
def test_token_scores_are_the_echoed_prompt_log_probs(fake_server: Start, prefix: str) -> None:
    from klue.llm.backends.base import TokenScoresRequest

    server = fake_server(prefix=prefix)
    client = backend(server)
    assert client.gives_token_scores and not client.gives_distributions
    text = "서울은 대한민국의 수도이다."
    [result] = client.token_scores([TokenScoresRequest(text)])
    pieces = server.tokens(text)
    # the first token has no context (a null log-prob): with a BOS that is the BOS, and every text token is scored
    assert result.logprobs == pytest.approx([toy_logprob(p) for p in pieces[1:]])
    words = len(server.tokens(text)) - (prefix == "bos")
    assert len(result.logprobs) == (words if prefix == "bos" else words - 1)
    assert result.means is None
    with pytest.raises(BackendError, match="in-process backend"):
        client.token_scores([TokenScoresRequest(text, distribution=True)])


def test_token_scores_are_refused_where_the_echo_is_shifted(fake_server: Start) -> None:
    from klue.llm.backends.base import TokenScoresRequest

    client = backend(fake_server(shifted=True))
    assert not client.gives_token_scores
    with pytest.raises(BackendError, match="no usable prompt log-probs"):
        client.token_scores([TokenScoresRequest("문장")])
