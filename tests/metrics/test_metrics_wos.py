"""WoS joint goal accuracy and slot F1: a transcription of the official TRADE-style loop, edge cases."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klue.metrics import wos

ITEMS = ["식당-가격대-저렴", "식당-지역-서울 중앙", "식당-지역-none", "택시-도착지-서울역", "관광-이름-남산"]
state = st.lists(st.sampled_from(ITEMS), max_size=4)


def _reference(gold: list[list[str]], pred: list[list[str]]) -> tuple[float, float]:
    """docs/metrics.md (WoS), written as the official per-turn loop (list membership, duplicates counted)."""
    joint = f1_sum = 0.0
    for g, p in zip(gold, pred):
        joint += set(g) == set(p)
        if not g:
            f1_sum += 1.0 if not p else 0.0
            continue
        tp = sum(1 for x in g if x in p)
        fn = len(g) - tp
        fp = sum(1 for x in p if x not in g)
        precision = tp / (tp + fp) if tp + fp else 0
        recall = tp / (tp + fn) if tp + fn else 0
        f1_sum += 2 * precision * recall / (precision + recall) if precision + recall else 0
    n = len(gold)
    return (100 * joint / n, 100 * f1_sum / n) if n else (0.0, 0.0)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(state, state), max_size=12))
def test_official_matches_the_transcription(turns: list[tuple[list[str], list[str]]]) -> None:
    gold = [g for g, _ in turns]
    pred = [p for _, p in turns]
    jga, slot = _reference(gold, pred)
    report = wos.compute(gold, pred)
    assert report.scores["joint_goal_acc"] == pytest.approx(jga, abs=1e-9)
    assert report.scores["slot_micro_f1"] == pytest.approx(slot, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(state, state), min_size=1, max_size=12), st.integers(0, 12))
def test_corrected_is_item_micro_f1_and_shards_merge(turns: list[tuple[list[str], list[str]]], cut: int) -> None:
    gold = [g for g, _ in turns]
    pred = [p for _, p in turns]
    tp = sum(len(set(g) & set(p)) for g, p in turns)
    n_pred = sum(len(set(p)) for p in pred)
    n_gold = sum(len(set(g)) for g in gold)
    expected = 100.0 if n_pred + n_gold == 0 else 100 * 2 * tp / (n_pred + n_gold)
    assert wos.slot_micro_f1(gold, pred, mode="corrected") == pytest.approx(expected)
    merged = wos.WosCounts.of(gold[:cut], pred[:cut]) + wos.WosCounts.of(gold[cut:], pred[cut:])
    whole = wos.WosCounts.of(gold, pred)
    assert merged.item_micro_f1() == whole.item_micro_f1()
    assert merged.joint_goal_acc() == whole.joint_goal_acc()
    assert merged.official_slot_f1() == pytest.approx(whole.official_slot_f1())


def test_edge_cases() -> None:
    # empty gold turn: 1 only for an empty prediction; -none is an ordinary false positive
    assert wos.slot_micro_f1([[]], [[]]) == 100.0
    assert wos.slot_micro_f1([[]], [["식당-지역-none"]]) == 0.0
    assert wos.slot_micro_f1([["식당-가격대-저렴"]], [["식당-가격대-저렴", "식당-지역-none"]]) == pytest.approx(
        100 * 2 * 0.5 / 1.5)
    # duplicates: ignored by the set comparison of JGA, counted by the official F1
    assert wos.joint_goal_acc([["식당-가격대-저렴"]], [["식당-가격대-저렴", "식당-가격대-저렴"]]) == 100.0
    assert wos.slot_micro_f1([["식당-가격대-저렴", "식당-가격대-저렴"]], [["식당-가격대-저렴"]]) == 100.0
    assert wos.slot_micro_f1([["a-b-1"]], [["a-b-2", "a-b-2"]]) == 0.0
    # no turns at all: the official code gives 0
    assert wos.compute([], []).scores == {"joint_goal_acc": 0.0, "slot_micro_f1": 0.0}


def test_per_domain_breakdown() -> None:
    gold = [["식당-가격대-저렴", "택시-도착지-서울역"], ["식당-가격대-저렴"]]
    pred = [["식당-가격대-저렴"], ["식당-가격대-저렴", "관광-이름-남산"]]
    domains = wos.compute(gold, pred).breakdown["per_domain"]
    assert domains["식당/joint_goal_acc"] == 100.0 and domains["식당/slot_f1"] == 100.0
    assert domains["택시/joint_goal_acc"] == 0.0 and domains["택시/n_turns"] == 1.0
    assert domains["관광/slot_f1"] == 0.0


def _gold_states(path: Path) -> list[list[str]]:
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    return [turn.get("state", []) for d in dialogues for turn in d["dialogue"] if turn["role"] == "user"]


@pytest.mark.parametrize("gold_name, preds", [("gold.json", ["pred_1", "pred_2", "pred_3"]),
                                              ("gold_edge.json", ["pred_edge"])])
def test_scoring_cases(shared_data_dir: Path, gold_name: str, preds: list[str]) -> None:
    cases = shared_data_dir / "scoring-cases/wos"
    gold = _gold_states(cases / gold_name)
    assert wos.compute(gold, gold).scores == {"joint_goal_acc": 100.0, "slot_micro_f1": 100.0}
    for name in preds:
        with gzip.open(cases / f"{name}.json.gz", "rt", encoding="utf-8") as f:
            pred = json.load(f)
        jga, slot = _reference(gold, pred)
        report = wos.compute(gold, pred)
        assert report.scores["joint_goal_acc"] == pytest.approx(jga, abs=1e-9)
        assert report.scores["slot_micro_f1"] == pytest.approx(slot, abs=1e-9)
