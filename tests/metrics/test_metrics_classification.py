"""Shared counts against sklearn, and shard merging; the single-label tasks' metrics (YNAT macro F1, NLI
accuracy) on their real and synthetic scoring cases."""

from __future__ import annotations

import doctest
import gzip
import importlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klue.metrics.classification import (
    ACCURACY,
    MACRO_F1,
    LabelCounts,
    SingleLabelMetrics,
    accuracy,
    confusion_matrix,
    macro_f1,
    micro_f1,
)

LABELS = ["a", "b", "c", "d", "e"]
pairs = st.lists(st.tuples(st.sampled_from(LABELS), st.sampled_from(LABELS)), min_size=1, max_size=60)


@settings(max_examples=40, deadline=None)
@given(pairs)
def test_macro_micro_accuracy_match_sklearn(data: list[tuple[str, str]]) -> None:
    from sklearn.metrics import accuracy_score, f1_score

    gold = [g for g, _ in data]
    pred = [p for _, p in data]
    assert macro_f1(gold, pred) == pytest.approx(100 * f1_score(gold, pred, average="macro"), abs=1e-9)
    assert micro_f1(gold, pred) == pytest.approx(100 * f1_score(gold, pred, average="micro"), abs=1e-9)
    some = ["a", "c"]
    assert micro_f1(gold, pred, labels=some) == pytest.approx(
        100 * f1_score(gold, pred, average="micro", labels=some, zero_division=0), abs=1e-9)
    assert macro_f1(gold, pred, labels=LABELS, zero_division=1.0) == pytest.approx(
        100 * f1_score(gold, pred, average="macro", labels=LABELS, zero_division=1), abs=1e-9)
    assert accuracy(gold, pred) == pytest.approx(100 * accuracy_score(gold, pred), abs=1e-9)
    assert LabelCounts.of(gold, pred).accuracy() == pytest.approx(accuracy(gold, pred), abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(pairs, st.integers(min_value=0, max_value=60))
def test_shards_merge_to_the_whole(data: list[tuple[str, str]], cut: int) -> None:
    gold = [g for g, _ in data]
    pred = [p for _, p in data]
    whole = LabelCounts.of(gold, pred)
    merged = LabelCounts.of(gold[:cut], pred[:cut]) + LabelCounts.of(gold[cut:], pred[cut:])
    assert merged == whole
    assert merged.macro_f1() == whole.macro_f1()


def test_confusion_rows_are_gold_and_extras_follow() -> None:
    from sklearn.metrics import confusion_matrix as sk_confusion

    gold = ["a", "b", "b", "a", "c"]
    pred = ["a", "b", "z", "b", "c"]
    matrix = confusion_matrix(gold, pred, labels=["a", "b", "c"])
    assert matrix.labels == ("a", "b", "c", "z")
    assert [list(r) for r in matrix.counts] == sk_confusion(gold, pred, labels=["a", "b", "c", "z"]).tolist()


def test_empty_and_misaligned_inputs() -> None:
    assert math.isnan(macro_f1([], []))
    assert math.isnan(accuracy([], []))
    with pytest.raises(ValueError, match="2 gold"):
        macro_f1(["a", "b"], ["a"])


@pytest.mark.parametrize("name", ["classification", "sts", "ner", "re", "dp", "mrc", "wos"])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"klue.metrics.{name}")
    result = doctest.testmod(module)
    assert result.attempted > 0
    assert result.failed == 0


# ------------------------------------------------------------------------ the single-label tasks' metrics

YNAT_LABELS = ["정치", "경제", "사회", "생활문화", "세계", "IT과학", "스포츠"]
NLI_LABELS = ["entailment", "contradiction", "neutral"]
YNAT = SingleLabelMetrics("ynat", (MACRO_F1, ACCURACY))
NLI = SingleLabelMetrics("nli", (ACCURACY, MACRO_F1))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(YNAT_LABELS), st.sampled_from(YNAT_LABELS)), min_size=1, max_size=80))
def test_ynat_macro_f1_matches_sklearn(data: list[tuple[str, str]]) -> None:
    from sklearn.metrics import f1_score

    gold = [g for g, _ in data]
    pred = [p for _, p in data]
    expected = 100 * f1_score(gold, pred, average="macro")
    assert macro_f1(gold, pred) == pytest.approx(expected, abs=1e-9)
    assert YNAT.compute(gold, pred, YNAT_LABELS).scores["macro_f1"] == pytest.approx(expected, abs=1e-9)


def test_a_class_only_predicted_counts_as_zero_and_an_absent_class_does_not_exist() -> None:
    gold = ["정치", "정치", "경제"]
    pred = ["정치", "사회", "경제"]
    report = YNAT.compute(gold, pred, YNAT_LABELS)
    # 정치 2/3, 경제 1, 사회 0; the 4 labels in neither side are not averaged
    assert report.scores["macro_f1"] == pytest.approx(100 * (2 / 3 + 1 + 0) / 3)
    assert list(report.scores) == ["macro_f1", "accuracy"] and report.task == "ynat"
    assert list(report.breakdown["f1_per_class"]) == ["정치", "경제", "사회"]
    assert report.confusion is not None and report.confusion.labels == tuple(YNAT_LABELS)
    assert report.confusion.counts[0][:3] == (1, 0, 1)
    assert report.mode == "official" and report.n_examples == 3


def test_single_label_statistics_give_the_report_scores_in_its_order() -> None:
    gold = ["정치", "정치", "경제", "세계"]
    pred = ["정치", "사회", "경제", "경제"]
    for metrics in (YNAT, NLI):
        stats = metrics.statistics(gold, pred, YNAT_LABELS)
        assert stats.metrics == tuple(spec.name for spec in metrics.specs)
        assert stats.totals() == pytest.approx(metrics.compute(gold, pred, YNAT_LABELS).scores)


def test_an_unknown_mode_is_an_error() -> None:
    with pytest.raises(ValueError, match="mode"):
        YNAT.compute(["정치"], ["정치"], YNAT_LABELS, mode="lenient")  # type: ignore[arg-type]


def test_ynat_scoring_case_gold_scores_the_maximum(shared_data_dir: Path) -> None:
    records = json.loads((shared_data_dir / "scoring-cases/ynat/gold.json").read_text(encoding="utf-8"))
    gold = [r["label"] for r in records]
    assert YNAT.compute(gold, gold, YNAT_LABELS).scores == {"macro_f1": 100.0, "accuracy": 100.0}


def _nli_dev_gold(klue_data_dir: Path) -> list[str]:
    records = json.loads((klue_data_dir / "klue-nli-v1.1/klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    return [r["gold_label"] for r in records]


def test_nli_gold_scores_the_maximum_on_real_dev(klue_data_dir: Path) -> None:
    gold = _nli_dev_gold(klue_data_dir)
    report = NLI.compute(gold, gold, NLI_LABELS)
    assert report.scores == {"accuracy": 100.0, "macro_f1": 100.0}
    assert report.n_examples == 3000 and report.task == "nli"
    assert report.confusion is not None
    assert [report.confusion.counts[i][i] for i in range(3)] == [1000, 1000, 1000]


@pytest.mark.parametrize("case", [1, 2, 3])
def test_nli_scoring_cases_match_sklearn(klue_data_dir: Path, shared_data_dir: Path, case: int) -> None:
    from sklearn.metrics import accuracy_score, f1_score

    gold = _nli_dev_gold(klue_data_dir)
    with gzip.open(shared_data_dir / f"scoring-cases/nli/pred_{case}.json.gz", "rt", encoding="utf-8") as f:
        pred = json.load(f)
    report = NLI.compute(gold, pred, NLI_LABELS)
    assert report.scores["accuracy"] == pytest.approx(100 * accuracy_score(gold, pred), abs=1e-9)
    assert report.scores["macro_f1"] == pytest.approx(100 * f1_score(gold, pred, average="macro"), abs=1e-9)
    assert accuracy(gold, pred) == report.scores["accuracy"]
