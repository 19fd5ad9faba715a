"""MRC exact match and the official substring "ROUGE-W": difflib reference, normalisation edge cases,
unanswerable questions, long golds (autojunk), the true ROUGE-L / ROUGE-W of corrected mode."""

from __future__ import annotations

import gzip
import json
import string
from difflib import SequenceMatcher
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klue.metrics import mrc

text = st.text(alphabet="가나다 라마.,'\"〈〉()ab", max_size=14)


@settings(max_examples=100, deadline=None)
@given(text, text)
def test_exact_substring_matches_difflib_without_autojunk(a: str, b: str) -> None:
    expected = SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size
    assert mrc.longest_common_substring(a, b) == expected


def _reference_substring_f1(pred: str, gold: str) -> float:
    if gold == "":
        return float(pred == gold)
    size = SequenceMatcher(None, pred, gold).find_longest_match(0, len(pred), 0, len(gold)).size
    p = size / len(pred) if pred else 0.0
    r = size / len(gold)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def _reference_normalize(s: str) -> str:
    import re

    s = re.sub(r"[\'\"《》<>〈〉]\(\)‘’", " ", s.lower())
    s = "".join(c for c in s if c not in set(string.punctuation))
    return " ".join(s.split())


@settings(max_examples=100, deadline=None)
@given(st.lists(text, max_size=3), text)
def test_official_scores_match_a_difflib_transcription(golds: list[str], pred: str) -> None:
    normalized = [_reference_normalize(g) for g in golds] or [""]
    p = _reference_normalize(pred)
    expected_em = max([0.0, *(float(p == g) for g in normalized)])
    expected_rouge = max([0.0, *(_reference_substring_f1(p, g) for g in normalized)])
    assert mrc.exact_match([golds], [pred]) == pytest.approx(100 * expected_em)
    assert mrc.rouge_w([golds], [pred]) == pytest.approx(100 * expected_rouge)


@settings(max_examples=60, deadline=None)
@given(text, text)
def test_lcs_and_wlcs_bounds(a: str, b: str) -> None:
    lcs = mrc.longest_common_subsequence(a, b)
    assert mrc.longest_common_substring(a, b) <= lcs <= min(len(a), len(b))
    # WLCS lies between LCS (all runs of length 1) and LCS^2 (one run)
    assert lcs <= mrc.weighted_lcs(a, b) <= lcs * lcs
    if a and a == b:
        assert mrc.rouge_w_f1(a, b) == pytest.approx(1.0) and mrc.rouge_l_f1(a, b) == 1.0


def test_unanswerable_questions_need_an_empty_answer() -> None:
    report = mrc.compute([[], [], []], ["", "답", "..."])  # "..." normalises to ""
    assert report.scores == {"exact_match": pytest.approx(200 / 3), "rouge_w": pytest.approx(200 / 3)}
    assert mrc.rouge_w([["서울"]], [""]) == 0.0


def test_ascii_punctuation_is_removed_but_cjk_brackets_stay_officially() -> None:
    assert mrc.exact_match([["ABC Corp."]], ["abc corp"]) == 100.0
    assert mrc.exact_match([["3.5%"]], ["35"]) == 100.0
    for gold, pred in [("《서울의 봄》", "서울의 봄"), ("〈한국〉", "한국"), ("‘별’", "별"), ("（전각）", "전각")]:
        assert mrc.exact_match([[gold]], [pred]) == 0.0, gold
    # corrected mode removes the quote/bracket characters the regex meant (not the fullwidth parentheses)
    for gold, pred in [("《서울의 봄》", "서울의 봄"), ("〈한국〉", "한국"), ("‘별’", "별")]:
        assert mrc.exact_match([[gold]], [pred], mode="corrected") == 100.0, gold
    assert mrc.exact_match([["（전각）"]], ["전각"], mode="corrected") == 0.0
    # the official pattern only matches a quote/bracket followed by the literal "()‘’"
    assert mrc.normalize_answer("'()‘’x") == "x"
    assert mrc.normalize_answer("〈()‘’〉") == "〉"


def test_nbsp_and_ideographic_space_collapse_like_a_space() -> None:
    assert mrc.normalize_answer("서울\u3000특별시") == "서울 특별시"
    assert mrc.normalize_answer("서울\xa0 특별시 ") == "서울 특별시"
    assert mrc.exact_match([["서울\u3000특별시"], ["서울\xa0특별시"]], ["서울 특별시", "서울 특별시"]) == 100.0


def test_best_of_several_golds() -> None:
    assert mrc.exact_match([["이순신", "이순신 장군"]], ["이순신 장군"]) == 100.0
    # "이순신 장군님" vs "이순신 장군": L = 6, P 6/7, R 1
    assert mrc.rouge_w([["이순신", "이순신 장군"]], ["이순신 장군님"]) == pytest.approx(100 * 2 * (6 / 7) / (6 / 7 + 1))


def test_autojunk_matters_for_golds_of_200_characters_or_more() -> None:
    gold = "가나다라마바사 " * 30  # 240 characters: every character is "popular" for difflib's autojunk
    pred = "마바사 가나다"  # no match can be seeded; difflib then only extends the (empty) common prefix
    official = mrc.rouge_w([[gold]], [pred])
    assert official == pytest.approx(100 * _reference_substring_f1(mrc.normalize_answer(pred),
                                                                   mrc.normalize_answer(gold)))
    exact = mrc.compute([[gold]], [pred], mode="corrected").scores["substring_f1"]
    assert official == 0.0 and exact > 0.0
    short_gold = "가나다라마바사 " * 20  # 160 characters: no autojunk, the two agree
    assert mrc.rouge_w([[short_gold]], [pred]) == pytest.approx(
        mrc.compute([[short_gold]], [pred], mode="corrected").scores["substring_f1"])


def test_corrected_mode_reports_true_rouge_next_to_the_substring_f1() -> None:
    report = mrc.compute([["가나다 라마바"]], ["가나x다 라마"], question_types=[2], mode="corrected")
    assert set(report.scores) == {"exact_match", "rouge_w", "rouge_l", "substring_f1"}
    assert report.scores["substring_f1"] == pytest.approx(100 * 4 / 7)  # "다 라마"
    assert report.scores["rouge_l"] == pytest.approx(100 * 6 / 7)  # "가나다 라마"
    # WLCS: runs "가나" and "다 라마" -> 4 + 16 = 20; P = R = sqrt(20) / 7
    assert report.scores["rouge_w"] == pytest.approx(100 * 20 ** 0.5 / 7)
    assert report.mode == "corrected"
    assert report.breakdown["per_question_type"]["2/n_questions"] == 1.0


def test_per_question_type_breakdown_and_merging() -> None:
    golds = [["서울"], ["부산"], []]
    preds = ["서울", "대구", ""]
    report = mrc.compute(golds, preds, question_types=[1, 2, 3])
    assert report.breakdown["per_question_type"]["1/exact_match"] == 100.0
    assert report.breakdown["per_question_type"]["2/exact_match"] == 0.0
    assert report.breakdown["per_question_type"]["3/rouge_w"] == 100.0
    merged = mrc.sums(golds[:1], preds[:1]) + mrc.sums(golds[1:], preds[1:])
    assert merged.means() == pytest.approx(report.scores)


def _read_gold(path: Path) -> tuple[dict[str, list[str]], dict[str, int]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    answers: dict[str, list[str]] = {}
    types: dict[str, int] = {}
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                answers[qa["guid"]] = [a["text"] for a in qa["answers"]]
                types[qa["guid"]] = qa["question_type"]
    return answers, types


@pytest.mark.parametrize("gold_name, preds", [("gold.json", ["pred_1", "pred_2", "pred_3"]),
                                              ("gold_edge.json", ["pred_edge"])])
def test_scoring_cases(shared_data_dir: Path, gold_name: str, preds: list[str]) -> None:
    cases = shared_data_dir / "scoring-cases/mrc"
    answers, types = _read_gold(cases / gold_name)
    guids = list(answers)
    golds = [answers[g] for g in guids]
    perfect = mrc.compute(golds, [a[0] if a else "" for a in golds], [types[g] for g in guids])
    assert perfect.scores == {"exact_match": 100.0, "rouge_w": 100.0}
    for name in preds:
        with gzip.open(cases / f"{name}.json.gz", "rt", encoding="utf-8") as f:
            pred_map = json.load(f)
        pred = [pred_map[g] for g in guids]
        report = mrc.compute(golds, pred, [types[g] for g in guids])
        normalized = [[_reference_normalize(a) for a in g] or [""] for g in golds]
        expected = [max([0.0, *(_reference_substring_f1(_reference_normalize(p), a) for a in n)])
                    for p, n in zip(pred, normalized)]
        assert report.scores["rouge_w"] == pytest.approx(100 * sum(expected) / len(expected), abs=1e-9)
        for mode in ("official", "corrected"):
            scores = mrc.compute(golds, pred, mode=mode).scores  # type: ignore[arg-type]
            assert all(0.0 <= v <= 100.0 for v in scores.values())
