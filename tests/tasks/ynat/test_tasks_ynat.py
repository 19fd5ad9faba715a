"""KLUE-YNAT records, reader validation, predictions and the ynat-resplit protocol."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from klue import protocols, registry
from klue.errors import ProblemLog
from klue.io.locate import DataRoots
from klue.tasks.ynat import TASK
from klue.tasks.ynat import records as ynat
from task_files import read_with_log, write_file


def headline(i: int, label: str = "사회", **changes: Any) -> dict[str, Any]:
    record = {"guid": f"ynat-v1_dev_{i:05d}", "title": f"제목 {i}", "predefined_news_category": "경제",
              "label": label,
              "annotations": {"annotators": ["18", "03", "15"],
                              "annotations": {"first-scope": [label, label, "경제"],
                                              "second-scope": ["해당없음", "해당없음", label],
                                              "third-scope": ["해당없음", "해당없음", "생활문화"]}},
              "url": "https://example.invalid/1", "date": "2017.09.21. 오후 5:09"}
    record.update(changes)
    return record


def write(tmp_path: Path, content: Any) -> Path:
    return write_file(tmp_path / "ynat.json", content)


def read(path: Path) -> tuple[list[ynat.YnatRecord], ProblemLog]:
    return read_with_log(ynat.read, path)


def test_registered() -> None:
    task = registry.get("klue-ynat")
    assert task is TASK and task.labels == ("정치", "경제", "사회", "생활문화", "세계", "IT과학", "스포츠")
    assert task.metrics == ("macro_f1",) and task.default_local_protocol == "local:ynat-resplit"
    assert task.file("train").git_blob == "e74e912a66720294bd6fe70e69b0cd131a0a10d7"


def test_reads_every_field(tmp_path: Path) -> None:
    items = [headline(0), headline(1, "IT과학")]
    records, log = read(write(tmp_path, items))
    assert not log.problems and [ynat.to_json(r) for r in records] == items
    assert records[0].annotations.scope("second-scope") == ("해당없음", "해당없음", "사회")


@pytest.mark.parametrize(("content", "words"), [
    ("[{", "truncated"), ("[1,]", "invalid JSON"), ("", "empty"), (b"\x80[]", "not UTF-8"), ("[]", "empty list"),
])
def test_file_level_errors(tmp_path: Path, content: Any, words: str) -> None:
    records, log = read(write(tmp_path, content))
    assert records == [] and len(log.errors) == 1 and words in log.errors[0].message


@pytest.mark.parametrize(("item", "location", "words"), [
    ({**headline(1), "label": "연예"}, "$[1].label", "unknown category '연예'"),
    (headline(1, annotations={"annotators": [], "annotations": {"first-scope": ["날씨"]}}),
     "$[1].annotations.annotations.first-scope", "unknown categories"),
    (headline(1, title=["t"]), "$[1].title", "must be a string"),
    (headline(1, url=3), "$[1].url", "must be a string"),
    ({k: v for k, v in headline(1).items() if k != "date"}, "$[1].date", "missing field"),
])
def test_field_errors(tmp_path: Path, item: dict[str, Any], location: str, words: str) -> None:
    records, log = read(write(tmp_path, [headline(0), item]))
    assert [r.guid for r in records] == ["ynat-v1_dev_00000"]
    assert [p.location for p in log.errors] == [location] and words in log.errors[0].message


def test_duplicate_guid(tmp_path: Path) -> None:
    _, log = read(write(tmp_path, [headline(0), headline(1), headline(0)]))
    assert [p.location for p in log.errors] == ["$[2].guid"]


def test_predictions_by_name_only() -> None:
    log = ProblemLog("pred.jsonl")
    gold = TASK.gold_prediction(ynat.YnatRecord("g", "t", "세계"))
    assert TASK.parse_prediction(TASK.prediction_to_json(gold), log, "line 1") == gold
    assert TASK.parse_prediction({"guid": "g", "label": 4}, log, "line 2") is None
    assert TASK.parse_prediction({"guid": "g", "label": "World"}, log, "line 3") is None
    assert [p.location for p in log.errors] == ["line 2", "line 3"]
    assert "not an index" in log.errors[0].message


def test_real_dev_sample_and_scoring_gold(shared_data_dir: Path) -> None:
    for relative, count in [("klue-partial/ynat-v1.1/ynat-v1_dev_sample_10.json", 10),
                            ("scoring-cases/ynat/gold.json", 240)]:
        path = shared_data_dir / relative
        records, log = read(path)
        assert not log.problems and len(records) == count
        assert [ynat.to_json(r) for r in records] == json.loads(path.read_text(encoding="utf-8"))
        preds = [TASK.parse_prediction(TASK.prediction_to_json(TASK.gold_prediction(r)), log, "") for r in records]
        assert TASK.evaluate(records, preds, "official").scores["macro_f1"] == 100.0


def test_resplit_protocol(shared_data_dir: Path, tmp_path: Path) -> None:
    data = protocols.resolve(TASK, "local:ynat-resplit", DataRoots(tmp_path, shared_data_dir))
    assert (len(data.train), len(data.eval)) == (36576, 9078)
    assert not data.official and "not official" in data.description
    assert {r.label for r in data.eval} == set(ynat.LABELS)
    assert {r.guid for r in data.train}.isdisjoint({r.guid for r in data.eval})
