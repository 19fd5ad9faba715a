"""KLUE-MRC records (one per question), reader validation, predictions and the KorQuAD protocol."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from klue import protocols, registry
from klue.errors import ProblemLog
from klue.io.locate import DataRoots
from klue.io.splits import hash_fraction
from klue.tasks.mrc import TASK
from klue.tasks.mrc import records as mrc
from task_files import read_with_log, write_file

CONTEXT = "1989년 2월 15일 여의도 농민 폭력 시위를 주도한 혐의로 지명수배되었다."


def qa(i: int, **changes: Any) -> dict[str, Any]:
    record = {"question": f"질문 {i}?", "answers": [{"text": "여의도", "answer_start": 13}],
              "question_type": 1, "is_impossible": False, "guid": f"klue-mrc-v1_dev_{i:05d}"}
    record.update(changes)
    return record


def impossible(i: int) -> dict[str, Any]:
    return {"question": f"질문 {i}?", "answers": [], "plausible_answers": [{"text": "농민", "answer_start": 17}],
            "question_type": 3, "is_impossible": True, "guid": f"klue-mrc-v1_dev_{i:05d}"}


def document(*questions: dict[str, Any], context: str = CONTEXT) -> dict[str, Any]:
    return {"version": "v1.1", "data": [{"title": "임종석", "news_category": None, "source": "wikipedia",
                                         "paragraphs": [{"context": context, "qas": list(questions)}]}]}


def write(tmp_path: Path, content: Any) -> Path:
    return write_file(tmp_path / "mrc.json", content)


def read(path: Path) -> tuple[list[mrc.MrcRecord], ProblemLog]:
    return read_with_log(mrc.read, path)


def test_registered() -> None:
    task = registry.get("klue-mrc")
    assert task is TASK and task.metrics == ("exact_match", "rouge_w")
    assert task.sizes == {"train": 17554, "dev": 5841} and task.default_local_protocol == "local:korquad-80-20"


def test_reads_every_field(tmp_path: Path) -> None:
    content = document(qa(0), qa(1, question_type=2), impossible(2))
    records, log = read(write(tmp_path, content))
    assert not log.problems and [r.guid for r in records] == [f"klue-mrc-v1_dev_{i:05d}" for i in range(3)]
    assert mrc.to_json(records, "v1.1") == content
    assert records[2].answer_texts == [] and records[2].plausible_answers == (mrc.MrcAnswer("농민", 17),)
    assert {TASK.group_key(r) for r in records} == {CONTEXT}


@pytest.mark.parametrize(("content", "location", "words"), [
    ("{\"data\": [", "line 1", "truncated"), ("{'data': []}", "line 1", "invalid JSON"), ("", "line 1", "empty"),
    (b"{\"data\": \"\xff\"}", "line 1", "not UTF-8"), ("{\"data\": []}", "$.data", "no articles"),
    ("[]", "$", "expected a JSON object"), ("{\"version\": \"x\"}", "$.data", "missing field"),
])
def test_file_level_errors(tmp_path: Path, content: Any, location: str, words: str) -> None:
    records, log = read(write(tmp_path, content))
    assert records == [] and len(log.errors) == 1
    assert log.errors[0].location.startswith(location) and words in log.errors[0].message


P = "$.data[0].paragraphs[0].qas[1]"


@pytest.mark.parametrize(("question", "location", "words"), [
    (qa(1, answers=[{"text": "여의도", "answer_start": 12}]), f"{P}.answers[0]", "not the answer text '여의도'"),
    (qa(1, answers=[{"text": "여의도", "answer_start": 400}]), f"{P}.answers[0]", "outside the context"),
    (qa(1, answers=[{"text": "여의도"}]), f"{P}.answers[0].answer_start", "missing field"),
    (qa(1, answers=[]), f"{P}.answers", "answerable question"),
    (qa(1, is_impossible=True, question_type=3), f"{P}.answers", "must have no answers"),
    (qa(1, question_type=4), f"{P}.question_type", "1, 2 or 3"),
    (qa(1, is_impossible="no"), f"{P}.is_impossible", "true or false"),
    (qa(1, guid=7), f"{P}.guid", "must be a string"),
    ({**impossible(1), "plausible_answers": [{"text": "x", "answer_start": 0}]}, f"{P}.plausible_answers[0]",
     "not the answer text"),
])
def test_question_errors(tmp_path: Path, question: dict[str, Any], location: str, words: str) -> None:
    records, log = read(write(tmp_path, document(qa(0), question, qa(2))))
    assert [r.guid for r in records] == ["klue-mrc-v1_dev_00000", "klue-mrc-v1_dev_00002"]  # siblings kept
    assert [p.location for p in log.errors] == [location] and words in log.errors[0].message


def test_question_type_and_impossible_disagreeing_is_a_warning(tmp_path: Path) -> None:
    records, log = read(write(tmp_path, document(qa(0, question_type=3))))
    assert len(records) == 1 and not log.errors and "question_type 3 but is_impossible false" in log.warnings[0].message


def test_paragraph_without_context_drops_its_questions(tmp_path: Path) -> None:
    content = document(qa(0))
    content["data"][0]["paragraphs"].append({"qas": [qa(1)]})
    records, log = read(write(tmp_path, content))
    assert [r.guid for r in records] == ["klue-mrc-v1_dev_00000"]
    assert [p.location for p in log.errors] == ["$.data[0].paragraphs[1].context"]


def test_duplicate_guid(tmp_path: Path) -> None:
    _, log = read(write(tmp_path, document(qa(0), qa(0))))
    assert [p.location for p in log.errors] == [f"{P}.guid"]


def test_unchecked_offsets_reader_warns_instead(tmp_path: Path) -> None:
    path = write(tmp_path, document(qa(0, answers=[{"text": "여의도", "answer_start": 0}])))
    log = ProblemLog(str(path))
    records = TASK.other_readers["unchecked-offsets"](path, log)
    assert len(records) == 1 and not log.errors and len(log.warnings) == 1


def test_predictions() -> None:
    log = ProblemLog("pred.jsonl")
    answerable = mrc.MrcRecord("g", "q", (mrc.MrcAnswer("여의도", 13),), 1, False, CONTEXT)
    unanswerable = mrc.MrcRecord("h", "q", (), 3, True, CONTEXT)
    for record in (answerable, unanswerable):
        gold = mrc.gold_prediction(record)
        assert mrc.parse_prediction(TASK.prediction_to_json(gold), log, "line 1") == gold
    assert mrc.gold_prediction(unanswerable).answer == ""
    assert mrc.parse_prediction({"guid": "g", "answer": None}, log, "line 2") is None
    assert mrc.parse_prediction({"guid": "g"}, log, "line 3") is None
    assert [p.location for p in log.errors] == ["line 2", "line 3"]
    scores = TASK.evaluate([answerable, unanswerable], [mrc.MrcPrediction("g", "여의도"), mrc.MrcPrediction("h", "")],
                          "official").scores
    assert scores["exact_match"] == 100.0


def test_scoring_gold_files(shared_data_dir: Path) -> None:
    path = shared_data_dir / "scoring-cases/mrc/gold.json"
    records, log = read(path)
    assert not log.problems and len(records) == 60
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert mrc.to_json(records, raw["version"]) == raw
    preds = [mrc.parse_prediction(TASK.prediction_to_json(mrc.gold_prediction(r)), log, "") for r in records]
    assert TASK.evaluate(records, preds, "official").scores["exact_match"] == 100.0
    edge = shared_data_dir / "scoring-cases/mrc/gold_edge.json"
    _, strict_log = read(edge)
    assert strict_log.errors and all("not the answer text" in p.message for p in strict_log.errors)
    lenient_log = ProblemLog(str(edge))
    assert len(mrc.read_unchecked_offsets(edge, lenient_log)) == 19 and not lenient_log.errors


def test_korquad_protocol(shared_data_dir: Path, tmp_path: Path) -> None:
    data = protocols.resolve(TASK, "local:korquad-80-20", DataRoots(tmp_path, shared_data_dir))
    assert len(data.train) + len(data.eval) == 5774
    assert {r.context for r in data.train}.isdisjoint({r.context for r in data.eval})
    assert all(hash_fraction(r.context) >= 0.8 for r in data.eval)
    assert all(r.question_type is None and not r.is_impossible for r in data.eval)
    assert "not KLUE" in data.description


def test_to_json_regroups_a_copy_of_nested_input(tmp_path: Path) -> None:
    content = document(qa(0), impossible(1))
    second = copy.deepcopy(content["data"][0])
    second["title"] = "다른 글"
    for q in second["paragraphs"][0]["qas"]:
        q["guid"] += "-b"
    content["data"].append(second)
    records, log = read(write(tmp_path, content))
    assert not log.problems and mrc.to_json(records, "v1.1") == content


def test_offsets_missing_their_text_are_warnings_when_read_for_scoring(tmp_path: Path) -> None:
    """The metric reads only answer texts: a gold read for scoring keeps such answers with a warning
    naming the guid and the answer; read to check it (`klue data validate`, training) it is an error."""

    content = document(qa(0), qa(1, answers=[{"text": "여의도", "answer_start": 2}]), impossible(2))
    for reader, name, text in ((TASK.read, "mrc.json", content),
                               (TASK.other_readers["korquad"], "squad.json", _as_squad(content))):
        path = write_file(tmp_path / name, text)
        log = ProblemLog(str(path))
        records = reader(path, log, "score")
        assert len(records) == 3 and log.errors == []
        assert [p.location for p in log.warnings] == [f"{P}.answers[0]"]
        assert "klue-mrc-v1_dev_00001: " in log.warnings[0].message and "'여의도'" in log.warnings[0].message
        assert records[1].answer_texts == ["여의도"]
        _, strict = read_with_log(reader, path)
        assert [p.location for p in strict.errors] == [f"{P}.answers[0]"]
        checking = ProblemLog(str(path))
        assert len(reader(path, checking, "train")) == 2 and len(checking.errors) == 1  # as strict as validate


def _as_squad(content: dict[str, Any]) -> dict[str, Any]:
    """The same questions as SQuAD v1.1 (KorQuAD) writes them: `id` for `guid`, no question_type."""
    squad = copy.deepcopy(content)
    for article in squad["data"]:
        del article["news_category"], article["source"]
        for paragraph in article["paragraphs"]:
            for question in paragraph["qas"]:
                question["id"] = question.pop("guid")
                del question["question_type"]
    return squad
