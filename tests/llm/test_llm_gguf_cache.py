"""`hf:FILE.gguf` converted once (klue.llm.backends.gguf_cache): the second load reads the cache's folder and
the backend answers exactly as it did from the GGUF file; `KLUE_GGUF_CACHE=off` writes nothing; a damaged copy
is named, never silently replaced. On the tiny llama GGUF of tests/llm/gguf_model.py; the real SmolLM2's copy
is what tests/llm/test_llm_real.py and tests/contamination/test_mink_real.py load."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gguf", reason="hf:FILE.gguf needs the gguf package: pip install gguf")
pytest.importorskip("torch", reason="the in-process backend needs torch")

from gguf_model import write_tiny_llama

from klue.llm.backends import gguf_cache
from klue.llm.backends.base import BackendError, GenerateRequest, LoglikRequest, TokenScoresRequest
from klue.llm.backends.hf import HfBackend

PROMPT = "질문: 한국어 문장 a b 답:"


def answers(backend: HfBackend) -> tuple[object, ...]:
    """Everything a run reads from the backend, on one prompt."""
    loglik = backend.loglik([LoglikRequest(PROMPT, " yes"), LoglikRequest(PROMPT, " no"), LoglikRequest(PROMPT, " 긍정")])
    scores = backend.token_scores([TokenScoresRequest(PROMPT + " 부정", distribution=True)])
    generated = backend.generate([GenerateRequest(prompt=PROMPT, max_new_tokens=6)])
    chat = backend.chat_prompt([("user", "a b")])
    return (tuple(loglik), tuple(scores), tuple(r.text for r in generated), chat, backend.fingerprint,
            backend.context_length, backend.count_tokens([PROMPT]), backend.tokenizer.pad_token_id)


def test_the_second_load_reads_the_converted_copy_and_answers_the_same(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gguf_cache.CACHE_ENV, str(tmp_path / "cache"))
    path = write_tiny_llama(tmp_path / "tiny.gguf")
    first = HfBackend(str(path), cpu=True)
    [copy] = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    assert (copy / gguf_cache.COMPLETE).is_file() and (copy / gguf_cache.WEIGHTS).is_file()
    assert copy.name.startswith(first.fingerprint.removeprefix("sha256:"))  # keyed by the file's content
    written = {p.name: p.stat().st_mtime_ns for p in copy.iterdir()}
    second = HfBackend(str(path), cpu=True)
    assert {p.name: p.stat().st_mtime_ns for p in copy.iterdir()} == written  # read, not written again
    assert answers(second) == answers(first)
    # The same figures as transformers' own load of the file, to the last bit (the copy's weights are moved out
    # of the memory-mapped file, whose alignment changes the CPU kernels' rounding).
    monkeypatch.setenv(gguf_cache.CACHE_ENV, "off")
    assert answers(HfBackend(str(path), cpu=True)) == answers(first)
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.is_dir()] == [copy.name]  # no scratch folder left


def test_off_reads_the_file_every_time_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gguf_cache.CACHE_ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # where the default folder would be
    path = write_tiny_llama(tmp_path / "tiny.gguf")
    tokenizer, model, where = gguf_cache.load(path, "0" * 64, {}, {})
    assert where == gguf_cache.Converted(None, written=False) and model.config.vocab_size == len(tokenizer)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.gguf"]


def test_a_damaged_copy_is_named_not_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gguf_cache.CACHE_ENV, str(tmp_path / "cache"))
    path = write_tiny_llama(tmp_path / "tiny.gguf")
    HfBackend(str(path), cpu=True)
    [copy] = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    (copy / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(BackendError, match="cannot be read.*delete that folder"):
        HfBackend(str(path), cpu=True)
    # A folder without the completion mark (a copy some other tool left half-made) is not overwritten either.
    (copy / gguf_cache.COMPLETE).unlink()
    with pytest.raises(BackendError, match="cannot keep its converted copy"):
        HfBackend(str(path), cpu=True)
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_dir() and p.name.startswith(".")]  # no scratch left


def test_two_loads_at_once_convert_the_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second load waits for the first one's copy (the file lock), then reads it: one conversion."""
    import threading

    monkeypatch.setenv(gguf_cache.CACHE_ENV, str(tmp_path / "cache"))
    path = write_tiny_llama(tmp_path / "tiny.gguf")
    convert, calls = gguf_cache._convert, []

    def counted(*args: object) -> None:
        calls.append(args[0])
        convert(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(gguf_cache, "_convert", counted)
    results: list[gguf_cache.Converted] = []
    threads = [threading.Thread(target=lambda: results.append(gguf_cache.load(path, "1" * 64, {}, {})[2]))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and sorted(r.written for r in results) == [False, True]
