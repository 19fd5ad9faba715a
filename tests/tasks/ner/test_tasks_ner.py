"""KLUE-NER reader, prediction parsing and metric binding."""

from __future__ import annotations

from pathlib import Path

import pytest

from klue import registry
from klue.errors import DataError, ProblemLog
from klue.tasks.ner import TASK
from klue.tasks.ner import records as ner
from task_files import read_with_log, write_file

HEADER = (
    "## 토큰, 레이블 구분자 : \\t\n## 토큰 구분자 : \\n\n## 문장 구분자 : \\n\\n\n## 주석 : ##\n"
    "## 컬럼명 : CHAR\tNE_TAG\n"
)


def sentence(guid: str, marked: str, pairs: list[tuple[str, str]]) -> str:
    return f"## {guid}\t{marked}\n" + "".join(f"{c}\t{t}\n" for c, t in pairs) + "\n"


GOOD = HEADER + sentence("s1", "<김철수:PS> 왔다", [("김", "B-PS"), ("철", "I-PS"), ("수", "I-PS"), (" ", "O"),
                                                 ("왔", "O"), ("다", "O")]) \
    + sentence("s2", "<12:30:TI>에 <뚝방전설>", [(c, "B-TI" if i == 0 else ("I-TI" if i < 5 else "O"))
                                               for i, c in enumerate("12:30에 <뚝방전설>")])


def write(tmp_path: Path, text: str | bytes, name: str = "klue-ner-v1.1_dev.tsv") -> Path:
    return write_file(tmp_path / name, text)


def read(path: Path) -> tuple[list[ner.NerRecord], ProblemLog]:
    return read_with_log(ner.read, path)


def test_reads_every_field(tmp_path: Path) -> None:
    records, log = read(write(tmp_path, GOOD))
    assert log.problems == []
    first, second = records
    assert first.guid == "s1" and first.marked == "<김철수:PS> 왔다"
    assert first.text == "김철수 왔다"
    assert first.chars == ("김", "철", "수", " ", "왔", "다")
    assert first.tags == ("B-PS", "I-PS", "I-PS", "O", "O", "O")
    assert first.nonspace_chars == ("김", "철", "수", "왔", "다")
    assert first.nonspace_tags == ("B-PS", "I-PS", "I-PS", "O", "O")
    assert first.nonspace_positions == (0, 1, 2, 4, 5)
    # a ':' inside an entity and angle brackets that are not markup
    assert second.text == "12:30에 <뚝방전설>"


def test_crlf_and_no_trailing_blank_line(tmp_path: Path) -> None:
    records, log = read(write(tmp_path, GOOD.rstrip("\n").replace("\n", "\r\n")))
    assert log.errors == [] and len(records) == 2


@pytest.mark.parametrize("body, line, needle", [
    ("## s1\t가\n가\n\n", 7, "without a tab"),
    ("## s1\t가\n가\tB-XX\n\n", 7, "unknown tag"),
    ("## s1\t가나\n가나\tO\n\n", 7, "exactly one character"),
    ("## s1\t가\n가\tO\tO\n\n", 7, "3 tab-separated fields"),
    ("## s1\t가\n가\tO\n\n## s2\t나\n\n", 9, "no characters"),
    ("## s1\t가나\n가\tO\n\n", 6, "does not match"),
    ("## s1\t가\n가\tO\n\n## s1\t가\n가\tO\n\n", 9, "duplicate guid"),
    ("## s1\t가\n가\tO\n\n## \t가\n가\tO\n\n", 9, "sentence header"),
])
def test_errors_name_the_line(tmp_path: Path, body: str, line: int, needle: str) -> None:
    _, log = read(write(tmp_path, HEADER + body))
    assert any(p.location == f"line {line}" and needle in p.message for p in log.errors), log.problems


def test_reports_every_problem_not_just_the_first(tmp_path: Path) -> None:
    body = "## s1\t가나\n가\tX\n나\n\n## s2\t다\n다다\tO\n\n"
    _, log = read(write(tmp_path, HEADER + body))
    assert [p.location for p in log.errors] == ["line 7", "line 8", "line 11"]


def test_empty_and_non_utf8_files(tmp_path: Path) -> None:
    _, log = read(write(tmp_path, ""))
    assert "empty" in log.errors[0].message
    _, log = read(write(tmp_path, HEADER.encode() + b"## s1\t\xff\n"))
    assert "not UTF-8" in log.errors[0].message and log.errors[0].location == "line 6"
    _, log = read(write(tmp_path, HEADER))
    assert log.errors


def test_ill_formed_bio_is_a_warning(tmp_path: Path) -> None:
    records, log = read(write(tmp_path, HEADER + sentence("s1", "가 나", [("가", "O"), (" ", "O"), ("나", "I-PS")])))
    assert log.errors == [] and len(records) == 1
    assert "ill-formed IOB2" in log.warnings[0].message
    # B-X, space, I-X is well formed in the non-space view the metric sees
    _, log = read(write(tmp_path, HEADER + sentence("s1", "가 나", [("가", "B-PS"), (" ", "O"), ("나", "I-PS")])))
    assert log.problems == []


def test_malformed_markup_the_characters_share_is_a_warning(tmp_path: Path) -> None:
    chars = "한<일:;LC>"
    body = sentence("s1", "<한:LC><일:;LC>", [(c, "B-LC" if i == 0 else "O") for i, c in enumerate(chars)])
    records, log = read(write(tmp_path, HEADER + body))
    assert log.errors == [] and records[0].text == chars
    assert "malformed entity markup" in log.warnings[0].message


def test_prediction_round_trip_and_lengths(tmp_path: Path) -> None:
    record = read(write(tmp_path, GOOD))[0][0]
    log = ProblemLog("pred.jsonl")
    gold = ner.gold_prediction(record)
    parsed = ner.parse_prediction(TASK.prediction_to_json(gold), log, "line 1")
    assert parsed == gold and log.problems == []
    assert ner.nonspace_prediction(record, gold) == record.nonspace_tags
    short = ner.NerPrediction("s1", record.nonspace_tags)
    assert ner.nonspace_prediction(record, short) == record.nonspace_tags
    with pytest.raises(DataError, match="3 predicted tags"):
        ner.nonspace_prediction(record, ner.NerPrediction("s1", ("O", "O", "O")))
    assert ner.parse_prediction({"guid": "s1", "tags": ["B-XX"]}, log, "line 2") is None
    assert ner.parse_prediction({"guid": "s1", "tags": "O"}, log, "line 3") is None
    assert ner.parse_prediction({"tags": []}, log, "line 4") is None
    assert [p.location for p in log.errors] == ["line 2", "line 3", "line 4"]


def test_evaluate_uses_non_space_tags(tmp_path: Path) -> None:
    """The metric reads the tags of the non-space characters only: a tag predicted for a space is ignored."""
    import dataclasses

    from klue.metrics import ner as metric
    from klue.tasks.ner import tag_columns

    records = read(write(tmp_path, GOOD))[0]
    preds = [ner.gold_prediction(r) for r in records]
    assert all(len(p.tags) == len(r.chars) and " " in r.chars for p, r in zip(preds, records))
    # a wrong tag at every space: the metric never sees it
    preds = [dataclasses.replace(p, tags=tuple("B-DT" if c == " " else t for c, t in zip(r.chars, p.tags)))
             for p, r in zip(preds, records)]
    gold_tags, pred_tags = tag_columns(records, preds)
    assert gold_tags == [list(r.nonspace_tags) for r in records] == pred_tags
    assert all(" " not in r.nonspace_chars for r in records)
    report = TASK.evaluate(records, preds, "official")
    assert report == metric.compute(gold_tags, pred_tags) and report.scores["entity_macro_f1"] == 100.0
    with pytest.raises(DataError, match="expected guid"):
        TASK.evaluate(records, preds[::-1], "official")


def test_registered() -> None:
    assert registry.get("klue-ner") is TASK
    assert TASK.labels == ner.TAGS and len(ner.TAGS) == 13
    assert TASK.default_local_protocol == "local:ner-train5000"
    assert "local:ner-train5000" in TASK.protocols


def test_real_dev(klue_data_dir: Path) -> None:
    records, log = read(klue_data_dir / TASK.file("dev").path)
    assert log.errors == []
    assert len(records) == 5000
    assert sum(len(r.nonspace_chars) for r in records) == 225550
    assert len({r.guid for r in records}) == 5000


def test_real_dev_scores_perfectly_with_gold(klue_data_dir: Path) -> None:
    pytest.importorskip("klue.metrics.ner")
    records, _ = read(klue_data_dir / TASK.file("dev").path)
    report = TASK.evaluate(records, [ner.gold_prediction(r) for r in records], "official")
    assert report.scores["entity_macro_f1"] == pytest.approx(100.0)
    assert report.scores["character_macro_f1"] == pytest.approx(100.0)


def test_real_train_first5000(shared_data_dir: Path) -> None:
    records, log = read(shared_data_dir / "klue-partial/klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv")
    assert log.errors == [] and len(records) == 5000
