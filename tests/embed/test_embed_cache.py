"""The embedding cache and the embedder over it: a text is embedded once per model and prompt, a rerun asks
the model nothing, and vectors come out as unit vectors in the order asked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fake_embeddings import ToyBackend, toy_vector
from klue.embed.base import EmbeddingError
from klue.embed.cache import EmbeddingCache, embedding_key
from klue.embed.embedder import Embedder


def test_keys_cover_the_model_the_prompt_and_the_text() -> None:
    key = embedding_key("m", "query: ", "a")
    assert len({key, embedding_key("n", "query: ", "a"), embedding_key("m", "", "a"),
                embedding_key("m", "query: ", "b"), embedding_key("m", "query:", " a")}) == 5
    assert key == embedding_key("m", "query: ", "a")


def test_vectors_survive_a_reopen_bit_for_bit(tmp_path: Path) -> None:
    vectors = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    cache.put_many(["a", "b", "c"], vectors)
    cache.close()
    again = EmbeddingCache(tmp_path / "c.sqlite")
    found = again.get_many(["c", "a", "missing"])
    assert set(found) == {"a", "c"} and len(again) == 3
    np.testing.assert_array_equal(found["c"], vectors[2])


def test_not_a_cache_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "c.sqlite").write_text("not sqlite at all " * 100)
    with pytest.raises(Exception, match="not a usable embedding cache"):
        EmbeddingCache(tmp_path / "c.sqlite")


def test_each_distinct_text_is_embedded_once_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    backend = ToyBackend()
    texts = ["가나다", "라마", "가나다", "바사아", "라마"]
    first = Embedder(backend, EmbeddingCache(tmp_path / "c.sqlite"), "query: ", progress=False, chunk=2)
    vectors = first.embed(texts)
    assert backend.asked == ["query: 가나다", "query: 라마", "query: 바사아"]
    expected = np.stack([toy_vector("query: " + t) for t in texts])
    np.testing.assert_allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True), rtol=1e-6)
    assert (first.stats.texts, first.stats.embedded, first.stats.cache_hits) == (3, 3, 0)

    backend.asked.clear()
    second = Embedder(backend, EmbeddingCache(tmp_path / "c.sqlite"), "query: ", progress=False)
    np.testing.assert_array_equal(second.embed(texts), vectors)
    assert backend.asked == [] and (second.stats.cache_hits, second.stats.embedded) == (3, 0)
    # another prompt or another model is another key
    Embedder(backend, EmbeddingCache(tmp_path / "c.sqlite"), "", progress=False).embed(["라마"])
    Embedder(ToyBackend("toy-2"), EmbeddingCache(tmp_path / "c.sqlite"), "query: ", progress=False).embed(["라마"])
    assert backend.asked == ["라마"]


def test_an_interrupted_run_keeps_the_chunks_it_finished(tmp_path: Path) -> None:
    class FailsLate(ToyBackend):
        def embed(self, texts, prompt):  # type: ignore[no-untyped-def]
            if len(self.asked) >= 4:
                raise EmbeddingError("the server went away")
            return super().embed(texts, prompt)

    with pytest.raises(EmbeddingError):
        Embedder(FailsLate(), EmbeddingCache(tmp_path / "c.sqlite"), "", progress=False, chunk=2).embed(
            [f"t{i}" for i in range(7)])
    resumed = ToyBackend()
    Embedder(resumed, EmbeddingCache(tmp_path / "c.sqlite"), "", progress=False, chunk=2).embed(
        [f"t{i}" for i in range(7)])
    assert resumed.asked == ["t4", "t5", "t6"]


def test_the_model_s_own_prompt_is_the_default(tmp_path: Path) -> None:
    backend = ToyBackend()
    backend.default_prompt = "passage: "
    assert Embedder(backend, EmbeddingCache(tmp_path / "c.sqlite"), progress=False).prompt == "passage: "
    assert Embedder(backend, EmbeddingCache(tmp_path / "c.sqlite"), "", progress=False).prompt == ""


def test_an_all_zero_vector_is_refused(tmp_path: Path) -> None:
    class Zero(ToyBackend):
        def embed(self, texts, prompt):  # type: ignore[no-untyped-def]
            return np.zeros((len(texts), 4), dtype=np.float32)

    with pytest.raises(EmbeddingError, match="all-zero"):
        Embedder(Zero(), EmbeddingCache(tmp_path / "c.sqlite"), progress=False).embed(["a"])
