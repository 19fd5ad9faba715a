"""CoNLL-U reading onto DP records."""

from __future__ import annotations

from pathlib import Path

import pytest

from klue.errors import ProblemLog
from klue.tasks.dp import TASK
from klue.tasks.dp import records as dp

GOOD = """# sent_id = s1
# text = 제일 가까운 스타벅스가
1\t제일\t제일\tADV\tNNG\t_\t3\tadvmod\t_\t_
2\t가까운\t가깝+ㄴ\tADJ\tVA+ETM\t_\t3\tamod\t_\t_
3-4\t스타벅스가\t_\t_\t_\t_\t_\t_\t_\t_
3\t스타벅스\t스타벅스\tNOUN\tNNG\t_\t0\troot\t_\t_
3.1\t_\t_\t_\t_\t_\t_\t_\t_\t_
4\t가\t가\tADP\tJKS\t_\t3\tcase:x\t_\t_

# text = 1+1
1\t1+1\t1+1\tNUM\tSN+SW+SN\t_\t0\troot\t_\t_
2\t+\t+\tSYM\tSW\t_\t1\tpunct\t_\t_

"""


def read(tmp_path: Path, text: str) -> tuple[list[dp.DpRecord], ProblemLog]:
    path = tmp_path / "ko_test-ud-dev.conllu"
    path.write_text(text, encoding="utf-8")
    log = ProblemLog(str(path))
    return dp.read_conllu(path, log), log


def test_maps_onto_dp_records(tmp_path: Path) -> None:
    records, log = read(tmp_path, GOOD)
    assert log.errors == []
    first, second = records
    assert first.guid == "s1" and first.sentence == "제일 가까운 스타벅스가"
    assert first.words == ("제일", "가까운", "스타벅스", "가")  # range 3-4 and empty node 3.1 skipped
    assert first.lemmas == ("제일", "가깝 ㄴ", "스타벅스", "가")
    assert first.pos == ("NNG", "VA+ETM", "NNG", "JKS")
    assert first.heads == (3, 3, 0, 3)
    assert first.deprels == ("advmod", "amod", "root", "case:x")
    assert first.label_set == "ud"
    # no sent_id: named after the file, with a warning; a lemma made of '+' pieces stays whole
    assert second.guid == "ko_test-ud-dev-2" and "sent_id" in log.warnings[0].message
    assert second.lemmas == ("1 1", "+")


def test_lemma_mapping() -> None:
    assert dp.ud_lemma_to_klue("가깝+ㄴ") == "가깝 ㄴ"
    assert dp.ud_lemma_to_klue("+") == "+"
    assert dp.ud_lemma_to_klue("a++b") == "a++b"


@pytest.mark.parametrize("row, needle", [
    ("1\t가\t가\tNOUN\tNNG\t_\t0\troot\t_", "10 tab-separated"),
    ("2\t가\t가\tNOUN\tNNG\t_\t0\troot\t_\t_", "expected 1"),
    ("1\t가\t가\tNOUN\tNNG\t_\tx\troot\t_\t_", "not an integer"),
    ("1\t가\t가\tNOUN\tNNG\t_\t5\troot\t_\t_", "out of range"),
])
def test_errors(tmp_path: Path, row: str, needle: str) -> None:
    records, log = read(tmp_path, f"# sent_id = a\n{row}\n\n# sent_id = b\n1\t나\t나\tNOUN\tNNG\t_\t0\troot\t_\t_\n")
    assert any(needle in p.message for p in log.errors), log.problems
    assert [r.guid for r in records] == ["b"]


def test_duplicate_sent_id(tmp_path: Path) -> None:
    row = "1\t나\t나\tNOUN\tNNG\t_\t0\troot\t_\t_\n"
    _, log = read(tmp_path, f"# sent_id = a\n{row}\n# sent_id = a\n{row}")
    assert "duplicate guid" in log.errors[0].message and log.errors[0].location == "line 4"


@pytest.mark.parametrize("name, sentences, words", [
    ("ko_gsd-ud-dev.conllu", 950, 11958),
    ("ko_gsd-ud-test.conllu", 989, 11677),
])
def test_real_ud_korean_gsd(shared_data_dir: Path, name: str, sentences: int, words: int) -> None:
    path = shared_data_dir / "korean" / "ud-korean" / name
    log = ProblemLog(str(path))
    records = TASK.other_readers["conllu"](path, log)
    assert log.errors == []
    assert len(records) == sentences and sum(len(r) for r in records) == words
    assert all(r.label_set == "ud" and r.heads.count(0) == 1 for r in records)


def test_lemma_and_xpos_piece_counts_that_differ_are_warnings(tmp_path: Path) -> None:
    """As the KLUE DP reader does: LEMMA pieces (split on '+') against XPOS tags; the word is kept."""
    text = ("# sent_id = w1\n"
            "1\t학생이라는\t학생+이\tNOUN\tNNG+VCP+ETM\t_\t2\tnmod\t_\t_\n"
            "2\t가깝다\t가깝+다\tADJ\tVA+EF\t_\t0\troot\t_\t_\n"
            "3\t_\t_\tX\t_\t_\t2\tdep\t_\t_\n\n")
    records, log = read(tmp_path, text)
    assert log.errors == [] and records[0].lemmas == ("학생 이", "가깝 다", "_")
    assert [(p.location, p.severity) for p in log.problems] == [("line 2", "warning")]  # '_' is not compared
    assert "LEMMA '학생+이' has 2 morphemes but XPOS 'NNG+VCP+ETM' has 3 tags" in log.warnings[0].message


def test_ud_gold_reports_conll_2018_las_and_the_full_label_variant(tmp_path: Path) -> None:
    records, _ = read(tmp_path, "# sent_id = f1\n"
                                "1\t김\t김\tPROPN\tNNP\t_\t0\troot\t_\t_\n"
                                "2\t철수\t철수\tPROPN\tNNP\t_\t1\tflat:name\t_\t_\n"
                                "3\t씨\t씨\tNOUN\tNNB\t_\t1\tnmod\t_\t_\n\n")
    predicted = dp.DpPrediction("f1", (0, 1, 1), ("root", "flat", "nmod"))
    scores = TASK.evaluate(records, [predicted], "official").scores
    assert scores["las"] == pytest.approx(100.0)  # flat:name and flat share the universal label
    assert scores["las_full"] == pytest.approx(200 / 3) == scores["las_micro_f1"]
    assert "las_full" in TASK.metric_specs
