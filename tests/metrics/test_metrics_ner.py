"""NER entity F1 against seqeval strict IOB2 and character F1 against sklearn, edge cases, real dev gold."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from klue.metrics import ner

# Few types keep collisions (entities of several types, ill-formed I-X) frequent in small samples.
SMALL_TAGS = ["B-PS", "I-PS", "B-LC", "I-LC", "O", "O"]
sentence = st.lists(st.sampled_from(SMALL_TAGS), min_size=1, max_size=12)


@st.composite
def sentence_pairs(draw: st.DrawFn, tags: list[str] = SMALL_TAGS) -> tuple[list[list[str]], list[list[str]]]:
    lengths = draw(st.lists(st.integers(1, 12), min_size=1, max_size=8))
    gold = [draw(st.lists(st.sampled_from(tags), min_size=n, max_size=n)) for n in lengths]
    pred = [draw(st.lists(st.sampled_from(tags), min_size=n, max_size=n)) for n in lengths]
    return gold, pred


def _flat(sentences: list[list[str]]) -> list[str]:
    return [t for s in sentences for t in ["O", *s, "O"]]


def _seqeval_entity_f1(gold: list[list[str]], pred: list[list[str]]) -> float:
    import warnings

    from seqeval.metrics import f1_score
    from seqeval.scheme import IOB2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return 100 * f1_score([_flat(gold)], [_flat(pred)], average="macro", mode="strict", scheme=IOB2)


def _sklearn_char_f1(gold: list[list[str]], pred: list[list[str]]) -> float:
    from sklearn.metrics import f1_score

    return 100 * f1_score(_flat(gold), _flat(pred), labels=list(ner.TAGS), average="macro", zero_division=1)


@settings(max_examples=50, deadline=None)
@given(sentence_pairs())
def test_entity_f1_equals_seqeval_strict(pair: tuple[list[list[str]], list[list[str]]]) -> None:
    gold, pred = pair
    expected = _seqeval_entity_f1(gold, pred)
    mine = ner.entity_macro_f1(gold, pred)
    if math.isnan(expected):
        assert math.isnan(mine)
    else:
        assert mine == pytest.approx(expected, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(sentence_pairs(list(ner.TAGS)))
def test_all_types_entity_and_character_f1_match_references(pair: tuple[list[list[str]], list[list[str]]]) -> None:
    gold, pred = pair
    report = ner.compute(gold, pred)
    expected = _seqeval_entity_f1(gold, pred)
    if not math.isnan(expected):
        assert report.scores["entity_macro_f1"] == pytest.approx(expected, abs=1e-9)
    assert report.scores["character_macro_f1"] == pytest.approx(_sklearn_char_f1(gold, pred), abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(sentence_pairs(list(ner.TAGS)))
def test_corrected_character_f1_is_sklearn_without_o(pair: tuple[list[list[str]], list[list[str]]]) -> None:
    from sklearn.metrics import f1_score

    gold, pred = pair
    flat_gold = [t for s in gold for t in s]
    flat_pred = [t for s in pred for t in s]
    present = sorted((set(flat_gold) | set(flat_pred)) - {"O"})
    value = ner.character_macro_f1(gold, pred, mode="corrected")
    if not present:
        assert math.isnan(value)
    else:
        assert value == pytest.approx(100 * f1_score(flat_gold, flat_pred, labels=present, average="macro"), abs=1e-9)


def test_i_without_b_is_no_entity() -> None:
    gold = [["O", "I-PS", "I-PS", "O"]]  # ill-formed: not an entity in strict mode
    pred = [["O", "B-PS", "I-PS", "O"]]
    counts = ner.EntityCounts.of(gold, pred)
    assert counts.n_gold == {} and counts.n_pred == {"PS": 1} and counts.tp == {}
    assert ner.entity_macro_f1(gold, pred) == 0.0
    # B-X I-Y: the I-Y continues nothing
    assert ner.EntityCounts.of([["B-PS", "I-LC"]], [["B-PS", "O"]]).tp == {"PS": 1}


def test_padding_stops_entities_at_sentence_ends() -> None:
    # Without the per-sentence O padding the second sentence's I-PS would extend the first one's B-PS.
    gold = [["O", "B-PS"], ["I-PS", "O"]]
    pred = [["O", "B-PS"], ["O", "O"]]
    assert ner.entity_macro_f1(gold, pred) == 100.0


def test_tags_absent_on_both_sides_count_as_one_in_official_character_f1() -> None:
    gold = [["B-PS", "O"]]
    pred = [["B-PS", "O"]]
    assert ner.character_macro_f1(gold, pred) == 100.0  # 11 absent tags at 1, B-PS 1, O 1
    assert ner.character_macro_f1(gold, pred, mode="corrected") == 100.0
    gold, pred = [["B-PS", "I-PS"]], [["B-PS", "O"]]
    # official: B-PS 1, I-PS 0, O: tp 2 (padding), fp 1 -> 0.8, 10 absent tags 1
    assert ner.character_macro_f1(gold, pred) == pytest.approx(100 * (1 + 0 + 0.8 + 10) / 13)
    assert ner.character_macro_f1(gold, pred, mode="corrected") == pytest.approx(50.0)


def test_no_entities_anywhere_is_nan_as_seqeval() -> None:
    assert math.isnan(ner.entity_macro_f1([["O", "O"]], [["O", "I-PS"]]))


def test_unknown_tag_and_length_mismatch_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown NER tag 'B-XX'"):
        ner.compute([["O"]], [["B-XX"]])
    with pytest.raises(ValueError, match="sentence 1: 2 gold tags but 1 predicted"):
        ner.compute([["O"], ["O", "O"]], [["O"], ["O"]])


@settings(max_examples=30, deadline=None)
@given(sentence_pairs(list(ner.TAGS)), st.integers(0, 8))
def test_shards_merge(pair: tuple[list[list[str]], list[list[str]]], cut: int) -> None:
    gold, pred = pair
    merged = ner.EntityCounts.of(gold[:cut], pred[:cut]) + ner.EntityCounts.of(gold[cut:], pred[cut:])
    assert merged == ner.EntityCounts.of(gold, pred)
    chars = ner.character_counts(gold[:cut], pred[:cut]) + ner.character_counts(gold[cut:], pred[cut:])
    assert chars.macro_f1(ner.TAGS, zero_division=1.0) == pytest.approx(ner.character_macro_f1(gold, pred))


@pytest.fixture(scope="module")
def dev_gold(klue_data_dir: Path) -> list[list[str]]:
    """Non-space tags per sentence, through the task's official reader."""
    from klue.errors import ProblemLog
    from klue.tasks import ner as ner_task

    log = ProblemLog("ner dev")
    records = ner_task.read(klue_data_dir / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv", log)
    log.raise_if_errors()
    return [list(r.nonspace_tags) for r in records]


def test_gold_scores_the_maximum_on_real_dev(dev_gold: list[list[str]]) -> None:
    gold = dev_gold
    assert len(gold) == 5000
    report = ner.compute(gold, gold)
    assert report.scores == {"entity_macro_f1": 100.0, "character_macro_f1": 100.0}
    assert set(report.breakdown["f1_per_type"]) == set(ner.ENTITY_TYPES)


@pytest.mark.parametrize("case", [1, 2, 3, 4])
def test_scoring_cases_match_references_on_real_dev(dev_gold: list[list[str]], shared_data_dir: Path,
                                                     case: int) -> None:
    # The full dev set against seqeval is checked in benchmarks/bench_metrics.py (seqeval needs minutes
    # there); here the first 1,000 sentences for sklearn and 100 for seqeval.
    gold = dev_gold
    with gzip.open(shared_data_dir / f"scoring-cases/ner/pred_{case}.json.gz", "rt", encoding="utf-8") as f:
        pred = json.load(f)
    report = ner.compute(gold, pred)
    assert 0 <= report.scores["entity_macro_f1"] < 100
    head = slice(0, 1000)
    assert ner.character_macro_f1(gold[head], pred[head]) == pytest.approx(
        _sklearn_char_f1(gold[head], pred[head]), abs=1e-9)
    head = slice(0, 100)
    assert ner.entity_macro_f1(gold[head], pred[head]) == pytest.approx(
        _seqeval_entity_f1(gold[head], pred[head]), abs=1e-9)
