"""Per-example statistics (klue.metrics.statistics): the formulas over the summed statistics give every
task's official metrics, on the real dev sets (every registered task) and on synthetic data, and under
example weights they equal the metric of the explicitly repeated examples (AUPRC, Pearson r, macro F1)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from klue import protocols, registry
from klue.errors import ProblemLog
from klue.io.locate import DataRoots
from klue.metrics import dp, ner, sts, wos
from klue.metrics import re as re_metric
from klue.metrics.report import METRIC_MODES
from klue.metrics.statistics import ExampleStatistics, _weighted_pr_area, single_label_statistics
from klue.tasks.base import Task

TASKS = registry.all_tasks()


def assert_totals_equal_scores(stats: ExampleStatistics, scores: dict[str, float], where: str) -> None:
    totals = stats.totals()
    assert list(totals) == list(scores), where
    for name, value in scores.items():
        if math.isnan(value):
            assert math.isnan(totals[name]), (where, name)
        else:
            assert totals[name] == pytest.approx(value, abs=1e-9), (where, name)


def _shape(task: Task[Any, Any], prediction: Any) -> tuple[Any, ...]:
    """What a prediction of another example must share to be a valid prediction here: its list lengths."""
    obj = task.prediction_to_json(prediction)
    return tuple((k, len(v)) for k, v in obj.items() if isinstance(v, list) and k != "probs")


def swapped_predictions(task: Task[Any, Any], records: list[Any], seed: int) -> list[Any]:
    """Gold predictions, every other one replaced by the gold prediction of another record of the same
    shape (a sentence of as many characters or words, any other pair): wrong, and still valid."""
    golds = [task.gold_prediction(r) for r in records]
    by_shape: dict[tuple[Any, ...], list[int]] = {}
    for i, p in enumerate(golds):
        by_shape.setdefault(_shape(task, p), []).append(i)
    rng = random.Random(seed)
    out = []
    for i, (record, gold) in enumerate(zip(records, golds)):
        donors = by_shape[_shape(task, gold)]
        if i % 2 and len(donors) > 1:
            other = golds[rng.choice(donors)]
            out.append(dataclasses.replace(other, guid=task.guid(record)))
        else:
            out.append(gold)
    return out


def _real_eval(task: Task[Any, Any], klue_dir: Path, shared_dir: Path) -> list[Any]:
    dev = task.file("dev")
    assert dev is not None
    if (klue_dir / dev.path).is_file():
        log = ProblemLog(dev.path)
        records = task.read(klue_dir / dev.path, log)
        log.raise_if_errors()
        return records
    roots = DataRoots(klue_dir, shared_dir)
    if protocols.missing(task, task.default_local_protocol, roots):
        pytest.skip(f"{task.name}: neither the official dev file nor {task.default_local_protocol} is here")
    return protocols.resolve(task, task.default_local_protocol, roots).eval


@pytest.mark.realdata
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_statistics_give_the_official_metrics_on_real_dev(task: Task[Any, Any], klue_data_dir: Path,
                                                          shared_data_dir: Path) -> None:
    records = _real_eval(task, klue_data_dir, shared_data_dir)
    for predictions in ([task.gold_prediction(r) for r in records], swapped_predictions(task, records, 1)):
        for mode in METRIC_MODES:
            report = task.evaluate(records, predictions, mode)
            stats = task.example_statistics(records, predictions, mode)
            assert stats.n_examples == len(records)
            assert_totals_equal_scores(stats, report.scores, f"{task.name} {mode}")


def test_every_task_declares_statistics() -> None:
    assert all(t.statistics is not None for t in TASKS)


# ------------------------------------------------------------------------------------------ synthetic


def _tags(rng: random.Random, n: int) -> tuple[list[list[str]], list[list[str]]]:
    gold = [[rng.choice(ner.TAGS) for _ in range(rng.randint(1, 15))] for _ in range(n)]
    pred = [[rng.choice(ner.TAGS) if rng.random() < 0.3 else t for t in s] for s in gold]
    return gold, pred


@pytest.mark.parametrize("mode", METRIC_MODES)
def test_ner_statistics_under_weights_equal_the_metric_of_repeated_sentences(mode: str) -> None:
    rng = random.Random(3)
    gold, pred = _tags(rng, 200)
    stats = ner.statistics(gold, pred, mode)  # type: ignore[arg-type]
    assert_totals_equal_scores(stats, ner.compute(gold, pred, mode).scores, mode)  # type: ignore[arg-type]
    counts = np.random.default_rng(0).integers(0, 3, size=(3, 200))
    values = stats.values(counts)
    for r, row in enumerate(counts):
        g = [s for s, k in zip(gold, row) for _ in range(k)]
        p = [s for s, k in zip(pred, row) for _ in range(k)]
        expected = ner.compute(g, p, mode).scores  # type: ignore[arg-type]
        for name, value in expected.items():
            assert values[name][r] == pytest.approx(value, abs=1e-9), name


def test_single_label_statistics_match_sklearn_under_weights() -> None:
    from sklearn.metrics import accuracy_score, f1_score

    rng = np.random.default_rng(1)
    labels = ["a", "b", "c", "d"]
    gold = [labels[i] for i in rng.integers(0, 4, 300)]
    pred = [g if rng.random() < 0.6 else labels[rng.integers(0, 4)] for g in gold]
    pred[0] = "zzz"  # a label outside the list counts (only predicted: F1 0)
    stats = single_label_statistics(gold, pred, labels, ["macro_f1", "accuracy"])
    counts = rng.integers(0, 3, size=(4, 300))
    values = stats.values(counts)
    for r, row in enumerate(counts):
        index = np.repeat(np.arange(300), row)
        g, p = [gold[i] for i in index], [pred[i] for i in index]
        assert values["accuracy"][r] == pytest.approx(100 * accuracy_score(g, p), abs=1e-9)
        assert values["macro_f1"][r] == pytest.approx(100 * f1_score(g, p, average="macro"), abs=1e-9)


def test_weighted_pr_area_is_the_area_of_the_repeated_examples_ties_and_zeros_included() -> None:
    rng = np.random.default_rng(2)
    for trial in range(30):
        n = int(rng.integers(2, 40))
        scores = rng.integers(0, 6, n) / 5.0  # many ties
        positive = rng.random(n) < rng.random()
        weights = rng.integers(0, 3, size=(4, n)).astype(float)
        weights[0] = 1.0
        got = _weighted_pr_area(positive, scores, weights)
        for r, row in enumerate(weights.astype(int)):
            index = np.repeat(np.arange(n), row)
            if len(index) == 0:
                continue
            expected = 100.0 * re_metric._pr_curve_area(positive[index], scores[index])
            assert got[r] == pytest.approx(expected, abs=1e-9), (trial, r)


@pytest.mark.parametrize("mode", METRIC_MODES)
def test_re_statistics_under_weights_match_sklearn_auprc(mode: str) -> None:
    from sklearn.metrics import auc, precision_recall_curve

    relations = ["no_relation", "per:title", "org:members", "per:origin"]
    rng = np.random.default_rng(4)
    n = 120
    gold = [relations[i] for i in rng.choice(3, n, p=[0.5, 0.3, 0.2])]  # per:origin never gold
    probs = rng.dirichlet(np.ones(4), n).round(2)
    pred = [relations[i] for i in probs.argmax(axis=1)]
    stats = re_metric.statistics(gold, pred, probs.tolist(), relations, mode)  # type: ignore[arg-type]
    assert_totals_equal_scores(stats, re_metric.compute(gold, pred, probs.tolist(), relations, mode).scores,
                               mode)  # type: ignore[arg-type]
    counts = rng.integers(0, 3, size=(3, n))
    values = stats.values(counts)
    for r, row in enumerate(counts):
        index = np.repeat(np.arange(n), row)
        g = np.array([relations.index(gold[i]) for i in index])
        areas = []
        for c in range(4):
            if mode == "corrected" and not (g == c).any():
                continue
            if not (g == c).any():  # sklearn warns and sets recall to 1 with no positive: area 0.5
                areas.append(0.5)
                continue
            precision, recall, _ = precision_recall_curve(g == c, probs[index, c])
            areas.append(auc(recall, precision))
        assert values["auprc"][r] == pytest.approx(100 * float(np.mean(areas)), abs=1e-9)


def test_pearson_and_binary_f1_under_weights() -> None:
    from scipy.stats import pearsonr

    rng = np.random.default_rng(5)
    gold = rng.uniform(0, 5, 150).round(1)
    pred = np.clip(gold + rng.normal(0, 1, 150), 0, 5)
    stats = sts.statistics(gold.tolist(), pred.tolist())
    assert_totals_equal_scores(stats, sts.compute(gold.tolist(), pred.tolist()).scores, "sts")
    counts = rng.integers(0, 3, size=(3, 150))
    values = stats.values(counts)
    for r, row in enumerate(counts):
        index = np.repeat(np.arange(150), row)
        assert values["pearsonr"][r] == pytest.approx(100 * pearsonr(pred[index], gold[index])[0], abs=1e-9)
        assert values["f1"][r] == pytest.approx(sts.f1(gold[index].tolist(), pred[index].tolist()), abs=1e-9)
    constant = sts.statistics([1.0, 2.0, 3.0], [2.0, 2.0, 2.0])
    assert math.isnan(constant.totals()["pearsonr"])


@pytest.mark.parametrize("mode", METRIC_MODES)
def test_dp_statistics_klue_and_ud(mode: str) -> None:
    rng = random.Random(6)
    heads, labels, pred_heads, pred_labels = [], [], [], []
    for _ in range(60):
        n = rng.randint(1, 12)
        heads.append([rng.randint(0, n) for _ in range(n)])
        labels.append([rng.choice(dp.DEPRELS) for _ in range(n)])
        pred_heads.append([h if rng.random() < 0.7 else rng.randint(0, n) for h in heads[-1]])
        pred_labels.append([x if rng.random() < 0.7 else rng.choice(dp.DEPRELS) for x in labels[-1]])
    stats = dp.statistics(heads, labels, pred_heads, pred_labels, mode)  # type: ignore[arg-type]
    assert_totals_equal_scores(stats, dp.compute(heads, labels, pred_heads, pred_labels, mode).scores,
                               mode)  # type: ignore[arg-type]
    ud = [["nsubj", "obj", "flat:name", "flat", "root"][hash(x) % 5] for x in range(5)]
    ud_gold = [[ud[rng.randint(0, 4)] for _ in row] for row in heads]
    ud_pred = [[x if rng.random() < 0.6 else ud[rng.randint(0, 4)] for x in row] for row in ud_gold]
    stats = dp.statistics_ud(heads, ud_gold, pred_heads, ud_pred, mode)  # type: ignore[arg-type]
    assert_totals_equal_scores(stats, dp.compute_ud(heads, ud_gold, pred_heads, ud_pred, mode).scores,
                               mode)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", METRIC_MODES)
def test_wos_statistics_on_scoring_cases(mode: str, shared_data_dir: Path) -> None:
    cases = shared_data_dir / "scoring-cases/wos"
    dialogues = json.loads((cases / "gold.json").read_text(encoding="utf-8"))
    gold = [list(turn["state"]) for d in dialogues for turn in d["dialogue"] if turn["role"] == "user"]
    with gzip.open(cases / "pred_1.json.gz", "rt", encoding="utf-8") as f:
        pred = json.load(f)
    stats = wos.statistics(gold, pred, mode)  # type: ignore[arg-type]
    assert_totals_equal_scores(stats, wos.compute(gold, pred, mode).scores, mode)  # type: ignore[arg-type]
