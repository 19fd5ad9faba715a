"""The OpenAI-compatible embeddings client against a fake server on 127.0.0.1: batching, bounded concurrency,
order, retries only where a retry helps, the server's own words in errors, and the API key kept secret."""

from __future__ import annotations

import numpy as np
import pytest

from fake_openai import FakeOpenAI, toy_vector
from klue.embed.base import EmbeddingError
from klue.embed.http import OpenAIEmbeddings, vectors_from_answer
from klue.errors import DataError, UnreachableError
from klue.io.endpoints import api_root

TEXTS = [f"문장 {i}번: 오늘은 날씨가 {'맑' if i % 2 else '흐리'}다" for i in range(23)]


def client(server: FakeOpenAI, **options: object) -> OpenAIEmbeddings:
    options = {"batch_size": 5, "concurrency": 2, "backoff_s": 0.01, **options}
    return OpenAIEmbeddings(server.model_id, server.url, **options)  # type: ignore[arg-type]


def test_batches_of_batch_size_in_order_with_the_prompt(fake_server: FakeOpenAI) -> None:
    fake_server.reverse = True  # items come last to first; their index places them
    backend = client(fake_server)
    vectors = backend.embed(TEXTS, "query: ")
    expected = np.stack([toy_vector("query: " + t) for t in TEXTS])
    np.testing.assert_allclose(vectors, expected)
    posts = fake_server.posts()
    assert sorted(len(p.body["input"]) for p in posts) == [3, 5, 5, 5, 5]  # type: ignore[index]  # 2 in flight: any order
    assert {p.body["model"] for p in posts} == {"fake-embedder"}  # type: ignore[index]
    assert backend.fingerprint == "openai:fake-embedder" and backend.requests == 5


def test_at_most_concurrency_requests_in_flight(fake_server: FakeOpenAI) -> None:
    fake_server.switch.delay_s = 0.05
    client(fake_server, concurrency=3, batch_size=1).embed(TEXTS[:12], "")
    assert fake_server.max_in_flight == 3


def test_base64_answers_are_read(fake_server: FakeOpenAI) -> None:
    fake_server.as_base64 = True
    np.testing.assert_allclose(client(fake_server).embed(TEXTS[:3], ""), np.stack([toy_vector(t) for t in TEXTS[:3]]))


def test_busy_and_broken_answers_are_retried_then_succeed(fake_server: FakeOpenAI) -> None:
    fake_server.switch.failures = [(503, {}), (429, {"Retry-After": "0"}), (502, {})]
    fake_server.switch.drops = 1
    backend = client(fake_server, concurrency=1, max_attempts=5)
    vectors = backend.embed(TEXTS[:5], "")
    assert vectors.shape == (5, 16) and backend.retries == 4


def test_retries_are_bounded(fake_server: FakeOpenAI) -> None:
    fake_server.switch.failures = [(503, {})] * 3
    with pytest.raises(EmbeddingError, match="HTTP 503 after 3 attempts: failure 503"):
        client(fake_server, concurrency=1, max_attempts=3).embed(TEXTS[:2], "")


def test_a_refusal_is_not_retried_and_says_why(fake_server: FakeOpenAI) -> None:
    fake_server.switch.failures = [(400, {})]
    backend = client(fake_server, concurrency=1)
    with pytest.raises(EmbeddingError, match=r"/embeddings answered HTTP 400: failure 400 \(texts 1-5\)"):
        backend.embed(TEXTS[:5], "")
    assert len(fake_server.posts()) == 1


def test_an_answer_with_a_vector_missing_is_an_error(fake_server: FakeOpenAI) -> None:
    fake_server.short = True
    with pytest.raises(EmbeddingError, match="4 embeddings in the answer's `data` for 5 texts"):
        client(fake_server).embed(TEXTS[:5], "")


def test_the_api_key_goes_in_a_header_and_into_no_message(fake_server: FakeOpenAI,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KLUE_TEST_KEY", "sk-secret-123")
    fake_server.switch.failures = [(401, {})]
    backend = client(fake_server, api_key_env="KLUE_TEST_KEY", concurrency=1)
    with pytest.raises(EmbeddingError) as caught:
        backend.embed(TEXTS[:1], "")
    assert "sk-secret-123" not in str(caught.value) and "$KLUE_TEST_KEY" in str(caught.value)
    assert fake_server.posts()[0].headers["Authorization"] == "Bearer sk-secret-123"
    assert "sk-secret-123" not in repr(backend)


def test_an_unreachable_server_is_one_clear_error_that_stops_the_run() -> None:
    server = FakeOpenAI(model_id="fake-embedder")
    url = server.url
    server.stop()
    with pytest.raises(EmbeddingError, match="cannot reach http://127.0.0.1") as caught:
        OpenAIEmbeddings("m", url, backoff_s=0.01, max_attempts=2)
    assert isinstance(caught.value, UnreachableError) and caught.value.exit_code == 3


def test_credentials_in_the_url_are_sent_and_never_shown(fake_server: FakeOpenAI) -> None:
    url = fake_server.url.replace("http://", "http://user:pa55word@")
    fake_server.switch.failures = [(400, {})]
    backend = OpenAIEmbeddings(fake_server.model_id, url, api_key_env=None, backoff_s=0.01)
    with pytest.raises(EmbeddingError) as caught:
        backend.embed(TEXTS[:2], "")
    assert "pa55word" not in str(caught.value) and "pa55word" not in repr(backend)
    assert fake_server.posts()[0].headers["Authorization"].startswith("Basic ")


def test_the_server_s_model_id_is_the_fingerprint(fake_server: FakeOpenAI) -> None:
    backend = OpenAIEmbeddings("another-name", fake_server.url)
    assert backend.fingerprint == "openai:fake-embedder"
    assert any("serves its one model 'fake-embedder' under that name" in note for note in backend.notes)


def test_api_root_and_malformed_answers() -> None:
    assert api_root("http://h:8000") == "http://h:8000/v1"
    assert api_root("http://h:8000/proxy/v1/") == "http://h:8000/proxy/v1"
    with pytest.raises(DataError, match="use http://HOST:PORT/v1"):
        api_root("h:8000")
    with pytest.raises(EmbeddingError, match="not an embedding with a new index"):
        vectors_from_answer({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}, 2, "x")
    with pytest.raises(EmbeddingError, match="differ in length"):
        vectors_from_answer({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [2.0, 1.0]}]},
                            2, "x")
    with pytest.raises(EmbeddingError, match="NaN or infinite"):
        vectors_from_answer({"data": [{"index": 0, "embedding": [float("nan")]}]}, 1, "x")
