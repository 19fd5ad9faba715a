"""STS Pearson r (vs scipy) and binary F1 at >= 3.0 (vs sklearn), merging, real dev gold."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klue.metrics import sts

scores = st.lists(st.tuples(st.floats(0, 5), st.floats(0, 5)), min_size=3, max_size=60)
# Scores as a model or annotator gives them (the sum-of-squares merge is not meant for 1e-300 deviations).
plain = st.floats(0, 5).map(lambda v: round(v, 6))
plain_scores = st.lists(st.tuples(plain, plain), min_size=3, max_size=60)


def _official_f1(gold: list[float], pred: list[float]) -> float:
    from sklearn.metrics import f1_score

    g = np.where(np.asarray(gold) >= 3, 1, 0)
    p = np.where(np.asarray(pred) >= 3, 1, 0)
    return 100 * f1_score(g, p, average="binary", zero_division=0)


@settings(max_examples=60, deadline=None)
@given(scores)
def test_pearson_and_f1_match_references(data: list[tuple[float, float]]) -> None:
    from scipy.stats import pearsonr

    gold = [g for g, _ in data]
    pred = [p for _, p in data]
    if len(set(gold)) == 1 or len(set(pred)) == 1:
        assert math.isnan(sts.pearsonr(gold, pred))
    else:
        assert sts.pearsonr(gold, pred) == pytest.approx(100 * pearsonr(pred, gold)[0], abs=1e-6)
    assert sts.f1(gold, pred) == pytest.approx(_official_f1(gold, pred), abs=1e-9)


def test_exactly_three_is_positive() -> None:
    assert sts.f1([3.0, 1.0], [3.0, 1.0]) == 100.0
    assert sts.f1([3.0, 1.0], [2.9999999, 1.0]) == 0.0
    assert sts.f1([1.0, 1.0], [1.0, 2.0]) == 0.0  # no positives anywhere: 0, as sklearn's zero_division


def test_nan_predictions_are_rejected() -> None:
    with pytest.raises(ValueError, match="not finite"):
        sts.pearsonr([1.0, 2.0], [1.0, float("nan")])


@settings(max_examples=40, deadline=None)
@given(plain_scores, st.integers(0, 60))
def test_shards_merge(data: list[tuple[float, float]], cut: int) -> None:
    gold = [g for g, _ in data]
    pred = [p for _, p in data]
    merged = sts.PearsonStats.of(gold[:cut], pred[:cut]) + sts.PearsonStats.of(gold[cut:], pred[cut:])
    whole = sts.pearsonr(gold, pred)
    if math.isnan(whole):
        return
    assert merged.r() == pytest.approx(whole, abs=1e-6)
    counts = sts.binary_counts(gold[:cut], pred[:cut]) + sts.binary_counts(gold[cut:], pred[cut:])
    assert 100.0 * counts.f1(True) == sts.f1(gold, pred)


def _dev_gold(klue_data_dir: Path) -> list[float]:
    records = json.loads((klue_data_dir / "klue-sts-v1.1/klue-sts-v1.1_dev.json").read_text(encoding="utf-8"))
    return [r["labels"]["real-label"] for r in records]


def test_gold_scores_the_maximum_on_real_dev(klue_data_dir: Path) -> None:
    gold = _dev_gold(klue_data_dir)
    report = sts.compute(gold, gold)
    assert report.scores["pearsonr"] == pytest.approx(100.0, abs=1e-9)
    assert report.scores["f1"] == 100.0
    assert report.n_examples == 519


@pytest.mark.parametrize("case", [1, 2, 3])
def test_scoring_cases_match_references(klue_data_dir: Path, shared_data_dir: Path, case: int) -> None:
    from scipy.stats import pearsonr

    gold = _dev_gold(klue_data_dir)
    with gzip.open(shared_data_dir / f"scoring-cases/sts/pred_{case}.json.gz", "rt", encoding="utf-8") as f:
        pred = json.load(f)
    report = sts.compute(gold, pred, mode="corrected")
    assert report.mode == "corrected"
    assert report.scores["pearsonr"] == pytest.approx(100 * pearsonr(pred, gold)[0], abs=1e-6)
    assert report.scores["f1"] == pytest.approx(_official_f1(gold, pred), abs=1e-9)
