"""Model servers that misbehave, as the HTTP backend meets them (tests/fake_openai.py on 127.0.0.1): 5xx,
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
    server.switch.faults = [fault, fault]
    [result] = b.generate([GenerateRequest(prompt="abc", max_new_tokens=4)])
    assert result.text == "outabc" and b.usage.extra["retries"] == 2


@pytest.mark.parametrize("fault", ["reset", "cut"])
def test_a_connection_broken_every_time_is_not_called_unreachable(fake_server: Start, fault: str) -> None:
    server = fake_server()
    b = backend(server, max_attempts=3)
    before = len(server.posts())
    server.switch.faults = [fault] * 3
    error = one_line_error(lambda: b.generate([GenerateRequest(prompt="x")]))
    assert "broke off before the answer was complete, 3 times" in str(error)
    assert "cannot reach" not in str(error) and error.exit_code == 2  # the server was there
    assert len(server.posts()) - before == 3


def test_malformed_json_is_one_line_and_not_retried(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    before = len(server.posts())
    server.switch.faults = ["malformed"]
    error = one_line_error(lambda: b.generate([GenerateRequest(prompt="x")]))
    assert "the answer is not JSON (generate request 0)" in str(error)
    assert len(server.posts()) - before == 1


def test_http_500_is_not_retried_and_502_is(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    before = len(server.posts())
    server.switch.failures = [(500, {})]
    one_line_error(lambda: b.generate([GenerateRequest(prompt="x")]))
    assert len(server.posts()) - before == 1  # llama-cpp-python's answer to a request it cannot serve
    server.switch.failures = [(502, {})]
    assert b.generate([GenerateRequest(prompt="abc", max_new_tokens=4)])[0].text == "outabc"


def test_retry_after_as_an_http_date_is_waited_for(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # whole seconds: 1 to 2 s from now
    server.switch.failures = [(429, {"Retry-After": when})]
    started = time.monotonic()
    [result] = b.generate([GenerateRequest(prompt="abc", max_new_tokens=4)])
    assert result.text == "outabc" and time.monotonic() - started >= 0.9


def test_a_retry_after_longer_than_we_wait_is_a_clear_error_at_once(fake_server: Start) -> None:
    server = fake_server()
    b = backend(server)
    before = len(server.posts())
    server.switch.failures = [(429, {"Retry-After": "3600"})]
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
    server.switch.fault_of = lambda body: fault if body.get("prompt") == bad and fault != "slow" else None
    server.switch.delay_of = lambda body: 2.0 if body.get("prompt") == bad and fault == "slow" else 0.0
    cache_path = tmp_path / "cache.sqlite"
    cached = CachedBackend(b, RequestCache(cache_path))
    with pytest.raises(BackendError):
        cached.generate(requests(6))
    keys = {cached.key("generate", r): r.prompt for r in requests(6)}
    stored = cached.cache.get_many(keys)
    assert {keys[k] for k in stored} == {"p0", "p1", "p2"}  # answered before the bad one; never the bad one
    cached.close()

    server.switch.fault_of = server.switch.delay_of = None  # the server is fixed; the same run again
    before = len(server.posts())
    again = CachedBackend(backend(server, concurrency=1), RequestCache(cache_path))
    results = again.generate(requests(6))
    assert [r.text for r in results] == [f"outp{i}" for i in range(6)]
    assert sorted(s.body["prompt"] for s in server.posts()[before:] if s.body.get("max_tokens") == 4) == \
        ["p3", "p4", "p5"]  # only what was missing (the probe's own requests aside)
    again.close()


# -- faults as `klue llm` shows them (issue 26, item 6) -------------------------------------------------------


def _klue_llm(*args: str, tmp_path: Path) -> Any:
    """`klue llm` through klue.cli.main in this process (tests/cli_in_process.py): the exit code and the lines
    on stderr are the entry point's, without a process start and its imports (1-3 CPU s each)."""
    import json
    import os

    from cli_in_process import klue_in_process
    from klue.tasks import nli

    def rows(n: int, part: str) -> list[dict[str, str]]:
        return [{"guid": f"{part}-{i}", "source": "s", "premise": f"전제 {i} 입니다", "hypothesis": f"가설 {i} 입니다",
                 "gold_label": nli.LABELS[i % 3], "author": nli.LABELS[i % 3], "label2": "neutral",
                 "label3": "neutral", "label4": "neutral", "label5": "neutral"} for i in range(n)]

    tmp_path.mkdir(parents=True, exist_ok=True)
    train, evaluation = tmp_path / "train.json", tmp_path / "eval.json"
    train.write_text(json.dumps(rows(12, "train"), ensure_ascii=False), encoding="utf-8")
    evaluation.write_text(json.dumps(rows(3, "dev"), ensure_ascii=False), encoding="utf-8")
    return klue_in_process("llm", "--tasks", "nli", "--train", str(train), "--eval", str(evaluation), "--out",
                           str(tmp_path / "out"), "--jobs", "0", *args, environ=os.environ | {"COLUMNS": "300"})


@pytest.mark.slow
def test_a_model_the_server_does_not_list_is_a_warning_and_an_error_with_strict_model(
        fake_server: Start, tmp_path: Path) -> None:
    server = fake_server(model_id="served-model")
    spec = f"openai:other-name@{server.url}"
    strict = _klue_llm("--model", spec, "--strict-model", tmp_path=tmp_path / "strict")
    assert strict.returncode == 2 and strict.stderr.count("klue: error:") == 1, strict.stderr[-2000:]
    assert "lists no model 'other-name'" in strict.stderr and "--strict-model" in strict.stderr
    assert not server.posts()  # refused before any cell asked the model anything
    warned = _klue_llm("--model", spec, tmp_path=tmp_path / "warned")
    assert warned.returncode == 0, warned.stderr[-2000:]
    assert warned.stderr.count("warning:") == 1 and "lists no model 'other-name'" in warned.stderr


def test_an_unreachable_server_stops_the_run_at_once_with_one_message_and_exit_3(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    run = _klue_llm("--model", f"openai:m@http://127.0.0.1:{closed}/v1", "--seeds", "1,2", tmp_path=tmp_path)
    assert run.returncode == 3, run.stderr[-2000:]
    assert run.stderr.count("cannot reach") == 1 and run.stderr.count("klue: error:") == 1
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("results.json"))


def test_a_missing_hf_directory_or_gguf_file_says_so(tmp_path: Path) -> None:
    from klue.llm.spec import parse_spec

    with pytest.raises(DataError, match="no such directory"):
        parse_spec("hf:/nonexistent/model")
    with pytest.raises(DataError, match="no such GGUF file"):
        parse_spec(f"hf:{tmp_path}/model.gguf")
    assert parse_spec("hf:org/model").target == "org/model"  # a hub id is left to the hub
