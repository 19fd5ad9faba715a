"""klue llm on a real instruct model, SmolLM2-135M-Instruct (Q4_1 GGUF, from ../shared/tools/real_models.py):
in process through `hf:FILE.gguf` (NLI by log-likelihood) and behind a real llama-cpp-python server (YNAT,
where the server's echoed log-probs are shifted by one token for this BOS-less model: the probe names the
cause and the task generates instead). Two examples each, so the module stays within a few tens of seconds
on 2 cores; skipped, with the reason, where the model or llama-cpp-python is absent."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.llm.run import LlmSettings, run
from klue.scoring import RunRequest
from real_models import smollm2_gguf, smollm2_in_process


@pytest.fixture(scope="module")
def smollm2() -> Path:
    path, why = smollm2_gguf()
    if path is None:
        pytest.skip(why)
    return path


SETTINGS = LlmSettings(limit=2, shots=0, progress=False)


@pytest.mark.longest
def test_smollm2_gguf_in_process_scores_nli_by_log_likelihood(smollm2: Path, protocol_slice: Any,
                                                             tmp_path: Path) -> None:
    pytest.importorskip("gguf", reason="hf:FILE.gguf needs the gguf package: pip install gguf")
    backend = smollm2_in_process()  # dequantised to float32, kept in memory (never saved)
    assert backend.fingerprint.startswith("sha256:") and backend.capabilities.chat
    results = run(RunRequest(registry.get("nli"), f"hf:{smollm2}", protocol_slice("nli", 6, 2), 1, tmp_path), settings=SETTINGS,
                  backend=backend)
    assert results.llm is not None and results.llm.mode == "loglik"
    outputs = [json.loads(line) for line in (tmp_path / "llm_outputs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(outputs) == 2
    for output in outputs:  # three finite, different choice log-likelihoods: a real model, not a uniform one
        logprobs = output["raw"]["logprobs"]
        assert len(logprobs) == 3 and all(math.isfinite(v) and v < 0 for v in logprobs) and len(set(logprobs)) == 3


@pytest.fixture(scope="module")
def smollm2_server(smollm2: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = [name for name, module in (("llama-cpp-python[server]", "llama_cpp"), ("uvicorn", "uvicorn"),
                                         ("httpx", "httpx")) if find_spec(module) is None]
    if missing:
        pytest.skip(f"the real-server test needs {', '.join(missing)}: pip install --find-links ../shared/wheels "
                    "'llama-cpp-python[server]==0.3.36'")
    from llama_server import LlamaServer

    server = LlamaServer.start(smollm2, tmp_path_factory.mktemp("smol-server") / "server.log", n_ctx=2048)
    yield server.url
    server.stop()


@pytest.mark.slow  # a real llama-cpp-python server and model: about 11 CPU s
def test_smollm2_behind_llama_cpp_python_names_the_echo_shift_and_generates(smollm2_server: str, protocol_slice: Any,
                                                                            tmp_path: Path) -> None:
    from klue.llm.backends.openai import OpenAIBackend

    backend = OpenAIBackend("smol", smollm2_server, api_key_env=None)
    caps = backend.capabilities
    assert not caps.loglik and "shifted by one token" in caps.loglik_why_not, caps.notes
    results = run(RunRequest(registry.get("ynat"), f"openai:smol@{smollm2_server}", protocol_slice("ynat", 8, 2), 1, tmp_path),
                  settings=SETTINGS, backend=backend)
    summary = results.llm
    assert summary is not None and summary.mode == "generate"
    assert any("shifted by one token" in n and "instead of log-likelihood" in n for n in summary.notes)
    outputs = [json.loads(line) for line in (tmp_path / "llm_outputs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(outputs) == 2 and all(o["raw"]["constrained"] for o in outputs)  # GBNF: one of the topic words
