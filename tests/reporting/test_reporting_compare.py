"""Comparisons and intervals from stored per-example statistics: `BENCHDIR::MODEL` with seeds combined,
the messages for what cannot be compared, the judge's statistics file, and the report's intervals and
neighbour tests."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest

from klue.errors import DataError
from klue.predictions import write_predictions
from klue.reporting.aggregate import load_aggregate
from klue.reporting.compare import compare_specs, verdict
from klue.reporting.html import render_report
from klue.reporting.leaderboard import build_leaderboard, to_markdown
from klue.results import PREDICTIONS_FILE, STATISTICS_FILE, read_statistics
from klue.scoring import ProducerReport, judge
from run_fixtures import write_run


@pytest.fixture()
def bench(tmp_path: Path) -> Path:
    """One task, a strong model and a weak one, two seeds each, on one synthetic evaluation set."""
    for model, accuracy in (("strong", 0.85), ("weak", 0.7)):
        for seed in (1, 2):
            write_run(tmp_path / "nli" / model / f"seed{seed}", model, seed, accuracy)
    return tmp_path


def test_a_benchmark_model_combines_its_seeds(bench: Path) -> None:
    [comparison] = compare_specs(f"{bench}::strong", f"{bench}::weak", n_resamples=200)
    assert comparison.a_seeds == [1, 2] and comparison.b_seeds == [1, 2]
    accuracy = next(d for d in comparison.differences if d.metric == "accuracy")
    single = compare_specs(str(bench / "nli/strong/seed1"), str(bench / "nli/weak/seed1"), n_resamples=200)
    one_seed = next(d for d in single[0].differences if d.metric == "accuracy")
    assert accuracy.a.value != one_seed.a.value  # the mean over two seeds, not seed 1 alone
    assert accuracy.low > 0 and verdict("nli", accuracy).startswith("A is better on accuracy")


def test_what_cannot_be_compared_is_named(bench: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"benchmark directory: name a model .*models: strong, weak"):
        compare_specs(str(bench), f"{bench}::weak")
    with pytest.raises(DataError, match="no successful run of model 'nobody'"):
        compare_specs(f"{bench}::nobody", f"{bench}::weak")
    (bench / "nli/weak/seed2" / STATISTICS_FILE).unlink()
    with pytest.raises(DataError, match="scored before klue kept them"):
        compare_specs(f"{bench}::strong", f"{bench}::weak")


def test_the_judge_stores_statistics_that_give_its_scores(protocol_slice: Any, tmp_path: Path) -> None:
    from klue import registry

    task = registry.get("ner")
    data = protocol_slice("ner", 10, 120)
    golds = [task.gold_prediction(r) for r in data.eval]
    # every third sentence predicted with the previous sentence's tags where the lengths agree
    predictions = [dataclasses.replace(golds[i - 1], guid=p.guid) if i % 3 == 0 and i and
                   len(golds[i - 1].tags) == len(p.tags) else p for i, p in enumerate(golds)]
    write_predictions(tmp_path / PREDICTIONS_FILE, task, data.eval, predictions, "test")
    results = judge(task, data, tmp_path, "official", ProducerReport("m", "test", 1, time.perf_counter()))
    stored = read_statistics(tmp_path / STATISTICS_FILE)
    assert results.statistics_file == STATISTICS_FILE
    assert stored.guids == tuple(r.guid for r in data.eval) and stored.metric_mode == "official"
    totals = stored.statistics.totals()
    assert totals.keys() == results.scores.keys()
    assert all(totals[k] == pytest.approx(v, abs=1e-9) for k, v in results.scores.items())
    [comparison] = compare_specs(str(tmp_path), str(tmp_path), n_resamples=50)
    assert all(d.difference == 0.0 and d.p_value == 1.0 for d in comparison.differences)
    again = tmp_path / "again"
    write_predictions(again / PREDICTIONS_FILE, task, data.eval, predictions, "test")
    judge(task, data, again, "official", ProducerReport("m", "test", 1, time.perf_counter()))
    assert (again / STATISTICS_FILE).read_bytes() == (tmp_path / STATISTICS_FILE).read_bytes()  # deterministic


def test_a_damaged_statistics_file_is_named(tmp_path: Path) -> None:
    write_run(tmp_path, "m", 1, accuracy=0.8)
    (tmp_path / STATISTICS_FILE).write_bytes(b"not a zip")
    with pytest.raises(DataError, match=f"{STATISTICS_FILE}: error: cannot read per-example statistics"):
        read_statistics(tmp_path / STATISTICS_FILE)


def test_the_report_shows_intervals_and_marks_significant_neighbours(bench: Path) -> None:
    agg = load_aggregate(bench)
    board = build_leaderboard(agg, n_resamples=200)
    text = to_markdown(board)
    header = text.splitlines()[0]
    assert header.rstrip().endswith("| vs next |")
    strong = next(line for line in text.splitlines() if "**strong**" in line)
    assert "\\[" in strong and strong.rstrip(" |").endswith("\\*")  # interval, and * against the next model
    assert "95% bootstrap interval" in text
    html = render_report(agg, n_resamples=200)
    assert 'class="ci"' in html and 'class="whisker"' in html and "vs next" in html
    assert "95% bootstrap interval (seeds combined)" in html
    plain = to_markdown(build_leaderboard(agg, n_resamples=0))
    assert "vs next" not in plain and "\\[" not in plain
