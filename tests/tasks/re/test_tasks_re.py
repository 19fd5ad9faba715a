"""KLUE-RE records, reader validation (offsets, relation list), predictions and the sample protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from klue import protocols, registry
from klue.errors import ProblemLog
from klue.io.locate import DataRoots
from klue.tasks.re import TASK
from klue.tasks.re import records as re_task
from task_files import read_with_log, write_file

SENTENCE = "와이즈유(영산대학교, 총장 부구욱) 조리예술학부는 봉사활동을 진행했다."


def example(i: int, **changes: Any) -> dict[str, Any]:
    record = {"guid": f"klue-re-v1_train_{i:05d}", "sentence": SENTENCE,
              "subject_entity": {"word": "부구욱", "start_idx": 15, "end_idx": 17, "type": "PER"},
              "object_entity": {"word": "영산대학교", "start_idx": 5, "end_idx": 9, "type": "ORG"},
              "label": "per:employee_of", "source": "wikitree"}
    record.update(changes)
    return record


def write(tmp_path: Path, content: Any, name: str = "re.json") -> Path:
    return write_file(tmp_path / name, content)


def read(path: Path) -> tuple[list[re_task.ReRecord], ProblemLog]:
    return read_with_log(re_task.read, path)


def test_registered() -> None:
    task = registry.get("klue-re")
    assert task is TASK and len(task.labels) == 30 and task.labels[0] == "no_relation"
    assert task.metrics == ("micro_f1", "auprc") and task.default_local_protocol == "local:re-sample-80-20"
    assert task.file("resource").path == "klue-re-v1.1/relation_list.json"


def test_reads_every_field(tmp_path: Path) -> None:
    items = [example(0), example(1, label="no_relation")]
    records, log = read(write(tmp_path, items))
    assert not log.problems and [re_task.to_json(r) for r in records] == items
    assert records[0].subject_entity == re_task.Entity("부구욱", 15, 17, "PER")


@pytest.mark.parametrize(("content", "words"), [
    ("[{\"guid\"", "truncated"), ("[}", "invalid JSON"), ("", "empty"), (b"[\"\xed\xa0\x80\"]", "not UTF-8"),
])
def test_file_level_errors(tmp_path: Path, content: Any, words: str) -> None:
    records, log = read(write(tmp_path, content))
    assert records == [] and len(log.errors) == 1 and words in log.errors[0].message


@pytest.mark.parametrize(("item", "location", "words"), [
    (example(1, label="per:pet"), "$[1].label", "unknown relation 'per:pet'"),
    (example(1, subject_entity={"word": "부구욱", "start_idx": 14, "end_idx": 16, "type": "PER"}),
     "$[1].subject_entity", "not the entity word '부구욱'"),
    (example(1, object_entity={"word": "영산대학교", "start_idx": 5, "end_idx": 90, "type": "ORG"}),
     "$[1].object_entity", "outside the sentence"),
    (example(1, object_entity={"word": "영산대학교", "start_idx": "5", "end_idx": 9, "type": "ORG"}),
     "$[1].object_entity.start_idx", "must be an integer"),
    (example(1, object_entity={"word": "영산대학교", "start_idx": 5, "end_idx": 9}),
     "$[1].object_entity.type", "missing field"),
    (example(1, source=None), "$[1].source", "found null"),
])
def test_field_errors(tmp_path: Path, item: dict[str, Any], location: str, words: str) -> None:
    records, log = read(write(tmp_path, [example(0), item, example(2)]))
    assert [r.guid for r in records] == ["klue-re-v1_train_00000", "klue-re-v1_train_00002"]
    assert [p.location for p in log.errors] == [location] and words in log.errors[0].message


def test_relation_list_next_to_the_data_is_used(tmp_path: Path) -> None:
    write(tmp_path, {"relations": ["no_relation", "per:pet"]}, "relation_list.json")
    records, log = read(write(tmp_path, [example(0, label="per:pet"), example(1)]))
    assert [r.label for r in records] == ["per:pet"]
    assert [p.location for p in log.errors] == ["$[1].label"]
    assert "differs from the official one" in log.warnings[0].message


def test_bad_relation_list(tmp_path: Path) -> None:
    write(tmp_path, {"relations": ["per:pet", "no_relation"]}, "relation_list.json")
    records, log = read(write(tmp_path, [example(0)]))
    assert len(records) == 1  # falls back to the official list, after reporting the bad file
    assert log.errors[0].path.endswith("relation_list.json") and log.errors[0].location == "$.relations[0]"


def test_duplicate_guid(tmp_path: Path) -> None:
    _, log = read(write(tmp_path, [example(0), example(0)]))
    assert [p.location for p in log.errors] == ["$[1].guid"]


def test_predictions() -> None:
    log = ProblemLog("pred.jsonl")
    record = re_task.ReRecord("g", SENTENCE, re_task.Entity("부구욱", 15, 17, "PER"),
                              re_task.Entity("영산대학교", 5, 9, "ORG"), "per:title", "wikitree")
    gold = re_task.gold_prediction(record)
    assert gold.probs[re_task.RELATIONS.index("per:title")] == 1.0 and sum(gold.probs) == 1.0
    assert re_task.parse_prediction(TASK.prediction_to_json(gold), log, "line 1") == gold
    assert re_task.parse_prediction({"guid": "g", "label": "per:title", "probs": [0.1] * 29}, log, "l2") is None
    assert re_task.parse_prediction({"guid": "g", "label": "x", "probs": [0.1] * 30}, log, "l3") is None
    assert re_task.parse_prediction({"guid": "g", "label": "per:title", "probs": ["a"] * 30}, log, "l4") is None
    assert re_task.parse_prediction({"guid": "g", "label": "per:title"}, log, "l5") is None
    assert [p.location for p in log.errors] == ["l2", "l3", "l4", "l5"]
    assert "30 numbers" in log.errors[0].message


def test_real_train_sample_and_scoring_gold(shared_data_dir: Path) -> None:
    for relative, count in [("klue-derived/re-train-sample/klue-re-v1.1_train.sample3247.json", 3247),
                            ("scoring-cases/re/gold.json", 360)]:
        path = shared_data_dir / relative
        records, log = read(path)
        assert not log.problems and len(records) == count
        assert [re_task.to_json(r) for r in records] == json.loads(path.read_text(encoding="utf-8"))
        preds = [re_task.parse_prediction(TASK.prediction_to_json(re_task.gold_prediction(r)), log, "")
                 for r in records]
        scores = TASK.evaluate(records, preds, "official").scores
        assert scores["micro_f1"] == 100.0 and scores["auprc"] == pytest.approx(100.0)


def test_official_relation_list_matches(klue_data_dir: Path) -> None:
    log = ProblemLog("relation_list.json")
    assert re_task.read_relation_list(klue_data_dir / TASK.file("resource").path, log) == re_task.RELATIONS
    assert not log.problems


def test_sample_protocol(shared_data_dir: Path, tmp_path: Path) -> None:
    data = protocols.resolve(TASK, "local:re-sample-80-20", DataRoots(tmp_path, shared_data_dir))
    assert len(data.train) + len(data.eval) == 3247 and 0.75 < len(data.train) / 3247 < 0.85
    assert {r.guid for r in data.train}.isdisjoint({r.guid for r in data.eval})
    again = protocols.resolve(TASK, "local:re-sample-80-20", DataRoots(tmp_path, shared_data_dir))
    assert [r.guid for r in again.eval] == [r.guid for r in data.eval]  # stable, no seed


@pytest.mark.parametrize("probs, words", [
    ([-0.5] + [1.5 / 29] * 29, "found -0.5 at index 0 (no_relation)"),
    ([0.0] * 29 + [2.0], "found 2.0 at index 29 (per:title)"),
    ([1 / 31] * 31, "30 numbers"),
])
def test_impossible_probabilities_are_errors_naming_the_guid(probs: list[float], words: str) -> None:
    log = ProblemLog("pred.jsonl")
    assert re_task.parse_prediction({"guid": "g7", "label": "per:title", "probs": probs}, log, "line 3") is None
    assert [p.location for p in log.errors] == ["line 3"]
    assert log.errors[0].message.startswith("g7: ") and words in log.errors[0].message


def test_probabilities_at_the_bounds_and_unnormalised_are_accepted() -> None:
    # a sum other than 1 is warned about by the prediction-file reader, for the whole file, not here
    log = ProblemLog("pred.jsonl")
    for probs in ([1.0] + [0.0] * 29, [0.5] * 30):
        assert re_task.parse_prediction({"guid": "g", "label": "no_relation", "probs": probs}, log, "l") is not None
    assert log.problems == []


def test_entity_offsets_that_miss_their_word_are_warnings_when_read_for_scoring(tmp_path: Path) -> None:
    """The RE metric compares relation labels only: a gold read for scoring keeps an entity whose offsets
    miss its word (or leave the sentence) with a warning at its place, and scores it; read to check it (a
    plain log, `klue data validate`, tests/test_validate.py) it is an error."""
    from klue.scoring import score_files

    shifted = example(1, subject_entity={"word": "부구욱", "start_idx": 14, "end_idx": 16, "type": "PER"})
    outside = example(2, object_entity={"word": "영산대학교", "start_idx": 5, "end_idx": 90, "type": "ORG"})
    path = write(tmp_path, [example(0), shifted, outside])
    log = ProblemLog(str(path))
    records = TASK.read(path, log, "score")
    assert len(records) == 3 and log.errors == []
    assert [p.location for p in log.warnings] == ["$[1].subject_entity", "$[2].object_entity"]
    assert "not the entity word '부구욱'; kept" in log.warnings[0].message
    assert "outside the sentence" in log.warnings[1].message
    assert records[1].subject_entity == re_task.Entity("부구욱", 14, 16, "PER")  # kept as the file has it
    _, strict = read(path)
    assert [p.location for p in strict.errors] == ["$[1].subject_entity", "$[2].object_entity"]
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(TASK.prediction_to_json(TASK.gold_prediction(r))) + "\n"
                                   for r in records), encoding="utf-8")
    result = score_files(TASK, path, predictions)
    assert result.report.scores["micro_f1"] == 100.0
    assert [w.location for w in result.warnings] == ["$[1].subject_entity", "$[2].object_entity"]
