"""YNAT macro F1: sklearn reference, breakdown, confusion, synthetic scoring-case gold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klue.metrics import ynat

LABELS = ["정치", "경제", "사회", "생활문화", "세계", "IT과학", "스포츠"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), min_size=1, max_size=80))
def test_macro_f1_matches_sklearn(data: list[tuple[str, str]]) -> None:
    from sklearn.metrics import f1_score

    gold = [g for g, _ in data]
    pred = [p for _, p in data]
    expected = 100 * f1_score(gold, pred, average="macro")
    assert ynat.macro_f1(gold, pred) == pytest.approx(expected, abs=1e-9)
    assert ynat.compute(gold, pred, LABELS).scores["macro_f1"] == pytest.approx(expected, abs=1e-9)


def test_class_only_predicted_counts_as_zero_and_absent_class_does_not_exist() -> None:
    gold = ["정치", "정치", "경제"]
    pred = ["정치", "사회", "경제"]
    report = ynat.compute(gold, pred, LABELS)
    # 정치 2/3, 경제 1, 사회 0; the 4 labels in neither side are not averaged
    assert report.scores["macro_f1"] == pytest.approx(100 * (2 / 3 + 1 + 0) / 3)
    assert list(report.breakdown["f1_per_class"]) == ["정치", "경제", "사회"]
    assert report.confusion is not None and report.confusion.labels == tuple(LABELS)
    assert report.confusion.counts[0][:3] == (1, 0, 1)
    assert report.mode == "official" and report.n_examples == 3


def test_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="mode"):
        ynat.compute(["정치"], ["정치"], LABELS, mode="lenient")  # type: ignore[arg-type]


def test_scoring_case_gold_scores_the_maximum(shared_data_dir: Path) -> None:
    records = json.loads((shared_data_dir / "scoring-cases/ynat/gold.json").read_text(encoding="utf-8"))
    gold = [r["label"] for r in records]
    report = ynat.compute(gold, gold, LABELS)
    assert report.scores == {"macro_f1": 100.0, "accuracy": 100.0}
