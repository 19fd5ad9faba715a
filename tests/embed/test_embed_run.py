"""The embedding producer: one task, one backend, one seed -> predictions.jsonl scored by the one judge, with
what the run recorded about itself; fitted on the training part only; resumable from the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import spearmanr

from fake_embeddings import ToyBackend
from klue import registry
from klue.embed.frozen import cosines
from klue.embed.run import EmbedSettings, run
from klue.errors import DataError
from klue.protocols import ProtocolData
from klue.results import EMBEDDING, PREDICTIONS_FILE, RESULTS_FILE, read_results
from klue.scoring import RunRequest, score_predictions
from klue.tasks.ynat.records import LABELS, YnatRecord

TOPIC_WORDS = {label: [f"{label}{i}어" for i in range(4)] for label in LABELS}


def ynat_data(n_train: int, n_eval: int) -> ProtocolData[YnatRecord]:
    """Titles whose words say their topic, so a classifier on trigram vectors learns them."""
    rng = np.random.default_rng(0)

    def make(prefix: str, n: int) -> list[YnatRecord]:
        out = []
        for i in range(n):
            label = LABELS[i % len(LABELS)]
            words = rng.choice(TOPIC_WORDS[label], size=3)
            out.append(YnatRecord(f"{prefix}-{i}", " ".join(words) + f" 기사 {i}", label))
        return out

    return ProtocolData("local:synthetic", False, "synthetic titles", make("t", n_train), make("e", n_eval), None, ())


def test_a_classification_run_is_scored_by_the_judge_from_its_prediction_file(tmp_path: Path) -> None:
    task = registry.get("ynat")
    data = ynat_data(140, 35)
    backend = ToyBackend(dim=128)
    results = run(RunRequest(task, "emb:toy", data, 3, tmp_path, "official"), backend, EmbedSettings(progress=False))
    assert results.model_family == EMBEDDING and results.model == "emb:toy" and results.n_train == 140
    assert results.scores["macro_f1"] > 90  # the topic words are learnt
    again = score_predictions(task, data.eval, tmp_path / PREDICTIONS_FILE)
    assert again.report.scores == results.scores  # the file is what was scored
    assert read_results(tmp_path / RESULTS_FILE).embedding == results.embedding
    summary = results.embedding
    assert summary is not None
    assert (summary.use, summary.backend, summary.dimension, summary.prompt) == ("classification", "toy", 128, "")
    assert summary.texts == 175 and summary.embedded == 175 and summary.cache_hits == 0
    assert "logistic regression" in summary.head and "the embedding" in summary.head
    # only the training and evaluation titles were embedded, nothing else
    assert sorted(backend.asked) == sorted(r.title for r in [*data.train, *data.eval])


def test_a_rerun_asks_the_model_nothing_and_writes_the_same_predictions(tmp_path: Path) -> None:
    task = registry.get("ynat")
    data = ynat_data(70, 14)
    cache = tmp_path / "cache.sqlite"
    run(RunRequest(task, "emb:toy", data, 1, tmp_path / "a", "official"), ToyBackend(dim=64), EmbedSettings(progress=False),
        cache_path=cache)
    backend = ToyBackend(dim=64)
    results = run(RunRequest(task, "emb:toy", data, 1, tmp_path / "b", "official"), backend, EmbedSettings(progress=False),
                  cache_path=cache)
    assert backend.asked == [] and results.embedding and results.embedding.cache_hits == 84
    assert (tmp_path / "a" / PREDICTIONS_FILE).read_bytes() == (tmp_path / "b" / PREDICTIONS_FILE).read_bytes()


def test_limit_scores_the_first_examples_as_a_partial_run(tmp_path: Path) -> None:
    results = run(RunRequest(registry.get("ynat"), "emb:toy", ynat_data(70, 30), 1, tmp_path, "official"), ToyBackend(dim=64),
                  EmbedSettings(limit=9, progress=False))
    assert results.partial and results.n_eval == 9 and "--limit" in results.protocol_description
    assert len((tmp_path / PREDICTIONS_FILE).read_text().splitlines()) == 9


def test_a_task_without_an_embedding_use_is_refused_with_its_reason(tmp_path: Path) -> None:
    task = next(t for t in registry.all_tasks() if t.embedding is None)
    data = ProtocolData("local:x", False, "", [object()], [object()], None, ())
    with pytest.raises(DataError, match="does not apply to sentence-embedding models: " + task.no_embedding[:20]):
        run(RunRequest(task, "emb:toy", data, 1, tmp_path, "official"), ToyBackend())


@pytest.mark.realdata
@pytest.mark.parametrize("task_name", [t.name for t in registry.all_tasks() if t.embedding])
@pytest.mark.slow
def test_every_applicable_task_runs_on_its_real_records(task_name: str, tmp_path: Path,
                                                        protocol_slice: Any) -> None:
    task = registry.get(task_name)
    data = protocol_slice(task_name, 120, 40)
    backend = ToyBackend(dim=32)
    results = run(RunRequest(task, "emb:toy", data, 1, tmp_path, "official"), backend, EmbedSettings(progress=False))
    use = task.make_embedding()
    assert results.status == "ok" and set(results.scores) >= set(task.main_metrics)
    assert results.embedding and results.embedding.use == use.kind
    # every text a record gives was embedded, and the prediction file is in the task's schema
    wanted = {t for r in [*data.train, *data.eval] for t in use.texts(r)}
    assert set(backend.asked) == wanted
    lines = [json.loads(line) for line in (tmp_path / PREDICTIONS_FILE).read_text().splitlines()]
    assert [line["guid"] for line in lines] == [task.guid(r) for r in data.eval]
    if use.kind == "similarity":
        summary = results.embedding
        assert summary.calibration and summary.cosine_spearman is not None
        # the raw cosines' Spearman, computed here again from the toy vectors
        a = np.stack([backend.embed([use.texts(r)[0]], "")[0] for r in data.eval])
        b = np.stack([backend.embed([use.texts(r)[1]], "")[0] for r in data.eval])
        a, b = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
        expected = 100 * spearmanr(cosines(a, b), [use.gold(r) for r in data.eval]).statistic
        assert summary.cosine_spearman == pytest.approx(expected, abs=1e-6)
        assert all(0.0 <= line["score"] <= 5.0 for line in lines)


def test_url_credentials_are_in_no_output(tmp_path: Path) -> None:
    spec = "emb:openai:m@http://user:pa55word@127.0.0.1:9/v1"
    results = run(RunRequest(registry.get("ynat"), spec, ynat_data(21, 7), 1, tmp_path, "official"), ToyBackend(dim=32),
                  EmbedSettings(progress=False))
    assert results.model == "emb:openai:m@http://***@127.0.0.1:9/v1"
    assert all("pa55word" not in path.read_text(errors="replace") for path in tmp_path.iterdir() if path.is_file())
