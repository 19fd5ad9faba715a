"""`klue llm` end to end with a tiny random-weight Llama in process: all 8 tasks, zero- and few-shot, both
modes where they apply; the written predictions score as the results say; shots come from the training part
only; a rerun asks the model nothing; a --limit run is partial and never ranked."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from cli_in_process import Done, klue_in_process
from klue import registry
from klue.io.locate import roots_from
from klue.results import read_results

LIMIT = 4


def klue(*args: str) -> Done:
    """In this process: the subject is `klue llm`'s cells and files, and a subprocess would import torch and
    transformers again for each of the file's eight commands."""
    return klue_in_process(*args)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path) -> Path:
    from klue.models.tiny import make_tiny_llama_dir

    rows = json.loads((klue_data_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    return make_tiny_llama_dir(tmp_path_factory.mktemp("llama"), [r["premise"] for r in rows[:300]])


def cells(out: Path) -> dict[str, Path]:
    return {p.parts[-4]: p.parent for p in out.rglob("results.json")}


def rescored(task_name: str, cell: Path, data_dir: Path, extra: Path, protocol_slice: Any) -> dict[str, float]:
    """The cell's predictions.jsonl scored again as `klue score` scores a file, against the same examples: the
    protocol's data resolved by the session's `protocol_slice` (tests/conftest.py), read once per session."""
    from klue.benchmark.cells import choose_protocol
    from klue.scoring import score_predictions

    task = registry.get(task_name)
    results = read_results(cell / "results.json")
    roots = roots_from(str(data_dir), str(extra))
    data = protocol_slice(task_name, 0, results.n_eval, choose_protocol(task, results.protocol, roots))
    report = score_predictions(task, list(data.eval), cell / "predictions.jsonl", results.metric_mode)
    return {k: float(v) for k, v in report.report.scores.items()}


@pytest.mark.longest
@pytest.mark.slow
@pytest.mark.realdata
@pytest.mark.parametrize("shots", [0, 1])
def test_all_tasks_end_to_end(shots: int, tiny_llama: Path, klue_data_dir: Path, shared_data_dir: Path,
                              protocol_slice: Any, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    # few-shot on all 8 tasks; zero-shot on one task of each kind (label, span, structure), to keep the suite short
    tasks = "all" if shots else "nli,ner,dp"
    common = ["llm", "--model", f"hf:{tiny_llama}", "--limit", str(LIMIT), "--shots", str(shots), "--out", str(out),
              "--jobs", "0", "--data-dir", str(klue_data_dir), "--extra-data-dir", str(shared_data_dir)]
    args = [*common, "--tasks", tasks]
    run = klue(*args)
    assert run.returncode == 0, run.stderr[-4000:]
    found = cells(out)
    assert set(found) == ({t.name for t in registry.all_tasks()} if shots else {"nli", "ner", "dp"})
    for task_name, cell in found.items():
        results = read_results(cell / "results.json")
        assert results.status == "ok" and results.model_family == "llm" and results.partial
        assert results.llm is not None and results.llm.shots == shots and results.n_eval == LIMIT
        assert results.llm.prompt_version.startswith(task_name)
        expected_mode = registry.get(task_name).make_prompts(roots_from(str(klue_data_dir), str(shared_data_dir))).default_mode
        assert results.llm.mode == expected_mode
        assert rescored(task_name, cell, klue_data_dir, shared_data_dir, protocol_slice) == pytest.approx(
            results.scores, abs=1e-9)
        outputs = [json.loads(line) for line in (cell / "llm_outputs.jsonl").read_text(encoding="utf-8").splitlines()]
        assert len(outputs) == LIMIT and all(len(o["shots"]) == shots for o in outputs)
    if shots == 0:
        return
    # a rerun finds every cell done; a removed results.json is made again from the cache, asking nothing;
    # the same model beside a CPU baseline in one benchmark directory (one leaderboard)
    again = klue(*args)
    assert again.returncode == 0 and "already done" in again.stderr
    # the WoS baseline on its local protocol (the ten-dialogue sample), as the LLM's WoS cell: the same
    # leaderboard for a fraction of the CPU of any baseline that loads Kiwi (about 2.5 CPU-s against 7 for
    # the NLI one on 100 dev pairs, measured 2026-12-07)
    beside = klue("benchmark", "--model", "classic", "--tasks", "wos", "--out", str(out), "--jobs", "0",
                  "--data-dir", str(klue_data_dir), "--extra-data-dir", str(shared_data_dir))
    assert beside.returncode == 0, beside.stderr[-3000:]
    from klue.reporting.aggregate import load_aggregate

    assert {"classic", f"hf:{tiny_llama}"} <= {e.model for e in load_aggregate(out).entries}
    assert read_results(out / "wos" / "classic" / "seed1" / "results.json").protocol == read_results(
        found["wos"] / "results.json").protocol  # beside the LLM's cell, on the same examples
    nli = found["nli"]
    before = read_results(nli / "results.json")
    (nli / "results.json").unlink()
    assert klue(*common, "--tasks", "nli").returncode == 0
    after = read_results(nli / "results.json")
    assert after.scores == before.scores
    assert after.llm is not None and after.llm.usage["requests"] == 0 and after.llm.usage["cache_hits"] > 0


@pytest.mark.realdata
@pytest.mark.slow
def test_generate_mode_on_label_tasks_and_shots_from_training_only(tiny_llama: Path, klue_data_dir: Path,
                                                                  shared_data_dir: Path, tmp_path: Path) -> None:
    from klue.benchmark.cells import choose_protocol
    from klue.protocols import resolve

    out = tmp_path / "bench"
    run = klue("llm", "--model", f"hf:{tiny_llama}", "--tasks", "nli,re", "--mode", "generate", "--limit", "3",
               "--shots", "2", "--out", str(out), "--jobs", "0", "--data-dir", str(klue_data_dir),
               "--extra-data-dir", str(shared_data_dir))
    assert run.returncode == 0, run.stderr[-4000:]
    roots = roots_from(str(klue_data_dir), str(shared_data_dir))
    for task_name, cell in cells(out).items():
        results = read_results(cell / "results.json")
        assert results.llm is not None and results.llm.mode == "generate"
        assert 0 <= results.llm.parse_failure_rate <= 1
        task = registry.get(task_name)
        data = resolve(task, choose_protocol(task, results.protocol, roots), roots)
        train, evaluated = {task.guid(r) for r in data.train}, {task.guid(r) for r in data.eval}
        for line in (cell / "llm_outputs.jsonl").read_text(encoding="utf-8").splitlines():
            shots = json.loads(line)["shots"]
            assert len(shots) == 2 and set(shots) <= train and not set(shots) & evaluated
    re_results = read_results(cells(out)["re"] / "results.json")
    assert "auprc" not in re_results.scores and re_results.llm is not None
    assert re_results.llm.not_applicable == ["auprc"]  # AUPRC from generated names means nothing


@pytest.mark.realdata
@pytest.mark.slow
def test_chat_form_in_process(tiny_llama: Path, klue_data_dir: Path, shared_data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    run = klue("llm", "--model", f"hf:{tiny_llama}", "--tasks", "nli,dp", "--form", "chat", "--limit", "2",
               "--shots", "1", "--out", str(out), "--jobs", "0", "--data-dir", str(klue_data_dir),
               "--extra-data-dir", str(shared_data_dir))
    assert run.returncode == 0, run.stderr[-4000:]
    for cell in cells(out).values():
        results = read_results(cell / "results.json")
        assert results.llm is not None and results.llm.form == "chat"
        first = json.loads((cell / "llm_outputs.jsonl").read_text(encoding="utf-8").splitlines()[0])
        if results.llm.mode == "loglik":
            assert first["prompt"].startswith("<|system|>")  # the chat template, rendered in process
        else:
            assert [role for role, _ in first["prompt"]] == ["system", "user", "assistant", "user"]


def test_specs_and_modes_are_refused_clearly(tmp_path: Path) -> None:
    run = klue("llm", "--model", "gpt-4", "--out", str(tmp_path / "b"))
    assert run.returncode == 2 and "hf:NAME_OR_DIR" in run.stderr
    from klue.errors import DataError
    from klue.llm.run import choose_method

    prompts = registry.get("ner").make_prompts(None)
    with pytest.raises(DataError, match="no loglik method"):
        choose_method(prompts, "loglik", True, "ner")
    nli = registry.get("nli").make_prompts(None)
    assert choose_method(nli, "auto", False, "nli")[0] == "generate"  # no prompt log-probs: generate, and said
    with pytest.raises(DataError, match="needs prompt log-probabilities"):
        choose_method(nli, "loglik", False, "nli")


def test_a_partial_run_is_never_ranked(tmp_path: Path) -> None:
    import dataclasses
    import random

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reporting"))
    from report_fixtures import fixture_results

    from klue.reporting.aggregate import load_aggregate
    from klue.results import write_results

    for task in registry.all_tasks():
        results: Any = fixture_results(task, "hf:x", 1, True, random.Random(2))
        write_results(tmp_path / task.name / "hf-x" / "seed1" / "results.json",
                      dataclasses.replace(results, partial=task.name == "nli"))
    entry = next(e for e in load_aggregate(tmp_path).entries if e.model == "hf:x")
    assert entry.n_scored == len(registry.all_tasks()) and entry.klue_score is None and not entry.complete


@pytest.mark.parametrize("batch_size", [1, 3])
def test_batched_loglik_equals_a_full_forward(batch_size: int, tmp_path: Path) -> None:
    """Contexts batched (left-padded), the context cache reused across continuations of one and several
    tokens, a context asked twice: every log-likelihood equals one unpadded forward over context +
    continuation, and is_greedy agrees."""
    import random

    import torch

    from klue.llm.backends.base import LoglikRequest
    from klue.llm.backends.hf import HfBackend
    from klue.models.tiny import make_tiny_llama_dir

    rng = random.Random(3)
    syllables = "가나다라마바사아자차카타파하서울경제정치과학"
    texts = [" ".join("".join(rng.choice(syllables) for _ in range(3)) for _ in range(12)) for _ in range(60)]
    backend = HfBackend(str(make_tiny_llama_dir(tmp_path / "llama", texts)), cpu=True, batch_size=batch_size)
    contexts = [f"문장: {texts[i][:rng.randint(5, 40)]}\n답:" for i in range(5)]
    tok = backend.tokenizer
    # a continuation of exactly one token (a vocabulary entry with its leading space) beside longer ones
    single = next(text for text in (tok.convert_tokens_to_string([t]) for t in sorted(tok.get_vocab()))
                  if text.startswith(" ") and len(text) > 1 and len(tok(text, add_special_tokens=False)["input_ids"]) == 1)
    choices = [single, " 함의", " 모순", " 가나다라마바사아자", " 중립"]
    requests = [LoglikRequest(c, x) for c in contexts for x in choices[:rng.randint(2, 5)]]
    requests.append(requests[0])
    answers = backend.loglik(requests)
    for request, answer in zip(requests, answers):
        context = tok(request.context)["input_ids"]
        continuation = tok(request.continuation, add_special_tokens=False)["input_ids"]
        with torch.inference_mode():
            logits = backend.lm(torch.tensor([context + continuation])).logits[0].float()
        logprobs = torch.log_softmax(logits[len(context) - 1:-1], dim=-1)
        expected = float(sum(logprobs[k, t] for k, t in enumerate(continuation)))
        greedy = all(int(logprobs[k].argmax()) == t for k, t in enumerate(continuation))
        assert answer.logprob == pytest.approx(expected, abs=1e-4) and answer.n_tokens == len(continuation)
        assert answer.is_greedy == greedy
    assert answers[-1] == answers[0]
    assert any(a.n_tokens > 1 for a in answers) and any(a.n_tokens == 1 for a in answers)
    assert backend.usage.requests == len(requests)
