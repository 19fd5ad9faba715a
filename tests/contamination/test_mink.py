"""Min-K% Prob, Min-K%++, loss and zlib (klue.contamination.mink): the scores against hand computations, the
in-process backend's token scores against the model's own forward pass, AUROC against a member list."""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from klue.contamination import mink
from klue.contamination.mink import Sample, TaskInput
from klue.errors import DataError
from klue.llm.backends.base import BackendBase, Capabilities, TokenScoresRequest, TokenScoresResult, Usage

TEXTS = ["전제 문장은 여기에 있습니다.", "가설은 짧다.", "서울은 대한민국의 수도이다.", "오늘 날씨가 맑고 바람이 분다.",
         "한국어 자연어 이해 평가 데이터셋", "이 영화는 정말 재미있었다.", "국회는 법안을 통과시켰다.", "a"]


class KnownBackend(BackendBase):
    """Hands back fixed token log-probabilities (and moments) per text: the scores are then known by hand."""

    name = "known"

    def __init__(self, table: dict[str, TokenScoresResult]) -> None:
        self.table = table
        self.model = "known"
        self.fingerprint = "known:1"
        self.capabilities = Capabilities(loglik=False)
        self.usage = Usage()

    @property
    def gives_token_scores(self) -> bool:
        return True

    @property
    def gives_distributions(self) -> bool:
        return True

    def token_scores(self, requests: Any, on_result: Any = None) -> list[TokenScoresResult]:
        self.usage.requests += len(requests)
        out = []
        for r in requests:
            result = self.table[r.text]
            out.append(result if r.distribution else TokenScoresResult(result.logprobs))
        return out


def test_lowest_share_mean_by_hand() -> None:
    values = [-0.5, -4.0, -1.0, -3.0, -0.1, -2.0, -6.0, -0.2, -0.3, -0.4]
    # 20% of 10 tokens: the 2 lowest, -6 and -4
    assert mink.lowest_share_mean(values, 0.2) == pytest.approx(-5.0)
    # 30% of 10: 3 (not 2, as 0.3 * 10 is 3.0000000000000004 in floats... or 2.9999 for other k)
    assert mink.lowest_share_mean(values, 0.3) == pytest.approx((-6 - 4 - 3) / 3)
    assert mink.lowest_share_mean(values, 0.29) == pytest.approx(-5.0)  # floor(2.9) = 2
    # fewer tokens than 1/k: still one token, the lowest
    assert mink.lowest_share_mean([-1.0, -2.0, -0.5], 0.2) == pytest.approx(-2.0)
    assert mink.lowest_share_mean(values, 1.0) == pytest.approx(np.mean(values))
    assert mink.lowest_share_mean([], 0.2) is None


def test_example_scores_by_hand() -> None:
    logprobs = (-1.0, -5.0, -0.5, -2.0, -3.0)
    means = (-2.0, -2.0, -1.0, -1.0, -4.0)
    variances = (4.0, 1.0, 0.25, 1.0, 4.0)
    text = "서울은 대한민국의 수도이다."
    scored = mink.example_scores(Sample("g1", text), TokenScoresResult(logprobs, means, variances), (0.2, 0.4), True)
    # standardised: (-1+2)/2 = 0.5, (-5+2)/1 = -3, (-0.5+1)/0.5 = 1, (-2+1)/1 = -1, (-3+4)/2 = 0.5
    assert scored.scores["min_kpp_20"] == pytest.approx(-3.0)  # floor(0.2 * 5) = 1: the lowest
    assert scored.scores["min_kpp_40"] == pytest.approx((-3.0 - 1.0) / 2)
    assert scored.scores["min_k_20"] == pytest.approx(-5.0)
    assert scored.scores["min_k_40"] == pytest.approx((-5.0 - 3.0) / 2)
    loss = (1.0 + 5.0 + 0.5 + 2.0 + 3.0) / 5
    assert scored.scores["loss"] == pytest.approx(loss)
    packed = len(zlib.compress(text.encode("utf-8")))
    assert scored.zlib_bytes == packed
    assert scored.scores["zlib"] == pytest.approx(loss / packed)
    assert scored.n_tokens == 5


def test_min_kpp_normalisation_orders_unlike_min_k() -> None:
    """Min-K%++ standardises by the distribution: a low log-prob where every token is unlikely (a flat
    distribution) is unremarkable, the same log-prob where the model was sure of another token is not."""
    flat = TokenScoresResult((-8.0,), (-8.0,), (0.01,))  # log p = the mean: z = 0
    peaked = TokenScoresResult((-8.0,), (-0.1,), (1.0,))  # far below the mean: z = -7.9
    a = mink.example_scores(Sample("a", "x"), flat, (0.2,), True).scores
    b = mink.example_scores(Sample("b", "y"), peaked, (0.2,), True).scores
    assert a["min_k_20"] == b["min_k_20"]
    assert a["min_kpp_20"] == pytest.approx(0.0)
    assert b["min_kpp_20"] == pytest.approx(-7.9)
    # a certain position (no spread) whose token is the certain one scores 0, not NaN
    sure = TokenScoresResult((0.0,), (0.0,), (0.0,))
    assert mink.example_scores(Sample("c", "z"), sure, (0.2,), True).scores["min_kpp_20"] == 0.0


def test_auroc_by_hand_and_direction() -> None:
    scores = [0.9, 0.8, 0.4, 0.7, 0.2, 0.1]
    members = [True, True, True, False, False, False]
    groups = [str(i) for i in range(6)]
    # pairs (member, non-member) ordered right: 0.9, 0.8 beat all three; 0.4 beats 0.2 and 0.1: 8 of 9
    found = mink.auroc(scores, members, groups, True, n_resamples=200)
    assert found is not None
    assert found.value == pytest.approx(8 / 9)
    assert found.low <= found.value <= found.high
    assert (found.n_members, found.n_non_members) == (3, 3)
    flipped = mink.auroc(scores, members, groups, False, n_resamples=0)
    assert flipped is not None and flipped.value == pytest.approx(1 / 9)
    assert mink.auroc(scores, [True] * 6, groups, True) is None


def test_weighted_auroc_is_sklearns() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    scores = np.round(rng.normal(size=40), 1)  # rounded: ties between members and non-members
    labels = rng.random(40) < 0.4
    weights = rng.integers(0, 3, size=(5, 40)).astype(float)
    ours = mink.weighted_auroc(scores, labels, weights)
    for row, value in zip(weights, ours):
        assert value == pytest.approx(roc_auc_score(labels, scores, sample_weight=row))
    assert np.isnan(mink.weighted_auroc(scores, labels, np.where(labels, 0.0, 1.0)[None, :]))[0]


def test_auroc_resamples_groups_together() -> None:
    """Examples sharing a group are drawn together: with two groups, each holding one member and one
    non-member ordered alike, every resample gives the same AUROC."""
    found = mink.auroc([0.9, 0.1, 0.8, 0.2], [True, False, True, False], ["p", "p", "q", "q"], True, n_resamples=100)
    assert found is not None and found.value == 1.0 and found.low == found.high == 1.0


def _known_table(rng: np.random.Generator, member_texts: set[str]) -> dict[str, TokenScoresResult]:
    table = {}
    for text in TEXTS:
        n = 6
        shift = 1.5 if text in member_texts else 0.0  # members: higher log-probs
        logprobs = tuple(float(v) for v in -rng.uniform(0.5, 4.0, n) + shift)
        table[text] = TokenScoresResult(logprobs, tuple(v - 0.5 for v in logprobs), tuple([1.0] * n))
    return table


def test_run_writes_examples_summary_and_auroc(tmp_path: Path) -> None:
    members = {"nli-0", "nli-1", "nli-2", "nli-3"}
    samples = [Sample(f"nli-{i}", t, f"g{i}") for i, t in enumerate(TEXTS)]
    table = _known_table(np.random.default_rng(0), {TEXTS[i] for i in range(4)})
    summary = mink.run_mink(KnownBackend(table), "known:1", {"nli": TaskInput(("premise", "hypothesis"), samples)},
                            tmp_path, (0.2, 0.5), members | {"elsewhere-9"}, n_resamples=50, progress=False)
    rows = [json.loads(line) for line in (tmp_path / "nli" / "examples.jsonl").read_text().splitlines()]
    assert [r["guid"] for r in rows] == [s.guid for s in samples]
    assert [r["member"] for r in rows] == [True] * 4 + [False] * 4
    assert rows[0]["scores"]["min_k_20"] == pytest.approx(min(table[TEXTS[0]].logprobs))
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    task = on_disk["tasks"]["nli"]
    assert task["fields"] == ["premise", "hypothesis"] and task["n_members"] == 4
    assert set(task["auroc"]) == {"min_k_20", "min_k_50", "min_kpp_20", "min_kpp_50", "loss", "zlib"}
    # the members' log-probs are shifted up by 1.5 over a spread of 3.5: loss separates them perfectly here
    assert task["auroc"]["loss"]["auroc"] == 1.0
    assert on_disk["members_not_found"] == {"count": 1, "first": ["elsewhere-9"]}
    assert "Weak evidence" in on_disk["caveat"]
    assert (tmp_path / mink.CACHE_FILE).is_file()


def test_run_without_members_gives_distributions_only(tmp_path: Path) -> None:
    samples = [Sample(f"g{i}", t) for i, t in enumerate(TEXTS)]
    backend = KnownBackend(_known_table(np.random.default_rng(1), set()))
    summary = mink.run_mink(backend, "known:1", {"ynat": TaskInput(("title",), samples)}, tmp_path, progress=False)
    task = summary["tasks"]["ynat"]
    assert "auroc" not in task and "members_not_found" not in summary
    losses = [json.loads(line)["scores"]["loss"] for line in (tmp_path / "ynat" / "examples.jsonl").open()]
    assert task["distribution"]["loss"]["mean"] == pytest.approx(np.mean(losses))
    assert task["distribution"]["loss"]["p50"] == pytest.approx(np.median(losses))
    # a rerun asks the model nothing: every answer comes from the request cache
    again = KnownBackend(backend.table)
    mink.run_mink(again, "known:1", {"ynat": TaskInput(("title",), samples)}, tmp_path, progress=False)
    assert again.usage.requests == 0 and again.usage.cache_hits == len(samples)


def test_bad_input_is_refused(tmp_path: Path) -> None:
    backend = KnownBackend(_known_table(np.random.default_rng(2), set()))
    samples = {"nli": TaskInput(("premise",), [Sample("a", TEXTS[0])])}
    with pytest.raises(DataError, match="shares in"):
        mink.run_mink(backend, "known:1", samples, tmp_path / "k", (20.0,), progress=False)
    with pytest.raises(DataError, match="none of its 1 guids"):
        mink.run_mink(backend, "known:1", samples, tmp_path / "m", members={"zzz"}, progress=False)
    assert not (tmp_path / "m" / "summary.json").exists()
    empty = tmp_path / "members.txt"
    empty.write_text("# nothing\n\n")
    with pytest.raises(DataError, match="no guid"):
        mink.read_members(empty)


# ---------------------------------------------------------------------------------- the in-process backend


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from klue.models.tiny import make_tiny_llama_dir

    return make_tiny_llama_dir(tmp_path_factory.mktemp("llama"), TEXTS * 20, vocab_size=400)


@pytest.mark.slow
@pytest.mark.longest  # builds the tiny Llama (module fixture): 10-50 s on a shared machine
def test_hf_token_scores_match_the_forward_pass(tiny_llama: Path) -> None:
    import torch

    from klue.llm.backends.hf import HfBackend

    backend = HfBackend(str(tiny_llama), cpu=True, batch_size=3)
    results = backend.token_scores([TokenScoresRequest(t, distribution=True) for t in TEXTS])
    for text, result in zip(TEXTS, results):
        ids = backend.tokenizer(text, return_tensors="pt")["input_ids"]  # with its BOS
        with torch.inference_mode():
            logprobs = torch.log_softmax(backend.lm(ids).logits[0, :-1].double(), dim=-1)
        target = ids[0, 1:]
        assert len(result.logprobs) == len(target)  # with a BOS every text token is scored
        assert np.allclose(result.logprobs, logprobs.gather(-1, target[:, None])[:, 0].numpy(), atol=1e-4)
        probs = logprobs.exp()
        mean = (probs * logprobs).sum(-1)
        variance = (probs * (logprobs - mean[:, None]) ** 2).sum(-1)
        assert result.means is not None and result.variances is not None
        assert np.allclose(result.means, mean.numpy(), atol=1e-4)
        assert np.allclose(result.variances, variance.numpy(), rtol=1e-3, atol=1e-4)
    plain = backend.token_scores([TokenScoresRequest(TEXTS[0])])[0]
    assert plain.means is None and np.allclose(plain.logprobs, results[0].logprobs, atol=1e-5)


@pytest.mark.slow
def test_hf_run_through_the_cache(tiny_llama: Path, tmp_path: Path) -> None:
    from klue.llm.backends.hf import HfBackend

    samples = [Sample(f"s{i}", t, f"s{i}") for i, t in enumerate(TEXTS)]
    summary = mink.run_mink(HfBackend(str(tiny_llama), cpu=True), f"hf:{tiny_llama}",
                            {"sts": TaskInput(("sentence1", "sentence2"), samples)}, tmp_path, members={"s0", "s1", "s2"},
                            n_resamples=20, progress=False)
    assert summary["min_kpp"] is True
    auroc = summary["tasks"]["sts"]["auroc"]["min_kpp_20"]
    assert auroc is not None and 0.0 <= auroc["auroc"] <= 1.0 and auroc["n_members"] == 3
    rows = [json.loads(line) for line in (tmp_path / "sts" / "examples.jsonl").open()]
    assert all(math.isfinite(r["scores"]["min_kpp_20"]) for r in rows)


@pytest.mark.slow
def test_cli_mink_on_a_file_with_members(tiny_llama: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from klue.cli import app

    rows = [{"guid": f"klue-nli-v1_dev_{i:05d}", "source": "wikipedia", "premise": TEXTS[i % 4],
             "hypothesis": TEXTS[4 + i % 4], "gold_label": "neutral", "author": "neutral", "label2": "neutral",
             "label3": "neutral", "label4": "neutral", "label5": "neutral"} for i in range(6)]
    eval_file = tmp_path / "nli_dev.json"
    eval_file.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    members = tmp_path / "members.txt"
    members.write_text("# trained on\nklue-nli-v1_dev_00000\nklue-nli-v1_dev_00001\n", encoding="utf-8")
    out = tmp_path / "out"
    done = CliRunner().invoke(app, ["contamination", "mink", "--model", f"hf:{tiny_llama}", "--tasks", "nli",
                                    "--eval", str(eval_file), "--members", str(members), "--k", "0.1", "--k", "0.5",
                                    "--out", str(out), "--cpu", "--resamples", "20"])
    assert done.exit_code == 0, done.output
    summary = json.loads((out / "summary.json").read_text())
    task = summary["tasks"]["nli"]
    assert task["fields"] == ["premise", "hypothesis"] and task["n_members"] == 2 and task["n_examples"] == 6
    assert set(task["auroc"]) == {"min_k_10", "min_k_50", "min_kpp_10", "min_kpp_50", "loss", "zlib"}
    assert "AUROC" in done.output
    rows_out = [json.loads(line) for line in (out / "nli" / "examples.jsonl").open()]
    assert [r["member"] for r in rows_out] == [True, True, False, False, False, False]
    # the text scored is the premise and the hypothesis joined by a newline
    backend_text = f"{TEXTS[0]}\n{TEXTS[4]}"
    assert rows_out[0]["zlib_bytes"] == len(zlib.compress(backend_text.encode("utf-8")))
    empty = CliRunner().invoke(app, ["contamination", "mink", "--model", f"hf:{tiny_llama}", "--tasks", "all",
                                     "--out", str(tmp_path / "none"), "--data-dir", str(tmp_path / "nothing")])
    assert isinstance(empty.exception, DataError) and "no task's examples are here" in str(empty.exception)
