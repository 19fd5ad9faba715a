"""Bootstrap intervals and paired tests (klue.metrics.resampling): nominal coverage on data with a known
answer, a run against itself, and agreement with a plain reference (each resample's examples repeated
explicitly and the official metric recomputed with sklearn / the metric functions) on the same streams."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from klue.errors import ProblemLog
from klue.metrics import ner
from klue.metrics import re as re_metric
from klue.metrics.resampling import (
    Side,
    Units,
    bootstrap,
    bootstrap_indices,
    compare,
    estimates,
    streams,
    swap_masks,
)
from klue.metrics.statistics import ExampleStatistics, single_label_statistics


def _accuracy_statistics(correct: np.ndarray) -> ExampleStatistics:
    labels = np.where(correct, "y", "n").tolist()
    return single_label_statistics(["y"] * len(labels), labels, ["y", "n"], ["accuracy"])


@pytest.mark.parametrize("clustered", [False, True])
def test_intervals_cover_the_true_value_at_the_nominal_rate(clustered: bool) -> None:
    # 200 data sets whose true accuracy is 70: independent examples, or groups of 3 examples sharing a
    # group-level rate (Beta with mean 0.7), resampled by group. Coverage must be 95% within 3 binomial sd.
    rng = np.random.default_rng(7)
    n_sets, n_units, size = 200, 150, 3 if clustered else 1
    covered = 0
    for k in range(n_sets):
        if clustered:
            rates = np.repeat(rng.beta(1.4, 0.6, n_units), size)
        else:
            rates = np.full(n_units, 0.7)
        correct = rng.random(n_units * size) < rates
        units = Units(np.repeat(np.arange(n_units), size), n_units)
        estimate = estimates(Side([_accuracy_statistics(correct)], units), n_resamples=300, seed=k)["accuracy"]
        covered += estimate.low <= 70.0 <= estimate.high
    tolerance = 3 * np.sqrt(0.95 * 0.05 / n_sets)
    assert abs(covered / n_sets - 0.95) <= tolerance, covered


def test_a_run_against_itself_differs_by_zero_with_p_one() -> None:
    rng = np.random.default_rng(8)
    gold = [[str(t) for t in rng.choice(ner.TAGS, 6)] for _ in range(120)]
    pred = [[t if rng.random() < 0.7 else "O" for t in s] for s in gold]
    side = Side([ner.statistics(gold, pred)], Units.single(120))
    for difference in compare(side, side, n_resamples=200, seed=3):
        assert difference.difference == 0.0 and difference.low == 0.0 and difference.high == 0.0
        assert difference.p_bootstrap == 1.0 and difference.p_randomization == 1.0


def test_streams_are_reproducible_from_the_seed() -> None:
    stats = _accuracy_statistics(np.random.default_rng(0).random(100) < 0.6)
    side = Side([stats], Units.single(100))
    assert bootstrap([side], 50, seed=11)[0]["accuracy"].tolist() == bootstrap([side], 50, seed=11)[0][
        "accuracy"].tolist()
    assert bootstrap([side], 50, seed=11)[0]["accuracy"].tolist() != bootstrap([side], 50, seed=12)[0][
        "accuracy"].tolist()


# ------------------------------------------------------------------------- against a plain reference


def _read_cases(shared: Path, task: str, k: int) -> Any:
    with gzip.open(shared / f"scoring-cases/{task}/pred_{k}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def nli_dev(klue_data_dir: Path) -> list[Any]:
    from klue.tasks import nli

    log = ProblemLog("nli dev")
    records = nli.TASK.read(klue_data_dir / "klue-nli-v1.1/klue-nli-v1.1_dev.json", log)
    log.raise_if_errors()
    return records


@pytest.mark.realdata
@pytest.mark.slow
def test_paired_bootstrap_and_randomisation_match_sklearn_on_real_nli_with_seeds(
        nli_dev: list[Any], shared_data_dir: Path) -> None:
    """A = two runs (seeds combined), B = one run, resampled by premise; 15 (5) resamples of each test
    recomputed with sklearn on explicitly built resampled / swapped predictions."""
    from sklearn.metrics import accuracy_score, f1_score

    from klue.tasks import nli

    gold = [r.label for r in nli_dev]
    runs = {k: _read_cases(shared_data_dir, "nli", k) for k in (1, 2, 3)}
    units = Units.of([nli.TASK.group_key(r) for r in nli_dev])
    assert units.n_units < len(gold)  # premises hold several pairs

    def stats(pred: list[str]) -> ExampleStatistics:
        return nli.TASK.example_statistics(nli_dev, [nli.TASK.gold_prediction(r).__class__(r.guid, p)
                                                     for r, p in zip(nli_dev, pred)], "official")

    side_a, side_b = Side([stats(runs[1]), stats(runs[3])], units), Side([stats(runs[2])], units)
    n_resamples, seed = 15, 5
    a_boot, b_boot = bootstrap([side_a, side_b], n_resamples, seed)
    members = [np.flatnonzero(units.index == u) for u in range(units.n_units)]

    def metric(pred: list[str], index: np.ndarray) -> dict[str, float]:
        g, p = [gold[i] for i in index], [pred[i] for i in index]
        return {"accuracy": 100 * accuracy_score(g, p), "macro_f1": 100 * f1_score(g, p, average="macro")}

    rng, swap_rng = streams(seed)
    rows = np.concatenate(list(bootstrap_indices(rng, units.n_units, n_resamples)))
    for r, drawn in enumerate(rows):
        index = np.concatenate([members[u] for u in drawn])
        a = [metric(runs[k], index) for k in (1, 3)]
        b = metric(runs[2], index)
        for name in ("accuracy", "macro_f1"):
            assert a_boot[name][r] == pytest.approx((a[0][name] + a[1][name]) / 2, abs=1e-9)
            assert b_boot[name][r] == pytest.approx(b[name], abs=1e-9)
    # approximate randomisation: A's runs paired with B's run (cycled); swapped units trade predictions
    masks = np.concatenate(list(swap_masks(swap_rng, units.n_units, n_resamples)))
    everything = np.arange(len(gold))
    for mask in masks[:5]:
        swapped_a, swapped_b = side_a.swapped(side_b, mask[None, :].astype(float))
        example_swapped = mask[units.index].astype(bool)
        expected_a, expected_b = [], []
        for k in (1, 3):
            new_a = [q if s else p for p, q, s in zip(runs[k], runs[2], example_swapped)]
            new_b = [p if s else q for p, q, s in zip(runs[k], runs[2], example_swapped)]
            expected_a.append(metric(new_a, everything))
            expected_b.append(metric(new_b, everything))
        for name in ("accuracy", "macro_f1"):
            assert swapped_a[name][0] == pytest.approx(np.mean([e[name] for e in expected_a]), abs=1e-9)
            assert swapped_b[name][0] == pytest.approx(np.mean([e[name] for e in expected_b]), abs=1e-9)


@pytest.mark.realdata
@pytest.mark.slow
def test_paired_bootstrap_matches_the_official_ner_metric_on_real_dev(klue_data_dir: Path,
                                                                      shared_data_dir: Path) -> None:
    from klue.tasks import ner as ner_task

    log = ProblemLog("ner dev")
    records = ner_task.read(klue_data_dir / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv", log)
    log.raise_if_errors()
    gold = [list(r.nonspace_tags) for r in records]
    pred_a, pred_b = _read_cases(shared_data_dir, "ner", 1), _read_cases(shared_data_dir, "ner", 2)
    units = Units.single(len(gold))
    side_a, side_b = Side([ner.statistics(gold, pred_a)], units), Side([ner.statistics(gold, pred_b)], units)
    n_resamples, seed = 6, 9
    a_boot, b_boot = bootstrap([side_a, side_b], n_resamples, seed)
    rows = np.concatenate(list(bootstrap_indices(streams(seed)[0], len(gold), n_resamples)))
    for r, drawn in enumerate(rows):
        g = [gold[i] for i in drawn]
        for pred, values in ((pred_a, a_boot), (pred_b, b_boot)):
            expected = ner.compute(g, [pred[i] for i in drawn]).scores
            for name, value in expected.items():
                assert values[name][r] == pytest.approx(value, abs=1e-9), name
    differences = compare(side_a, side_b, n_resamples=200, seed=seed)
    assert all(d.p_randomization < 0.01 and d.low > 0 for d in differences)  # pred_1 is the better case


@pytest.mark.realdata
def test_paired_bootstrap_of_auprc_matches_sklearn(shared_data_dir: Path) -> None:
    from sklearn.metrics import auc, precision_recall_curve

    cases = shared_data_dir / "scoring-cases/re"
    relations = json.loads((cases / "relation_list.json").read_text(encoding="utf-8"))["relations"]
    gold = [r["label"] for r in json.loads((cases / "gold.json").read_text(encoding="utf-8"))]
    items = _read_cases(shared_data_dir, "re", 1)
    pred = [relations[x["label"]] if isinstance(x["label"], int) else x["label"] for x in items]
    probs = np.array([x["probs"] for x in items], dtype=float)
    side = Side([re_metric.statistics(gold, pred, probs.tolist(), relations)], Units.single(len(gold)))
    values = bootstrap([side], 3, seed=2)[0]
    rows = np.concatenate(list(bootstrap_indices(streams(2)[0], len(gold), 3)))
    codes = np.array([relations.index(g) for g in gold])
    for r, drawn in enumerate(rows):
        areas = []
        for c in range(len(relations)):
            if not (codes[drawn] == c).any():
                areas.append(0.5)  # sklearn: no positive, recall 1 everywhere
                continue
            precision, recall, _ = precision_recall_curve(codes[drawn] == c, probs[drawn, c])
            areas.append(auc(recall, precision))
        assert values["auprc"][r] == pytest.approx(100 * float(np.mean(areas)), abs=1e-9)


def test_randomisation_of_auprc_swaps_probability_rows() -> None:
    """AUPRC has no sums: a swapped unit must bring its probability vector to the other side."""
    relations = ["no_relation", "per:title", "org:members"]
    rng = np.random.default_rng(12)
    n = 60
    gold = [relations[i] for i in rng.integers(0, 3, n)]
    probs = {k: rng.dirichlet(np.ones(3), n).round(2) for k in "ab"}
    preds = {k: [relations[i] for i in p.argmax(axis=1)] for k, p in probs.items()}
    units = Units.of([i // 2 for i in range(n)])  # pairs of examples swap together
    sides = {k: Side([re_metric.statistics(gold, preds[k], probs[k].tolist(), relations)], units) for k in "ab"}
    masks = np.concatenate(list(swap_masks(streams(3)[1], units.n_units, 5)))
    for mask in masks:
        got_a, got_b = sides["a"].swapped(sides["b"], mask[None, :].astype(float))
        swapped = mask[units.index].astype(bool)[:, None]
        mixed_a, mixed_b = np.where(swapped, probs["b"], probs["a"]), np.where(swapped, probs["a"], probs["b"])
        label_a = [q if s else p for p, q, s in zip(preds["a"], preds["b"], swapped[:, 0])]
        label_b = [p if s else q for p, q, s in zip(preds["a"], preds["b"], swapped[:, 0])]
        for got, mixed, labels in ((got_a, mixed_a, label_a), (got_b, mixed_b, label_b)):
            expected = re_metric.compute(gold, labels, mixed.tolist(), relations).scores
            assert got["auprc"][0] == pytest.approx(expected["auprc"], abs=1e-9)
            assert got["micro_f1"][0] == pytest.approx(expected["micro_f1"], abs=1e-9)
