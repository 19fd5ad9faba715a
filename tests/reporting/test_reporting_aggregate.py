"""Means and standard deviations over seeds, task scores, the KLUE score, partial models, markdown."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from report_fixtures import ENCODER, PARTIAL

from klue import registry
from klue.errors import DataError
from klue.reporting.aggregate import (
    Stat,
    aggregate,
    load_aggregate,
    load_results,
    references_of,
    task_catalog,
)
from klue.reporting.leaderboard import NOT_OFFICIAL_MARK, build_leaderboard, to_markdown


def test_stat_mean_and_sample_std() -> None:
    stat = Stat.of([1.0, 2.0, 4.0])
    assert stat.mean == pytest.approx(7 / 3)
    assert stat.std == pytest.approx(statistics.stdev([1, 2, 4]))
    assert Stat.of([5.0]).std is None
    assert Stat.of([5.0]).format() == "5.00"
    assert Stat.of([1.0, 3.0]).format(1) == "2.0 ± 1.4"


def test_rows_average_over_seeds(bench_dir: Path) -> None:
    agg = load_aggregate(bench_dir)
    task = registry.all_tasks()[0]
    row = next(r for r in agg.rows_for(task.name) if r.model == ENCODER)
    values = [r.scores[task.key_metric] for _, r in row.runs]
    assert row.seeds == [1, 2, 3]
    stat = row.metric(task.key_metric)
    assert stat is not None and stat.mean == pytest.approx(statistics.fmean(values))
    assert stat.std == pytest.approx(statistics.stdev(values))
    confusion = row.confusion()
    if confusion is not None:  # summed over the three seeds
        assert sum(map(sum, confusion.matrix.counts)) == sum(sum(map(sum, r.confusion.counts)) for _, r in row.runs)
        assert confusion.n_runs == 3


def test_klue_score_is_the_mean_of_task_scores(bench_dir: Path) -> None:
    agg = load_aggregate(bench_dir)
    tasks = registry.all_tasks()
    entry = next(e for e in agg.entries if e.model == ENCODER)
    expected = []
    for task in tasks:
        row = entry.rows[task.name]
        per_seed = [statistics.fmean(r.scores[m] for m in task.main_metrics) for _, r in row.runs]
        expected.append(statistics.fmean(per_seed))
    assert entry.complete and entry.official
    assert entry.klue_score == pytest.approx(statistics.fmean(expected))
    classic = next(e for e in agg.entries if e.model == "classic")
    assert classic.complete and not classic.official
    assert agg.entries[0].model in (ENCODER, "classic")


def test_a_model_missing_tasks_gets_only_a_partial_score(bench_dir: Path) -> None:
    agg = load_aggregate(bench_dir)
    entry = next(e for e in agg.entries if e.model == PARTIAL)
    assert entry.klue_score is None and entry.partial_score is not None
    assert entry.n_scored == 2
    assert registry.all_tasks()[-1].name in entry.failed_tasks
    assert agg.entries[-1].model == PARTIAL  # never ranked above a complete model
    board = build_leaderboard(agg)
    line = next(li for li in board.lines if li.model == PARTIAL)
    assert line.rank == "" and "partial 2/" in line.score.text
    assert "failed" in [c.text for c in line.tasks]


def test_markdown_leaderboard(bench_dir: Path) -> None:
    text = to_markdown(build_leaderboard(load_aggregate(bench_dir)))
    lines = text.splitlines()
    assert lines[0].startswith("| # | Model | Protocol | KLUE score |")
    n_cols = lines[0].count("|")
    assert all(li.count("|") - li.count("\\|") == n_cols for li in lines[:6] if li.startswith("|"))
    assert f"**{ENCODER}**" in text and "(paper)" in text and NOT_OFFICIAL_MARK in text
    ref = references_of(task_catalog())[0]
    first = registry.all_tasks()[0]
    assert f"{ref.scores[first.name][first.main_metrics[0]]:.2f}" in text


def test_reference_numbers_name_real_tasks_and_metrics() -> None:
    catalog = task_catalog()
    for ref in references_of(catalog):
        for task, scores in ref.scores.items():
            if task in catalog:
                assert set(catalog[task].main_metrics) <= set(scores), task
                assert set(scores) <= set(catalog[task].metrics), task


def test_unknown_task_and_empty_directory(tmp_path: Path, bench_dir: Path) -> None:
    with pytest.raises(DataError, match="no results.json"):
        load_results(tmp_path)
    results = load_results(bench_dir)
    catalog = task_catalog()
    first = next(iter(catalog))
    with pytest.raises(DataError, match="does not know"):
        aggregate(results, {k: v for k, v in catalog.items() if k != first})


def test_markdown_shows_hostile_model_names_as_text(tmp_path: Path) -> None:
    import random

    from report_fixtures import fixture_results

    from klue.results import write_results

    hostile = "<img src=x onerror=alert(1)>**bold**|[link](http://x)"
    task = registry.all_tasks()[0]
    write_results(tmp_path / task.name / "m" / "seed1" / "results.json",
                  fixture_results(task, hostile, 1, True, random.Random(1)))
    text = to_markdown(build_leaderboard(load_aggregate(tmp_path)))
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
    assert "\\*\\*bold\\*\\*" in text and "\\[link\\]" in text and "\\|" in text
    row = next(li for li in text.splitlines() if "onerror" in li)
    assert row.count("|") - row.count("\\|") == text.splitlines()[0].count("|")
