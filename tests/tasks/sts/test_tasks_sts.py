"""KLUE-STS records, reader validation, predictions and protocols."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from klue import protocols, registry
from klue.errors import DataError, ProblemLog
from klue.io.locate import DataRoots
from klue.tasks.sts import TASK
from klue.tasks.sts import records as sts
from task_files import read_with_log, write_file


def pair(i: int, score: float = 3.5, **changes: Any) -> dict[str, Any]:
    record = {"guid": f"klue-sts-v1_dev_{i:05d}", "source": "airbnb-rtt", "sentence1": f"문장 {i}",
              "sentence2": f"다른 문장 {i}",
              "labels": {"label": round(score, 1), "real-label": score, "binary-label": int(score >= 3)},
              "annotations": {"agreement": "0:0:0:1:1:1", "annotators": ["01", "02", "03"],
                              "annotations": [3, 4, 5]}}
    record.update(changes)
    return record


def write(tmp_path: Path, content: Any) -> Path:
    return write_file(tmp_path / "sts.json", content)


def read(path: Path) -> tuple[list[sts.StsRecord], ProblemLog]:
    return read_with_log(sts.read, path)


def test_registered() -> None:
    task = registry.get("klue-sts")
    assert task is TASK and task.metrics == ("pearsonr", "f1") and task.main_metrics == ("pearsonr", "f1")
    assert task.sizes == {"train": 11668, "dev": 519}
    assert task.file("dev").size == 454638


def test_reads_every_field(tmp_path: Path) -> None:
    items = [pair(0, 4.857142857142857), pair(1, 0.0), pair(2, 5)]
    records, log = read(write(tmp_path, items))
    assert not log.problems
    assert [sts.to_json(r) for r in records] == items
    assert records[0].score == 4.857142857142857 and records[0].annotations.scores == (3, 4, 5)


@pytest.mark.parametrize(("content", "words"), [
    ("[{\"guid\": \"a\",", "truncated"), ("not json", "invalid JSON"), (" \n", "empty"),
    (b"[\"\xc3\"]", "not UTF-8"), ("[]", "empty list"),
])
def test_file_level_errors(tmp_path: Path, content: Any, words: str) -> None:
    records, log = read(write(tmp_path, content))
    assert records == [] and len(log.errors) == 1 and words in log.errors[0].message


@pytest.mark.parametrize(("item", "location", "words"), [
    (pair(1, labels={"label": 5.5, "real-label": 4.9, "binary-label": 1}), "$[1].labels.label", "outside the 0-5"),
    (pair(1, labels={"label": 1.0, "real-label": -0.1, "binary-label": 0}), "$[1].labels.real-label", "outside"),
    (pair(1, labels={"label": 1.0, "real-label": "1.0", "binary-label": 0}), "$[1].labels.real-label",
     "must be a finite number"),
    (pair(1, labels={"label": 1.0, "binary-label": 0}), "$[1].labels.real-label", "missing field"),
    (pair(1, labels={"label": 1.0, "real-label": 1.0, "binary-label": 2}), "$[1].labels.binary-label",
     "0 or 1"),
    (pair(1, labels=[1.0]), "$[1].labels", "expected a JSON object"),
    (pair(1, annotations={"agreement": "x", "annotators": ["1"], "annotations": [7]}),
     "$[1].annotations.annotations[0]", "integer 0-5"),
    (pair(1, sentence2=None), "$[1].sentence2", "found null"),
])
def test_field_errors(tmp_path: Path, item: dict[str, Any], location: str, words: str) -> None:
    records, log = read(write(tmp_path, [pair(0), item, pair(2)]))
    assert [r.guid for r in records] == ["klue-sts-v1_dev_00000", "klue-sts-v1_dev_00002"]
    assert [p.location for p in log.errors] == [location] and words in log.errors[0].message


def test_duplicate_guid_and_binary_disagreement(tmp_path: Path) -> None:
    disagree = pair(1, labels={"label": 3.5, "real-label": 3.5, "binary-label": 0})
    _, log = read(write(tmp_path, [pair(0), pair(0), disagree]))
    assert [p.location for p in log.errors] == ["$[1].guid"]
    assert [p.location for p in log.warnings] == ["$[2].labels.binary-label"]


def test_predictions() -> None:
    log = ProblemLog("pred.jsonl")
    record = sts.StsRecord("g", "s", "a", "b", 2.5, 2.5, 0)
    gold = sts.gold_prediction(record)
    assert sts.parse_prediction(TASK.prediction_to_json(gold), log, "line 1") == gold
    assert sts.parse_prediction({"guid": "g", "score": 3}, log, "line 2") == sts.StsPrediction("g", 3.0)
    assert sts.parse_prediction({"guid": "g", "score": "3"}, log, "line 3") is None
    assert sts.parse_prediction({"guid": "g", "score": True}, log, "line 4") is None
    assert sts.parse_prediction({"guid": "g", "score": float("nan")}, log, "line 5") is None
    assert sts.parse_prediction({"guid": "g", "score": 6.0}, log, "line 6") is not None
    assert [p.location for p in log.errors] == ["line 3", "line 4", "line 5"]
    assert [p.location for p in log.warnings] == ["line 6"]


def test_real_dev_file(klue_data_dir: Path) -> None:
    path = klue_data_dir / TASK.file("dev").path
    records, log = read(path)
    assert not log.problems and len(records) == 519
    assert [sts.to_json(r) for r in records] == json.loads(path.read_text(encoding="utf-8"))
    preds = [TASK.parse_prediction(TASK.prediction_to_json(TASK.gold_prediction(r)), log, "")
             for r in records]
    scores = TASK.evaluate(records, preds, "official").scores
    assert scores["pearsonr"] == pytest.approx(100.0) and scores["f1"] == 100.0


def test_dev_80_20_plus_korsts(klue_data_dir: Path, shared_data_dir: Path) -> None:
    data = protocols.resolve(TASK, "local:dev-80-20+korsts", DataRoots(klue_data_dir, shared_data_dir))
    klue_train = [r for r in data.train if r.guid.startswith("klue-sts")]
    assert len(klue_train) + len(data.eval) == 519 and len(data.train) - len(klue_train) == 5749
    assert {r.guid for r in klue_train}.isdisjoint({r.guid for r in data.eval})
    assert all(r.guid.startswith("klue-sts") for r in data.eval)
    with pytest.raises(DataError, match="korsts"):
        protocols.resolve(TASK, "local:dev-80-20+korsts", DataRoots(klue_data_dir, shared_data_dir / "nowhere"))
