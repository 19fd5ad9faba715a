"""The models fitted on frozen embeddings: the F1-best cut, the calibration line, the logistic regression's
probabilities over the whole label set, and Spearman's rho with its interval."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from klue.embed.frozen import (
    C_GRID,
    best_f1_threshold,
    cosines,
    fit_calibration,
    fit_labels,
    pair_features,
    spearman,
)
from klue.errors import DataError
from klue.metrics.sts import f1 as sts_f1
from klue.metrics.sts import pearsonr


def brute_force_best_f1(score: np.ndarray, positive: np.ndarray) -> float:
    best = -1.0
    for cut in np.unique(score):
        predicted = score >= cut
        tp = float(np.sum(predicted & positive))
        f1 = 2 * tp / (predicted.sum() + positive.sum())
        best = max(best, f1)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_the_cut_gives_the_best_f1_on_the_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    score = np.round(rng.normal(size=60), 1)  # ties on purpose
    positive = score + rng.normal(scale=0.8, size=60) > 0.3
    cut = best_f1_threshold(score, positive)
    predicted = score >= cut
    f1 = 2 * np.sum(predicted & positive) / (predicted.sum() + positive.sum())
    assert f1 == pytest.approx(brute_force_best_f1(score, positive))


def test_the_calibration_keeps_pearson_puts_f1_at_the_cut_and_the_training_pairs_on_the_scale() -> None:
    rng = np.random.default_rng(1)
    gold = rng.uniform(0, 5, size=300)
    cosine = 0.7 + 0.05 * gold + rng.normal(scale=0.04, size=300)
    calibration = fit_calibration(cosine, gold, (0.0, 5.0), 3.0)
    scores = calibration(cosine)
    assert 0.0 <= scores.min() and scores.max() <= 5.0
    assert calibration.slope <= np.polyfit(cosine, gold, 1)[0] + 1e-12
    assert scores.min() == pytest.approx(0.0) or scores.max() == pytest.approx(5.0)  # the range binds one end
    # nothing of the training pairs is clipped: a positive line leaves Pearson r as the cosine's
    assert pearsonr(gold, scores) == pytest.approx(pearsonr(gold, cosine), abs=1e-9)
    assert sts_f1(gold, scores) == pytest.approx(100 * brute_force_best_f1(cosine, gold >= 3.0))
    assert "least-squares slope" in calibration.describe()


def test_a_calibration_without_signal_is_refused() -> None:
    with pytest.raises(DataError, match="falls as the cosine rises"):
        fit_calibration(np.array([0.9, 0.8, 0.7]), [1.0, 2.0, 3.0], (0.0, 5.0), 3.0)
    with pytest.raises(DataError, match="different cosines"):
        fit_calibration(np.array([0.9, 0.9]), [1.0, 2.0], (0.0, 5.0), 3.0)


def test_probabilities_cover_every_task_label_and_unseen_ones_are_zero() -> None:
    rng = np.random.default_rng(0)
    labels = ("a", "b", "c", "d")
    centres = {"a": rng.normal(size=8), "b": rng.normal(size=8), "d": rng.normal(size=8)}
    gold = [labels[i] for i in rng.choice([0, 1, 3], size=90)]
    features = np.stack([centres[g] + rng.normal(scale=0.3, size=8) for g in gold])
    model = fit_labels(features, gold, labels, seed=1)
    probabilities = model.probabilities(features)
    assert probabilities.shape == (90, 4)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0)
    assert np.all(probabilities[:, 2] == 0.0)
    assert np.mean(np.array(labels)[probabilities.argmax(axis=1)] == np.array(gold)) > 0.95
    assert model.c in C_GRID and f"C = {model.c:g}" in model.describe("the embedding")
    # standardised features: a model whose vectors are 100 times longer gets the same classifier
    np.testing.assert_allclose(fit_labels(100 * features, gold, labels, seed=1).probabilities(100 * features),
                               probabilities, atol=1e-6)
    with pytest.raises(DataError, match="outside the task's label set"):
        fit_labels(features, ["z"] * 90, labels, seed=1)
    with pytest.raises(DataError, match="holds 1 label"):
        fit_labels(features, ["a"] * 90, labels, seed=1)


def test_pair_features_and_cosines() -> None:
    u = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    v = np.array([[0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    np.testing.assert_allclose(pair_features(u, v)[0], [1, 0, 0, 1, 1, 1, 0, 0])
    np.testing.assert_allclose(cosines(u, v), [0.0, 1.0], atol=1e-7)


def test_spearman_is_scipy_s_with_an_interval_around_it() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=120)
    y = np.round(x + rng.normal(size=120), 1)
    rho = spearman(x, y, seed=0, resamples=200)
    assert rho.value == pytest.approx(100 * spearmanr(x, y).statistic)
    assert rho.low < rho.value < rho.high
    assert spearman(x, y, seed=0, resamples=200) == rho
