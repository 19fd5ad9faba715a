"""KLUE-DP reader, prediction parsing and metric binding."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from klue import registry
from klue.errors import DataError, ProblemLog
from klue.tasks.dp import TASK
from klue.tasks.dp import records as dp
from task_files import read_with_log, write_file

HEADER = (
    "## 토큰, 레이블 구분자 : \\t\n## 토큰 구분자 : \\n\n## 문장 구분자 : \\n\\n\n## 주석 : ##\n"
    "## 칼럼명 : INDEX\tWORD_FORM\tLEMMA\tPOS\tHEAD\tDEPREL\n"
)
S1 = ("## s1\t행사는 끝났다.\n"
      "1\t행사는\t행사 는\tNNG+JX\t2\tNP_SBJ\n"
      "2\t끝났다.\t끝나 았 다 .\tVV+EP+EF+SF\t0\tVP\n\n")
S2 = ("## s2\t그래\n"
      "1\t그래\t그래\tIC\t0\tIP\n\n")


def write(tmp_path: Path, text: str | bytes, name: str = "klue-dp-v1.1_dev.tsv") -> Path:
    return write_file(tmp_path / name, text)


def read(path: Path) -> tuple[list[dp.DpRecord], ProblemLog]:
    return read_with_log(dp.read, path)


def test_reads_every_field(tmp_path: Path) -> None:
    records, log = read(write(tmp_path, HEADER + S1 + "# a comment line\n" + S2))
    assert log.problems == []
    first, second = records
    assert first.guid == "s1" and first.sentence == "행사는 끝났다."
    assert first.words == ("행사는", "끝났다.")
    assert first.lemmas == ("행사 는", "끝나 았 다 .")
    assert first.pos == ("NNG+JX", "VV+EP+EF+SF")
    assert first.heads == (2, 0) and first.deprels == ("NP_SBJ", "VP")
    assert first.morphemes[1] == ("끝나", "았", "다", ".") and first.pos_tags[0] == ("NNG", "JX")
    assert first.label_set == "klue" and len(first) == 2
    assert second.deprels == ("IP",)


def test_deprel_order() -> None:
    assert len(dp.DEPRELS) == 38 and len(set(dp.DEPRELS)) == 38
    assert dp.DEPRELS[14] == "VP_SBJ" and dp.DEPRELS[15] == "VP_CMP" and dp.DEPRELS[-1] == "NP_SVJ"


@pytest.mark.parametrize("body, line, needle", [
    ("## s1\t가\n1\t가\t가\tNNG\t0\n\n", 7, "expected 6"),
    ("## s1\t가 나\n1\t가\t가\tNNG\t2\tNP\n3\t나\t나\tNNG\t0\tNP\n\n", 8, "INDEX '3'"),
    ("## s1\t가\n1\t가\t가\tNNG\troot\tNP\n\n", 7, "not an integer"),
    ("## s1\t가\n1\t가\t가\tNNG\t2\tNP\n\n", 7, "out of range 0..1"),
    ("## s1\t가\n1\t가\t가\tNNG\t0\tnsubj\n\n", 7, "unknown DEPREL"),
    ("## s1\t가\n\n", 6, "no words"),
    ("## s1\t가\n1\t가\t가\tNNG\t0\tNP\n\n## s1\t가\n1\t가\t가\tNNG\t0\tNP\n\n", 9, "duplicate guid"),
    ("1\t가\t가\tNNG\t0\tNP\n\n", 6, "outside a sentence"),
])
def test_errors_name_the_line(tmp_path: Path, body: str, line: int, needle: str) -> None:
    _, log = read(write(tmp_path, HEADER + body))
    assert any(p.location == f"line {line}" and needle in p.message for p in log.errors), log.problems


def test_reports_every_problem(tmp_path: Path) -> None:
    body = "## s1\t가 나\n1\t가\t가\tNNG\t9\tXX\n2\t나\t나\n\n## s2\t다\n1\t다\t다\tNNG\tx\tNP\n\n"
    _, log = read(write(tmp_path, HEADER + body))
    assert [p.location for p in log.errors] == ["line 8", "line 7", "line 7", "line 11"]


def test_empty_and_non_utf8(tmp_path: Path) -> None:
    _, log = read(write(tmp_path, "\n\n"))
    assert "empty" in log.errors[0].message
    _, log = read(write(tmp_path, HEADER.encode() + b"## s1\t\xfe\n"))
    assert "not UTF-8" in log.errors[0].message
    _, log = read(write(tmp_path, HEADER))
    assert "no sentences" in log.errors[0].message


def test_morpheme_count_mismatch_is_a_warning(tmp_path: Path) -> None:
    records, log = read(write(tmp_path, HEADER + "## s1\t3%\n1\t3%\t0\tSN+SW\t0\tNP\n\n"))
    assert log.errors == [] and len(records) == 1 and "morphemes" in log.warnings[0].message


def test_predictions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = read(write(tmp_path, HEADER + S1 + S2))[0]
    log = ProblemLog("pred.jsonl")
    gold = [dp.gold_prediction(r) for r in records]
    assert [dp.parse_prediction(TASK.prediction_to_json(g), log, "l") for g in gold] == gold
    assert dp.parse_prediction({"guid": "s1", "heads": [1, True], "deprels": ["NP", "NP"]}, log, "a") is None
    assert dp.parse_prediction({"guid": "s1", "heads": [1], "deprels": ["NP", "NP"]}, log, "b") is None
    assert dp.parse_prediction({"guid": "s1", "heads": [1], "deprels": [3]}, log, "c") is None
    assert [p.location for p in log.errors] == ["a", "b", "c"]

    seen = {}

    def fake_compute(gh, gd, ph, pd, mode="official"):
        seen.update(args=(gh, gd, ph, pd), mode=mode)
        return "report"

    import klue.tasks.dp  # the task's metric binding calls the metric module it imported

    monkeypatch.setattr(klue.tasks.dp, "metric", types.SimpleNamespace(compute=fake_compute))
    assert TASK.evaluate(records, gold, "corrected") == "report"
    assert seen["args"] == ([[2, 0], [0]], [["NP_SBJ", "VP"], ["IP"]], [[2, 0], [0]], [["NP_SBJ", "VP"], ["IP"]])
    assert seen["mode"] == "corrected"
    with pytest.raises(DataError, match="1 predicted heads"):
        TASK.evaluate(records, [dp.DpPrediction("s1", (0,), ("NP",)), gold[1]], "official")
    with pytest.raises(DataError, match="unknown DEPREL"):
        TASK.evaluate(records, [dp.DpPrediction("s1", (2, 0), ("NP", "nsubj")), gold[1]], "official")


def test_registered() -> None:
    assert registry.get("klue-dp") is TASK
    assert TASK.default_local_protocol == "local:dev-80-20"
    assert "local:ud-gsd" in TASK.protocols and "conllu" in TASK.other_readers


def test_real_dev(klue_data_dir: Path) -> None:
    records, log = read(klue_data_dir / TASK.file("dev").path)
    assert log.errors == []
    assert len(records) == 2000
    assert sum(len(r) for r in records) == 22496
    assert sum(h == 0 for r in records for h in r.heads) == 2000  # one root per sentence


def test_real_dev_scores_perfectly_with_gold(klue_data_dir: Path) -> None:
    pytest.importorskip("klue.metrics.dp")
    records, _ = read(klue_data_dir / TASK.file("dev").path)
    report = TASK.evaluate(records, [dp.gold_prediction(r) for r in records], "official")
    assert report.scores["uas_micro_f1"] == pytest.approx(100.0)
    assert report.scores["las_macro_f1"] == pytest.approx(100.0)


def test_ud_labels_score_with_label_equality() -> None:
    pytest.importorskip("klue.metrics.dp")
    gold = dp.DpRecord("u1", "a b c d", ("a", "b", "c", "d"), ("a", "b", "c", "d"), ("X",) * 4, (2, 0, 2, 3),
                       ("nsubj", "root", "obj", "nmod:poss"), "ud")
    pred = dp.DpPrediction("u1", (2, 0, 2, 2), ("nsubj", "root", "obl", "nmod:poss"))
    report = TASK.evaluate([gold], [pred], "official")
    assert report.scores["uas"] == pytest.approx(75.0) == report.scores["uas_micro_f1"]
    assert report.scores["las"] == pytest.approx(50.0) == report.scores["las_micro_f1"]
    # per label: nsubj 1, root 1, obj 0, obl 0, nmod:poss 0 (head wrong)
    assert report.breakdown["las_f1_per_label"]["nmod:poss"] == 0.0
    assert report.scores["las_macro_f1"] == pytest.approx(40.0)
    perfect = TASK.evaluate([gold], [dp.gold_prediction(gold)], "official")
    assert perfect.scores["las_macro_f1"] == pytest.approx(100.0)
    with pytest.raises(DataError, match="mix"):
        TASK.evaluate([gold, dp.DpRecord("k", "a", ("a",), ("a",), ("X",), (0,), ("VP",))],
                         [dp.gold_prediction(gold), dp.DpPrediction("k", (0,), ("VP",))], "official")


@pytest.mark.parametrize("heads", [(2, 99), (-1, 0), (3, 0)])
def test_heads_outside_the_sentence_are_refused_naming_the_guid(tmp_path: Path, heads: tuple[int, int]) -> None:
    """A head the gold reader would call an error (outside 0..n_words) is never scored."""
    records = read(write(tmp_path, HEADER + S1 + S2))[0]
    bad = dp.DpPrediction("s1", heads, ("NP_SBJ", "VP"))
    with pytest.raises(DataError) as info:
        TASK.evaluate(records, [bad, dp.gold_prediction(records[1])], "official")
    problems = info.value.problems
    assert [p.location for p in problems] == ["s1"]
    assert f"head {next(h for h in heads if not 0 <= h <= 2)} is outside 0..2" in problems[0].message


def test_a_bad_head_and_an_unknown_label_are_both_named(tmp_path: Path) -> None:
    records = read(write(tmp_path, HEADER + S1 + S2))[0]
    bad = dp.DpPrediction("s1", (-1, 7), ("NP_SBJ", "nsubj"))
    with pytest.raises(DataError) as info:
        TASK.evaluate(records, [bad, dp.gold_prediction(records[1])], "official")
    messages = [p.message for p in info.value.problems]
    assert "word 1: head -1 is outside 0..2" in messages[0] and "(2 words in all)" in messages[0]
    assert "unknown DEPREL ['nsubj']" in messages[1]
