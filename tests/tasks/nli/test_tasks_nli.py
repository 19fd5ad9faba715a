"""KLUE-NLI records, reader validation, predictions and protocols."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from klue import protocols, registry
from klue.errors import DataError, ProblemLog
from klue.io.locate import DataRoots
from klue.io.splits import hash_fraction
from klue.tasks.nli import TASK
from klue.tasks.nli import records as nli
from task_files import read_with_log, write_file


def pair(i: int, **changes: Any) -> dict[str, Any]:
    record = {"guid": f"klue-nli-v1_dev_{i:05d}", "source": "airbnb", "premise": f"전제 문장 {i // 3}",
              "hypothesis": f"가설 {i}", "gold_label": nli.LABELS[i % 3], "author": nli.LABELS[i % 3],
              "label2": "neutral", "label3": "neutral", "label4": "entailment", "label5": "contradiction"}
    record.update(changes)
    return record


def write(tmp_path: Path, content: Any, name: str = "nli.json") -> Path:
    return write_file(tmp_path / name, content)


def read(path: Path) -> tuple[list[nli.NliRecord], ProblemLog]:
    return read_with_log(nli.read, path)


def test_registered_under_its_names() -> None:
    task = registry.get("klue-nli")
    assert task is TASK and registry.get("NLI") is task
    assert task.labels == ("entailment", "contradiction", "neutral")
    assert task.metrics == ("accuracy",) and task.sizes == {"train": 24998, "dev": 3000}
    assert task.file("dev").git_blob == "db052b2459c68d1ec57dd1573bfe90a9bb3f8157"
    assert task.v1_archive is not None and task.v1_archive.size == 1257374


def test_reads_every_field(tmp_path: Path) -> None:
    items = [pair(i) for i in range(6)]
    records, log = read(write(tmp_path, items))
    assert not log.problems
    assert [nli.to_json(r) for r in records] == items
    assert records[0].validator_labels == ("neutral", "neutral", "entailment", "contradiction")
    assert TASK.group_key(records[0]) == records[0].premise


@pytest.mark.parametrize(("content", "location", "words"), [
    ("[{\"guid\": ", "line 1", "truncated"),
    ("[{\"guid\" 1}]", "line 1", "invalid JSON"),
    ("", "line 1", "empty"),
    ("[]", "$", "empty list"),
    ("{}", "$", "expected a JSON list"),
    (b"[\"\xff\xfe\"]", "line 1", "not UTF-8"),
])
def test_file_level_errors(tmp_path: Path, content: Any, location: str, words: str) -> None:
    path = write(tmp_path, content)
    records, log = read(path)
    assert records == []
    assert len(log.errors) == 1
    problem = log.errors[0]
    assert problem.path == str(path) and problem.location.startswith(location) and words in problem.message


@pytest.mark.parametrize(("changes", "location", "words"), [
    ({"gold_label": "entails"}, "$[1].gold_label", "unknown label 'entails'"),
    ({"label4": "maybe"}, "$[1].label4", "unknown label"),
    ({"premise": 3}, "$[1].premise", "must be a string"),
    ({"hypothesis": ""}, "$[1].hypothesis", "empty"),
    ({"guid": None}, "$[1].guid", "found null"),
])
def test_field_errors_name_the_json_path(tmp_path: Path, changes: dict[str, Any], location: str,
                                         words: str) -> None:
    records, log = read(write(tmp_path, [pair(0), pair(1, **changes), pair(2)]))
    assert [r.guid for r in records] == ["klue-nli-v1_dev_00000", "klue-nli-v1_dev_00002"]  # keeps going
    assert [(p.location, words in p.message) for p in log.errors] == [(location, True)]


def test_missing_field_and_not_an_object(tmp_path: Path) -> None:
    broken = pair(1)
    del broken["author"]
    records, log = read(write(tmp_path, [pair(0), broken, "text"]))
    assert len(records) == 1
    assert [(p.location, p.message) for p in log.errors] == [
        ("$[1].author", "missing field `author`"),
        ("$[2]", "expected a JSON object, found a string ('text')"),
    ]


def test_duplicate_guid_is_an_error_and_duplicate_pair_a_warning(tmp_path: Path) -> None:
    items = [pair(0), pair(0, hypothesis="다른 가설"), pair(1, premise=pair(0)["premise"], hypothesis="가설 0")]
    _, log = read(write(tmp_path, items))
    assert [(p.location, "duplicate guid" in p.message) for p in log.errors] == [("$[1].guid", True)]
    assert [p.location for p in log.warnings] == ["$[2]"]
    assert "duplicate (premise, hypothesis)" in log.warnings[0].message
    with pytest.raises(DataError, match=r"\$\[1\]\.guid: error: duplicate guid"):
        log.raise_if_errors()


def test_unknown_fields_are_a_warning(tmp_path: Path) -> None:
    records, log = read(write(tmp_path, [pair(0, extra=1)]))
    assert len(records) == 1 and not log.errors
    assert "unknown fields ignored: extra" in log.warnings[0].message


def test_predictions_round_trip_and_validate() -> None:
    record = nli.NliRecord("g1", "s", "p", "h", "neutral")
    log = ProblemLog("pred.jsonl")
    gold = TASK.gold_prediction(record)
    assert TASK.parse_prediction(TASK.prediction_to_json(gold), log, "line 1") == gold
    assert TASK.parse_prediction({"guid": "g1", "label": "yes"}, log, "line 2") is None
    assert TASK.parse_prediction({"label": "neutral"}, log, "line 3") is None
    assert TASK.parse_prediction({"guid": "g1", "label": 2}, log, "line 4") is None
    assert [p.location for p in log.errors] == ["line 2", "line 3", "line 4"]
    assert "g1: unknown label 'yes'" in log.errors[0].message


def test_evaluate_checks_alignment() -> None:
    records = [nli.NliRecord(f"g{i}", "s", "p", "h", label) for i, label in enumerate(nli.LABELS)]
    with pytest.raises(DataError, match="expected guid 'g0'"):
        TASK.evaluate(records, [nli.NliPrediction("g1", "neutral")] * 3, "official")
    with pytest.raises(DataError, match="3 gold examples but 2 predictions"):
        TASK.evaluate(records, [TASK.gold_prediction(r) for r in records[:2]], "official")
    preds = [nli.NliPrediction(r.guid, "neutral") for r in records]
    assert TASK.evaluate(records, preds, "official").scores["accuracy"] == pytest.approx(100 / 3)


def test_real_dev_file(klue_data_dir: Path) -> None:
    path = klue_data_dir / TASK.file("dev").path
    records, log = read(path)
    assert not log.problems
    assert len(records) == 3000
    assert Counter(r.gold_label for r in records) == {label: 1000 for label in nli.LABELS}
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert [nli.to_json(r) for r in records] == raw  # every field kept
    by_premise = Counter(TASK.group_key(r) for r in records)
    assert len(by_premise) == 1000 and set(by_premise.values()) == {3}
    preds = [TASK.parse_prediction(TASK.prediction_to_json(TASK.gold_prediction(r)), log, "")
             for r in records]
    assert TASK.evaluate(records, preds, "official").scores["accuracy"] == 100.0


def test_dev_80_20_plus_kornli(klue_data_dir: Path, shared_data_dir: Path) -> None:
    data = protocols.resolve(TASK, "local:dev-80-20+kornli", DataRoots(klue_data_dir, shared_data_dir))
    assert not data.official and data.selection is None
    klue_train = [r for r in data.train if r.guid.startswith("klue-nli")]
    assert len(klue_train) + len(data.eval) == 3000
    assert len(data.train) - len(klue_train) == 2490  # KorNLI xnli dev
    assert {r.premise for r in klue_train}.isdisjoint({r.premise for r in data.eval})
    assert all(hash_fraction(r.premise) >= 0.8 for r in data.eval)
    assert [s.n_examples for s in data.sources] == [len(klue_train), len(data.eval), 2490]
    assert "not official" in data.description and "KorNLI" in data.description


def test_kornli_protocol_missing_extra_dir(klue_data_dir: Path) -> None:
    with pytest.raises(DataError, match="extra-data-dir"):
        protocols.resolve(TASK, "local:dev-80-20+kornli", DataRoots(klue_data_dir, None))
