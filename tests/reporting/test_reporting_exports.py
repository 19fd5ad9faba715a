"""`klue report --format model-index | json | csv`: blocks the Hugging Face model card parser reads, and the
leaderboard's numbers for other tools."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from report_fixtures import ENCODER, PARTIAL, fixture_results

from cli_in_process import Done, klue_in_process
from klue import registry
from klue.errors import DataError
from klue.io import hf
from klue.io.provenance import DataSource
from klue.protocols import HF, hub_config
from klue.reporting.aggregate import load_aggregate
from klue.reporting.exports import (
    CSV_COLUMNS,
    leaderboard_csv,
    leaderboard_json,
    model_cards,
    model_index_text,
)
from klue.reporting.leaderboard import build_leaderboard
from klue.results import Results, write_results
from run_fixtures import TASK, write_run


def klue(*args: str) -> Done:
    """In this process (tests/cli_in_process.py): the subject is what `klue report` prints and writes."""
    return klue_in_process(*args)


def card_file(tmp_path: Path, block: str, name: str = "README.md") -> Path:
    """A model card whose YAML front matter is `block`, as a user pastes it."""
    path = tmp_path / name
    path.write_text(f"---\n{block}---\n\n# A model\n\nIts KLUE results are in the metadata.\n", encoding="utf-8")
    return path


def test_every_block_is_a_model_card_the_hub_parser_reads(bench_dir: Path, tmp_path: Path) -> None:
    hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub.repocard_data import model_index_to_eval_results

    agg = load_aggregate(bench_dir)
    text = model_index_text(agg)
    documents = list(yaml.safe_load_all(text))
    cards = model_cards(agg)
    assert [d["model-index"][0]["name"] for d in documents] == [c.model for c in cards] == [ENCODER, "classic",
                                                                                          PARTIAL]
    for i, (block, card) in enumerate(zip(text.split("---\n"), cards)):
        path = card_file(tmp_path, block, f"README{i}.md")
        metadata = hub.metadata_load(path)
        name, results = model_index_to_eval_results(metadata["model-index"])
        assert name == card.model
        loaded = hub.ModelCard.load(path)  # the parser the hub's own upload checks use
        assert loaded.data.model_name == card.model and len(loaded.data.eval_results) == len(results)
        entry = next(e for e in agg.entries if e.model == card.model)
        seen = set()
        for result in results:
            task = registry.get(result.dataset_config)
            assert result.dataset_config == hub_config(task) and result.dataset_type == hf.HF_DATASET
            assert result.task_type == task.hub_task and result.task_name == task.title
            row = entry.rows[task.name]
            stat = row.metric(result.metric_type)
            assert stat is not None and result.metric_value == round(stat.mean, 2)
            assert result.dataset_args is not None and result.dataset_args["protocol"] == row.protocol
            assert result.dataset_args["official"] is row.protocol_official
            assert result.dataset_args["seeds"] == row.seeds
            assert row.protocol in result.dataset_name
            seen.add((task.name, result.metric_type))
        assert seen == {(t, m) for t in entry.rows for m in agg.tasks[t].metrics}  # every official metric


def _official_sources(task_name: str, n_eval: int) -> list[DataSource]:
    task = registry.get(task_name)
    train, dev = task.file("train"), task.file("dev")
    assert train is not None and dev is not None
    return [DataSource(train.path, train.git_blob, 800, "train"), DataSource(dev.path, dev.git_blob, n_eval,
                                                                                "eval and selection")]


def test_the_split_is_named_only_where_the_run_evaluated_on_the_whole_dev_set(tmp_path: Path) -> None:
    """Official (whole dev file): `validation`; the hf protocol: `validation` at its revision; a run trained
    on part of dev and evaluated on the rest, or on part of its evaluation set, names no split."""
    task = registry.all_tasks()[0]
    dev = task.file("dev")
    assert dev is not None
    rng = random.Random(1)
    revision = "a" * 40
    where = f"hf:{hf.HF_DATASET}@{revision[:12]}/{task.name}"
    runs = {
        "official-model": {"data_sources": _official_sources(task.name, 200)},
        "hub-model": {"protocol": HF, "protocol_official": False, "data_sources": [
            DataSource(f"{where}/train", revision, 800, "train (90% of the hub train split by group hash)"),
            DataSource(f"{where}/validation", revision, 200, "eval (the hub validation split)")]},
        "dev-split-model": {"protocol": "local:dev-80-20", "protocol_official": False, "data_sources": [
            DataSource(dev.path, dev.git_blob, 800, "train (80% of dev by group hash)"),
            DataSource(dev.path, dev.git_blob, 200, "eval (20% of dev by group hash)")]},
        "limited-model": {"data_sources": _official_sources(task.name, 200), "partial": True},
    }
    for model, changes in runs.items():
        results = dataclasses.replace(fixture_results(task, model, 1, True, rng), **changes)
        write_results(tmp_path / model / "results.json", results)
    datasets = {c.model: c.metadata["model-index"][0]["results"][0]["dataset"]
                for c in model_cards(load_aggregate(tmp_path))}
    assert datasets["official-model"]["split"] == "validation" and "revision" not in datasets["official-model"]
    assert (datasets["hub-model"]["split"], datasets["hub-model"]["revision"]) == ("validation", revision)
    assert "split" not in datasets["dev-split-model"] and "not official" in datasets["dev-split-model"]["name"]
    assert "split" not in datasets["limited-model"]


def test_failed_and_reference_lines_make_no_block(tmp_path: Path) -> None:
    task = registry.all_tasks()[0]
    failed = Results(task=task.name, task_version=task.version, model="broken", model_family="encoder", seed=1,
                     protocol="official", protocol_official=True, protocol_description="", metric_mode="official",
                     status="failed", error="DataError: no")
    write_results(tmp_path / "broken" / "results.json", failed)
    agg = load_aggregate(tmp_path)
    assert agg.references and model_cards(agg) == []  # the paper's rows are not the user's model
    with pytest.raises(DataError, match="nothing to put in a model card"):
        model_index_text(agg)


def test_json_holds_every_line_with_full_precision(bench_dir: Path) -> None:
    agg = load_aggregate(bench_dir)
    board = build_leaderboard(agg, 20, 0)
    document = json.loads(leaderboard_json(agg, board))
    assert [t["name"] for t in document["tasks"]] == [t.name for t in registry.all_tasks()]
    models = document["models"]
    measured = [m for m in models if not m["reference"]]
    assert [m["model"] for m in measured] == [e.model for e in agg.entries]
    assert len(models) == len(agg.entries) + len(agg.references)
    top = measured[0]
    entry = agg.entries[0]
    assert top["rank"] == 1 and top["klue_score"] == entry.klue_score
    assert top["score_interval"] is None  # these runs kept no per-example statistics
    for name, row in entry.rows.items():
        found = top["tasks"][name]
        assert found["status"] == "ok" and found["seeds"] == row.seeds
        for metric, stat in found["metrics"].items():
            measured_stat = row.metric(metric)
            assert measured_stat is not None and stat["values"] == list(measured_stat.values)
    partial = next(m for m in measured if m["model"] == PARTIAL)
    assert partial["rank"] is None and partial["klue_score"] is None and partial["partial_score"] is not None
    last = registry.all_tasks()[-1].name
    assert partial["tasks"][last]["status"] == "failed" and "dev file is missing" in partial["tasks"][last]["error"]


def test_csv_is_long_form_and_agrees_with_json(bench_dir: Path) -> None:
    agg = load_aggregate(bench_dir)
    board = build_leaderboard(agg, 0)
    lines = list(csv.DictReader(io.StringIO(leaderboard_csv(agg, board))))
    assert tuple(lines[0]) == CSV_COLUMNS
    document: dict[str, Any] = json.loads(leaderboard_json(agg, board))
    for model in document["models"]:
        for task, found in model["tasks"].items():
            for metric, stat in found.get("metrics", {}).items():
                line = next(x for x in lines if (x["model"], x["task"], x["metric"]) == (model["model"], task, metric))
                assert float(line["value"]) == stat["mean"]  # repr round-trips: full precision
    failed = [x for x in lines if x["status"] == "failed"]
    assert [(x["model"], x["metric"], x["value"]) for x in failed] == [(PARTIAL, "", "")]


@pytest.mark.slow
def test_report_cli_prints_or_writes_an_export(bench_dir: Path, tmp_path: Path) -> None:
    out = klue("report", str(bench_dir), "--format", "model-index")
    assert out.returncode == 0, out.stderr
    assert out.stdout == model_index_text(load_aggregate(bench_dir))
    target = tmp_path / "board.csv"
    written = klue("report", str(bench_dir), "--format", "csv", "--resamples", "0", "-o", str(target))
    assert written.returncode == 0, written.stderr
    agg = load_aggregate(bench_dir)
    assert str(target) in written.stderr
    assert target.read_text(encoding="utf-8") == leaderboard_csv(agg, build_leaderboard(agg, 0))
    refused = klue("report", str(bench_dir), "--format", "yaml")
    assert refused.returncode == 2 and "model-index" in refused.stderr

def test_json_carries_the_intervals_and_the_test_against_the_next_line(tmp_path: Path) -> None:
    for model, accuracy in (("strong", 0.9), ("weak", 0.5)):
        for seed in (1, 2):
            write_run(tmp_path / model / f"seed{seed}", model, seed, accuracy)
    agg = load_aggregate(tmp_path)
    board = build_leaderboard(agg, 50, 0)
    strong = json.loads(leaderboard_json(agg, board))["models"][0]
    task = strong["tasks"][TASK]
    assert strong["model"] == "strong" and strong["partial_score"] > 80
    low, high = strong["score_interval"]
    assert low <= strong["partial_score"] <= high
    low, high = task["score_interval"]
    assert low <= task["score"] <= high
    for stat in task["metrics"].values():
        low, high = stat["interval"]
        assert low <= stat["mean"] <= high
    assert strong["versus_next"]["difference"] > 0 and strong["versus_next"]["p_value"] < 0.05
