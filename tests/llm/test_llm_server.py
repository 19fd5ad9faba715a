"""The HTTP backend against a real llama-cpp-python server running a tiny llama GGUF written at test time
(tests/llm/gguf_model.py): Korean log-likelihoods, greedy and grammar-constrained generation, concurrency,
and a server killed mid-batch whose run resumes through the request cache asking only for what is missing.

Skipped, with the reason, where llama-cpp-python (or gguf, httpx) is not installed."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

_MISSING = [name for name, module in (("llama-cpp-python[server]", "llama_cpp"), ("gguf", "gguf"),
                                      ("httpx", "httpx"), ("uvicorn", "uvicorn")) if find_spec(module) is None]
if _MISSING:
    pytest.skip(f"the real-server tests need {', '.join(_MISSING)}: pip install --find-links ../shared/wheels "
                "'llama-cpp-python[server]==0.3.36' gguf httpx", allow_module_level=True)

from gguf_model import write_tiny_llama
from llama_server import LlamaServer

from klue.llm.backends.base import BackendError, GenerateRequest, LoglikRequest, LoglikResult
from klue.llm.backends.openai import OpenAIBackend
from klue.llm.cache import CachedBackend, RequestCache

pytestmark = pytest.mark.slow

CONTEXT = "문장: 한국어 문장은 참 좋다. 감정은? 답:"
CHOICES = (" 긍정", " 부정", " 중립")


# Korean prompts of `klue llm` are byte tokens here: 4,096 positions hold them. The module's one server has as
# many (a second server for the end-to-end test cost a process start and a model load).
CONTEXT_LENGTH = 4096


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_llama(tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf", context=CONTEXT_LENGTH)


@pytest.fixture(scope="module")
def server(model_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    running = LlamaServer.start(model_file, tmp_path_factory.mktemp("server") / "server.log", n_ctx=CONTEXT_LENGTH)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def llama(server: LlamaServer) -> OpenAIBackend:
    return OpenAIBackend("tiny", server.url, api_key_env=None)


def connect(server: LlamaServer, **options: Any) -> OpenAIBackend:
    return OpenAIBackend("tiny", server.url, api_key_env=None, **options)


def assert_same(got: list[LoglikResult], want: list[LoglikResult]) -> None:
    """Equal but for float32 noise: llama-cpp-python reuses the KV cache of the prompt before, so a prompt
    is evaluated in different pieces from one request to the next and the last digits move (~1e-7)."""
    assert [(r.n_tokens, r.is_greedy) for r in got] == [(r.n_tokens, r.is_greedy) for r in want]
    assert [r.logprob for r in got] == pytest.approx([r.logprob for r in want], rel=1e-5, abs=1e-5)


def test_the_probe_finds_what_llama_cpp_python_offers(llama: OpenAIBackend, model_file: Path) -> None:
    caps = llama.capabilities
    assert (caps.loglik, caps.completion, caps.chat, caps.choices, caps.json_schema) == (True, True, True, True, True)
    assert llama.fingerprint == str(model_file)  # the server names its one model by the file it loaded
    assert "text_offset shift 1 on the probe prompt" in caps.notes  # the SentencePiece dummy-prefix space
    # a model with a BOS token keeps log-likelihoods; this random one's first generated token is a byte
    # token without text, so the echo cross-check cannot be made, and a note says so
    assert not caps.loglik_why_not and any("not cross-checked" in note for note in caps.notes), caps.notes


def test_korean_log_likelihoods_are_finite_repeatable_and_add_up(llama: OpenAIBackend) -> None:
    requests = [LoglikRequest(CONTEXT, c) for c in CHOICES]
    # " 좋" and "다" are byte-fallback tokens ('' text on this server): the split is at a token boundary.
    split = [LoglikRequest(CONTEXT, " 좋다"), LoglikRequest(CONTEXT, " 좋"), LoglikRequest(CONTEXT + " 좋", "다")]
    first = llama.loglik(requests + split)
    assert all(math.isfinite(r.logprob) and r.logprob < 0 and r.n_tokens >= 1 for r in first)
    assert_same(llama.loglik(requests + split), first)  # the same numbers again
    whole, head, tail = first[len(requests):]
    assert whole.n_tokens == head.n_tokens + tail.n_tokens == 7  # "▁" + 3 bytes + 3 bytes
    assert whole.logprob == pytest.approx(head.logprob + tail.logprob, rel=1e-5)
    assert len({r.logprob for r in first[:3]}) == 3


def test_a_token_across_the_boundary_is_refused_on_the_real_server(llama: OpenAIBackend) -> None:
    with pytest.raises(BackendError, match=r"loglik request 0 .*the token ' 긍정' spans the end of the context"):
        llama.loglik([LoglikRequest(CONTEXT + " 긍", "정")])


def test_greedy_generation_repeats(llama: OpenAIBackend) -> None:
    requests = [GenerateRequest(prompt=CONTEXT, max_new_tokens=12),
                GenerateRequest(messages=(("system", "감정을 분류하세요."), ("user", "참 좋다")), max_new_tokens=12)]
    first = llama.generate(requests)
    assert llama.generate(requests) == first
    assert all(r.text and not r.constrained and r.n_tokens for r in first)


def test_constrained_generation_gives_one_of_the_choices(llama: OpenAIBackend) -> None:
    labels = ("긍정", "부정", "중립")
    schema = json.dumps({"type": "object", "properties": {"label": {"type": "string", "enum": list(labels)}},
                         "required": ["label"]}, sort_keys=True)
    choice, chat_choice, chat_json = llama.generate([
        GenerateRequest(prompt=CONTEXT, choices=labels, max_new_tokens=16, stop=("\n",)),
        GenerateRequest(messages=(("user", "참 좋다. 감정은?"),), choices=labels, max_new_tokens=16),
        GenerateRequest(messages=(("user", "참 좋다. 감정은?"),), json_schema=schema, max_new_tokens=48)])
    assert choice.constrained and choice.text in labels
    assert chat_choice.constrained and chat_choice.text in labels
    assert chat_json.constrained and json.loads(chat_json.text)["label"] in labels


def test_four_requests_at_once_answer_as_one_at_a_time(server: LlamaServer, llama: OpenAIBackend) -> None:
    requests = [LoglikRequest(f"{CONTEXT} {i}번", c) for i in range(4) for c in CHOICES]
    together = connect(server, concurrency=4)
    assert_same(together.loglik(requests), connect(server, concurrency=1).loglik(requests))
    generated = together.generate([GenerateRequest(prompt=f"{i}번 문장:", max_new_tokens=6) for i in range(8)])
    assert [g.text for g in generated] == [g.text for g in llama.generate(
        [GenerateRequest(prompt=f"{i}번 문장:", max_new_tokens=6) for i in range(8)])]


class KillingCache(RequestCache):
    """Kills the server once it has stored `after` answers: a crash in the middle of a batch."""

    def __init__(self, path: Path, server: LlamaServer, after: int) -> None:
        super().__init__(path)
        self.server, self.after, self.stored = server, after, 0

    def put(self, *args: Any, **kwargs: Any) -> None:
        super().put(*args, **kwargs)
        self.stored += 1
        if self.stored == self.after:
            self.server.kill()


def test_a_killed_server_resumes_through_the_cache_asking_only_what_is_missing(model_file: Path,
                                                                                tmp_path: Path) -> None:
    requests = [LoglikRequest(f"{i}번 문장: 한국어{'는 좋다' * (i % 4)}. 답:", CHOICES[i % 3]) for i in range(40)]
    cache_path = tmp_path / "cache.sqlite"
    first = LlamaServer.start(model_file, tmp_path / "first.log")
    try:
        reference = connect(first).loglik(requests)  # the uninterrupted run
        cache = KillingCache(cache_path, first, after=12)
        inner = connect(first, concurrency=2, max_attempts=2, backoff_s=0.05)
        with pytest.raises(BackendError, match=r"cannot reach http://127\.0\.0\.1:\d+/v1"):
            CachedBackend(inner, cache).loglik(requests)
        kept = len(cache)
        cache.close()
    finally:
        first.stop()
    assert 12 <= kept < len(requests)

    second = LlamaServer.start(model_file, tmp_path / "second.log")  # a new process, on another port
    try:
        inner = connect(second)
        resumed = CachedBackend(inner, RequestCache(cache_path))
        results = resumed.loglik(requests)
        assert inner.usage.requests == len(requests) - kept and resumed.usage.cache_hits == kept
        assert_same(results, reference)
        # And a third run asks nothing at all, and gives back exactly what was stored.
        again = CachedBackend(connect(second), RequestCache(cache_path))
        assert again.loglik(requests) == results and again.usage.requests == 0
        again.close()
        resumed.close()
    finally:
        second.stop()


@pytest.mark.realdata
def test_klue_llm_over_http_end_to_end(server: LlamaServer, klue_data_dir: Path, shared_data_dir: Path,
                                       tmp_path: Path) -> None:
    """`klue llm --model openai:...` on a real server: log-likelihood (NLI) and constrained/parsed generation
    (NER, with its JSON schema) through the judge; the capability probe lands in results.json. The command
    runs in this process (tests/cli_in_process.py): its subject is the server's answers, not a process."""
    from cli_in_process import klue_in_process
    from klue.results import read_results

    out = tmp_path / "bench"
    run = klue_in_process("llm", "--model", f"openai:tiny@{server.url}", "--tasks", "nli,ner", "--limit", "3", "--out",
                          str(out), "--jobs", "0", "--form", "completion", "--data-dir", str(klue_data_dir),
                          "--extra-data-dir", str(shared_data_dir))
    assert run.returncode == 0, run.stderr[-3000:]
    modes = {}
    for path in out.rglob("results.json"):
        results = read_results(path)
        assert results.status == "ok" and results.llm is not None and results.llm.backend == "openai"
        assert results.llm.capabilities["loglik"] and results.llm.usage["requests"] > 0
        modes[results.task] = results.llm.mode
    assert modes == {"nli": "loglik", "ner": "generate"}
