"""Model servers that misbehave, as the HTTP backend meets them (tests/llm/fake_openai.py on 127.0.0.1): 5xx,
malformed JSON, a body cut short, a reply that never comes, 429 with Retry-After, a reset connection, no
server at all. Each gets bounded retries only where a retry can help, one clear line, nothing cached from a
bad answer, and a rerun that asks only for what is missing."""

from __future__ import annotations

import email.utils
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx", reason="the HTTP backend needs httpx: pip install 'klue[llm]'")

from fake_openai import FakeOpenAI

from klue.errors import DataError
from klue.llm.backends.base import BackendError, GenerateRequest
from klue.llm.backends.openai import OpenAIBackend
from klue.llm.cache import CachedBackend, RequestCache

Start = Callable[..., FakeOpenAI]


def backend(server: FakeOpenAI, **options: Any) -> OpenAIBackend:
    options.setdefault("api_key_env", None)
    options.setdefault("backoff_s", 0.01)
    return OpenAIBackend("fake", server.url, **options)


def one_line_error(call: Callable[[], Any]) -> BackendError:
    with pytest.raises(BackendError) as caught:
        call()
    assert "\n" not in str(caught.value)
    return caught.value


def requests(n: int) -> list[GenerateRequest]:
    return [GenerateRequest(prompt=f"p{i}", max_new_tokens=4) for i in range(n)]


@pytest.mark.parametrize("fault", ["reset", "cut"])
def test_a_broken_connection_is_retried(fake_server: Start, fault: str) -> None:
    server = fake_server()
    b = backend(server)
    server.faults = [fault, fault]
    [result] = b.generate([GenerateRequest(prompt="abc", max_new_tokens=4)])
    assert result.text == "outabc" and b.usage.extra["retries"] == 2


@pytest.mark.parametrize("fault", ["reset", "cut"])
def test_a_connection_broken_every_time_is_not_called_unreachable(fake_server: Start, fault: str) -> None:
    server = fake_server()
    b = backend(server, max_attempts=3)
    before = len(server.posts())
    server.faults = [fault] * 3
    error = one_line_error(lambda: b.generate([GenerateRequest(prompt="x")]))
    assert "broke off before the answer was complete, 3 times" in str(error)
    assert "cannot reach" not in str(error) and error.exit_code == 2  # the server was there
    assert len(server.posts()) - before == 3


def test_malformed_json_is_one_line_and_not_retried(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    before = len(server.posts())
    server.faults = ["malformed"]
    error = one_line_error(lambda: b.generate([GenerateRequest(prompt="x")]))
    assert "the answer is not JSON (generate request 0)" in str(error)
    assert len(server.posts()) - before == 1


def test_http_500_is_not_retried_and_502_is(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    before = len(server.posts())
    server.failures = [(500, {})]
    one_line_error(lambda: b.generate([GenerateRequest(prompt="x")]))
    assert len(server.posts()) - before == 1  # llama-cpp-python's answer to a request it cannot serve
    server.failures = [(502, {})]
    assert b.generate([GenerateRequest(prompt="abc", max_new_tokens=4)])[0].text == "outabc"


def test_retry_after_as_an_http_date_is_waited_for(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # whole seconds: 1 to 2 s from now
    server.failures = [(429, {"Retry-After": when})]
    started = time.monotonic()
    [result] = b.generate([GenerateRequest(prompt="abc", max_new_tokens=4)])
    assert result.text == "outabc" and time.monotonic() - started >= 0.9


def test_a_retry_after_longer_than_we_wait_is_a_clear_error_at_once(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    before = len(server.posts())
    server.failures = [(429, {"Retry-After": "3600"})]
    started = time.monotonic()
    error = one_line_error(lambda: b.generate([GenerateRequest(prompt="x")]))
    assert time.monotonic() - started < 5 and len(server.posts()) - before == 1
    assert "asks to wait 3600 s, longer than klue waits" in str(error)


def test_no_server_is_exit_code_3() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    error = one_line_error(lambda: OpenAIBackend("m", f"http://127.0.0.1:{port}/v1", api_key_env=None,
                                                 max_attempts=2, backoff_s=0.01))
    assert isinstance(error, DataError) and error.exit_code == 3
    assert "cannot reach" in str(error)


@pytest.mark.parametrize("fault", ["malformed", "cut", "slow"])
def test_nothing_is_cached_from_a_bad_answer_and_a_rerun_resumes(fake_server: Start, tmp_path: Path,
                                                                  fault: str) -> None:
    server = fake_server()
    b = backend(server, concurrency=1, max_attempts=1, timeout_s=0.5)
    bad = "p3"
    server.fault_of = lambda body: fault if body.get("prompt") == bad and fault != "slow" else None
    server.delay_of = lambda body: 2.0 if body.get("prompt") == bad and fault == "slow" else 0.0
    cache_path = tmp_path / "cache.sqlite"
    cached = CachedBackend(b, RequestCache(cache_path))
    with pytest.raises(BackendError):
        cached.generate(requests(6))
    keys = {cached.key("generate", r): r.prompt for r in requests(6)}
    stored = cached.cache.get_many(keys)
    assert {keys[k] for k in stored} == {"p0", "p1", "p2"}  # answered before the bad one; never the bad one
    cached.close()

    server.fault_of = server.delay_of = None  # the server is fixed; the same run again
    before = len(server.posts())
    again = CachedBackend(backend(server, concurrency=1), RequestCache(cache_path))
    results = again.generate(requests(6))
    assert [r.text for r in results] == [f"outp{i}" for i in range(6)]
    assert sorted(s.body["prompt"] for s in server.posts()[before:] if s.body.get("max_tokens") == 4) == \
        ["p3", "p4", "p5"]  # only what was missing (the probe's own requests aside)
    again.close()
