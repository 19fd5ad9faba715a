"""RE micro F1 (no_relation excluded) and AUPRC against sklearn; ties, absent classes, scoring cases."""

from __future__ import annotations

import gzip
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klue.metrics import re as re_metric

RELATIONS = ["no_relation", "per:title", "org:members", "per:origin"]


def _sklearn_auprc(gold: list[str], probs: np.ndarray, relations: list[str]) -> float:
    from sklearn.metrics import auc, precision_recall_curve

    codes = np.array([relations.index(g) for g in gold])
    onehot = np.eye(len(relations))[codes]
    areas = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in range(len(relations)):
            precision, recall, _ = precision_recall_curve(onehot[:, c], probs[:, c])
            areas.append(auc(recall, precision))
    return 100 * float(np.average(areas))


@st.composite
def re_cases(draw: st.DrawFn) -> tuple[list[str], list[str], np.ndarray]:
    n = draw(st.integers(2, 40))
    gold = draw(st.lists(st.sampled_from(RELATIONS), min_size=n, max_size=n))
    pred = draw(st.lists(st.sampled_from(RELATIONS), min_size=n, max_size=n))
    # Probabilities on a coarse grid so that ties are common.
    grid = draw(st.lists(st.integers(0, 5), min_size=n * len(RELATIONS), max_size=n * len(RELATIONS)))
    return gold, pred, np.array(grid, dtype=float).reshape(n, len(RELATIONS)) / 5


@settings(max_examples=60, deadline=None)
@given(re_cases())
def test_micro_f1_and_auprc_match_sklearn(case: tuple[list[str], list[str], np.ndarray]) -> None:
    from sklearn.metrics import f1_score

    gold, pred, probs = case
    labels = [r for r in RELATIONS if r != "no_relation"]
    expected_f1 = 100 * f1_score(gold, pred, average="micro", labels=labels, zero_division=0)
    assert re_metric.micro_f1(gold, pred, RELATIONS) == pytest.approx(expected_f1, abs=1e-9)
    report = re_metric.compute(gold, pred, probs.tolist(), RELATIONS)
    assert report.scores["micro_f1"] == pytest.approx(expected_f1, abs=1e-9)
    assert report.scores["auprc"] == pytest.approx(_sklearn_auprc(gold, probs, RELATIONS), abs=1e-6)


def test_ties_are_one_threshold() -> None:
    gold = ["per:title", "no_relation"]
    probs = [[0.5, 0.5], [0.5, 0.5]]  # everything tied: one point (recall 1, precision 1/2) + the end point
    per_class = re_metric.auprc_per_class(gold, probs, ["no_relation", "per:title"])
    assert per_class == {"no_relation": 75.0, "per:title": 75.0}


def test_class_absent_from_gold_scores_half_officially_and_is_skipped_corrected() -> None:
    relations = ["no_relation", "per:title", "org:members"]
    gold = ["per:title", "no_relation"]
    probs = [[0.1, 0.8, 0.1], [0.7, 0.2, 0.1]]
    per_class = re_metric.auprc_per_class(gold, probs, relations)
    assert per_class["org:members"] == 50.0
    assert re_metric.auprc(gold, probs, relations) == pytest.approx((100 + 100 + 50) / 3)
    assert re_metric.auprc(gold, probs, relations, mode="corrected") == 100.0
    assert re_metric.auprc(gold, probs, relations) == pytest.approx(_sklearn_auprc(gold, np.array(probs), relations))


def test_bad_probabilities_and_labels_are_errors() -> None:
    with pytest.raises(ValueError, match="shape"):
        re_metric.compute(["no_relation"], ["no_relation"], [[1.0]], RELATIONS)
    with pytest.raises(ValueError, match="not finite"):
        re_metric.compute(["no_relation"], ["no_relation"], [[math.nan, 0, 0, 0]], RELATIONS)
    with pytest.raises(ValueError, match="not in the relation list"):
        re_metric.micro_f1(["no_relation"], ["per:nothing"], RELATIONS)


def test_shards_merge_micro_f1_counts() -> None:
    from klue.metrics.classification import LabelCounts

    gold = ["per:title", "no_relation", "org:members", "per:title"]
    pred = ["per:title", "per:title", "no_relation", "org:members"]
    merged = LabelCounts.of(gold[:2], pred[:2]) + LabelCounts.of(gold[2:], pred[2:])
    labels = [r for r in RELATIONS if r != "no_relation"]
    assert merged.micro_f1(labels) == re_metric.micro_f1(gold, pred, RELATIONS)


def test_scoring_case_gold_scores_the_maximum_and_predictions_match_sklearn(shared_data_dir: Path) -> None:
    cases = shared_data_dir / "scoring-cases/re"
    relations = json.loads((cases / "relation_list.json").read_text(encoding="utf-8"))["relations"]
    gold = [r["label"] for r in json.loads((cases / "gold.json").read_text(encoding="utf-8"))]
    onehot = np.eye(len(relations))[[relations.index(g) for g in gold]]
    perfect = re_metric.compute(gold, gold, onehot.tolist(), relations)
    assert perfect.scores["micro_f1"] == 100.0
    assert perfect.scores["auprc"] == pytest.approx(_sklearn_auprc(gold, onehot, relations), abs=1e-9)
    for k in (1, 2, 3):
        with gzip.open(cases / f"pred_{k}.json.gz", "rt", encoding="utf-8") as f:
            items = json.load(f)
        pred = [relations[x["label"]] if isinstance(x["label"], int) else x["label"] for x in items]
        probs = np.array([x["probs"] for x in items], dtype=float)
        report = re_metric.compute(gold, pred, probs.tolist(), relations)
        assert report.scores["auprc"] == pytest.approx(_sklearn_auprc(gold, probs, relations), abs=1e-6)
