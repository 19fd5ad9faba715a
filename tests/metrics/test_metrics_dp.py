"""DP UAS/LAS macro and micro F1 against an sklearn transcription of the official definition."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klue.metrics import dp

Sentences = list[list[int]]


def _official_reference(gold_heads: Sentences, gold_deprels: list[list[str]], pred_heads: Sentences,
                        pred_deprels: list[list[str]]) -> dict[str, float]:
    """docs/metrics.md (DP) in sklearn terms (independent of klue.metrics.classification)."""
    from sklearn.metrics import f1_score

    gh = np.concatenate([np.asarray(s, dtype=int) for s in gold_heads])
    ph = np.concatenate([np.asarray(s, dtype=int) for s in pred_heads])
    gl = np.array([dp.DEPRELS.index(x) for s in gold_deprels for x in s])
    pl = np.array([dp.DEPRELS.index(x) for s in pred_deprels for x in s])
    gl = np.where(gl >= 15, -3, gl)
    pl = np.where(pl >= 15, -3, pl)
    pl = np.where(gh == ph, pl, -2)
    return {
        "uas_macro_f1": 100 * f1_score(gh, ph, average="macro"),
        "uas_micro_f1": 100 * f1_score(gh, ph, average="micro"),
        "las_macro_f1": 100 * f1_score(gl, pl, average="macro"),
        "las_micro_f1": 100 * f1_score(gl, pl, average="micro"),
    }


@st.composite
def parses(draw: st.DrawFn) -> tuple[Sentences, list[list[str]], Sentences, list[list[str]]]:
    lengths = draw(st.lists(st.integers(1, 6), min_size=1, max_size=6))
    # A few frequent labels (< 15) and a few collapsed ones (>= 15) so both cases occur.
    labels = st.sampled_from(["NP", "VP", "NP_SBJ", "VP_SBJ", "VP_CMP", "X_AJT", "NP_SVJ"])
    gh = [draw(st.lists(st.integers(0, n), min_size=n, max_size=n)) for n in lengths]
    ph = [draw(st.lists(st.integers(0, n), min_size=n, max_size=n)) for n in lengths]
    gl = [draw(st.lists(labels, min_size=n, max_size=n)) for n in lengths]
    pl = [draw(st.lists(labels, min_size=n, max_size=n)) for n in lengths]
    return gh, gl, ph, pl


@settings(max_examples=60, deadline=None)
@given(parses())
def test_official_scores_match_the_sklearn_transcription(case: tuple) -> None:
    gh, gl, ph, pl = case
    report = dp.compute(gh, gl, ph, pl)
    for name, value in _official_reference(gh, gl, ph, pl).items():
        assert report.scores[name] == pytest.approx(value, abs=1e-9), name


@settings(max_examples=40, deadline=None)
@given(parses())
def test_corrected_is_standard_attachment(case: tuple) -> None:
    gh, gl, ph, pl = case
    flat = [(a, b, c, d) for s in zip(gh, gl, ph, pl) for a, b, c, d in zip(*s)]
    uas = 100 * np.mean([g == p for g, _, p, _ in flat])
    las = 100 * np.mean([g == p and gd == pd for g, gd, p, pd in flat])
    report = dp.compute(gh, gl, ph, pl, mode="corrected")
    assert report.scores["uas"] == pytest.approx(uas) and report.scores["uas_micro_f1"] == pytest.approx(uas)
    assert report.scores["las"] == pytest.approx(las) and report.scores["las_micro_f1"] == pytest.approx(las)
    official = dp.compute(gh, gl, ph, pl)
    assert official.scores["las"] == report.scores["las"]  # standard LAS is reported in both modes
    assert official.scores["las_micro_f1"] >= official.scores["las"]  # the collapse only merges labels


def test_labels_from_15_collapse_and_wrong_heads_get_pad() -> None:
    heads, deprels = [[2, 0, 2, 2]], [["NP_SBJ", "VP", "VP_CMP", "NP_SVJ"]]
    # both collapsed labels swapped: still right officially
    same = dp.compute(heads, deprels, heads, [["NP_SBJ", "VP", "NP_SVJ", "VP_CMP"]])
    assert same.scores["las_micro_f1"] == 100.0 and same.scores["las_macro_f1"] == 100.0
    assert same.scores["las"] == 50.0
    # one wrong head: its label becomes PAD, a class of its own with F1 0
    wrong = dp.compute(heads, deprels, [[2, 0, 2, 1]], deprels)
    # classes: NP_SBJ 1, VP 1, others (tp 1, fn 1) 2/3, PAD 0
    assert wrong.scores["las_macro_f1"] == pytest.approx(100 * (1 + 1 + 2 / 3 + 0) / 4)
    assert wrong.scores["las_micro_f1"] == 75.0
    assert wrong.scores["uas_micro_f1"] == 75.0


def test_unknown_label_and_shape_mismatch_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown predicted dependency label 'SBJ'"):
        dp.compute([[0]], [["VP"]], [[0]], [["SBJ"]])
    with pytest.raises(ValueError, match="sentence 0: 2 gold words but 1 predicted"):
        dp.compute([[2, 0]], [["NP", "VP"]], [[0]], [["VP"]])


@settings(max_examples=30, deadline=None)
@given(parses(), st.integers(0, 6))
def test_shards_merge(case: tuple, cut: int) -> None:
    gh, gl, ph, pl = case
    whole = dp.compute(gh, gl, ph, pl)
    las = dp.las_counts(gh[:cut], gl[:cut], ph[:cut], pl[:cut]) + dp.las_counts(gh[cut:], gl[cut:], ph[cut:], pl[cut:])
    heads = dp.uas_counts(gh[:cut], ph[:cut]) + dp.uas_counts(gh[cut:], ph[cut:])
    attachment = (dp.AttachmentCounts.of(gh[:cut], gl[:cut], ph[:cut], pl[:cut])
                  + dp.AttachmentCounts.of(gh[cut:], gl[cut:], ph[cut:], pl[cut:]))
    assert las.macro_f1() == pytest.approx(whole.scores["las_macro_f1"])
    assert heads.macro_f1() == pytest.approx(whole.scores["uas_macro_f1"])
    assert attachment == dp.AttachmentCounts.of(gh, gl, ph, pl)


@pytest.fixture(scope="module")
def dev_gold(klue_data_dir: Path) -> tuple[Sentences, list[list[str]]]:
    from klue.errors import ProblemLog
    from klue.tasks import dp as dp_task

    log = ProblemLog("dp dev")
    records = dp_task.read(klue_data_dir / "klue-dp-v1.1/klue-dp-v1.1_dev.tsv", log)
    log.raise_if_errors()
    return [list(r.heads) for r in records], [list(r.deprels) for r in records]


def test_gold_scores_the_maximum_on_real_dev(dev_gold: tuple[Sentences, list[list[str]]]) -> None:
    heads, deprels = dev_gold
    assert len(heads) == 2000
    for mode in ("official", "corrected"):
        report = dp.compute(heads, deprels, heads, deprels, mode=mode)  # type: ignore[arg-type]
        assert set(report.scores.values()) == {100.0}, mode


@pytest.mark.parametrize("case", [1, 2, 3, 4])
def test_scoring_cases_match_the_transcription_on_real_dev(dev_gold: tuple[Sentences, list[list[str]]],
                                                           shared_data_dir: Path, case: int) -> None:
    heads, deprels = dev_gold
    with gzip.open(shared_data_dir / f"scoring-cases/dp/pred_{case}.json.gz", "rt", encoding="utf-8") as f:
        items = json.load(f)
    ph = [x["heads"] for x in items]
    pl = [x["deprels"] for x in items]
    report = dp.compute(heads, deprels, ph, pl)
    for name, value in _official_reference(heads, deprels, ph, pl).items():
        assert report.scores[name] == pytest.approx(value, abs=1e-6), name


def test_ud_labels_give_standard_las_and_per_label_f1() -> None:
    from klue.metrics.dp import compute_ud

    gold_heads, gold_labels = [[2, 0, 2]], [["nsubj", "root", "obj"]]
    pred_heads, pred_labels = [[2, 0, 1]], [["nsubj", "root", "nsubj"]]
    report = compute_ud(gold_heads, gold_labels, pred_heads, pred_labels)
    assert report.scores["uas"] == pytest.approx(200 / 3)
    assert report.scores["las"] == report.scores["las_micro_f1"] == pytest.approx(200 / 3)
    # nsubj: tp 1, pred 2, gold 1 -> F1 2/3; root: 1; obj: tp 0 -> 0
    assert report.breakdown["las_f1_per_label"] == pytest.approx({"nsubj": 200 / 3, "obj": 0.0, "root": 100.0})
    assert report.scores["las_macro_f1"] == pytest.approx((200 / 3 + 100) / 3)
    assert compute_ud(gold_heads, gold_labels, pred_heads, pred_labels, mode="corrected").scores == report.scores


def _conll18_las(gold_heads: Sentences, gold_deprels: list[list[str]], pred_heads: Sentences,
                 pred_deprels: list[list[str]], full: bool = False) -> float:
    """LAS as the CoNLL 2018 shared task's evaluation computes it on one tokenisation: the share of words
    with the gold head and the gold DEPREL, the DEPREL cut at the first ':' (language-specific subtypes
    are ignored); `full` keeps the whole label."""
    def label(x: str) -> str:
        return x if full else x.split(":")[0]

    words = [(gh, label(gd), ph, label(pd)) for a, b, c, d in zip(gold_heads, gold_deprels, pred_heads, pred_deprels)
             for gh, gd, ph, pd in zip(a, b, c, d)]
    return 100 * sum(gh == ph and gd == pd for gh, gd, ph, pd in words) / len(words)


@pytest.mark.parametrize("gold, pred, las, las_full", [
    # head right, subtype dropped / added / changed: the universal label agrees
    (((0, "root"), (1, "flat:name")), ((0, "root"), (1, "flat")), 100.0, 50.0),
    (((0, "root"), (1, "nmod")), ((0, "root"), (1, "nmod:poss")), 100.0, 50.0),
    (((0, "root"), (1, "acl:relcl"), (1, "obl:tmod")), ((0, "root"), (1, "acl:x"), (1, "obl:tmod")), 100.0, 200 / 3),
    # another universal label, or the head wrong, is wrong whatever the subtype
    (((0, "root"), (1, "nmod:poss")), ((0, "root"), (1, "amod:poss")), 50.0, 50.0),
    (((0, "root"), (1, "flat:name"), (1, "flat")), ((0, "root"), (3, "flat:name"), (1, "flat:x")), 200 / 3, 100 / 3),
    # a label that is only ':' parts, and one without a subtype
    (((0, "root"), (1, ":x")), ((0, "root"), (1, ":y")), 100.0, 50.0),
])
def test_ud_las_compares_the_universal_part_as_conll_2018(gold: tuple, pred: tuple, las: float,
                                                          las_full: float) -> None:
    gh, gl = [[h for h, _ in gold]], [[d for _, d in gold]]
    ph, pl = [[h for h, _ in pred]], [[d for _, d in pred]]
    assert _conll18_las(gh, gl, ph, pl) == pytest.approx(las)
    assert _conll18_las(gh, gl, ph, pl, full=True) == pytest.approx(las_full)
    for mode in ("official", "corrected"):
        scores = dp.compute_ud(gh, gl, ph, pl, mode=mode).scores
        assert scores["las"] == pytest.approx(las) and scores["las_full"] == pytest.approx(las_full)
        assert scores["las_micro_f1"] == scores["las_full"]  # the KLUE-named LAS keeps the full labels


@st.composite
def ud_parses(draw: st.DrawFn) -> tuple[Sentences, list[list[str]], Sentences, list[list[str]]]:
    lengths = draw(st.lists(st.integers(1, 6), min_size=1, max_size=6))
    labels = st.sampled_from(["root", "flat", "flat:name", "nmod", "nmod:poss", "obl:tmod", "obl", "acl:relcl"])
    gh = [draw(st.lists(st.integers(0, n), min_size=n, max_size=n)) for n in lengths]
    ph = [draw(st.lists(st.integers(0, n), min_size=n, max_size=n)) for n in lengths]
    gl = [draw(st.lists(labels, min_size=n, max_size=n)) for n in lengths]
    pl = [draw(st.lists(labels, min_size=n, max_size=n)) for n in lengths]
    return gh, gl, ph, pl


@settings(max_examples=60, deadline=None)
@given(ud_parses())
def test_ud_las_matches_the_conll_2018_transcription(case: tuple) -> None:
    gh, gl, ph, pl = case
    scores = dp.compute_ud(gh, gl, ph, pl).scores
    assert scores["las"] == pytest.approx(_conll18_las(gh, gl, ph, pl), abs=1e-9)
    assert scores["las_full"] == pytest.approx(_conll18_las(gh, gl, ph, pl, full=True), abs=1e-9)
    assert scores["las_full"] <= scores["las"] <= scores["uas"]


def test_las_full_is_reported_only_for_ud_labels() -> None:
    heads, deprels = [[2, 0, 2]], [["NP_SBJ", "VP", "X_AJT"]]
    assert "las_full" not in dp.compute(heads, deprels, heads, deprels).scores
    assert dp.universal_deprel("flat:name") == "flat" and dp.universal_deprel("nsubj") == "nsubj"
