"""The atomic writer follows the umask (not mkstemp's 0600 or mkdtemp's 0700), for every kind of output:
results, predictions, the report, the benchmark manifest, a saved model directory."""

from __future__ import annotations

import os
import random
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from klue import registry
from klue.io.atomic import write_dir_atomic, write_text_atomic


@pytest.fixture(params=[0o022, 0o077])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    previous = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_and_directories_get_the_umask_mode(tmp_path: Path, umask: int) -> None:
    write_text_atomic(tmp_path / "a" / "file.txt", "x")
    write_dir_atomic(tmp_path / "dir", lambda d: (d / "inner.txt").write_text("y", encoding="utf-8"))
    assert mode(tmp_path / "a" / "file.txt") == 0o666 & ~umask
    assert mode(tmp_path / "dir") == 0o777 & ~umask
    assert mode(tmp_path / "dir" / "inner.txt") == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_results_predictions_manifest_and_report_follow_the_umask(tmp_path: Path, umask: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reporting"))
    from report_fixtures import fixture_results

    from klue.benchmark.manifest import MANIFEST_FILE, Manifest, write_manifest
    from klue.predictions import write_predictions
    from klue.reporting.aggregate import load_aggregate
    from klue.reporting.html import write_report
    from klue.results import write_results

    task = registry.get("nli")
    cell = tmp_path / "bench" / task.name / "m" / "seed1"
    write_results(cell / "results.json", fixture_results(task, "m", 1, True, random.Random(1)))
    record = task.record_type(guid="g1", source="s", premise="p", hypothesis="h", gold_label="neutral")
    write_predictions(cell / "predictions.jsonl", task, [record], [task.gold_prediction(record)], "test")
    write_manifest(tmp_path / "bench", Manifest(models=["m"], tasks=[task.name], seeds=[1], protocol="auto",
                                                metric_mode="official", jobs=1, data_dir=None, extra_data_dir=None,
                                                overrides={}, klue_version="0", git_revision=None,
                                                started_at="2026-12-03T00:00:00Z"))
    write_report(load_aggregate(tmp_path / "bench"), tmp_path / "report.html")
    for path in (cell / "results.json", cell / "predictions.jsonl", tmp_path / "bench" / MANIFEST_FILE,
                 tmp_path / "report.html"):
        assert mode(path) == 0o666 & ~umask, path


def test_a_saved_model_directory_follows_the_umask(tmp_path: Path, umask: int) -> None:
    from klue.models.loading import ModelCard, load_encoder, save_finetuned
    from klue.models.tiny import make_tiny_model_dir

    task = registry.get("ynat")
    model_dir = make_tiny_model_dir(tmp_path / "tiny", "bert", ["하나 둘 셋", "넷 다섯"], vocab_size=120, max_len=32)
    loaded = load_encoder(str(model_dir))
    adapter = task.make_adapter()
    adapter.prepare(loaded.tokenizer, None)
    spec = adapter.head_spec(0.0, {})
    model = adapter.build_model(loaded.encoder, spec)
    card = ModelCard(task.name, task.version, str(model_dir), spec, 32, 0, 1, "paper/base", "test")
    save_finetuned(tmp_path / "best", model, loaded.tokenizer, card)
    assert mode(tmp_path / "best") == 0o777 & ~umask
    assert {p.name: mode(p) for p in (tmp_path / "best").iterdir()} == {p.name: 0o666 & ~umask for p in (tmp_path / "best").iterdir()}
