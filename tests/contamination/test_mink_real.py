"""Min-K% and Min-K%++ on the real SmolLM2-135M-Instruct (its GGUF, in process): the backend's token scores
against the model's own forward pass, and natural Korean text scored as more familiar than the same
characters shuffled. Skipped where the model is not on this machine."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from klue.contamination import mink
from klue.contamination.mink import Sample, TaskInput
from klue.llm.backends.base import TokenScoresRequest
from real_models import smollm2_gguf, smollm2_in_process

SENTENCES = ["흡연자분들은 발코니가 있는 방이면 발코니에서 흡연이 가능합니다.",
             "서울은 대한민국의 수도이며 가장 큰 도시이다.",
             "오늘은 날씨가 맑아서 공원에 산책을 나온 사람들이 많았다.",
             "정부는 내년 예산안을 국회에 제출했다고 밝혔다.",
             "이 영화는 배우들의 연기가 훌륭해서 다시 보고 싶다.",
             "학생들은 시험이 끝나자 운동장으로 뛰어나갔다."]


@pytest.fixture(scope="module")
def smollm2() -> Path:
    path, why = smollm2_gguf()
    if path is None:
        pytest.skip(why)
    pytest.importorskip("gguf", reason="hf:FILE.gguf needs the gguf package: pip install gguf")
    return path


@pytest.mark.slow
@pytest.mark.longest
def test_smollm2_token_scores_and_familiar_text(smollm2: Path, tmp_path: Path) -> None:
    import torch

    backend = smollm2_in_process()  # the process's one load of it (tests/real_models.py), batches of 8
    [first] = backend.token_scores([TokenScoresRequest(SENTENCES[0], distribution=True)])
    ids = backend.tokenizer(SENTENCES[0], return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        logprobs = torch.log_softmax(backend.lm(ids).logits[0, :-1].double(), dim=-1)
    assert np.allclose(first.logprobs, logprobs.gather(-1, ids[0, 1:, None])[:, 0].numpy(), atol=1e-3)
    assert first.means is not None and np.allclose(first.means, (logprobs.exp() * logprobs).sum(-1).numpy(), atol=1e-3)

    rng = random.Random(0)
    shuffled = ["".join(rng.sample(s, len(s))) for s in SENTENCES]
    samples = [Sample(f"s{i}", t) for i, t in enumerate(SENTENCES)] + [Sample(f"x{i}", t) for i, t in enumerate(shuffled)]
    summary = mink.run_mink(backend, f"hf:{smollm2}", {"sts": TaskInput(("sentence1",), samples)}, tmp_path,
                            members={f"s{i}" for i in range(len(SENTENCES))}, n_resamples=50, progress=False)
    auroc = summary["tasks"]["sts"]["auroc"]
    # the model has read text like these sentences, never their characters shuffled: every score leans the right
    # way, and the loss (every token counts) tells the two apart
    for name in ("min_k_20", "min_kpp_20", "loss", "zlib"):
        assert auroc[name]["auroc"] > 0.5, (name, auroc[name])
    assert auroc["loss"]["auroc"] >= 0.9, auroc["loss"]
