"""KLUE-WoS: dialogues, per-user-turn examples, validation, predictions and the dev-sample protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from klue import protocols, registry
from klue.errors import ProblemLog
from klue.io.locate import DataRoots
from klue.tasks.wos import TASK
from klue.tasks.wos import records as wos
from task_files import read_with_log, write_file


def dialogue(guid: str = "wos-v1_dev_00000", **changes: Any) -> dict[str, Any]:
    record = {"guid": guid, "domains": ["식당"], "dialogue": [
        {"role": "user", "text": "싼 식당 찾아주세요.", "state": ["식당-가격대-저렴"]},
        {"role": "sys", "text": "어느 지역이요?"},
        {"role": "user", "text": "서울 중앙이요.", "state": ["식당-가격대-저렴", "식당-지역-서울 중앙"]},
        {"role": "sys", "text": "찾았습니다."},
    ]}
    record.update(changes)
    return record


def write(tmp_path: Path, content: Any, name: str = "wos.json") -> Path:
    return write_file(tmp_path / name, content)


def read(path: Path) -> tuple[list[wos.WosTurn], ProblemLog]:
    return read_with_log(wos.read, path)


def test_registered() -> None:
    task = registry.get("klue-wos")
    assert task is TASK and task.metrics == ("joint_goal_acc", "slot_micro_f1")
    assert task.default_local_protocol == "local:wos-dev-sample10" and len(wos.DEFAULT_SLOTS) == 45


def test_turn_examples(tmp_path: Path) -> None:
    items = [dialogue(), dialogue("wos-v1_dev_00001")]
    turns, log = read(write(tmp_path, items))
    assert not log.problems
    assert [t.guid for t in turns] == ["wos-v1_dev_00000-0", "wos-v1_dev_00000-1", "wos-v1_dev_00001-0",
                                       "wos-v1_dev_00001-1"]
    second = turns[1]
    assert second.turn_index == 1 and second.utterance_index == 2 and second.text == "서울 중앙이요."
    assert second.state == ("식당-가격대-저렴", "식당-지역-서울 중앙") and second.previous_state == ("식당-가격대-저렴",)
    assert [u.text for u in second.history] == ["싼 식당 찾아주세요.", "어느 지역이요?"]
    assert second.system_text == "어느 지역이요?" and turns[0].system_text == ""
    assert TASK.group_key(second) == "wos-v1_dev_00000"
    assert [wos.to_json(d) for d in wos.dialogues_of(turns)] == items


@pytest.mark.parametrize(("content", "words"), [
    ("[{\"guid\": \"a\"", "truncated"), ("[nope]", "invalid JSON"), ("", "empty"), (b"[\"\xa0\"]", "not UTF-8"),
    ("[]", "empty list"),
])
def test_file_level_errors(tmp_path: Path, content: Any, words: str) -> None:
    turns, log = read(write(tmp_path, content))
    assert turns == [] and len(log.errors) == 1 and words in log.errors[0].message


def _with_turn(index: int, turn: dict[str, Any]) -> dict[str, Any]:
    item = dialogue("wos-v1_dev_00001")
    item["dialogue"][index] = turn
    return item


@pytest.mark.parametrize(("item", "location", "words"), [
    (_with_turn(2, {"role": "user", "text": "x", "state": ["식당-지역"]}), "$[1].dialogue[2].state[0]",
     "not `domain-slot-value`"),
    (_with_turn(2, {"role": "user", "text": "x", "state": ["식당-분위기-좋음"]}), "$[1].dialogue[2].state[0]",
     "not in the ontology"),
    (_with_turn(2, {"role": "user", "text": "x"}), "$[1].dialogue[2].state", "user turn has no `state`"),
    (_with_turn(1, {"role": "sys", "text": "x", "state": []}), "$[1].dialogue[1].state", "must not carry"),
    (_with_turn(1, {"role": "bot", "text": "x"}), "$[1].dialogue[1].role", "user or sys"),
    (_with_turn(2, {"role": "user", "text": "x", "state": "식당-지역-서울 중앙"}), "$[1].dialogue[2].state",
     "must be a list"),
    (_with_turn(2, {"role": "user", "text": "x", "state": [3]}), "$[1].dialogue[2].state[0]", "strings only"),
    (dialogue("wos-v1_dev_00001", dialogue=[]), "$[1].dialogue", "no turns"),
    ({"guid": "wos-v1_dev_00001", "domains": ["식당"]}, "$[1].dialogue", "missing field"),
])
def test_dialogue_errors(tmp_path: Path, item: dict[str, Any], location: str, words: str) -> None:
    turns, log = read(write(tmp_path, [dialogue(), item, dialogue("wos-v1_dev_00002")]))
    assert {t.dialogue_guid for t in turns} == {"wos-v1_dev_00000", "wos-v1_dev_00002"}  # keeps going
    assert [p.location for p in log.errors] == [location] and words in log.errors[0].message


def test_duplicate_guid_and_duplicate_slot(tmp_path: Path) -> None:
    repeated = _with_turn(2, {"role": "user", "text": "x", "state": ["식당-지역-서울 중앙", "식당-지역-서울 북쪽"]})
    _, log = read(write(tmp_path, [dialogue(), dialogue(), repeated]))
    assert [p.location for p in log.errors] == ["$[1].guid"]
    assert [p.location for p in log.warnings] == ["$[2].dialogue[2].state[1]"]


def test_ontology_next_to_the_data_is_used(tmp_path: Path) -> None:
    write(tmp_path, {"식당-가격대": ["저렴"], "식당-분위기": ["좋음"]}, "ontology.json")
    item = _with_turn(2, {"role": "user", "text": "x", "state": ["식당-분위기-좋음"]})
    turns, log = read(write(tmp_path, [dialogue(), item]))
    assert [p.location for p in log.errors] == ["$[0].dialogue[2].state[1]"]  # 식당-지역 is not in this ontology
    assert {t.dialogue_guid for t in turns} == {"wos-v1_dev_00001"}


def test_predictions() -> None:
    log = ProblemLog("pred.jsonl")
    state = ("식당-가격대-저렴",)
    gold = wos.WosPrediction("d-0", state)
    assert wos.parse_prediction(TASK.prediction_to_json(gold), log, "line 1") == gold
    assert wos.parse_prediction({"guid": "d-0", "state": "식당-가격대-저렴"}, log, "line 2") is None
    assert wos.parse_prediction({"guid": "d-0", "state": [1]}, log, "line 3") is None
    assert wos.parse_prediction({"guid": "d-0", "state": ["식당-가격대-none", "x"]}, log, "line 4") is not None
    assert [p.location for p in log.errors] == ["line 2", "line 3"]
    assert [p.location for p in log.warnings] == ["line 4"]


def test_real_dev_sample_and_ontology(shared_data_dir: Path, klue_data_dir: Path) -> None:
    ontology_log = ProblemLog("ontology.json")
    ontology = wos.read_ontology(klue_data_dir / TASK.file("resource").path, ontology_log)
    assert not ontology_log.problems and tuple(ontology) == wos.DEFAULT_SLOTS
    path = shared_data_dir / "klue-partial/wos-v1.1/wos-v1.1_dev_sample_10.json"
    log = ProblemLog(str(path))
    dialogues = wos.read_dialogues(path, log)
    assert not log.problems and len(dialogues) == 10
    assert [wos.to_json(d) for d in dialogues] == json.loads(path.read_text(encoding="utf-8"))
    turns = wos.expand_turns(dialogues)
    assert len(turns) == 76 and len({t.guid for t in turns}) == 76
    preds = [wos.parse_prediction(TASK.prediction_to_json(wos.gold_prediction(t)), log, "") for t in turns]
    assert TASK.evaluate(turns, preds, "official").scores["joint_goal_acc"] == 100.0


@pytest.mark.parametrize("name", ["gold.json", "gold_edge.json"])
def test_scoring_gold_files(shared_data_dir: Path, name: str) -> None:
    turns, log = read(shared_data_dir / "scoring-cases/wos" / name)
    assert turns and not log.problems


def test_dev_sample_protocol(shared_data_dir: Path, tmp_path: Path) -> None:
    data = protocols.resolve(TASK, "local:wos-dev-sample10", DataRoots(tmp_path, shared_data_dir))
    assert len(data.train) == len(data.eval) == 76 and "train = eval" in data.description
