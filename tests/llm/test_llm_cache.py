"""The request cache: keys, storage across reopening, CachedBackend asking only for what is missing (in order,
duplicates once), answers kept when a run is interrupted, a damaged file refused by name."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from klue.errors import DataError
from klue.llm.backends.base import (
    BackendError,
    Capabilities,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    Usage,
)
from klue.llm.cache import CachedBackend, RequestCache, request_key

Sink = Any


class ToyBackend:
    """Answers from the request text; records what it was asked; can fail after a number of answers."""

    name = "toy"
    model = "toy-model"

    def __init__(self, *, streams: bool = False, fail_after: int | None = None, choices: bool = False) -> None:
        self.streams_results = streams
        self.fail_after = fail_after
        self.fingerprint = "toy@1"
        self.capabilities = Capabilities(loglik=True, choices=choices)
        self.usage = Usage()
        self.asked: list[Any] = []
        self.closed = False

    def _answer(self, requests: Sequence[Any], on_result: Sink, make: Any) -> list[Any]:
        results = []
        for i, request in enumerate(requests):
            if self.fail_after is not None and len(self.asked) >= self.fail_after:
                raise BackendError("cannot reach http://toy: connection refused")
            self.asked.append(request)
            self.usage.requests += 1
            result = make(request)
            if on_result is not None:
                on_result(i, result, {"raw": repr(request)})
            results.append(result)
        return results

    def loglik(self, requests: Sequence[LoglikRequest], on_result: Sink = None) -> list[LoglikResult]:
        return self._answer(requests, on_result, lambda r: LoglikResult(-float(len(r.continuation)), 1, None))

    def generate(self, requests: Sequence[GenerateRequest], on_result: Sink = None) -> list[GenerateResult]:
        return self._answer(requests, on_result, lambda r: GenerateResult(f"<{r.prompt}>", 3, 2, r.choices is not None))

    def close(self) -> None:
        self.closed = True


def lreq(i: int) -> LoglikRequest:
    return LoglikRequest(f"문장 {i} 답:", " 긍정" * (i % 3 + 1))


def test_keys_cover_backend_model_kind_and_every_field() -> None:
    base = GenerateRequest(prompt="답:", max_new_tokens=8, stop=("\n",))
    key = request_key("openai", "m@1", "generate", base)
    assert key == request_key("openai", "m@1", "generate", GenerateRequest(prompt="답:", max_new_tokens=8, stop=("\n",)))
    variants = [request_key("hf", "m@1", "generate", base), request_key("openai", "m@2", "generate", base),
                request_key("openai", "m@1", "generate", GenerateRequest(prompt="답:", max_new_tokens=9, stop=("\n",))),
                request_key("openai", "m@1", "generate", GenerateRequest(prompt="답:", max_new_tokens=8)),
                request_key("openai", "m@1", "generate", GenerateRequest(prompt="답:", max_new_tokens=8, stop=("\n",),
                                                                         choices=("a", "b"))),
                request_key("openai", "m@1", "generate", base, {"constrainable": True})]
    assert len({key, *variants}) == 1 + len(variants)
    assert len(key) == 64 and int(key, 16) >= 0


def test_answers_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "run" / "cache.sqlite"
    cache = RequestCache(path)
    request, result = lreq(1), LoglikResult(-1.5, 2, True)
    cache.put("k1", "loglik", request, result, {"tokens": [" 긍정"]})
    cache.close()
    again = RequestCache(path)
    assert again.get_many(["k1", "k2"]) == {"k1": {"logprob": -1.5, "n_tokens": 2, "is_greedy": True}}
    assert again.raw("k1") == {"tokens": [" 긍정"]} and len(again) == 1
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    again.close()


@pytest.mark.parametrize("streams", [False, True])
def test_only_missing_requests_are_asked_in_order(tmp_path: Path, streams: bool) -> None:
    inner = ToyBackend(streams=streams)
    cached = CachedBackend(inner, RequestCache(tmp_path / "c.sqlite"), chunk_size=3)
    first = cached.loglik([lreq(i) for i in range(5)])
    assert len(inner.asked) == 5 and cached.usage.cache_hits == 0
    batch = [lreq(7), lreq(2), lreq(7), lreq(0), lreq(8)]
    second = cached.loglik(batch)
    assert inner.asked[5:] == [lreq(7), lreq(8)]  # 7 once, though asked twice; 2 and 0 from the cache
    assert cached.usage.cache_hits == 3 and cached.usage.requests == 7
    assert second[1] == first[2] and second[3] == first[0]
    assert [r.logprob for r in second] == [-float(len(r.continuation)) for r in batch]


def test_generate_results_come_back_whole(tmp_path: Path) -> None:
    inner = ToyBackend(choices=True)
    cached = CachedBackend(inner, RequestCache(tmp_path / "c.sqlite"))
    requests = [GenerateRequest(prompt="답:", choices=("긍정", "부정")), GenerateRequest(messages=(("user", "hi"),))]
    first = cached.generate(requests)
    again = CachedBackend(ToyBackend(choices=True), RequestCache(tmp_path / "c.sqlite"))
    assert again.generate(requests) == first and again.usage.requests == 0 and again.usage.cache_hits == 2
    # A backend that cannot apply the constraint gets its own answer, not the constrained one.
    other = CachedBackend(ToyBackend(choices=False), RequestCache(tmp_path / "c.sqlite"))
    other.generate(requests)
    assert other.usage.requests == 1 and other.usage.cache_hits == 1


@pytest.mark.parametrize("streams", [False, True])
def test_an_interrupted_run_keeps_what_it_got(tmp_path: Path, streams: bool) -> None:
    path = tmp_path / "c.sqlite"
    requests = [lreq(i) for i in range(10)]
    broken = CachedBackend(ToyBackend(streams=streams, fail_after=7), RequestCache(path), chunk_size=2)
    with pytest.raises(BackendError, match="cannot reach"):
        broken.loglik(requests)
    broken.close()
    kept = len(RequestCache(path))
    assert kept == (7 if streams else 6)  # streamed: every answer; chunked: the chunks that finished
    inner = ToyBackend(streams=streams)
    resumed = CachedBackend(inner, RequestCache(path))
    results = resumed.loglik(requests)
    assert len(inner.asked) == 10 - kept and resumed.usage.cache_hits == kept
    assert results == ToyBackend().loglik(requests)


def test_close_closes_both(tmp_path: Path) -> None:
    inner = ToyBackend()
    cached = CachedBackend(inner, RequestCache(tmp_path / "c.sqlite"))
    assert (cached.name, cached.model, cached.fingerprint) == ("toy", "toy-model", "toy@1")
    cached.close()
    assert inner.closed


def test_threads_share_one_cache(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "c.sqlite")

    def write(start: int) -> None:
        for i in range(start, start + 50):
            cache.put(f"k{i}", "loglik", lreq(i), LoglikResult(-1.0, 1))

    threads = [threading.Thread(target=write, args=(n * 50,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 200 and len(cache.get_many(f"k{i}" for i in range(200))) == 200


def test_a_file_that_is_no_cache_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database, just some text that is long enough" * 20)
    with pytest.raises(DataError, match=r"c\.sqlite: not a usable request cache .*move it away"):
        RequestCache(path)


def test_a_cache_of_another_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    RequestCache(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = '99' WHERE name = 'schema'")
    with pytest.raises(DataError, match="cache schema 99"):
        RequestCache(path)


def test_a_stored_result_of_an_older_shape_is_asked_again(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    inner = ToyBackend()
    cached = CachedBackend(inner, RequestCache(path))
    key = cached.key("loglik", lreq(1))
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO answers VALUES (?, 'loglik', '{}', ?, NULL, 0)", (key, '{"logprob": -1.0}'))
    [result] = cached.loglik([lreq(1)])
    assert result == LoglikResult(-float(len(lreq(1).continuation)), 1, None) and inner.usage.requests == 1
