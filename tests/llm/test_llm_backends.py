"""The backend registry (klue.llm.backends.KINDS): a spec goes to the backend of its prefix, an unknown
prefix is refused with the known ones, and a new backend is one module plus one registry line, run end to
end by `klue llm` (tests/llm/fake_backend.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from klue import families
from klue.cli import app
from klue.errors import DataError
from klue.llm import backends
from klue.llm.backends import BackendKind
from klue.llm.backends.base import BackendBase, BackendError
from klue.llm.spec import parse_spec
from klue.results import ENCODER, LLM, read_results

FAKE = BackendKind("fake:", "fake:WORD", "a test backend that always answers WORD", "fake_backend",
                   uses_gpu=False, install="nothing")


@pytest.fixture
def fake_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry with one more line, as adding a backend would write it."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    monkeypatch.setattr(backends, "KINDS", (*backends.KINDS, FAKE))


def test_specs_go_to_the_backend_of_their_prefix() -> None:
    hf = parse_spec("hf: org/model ")
    assert (hf.kind.name, hf.target, str(hf)) == ("hf", "org/model", "hf:org/model")
    openai = parse_spec("openai:qwen@http://127.0.0.1:8000/v1")
    assert (openai.kind.name, openai.kind.uses_gpu, hf.kind.uses_gpu) == ("openai", False, True)
    with pytest.raises(DataError, match="openai:MODEL@http://HOST:PORT/v1"):
        parse_spec("openai:qwen")  # no URL: the backend's own check


@pytest.mark.parametrize("spec", ["vllm:qwen", "gpt-4", "hf:", "fake:x"])
def test_an_unknown_prefix_names_every_known_kind(spec: str) -> None:
    with pytest.raises(DataError) as refused:
        parse_spec(spec)
    assert all(kind.form in str(refused.value) for kind in backends.KINDS)
    assert "fake:WORD" not in str(refused.value)


def test_backends_declare_what_callers_use() -> None:
    from klue.llm.backends.hf import HfBackend
    from klue.llm.backends.openai import OpenAIBackend

    assert HfBackend.renders_chat and not HfBackend.streams_results
    assert OpenAIBackend.streams_results and not OpenAIBackend.renders_chat
    server = OpenAIBackend("m", "http://127.0.0.1:9", probe=False)
    with pytest.raises(BackendError, match="--form completion"):
        server.chat_prompt((("user", "안녕"),))
    assert issubclass(HfBackend, BackendBase) and issubclass(OpenAIBackend, BackendBase)


def test_a_registered_backend_is_an_llm_family_spec(fake_registered: None) -> None:
    assert families.family_of("fake:모순").name == LLM
    assert not families.uses_gpu("fake:모순")
    with pytest.raises(DataError, match="no spaces"):
        families.family_of("fake:a b").check("fake:a b")


def test_without_its_registry_line_a_prefix_is_an_encoder_name() -> None:
    assert families.family_of("fake:모순").name == ENCODER


def _nli_tsv(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("sentence1\tsentence2\tgold_label\n" + "".join(f"{p}\t{h}\t{g}\n" for p, h, g in rows),
                    encoding="utf-8")
    return path


def test_a_new_backend_runs_klue_llm_end_to_end(fake_registered: None, tmp_path: Path) -> None:
    labels = ["entailment", "contradiction", "neutral", "contradiction", "entailment", "contradiction"]
    train = _nli_tsv(tmp_path / "train.tsv", [(f"전제 {i}", f"가설 {i}", labels[i % 3]) for i in range(6)])
    gold = [labels[i] for i in range(6)]
    evaluated = _nli_tsv(tmp_path / "eval.tsv", [(f"평가 전제 {i}", f"평가 가설 {i}", g) for i, g in enumerate(gold)])
    selection = _nli_tsv(tmp_path / "selection.tsv", [("선택 전제", "선택 가설", "neutral")])
    out = tmp_path / "bench"
    run = CliRunner().invoke(app, ["llm", "--model", "fake:모순", "--tasks", "nli", "--shots", "1", "--out", str(out),
                                   "--jobs", "0", "--train", str(train), "--eval", str(evaluated), "--selection",
                                   str(selection)])
    assert run.exit_code == 0, run.output
    [cell] = [p.parent for p in out.rglob("results.json")]
    results = read_results(cell / "results.json")
    assert results.status == "ok" and results.model == "fake:모순" and results.model_family == LLM
    assert results.protocol == "files" and results.llm is not None
    assert (results.llm.backend, results.llm.model_fingerprint, results.llm.mode) == ("fake", "fake-word:모순",
                                                                                     "loglik")
    predictions = [json.loads(line) for line in (cell / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(predictions) == len(gold) and {p["label"] for p in predictions} == {"contradiction"}
    assert results.scores["accuracy"] == pytest.approx(100 * gold.count("contradiction") / len(gold))


def test_hf_takes_a_gguf_file_in_process(tmp_path: Path) -> None:
    """`hf:FILE.gguf`: transformers' GGUF support (weights and tokenizer from the one file), kept in memory."""
    pytest.importorskip("gguf", reason="hf:FILE.gguf needs the gguf package: pip install gguf")
    pytest.importorskip("torch", reason="the in-process backend needs torch")
    import hashlib
    import math

    from gguf_model import write_tiny_llama

    from klue.llm.backends.base import LoglikRequest
    from klue.llm.backends.hf import HfBackend

    path = write_tiny_llama(tmp_path / "tiny.gguf")
    backend = HfBackend(str(path), cpu=True)
    assert backend.fingerprint == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert backend.context_length == 512 and backend.capabilities.chat  # from the GGUF's metadata and template
    assert backend.tokenizer("a b", add_special_tokens=True)["input_ids"][:1] == [1]  # its own <s>
    [yes, no] = backend.loglik([LoglikRequest("질문: a b 답:", " yes"), LoglikRequest("질문: a b 답:", " no")])
    assert math.isfinite(yes.logprob) and math.isfinite(no.logprob) and yes.logprob != no.logprob
