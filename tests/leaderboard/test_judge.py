"""The scoring subprocess's work: public and private parts scored by the one judge, intervals and paired
resamples, a rejected file's messages (with guids, naming the upload only), gzip with a capped
decompressed size, the split that keeps groups together, and the limits of the child process."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from live_site import write_nli_gold, write_nli_predictions

from klue import registry
from klue.io.hashing import sha256_file
from klue.leaderboard import scorer
from klue.leaderboard.config import Limits
from klue.leaderboard.gold import load, split
from klue.leaderboard.judge import decode_resamples, judge
from klue.leaderboard.scorer import JudgeFailure, run_judge
from klue.scoring import score_files


def request(gold: Path, predictions: Path, **extra: Any) -> dict[str, Any]:
    return {"task": "nli", "gold": str(gold), "gold_format": None, "gold_sha256": sha256_file(gold), "seed": 0,
            "private_fraction": 0.5, "predictions": str(predictions), "shown": "mine.jsonl",
            "max_bytes": 1 << 20, "resamples": 200, **extra}


@pytest.fixture
def gold(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    path = tmp_path / "dev.json"
    return path, write_nli_gold(path, 120)


def test_both_parts_scored_as_klue_score_scores_them(gold: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    path, records = gold
    predictions = write_nli_predictions(records, tmp_path / "p.jsonl", 0.7, seed=1)
    answer = judge(request(path, predictions))
    assert answer["ok"], answer
    public, private = answer["public"], answer["private"]
    assert public["n_examples"] + private["n_examples"] == 120
    # The public part's accuracy equals `klue score` on the public records alone.
    task = registry.get("nli")
    parts = load("nli", path, None, 0, 0.5)
    public_guids = {task.guid(r) for r in parts.public}
    public_gold = tmp_path / "public.json"
    public_gold.write_text(json.dumps([r for r in records if r["guid"] in public_guids], ensure_ascii=False))
    public_predictions = tmp_path / "public.jsonl"
    public_predictions.write_text("".join(line for line in predictions.read_text().splitlines(keepends=True)
                                          if json.loads(line)["guid"] in public_guids))
    expected = score_files(task, public_gold, public_predictions).report.scores
    assert public["scores"]["accuracy"] == pytest.approx(expected["accuracy"], abs=1e-9)
    low, high = public["task_interval"]
    assert low <= public["task_score"] <= high
    resamples = decode_resamples(public["resamples"])
    assert len(resamples) == 200 and np.all(np.isfinite(resamples))
    assert answer["metric_versions"].keys() == public["scores"].keys()


def test_the_same_file_twice_gives_the_same_resamples(gold: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    path, records = gold
    a = write_nli_predictions(records, tmp_path / "a.jsonl", 0.7, seed=1)
    first, second = judge(request(path, a)), judge(request(path, a))
    assert first["public"]["resamples"] == second["public"]["resamples"]  # one seed: paired across submissions


def test_a_rejected_file_names_guids_and_the_upload_only(gold: tuple[Path, list[dict[str, Any]]],
                                                         tmp_path: Path) -> None:
    path, records = gold
    lines = [json.dumps({"guid": r["guid"], "label": "entailment"}) for r in records[:-1]]
    lines[5] = json.dumps({"guid": records[5]["guid"], "label": "perhaps"})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    answer = judge(request(path, bad))
    assert not answer["ok"]
    text = "\n".join(answer["problems"])
    assert "mine.jsonl" in text and str(tmp_path) not in text and "klue-judge-" not in text
    assert "perhaps" in text or records[-1]["guid"] in text
    assert "public" not in answer and "private" not in answer


def test_check_only_gives_no_score(gold: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    path, records = gold
    predictions = write_nli_predictions(records, tmp_path / "p.jsonl", 0.7, seed=1)
    answer = judge(request(path, predictions, check_only=True))
    assert answer == {"ok": True, "warnings": []}


def test_gzip_is_read_and_a_bomb_stops_at_the_cap(gold: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    path, records = gold
    plain = write_nli_predictions(records, tmp_path / "p.jsonl", 0.7, seed=1)
    packed = tmp_path / "p.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert judge(request(path, packed))["public"] == judge(request(path, plain))["public"]
    bomb = tmp_path / "bomb.gz"
    with gzip.open(bomb, "wb") as out:
        for _ in range(8):
            out.write(b" " * (1 << 20))
    assert bomb.stat().st_size < 100_000
    answer = judge(request(path, bomb, max_bytes=1 << 20))
    assert not answer["ok"] and "larger than 1 MiB decompressed" in answer["problems"][0]


def test_a_changed_gold_file_is_refused(gold: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    path, records = gold
    predictions = write_nli_predictions(records, tmp_path / "p.jsonl", 0.7, seed=1)
    with pytest.raises(RuntimeError, match="changed since"):
        judge(request(path, predictions, gold_sha256="0" * 64))


def test_the_split_keeps_groups_together_and_follows_the_seed() -> None:
    task = registry.get("mrc")  # MRC groups the questions of one context

    class Record:
        def __init__(self, i: int) -> None:
            self.guid, self.context = f"q{i}", f"context {i // 4}"

    records = [Record(i) for i in range(400)]
    public, private = split(task, records, seed=0, private_fraction=0.5)
    sides = {}
    for side, part in (("public", public), ("private", private)):
        for r in part:
            assert sides.setdefault(r.context, side) == side
    assert 0.35 < len(private) / 400 < 0.65
    other, _ = split(task, records, seed=1, private_fraction=0.5)
    assert [r.guid for r in other] != [r.guid for r in public]
    assert [r.guid for r in split(task, records, 0, 0.5)[0]] == [r.guid for r in public]


def test_the_child_process_answers(gold: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    path, records = gold
    predictions = write_nli_predictions(records, tmp_path / "p.jsonl", 0.7, seed=1)
    answer = run_judge(request(path, predictions), Limits(cpu_seconds=60, memory_mib=2048))
    assert answer["ok"] and math.isfinite(answer["public"]["task_score"])
    assert answer == judge(request(path, predictions))


def _spin(request: dict[str, Any]) -> dict[str, Any]:
    while True:
        pass


def _hog(request: dict[str, Any]) -> dict[str, Any]:
    return {"size": len(bytearray(8 << 30))}


def test_the_kernel_limits_stop_the_child(gold: tuple[Path, list[dict[str, Any]]], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path, _ = gold
    bomb = tmp_path / "bomb.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as out:
        for _ in range(24):
            out.write(b" " * (1 << 20))
    # The judge's own cap set high: the kernel's file-size limit (decompressed_mib + 16 MiB) stops the write.
    answer = run_judge(request(path, bomb, max_bytes=1 << 30), Limits(decompressed_mib=1))
    assert not answer["ok"] and "larger than the server's limit" in answer["problems"][0]
    monkeypatch.setattr(scorer, "judge", _spin)
    with pytest.raises(JudgeFailure, match="CPU-time limit"):
        run_judge(request(path, bomb), Limits(cpu_seconds=1))
    monkeypatch.setattr(scorer, "judge", _hog)
    with pytest.raises(JudgeFailure, match="memory limit"):
        run_judge(request(path, bomb), Limits(memory_mib=4096))


def test_messages_name_guids_in_file_order_whatever_their_part(gold: tuple[Path, list[dict[str, Any]]],
                                                              tmp_path: Path) -> None:
    path, records = gold
    bad = tmp_path / "bad.jsonl"  # one prediction: every other guid is missing, and the message names some
    bad.write_text(json.dumps({"guid": records[-1]["guid"], "label": "neutral"}) + "\n")
    answer = judge(request(path, bad))
    assert not answer["ok"]
    named = [g["guid"] for g in records if any(g["guid"] in m for m in answer["problems"])]
    private = {registry.get("nli").guid(r) for r in load("nli", path, None, 0, 0.5).private}
    assert named and named == [r["guid"] for r in records[:len(named)]]  # the file's first ones, not a part's
    assert any(g in private for g in named) and any(g not in private for g in named)
