"""The registry: every task declared once, found by name or alias, helpful errors."""

from __future__ import annotations

import pytest

from klue import registry
from klue.metrics.report import MetricReport
from klue.tasks.base import Task

ALL = ("ynat", "sts", "nli", "ner", "re", "dp", "mrc", "wos")


def test_tasks_are_unique_and_ordered() -> None:
    tasks = registry.all_tasks()
    assert tasks, "no task registered"
    assert [t.order for t in tasks] == sorted(t.order for t in tasks)
    assert len({t.name for t in tasks}) == len(tasks)
    assert all(isinstance(t, Task) for t in tasks)
    assert {t.name for t in tasks} <= set(ALL)


def test_all_eight_when_present() -> None:
    names = {t.name for t in registry.all_tasks()}
    if names != set(ALL):
        pytest.skip(f"not every task module exists yet (registered: {sorted(names)})")
    assert [t.name for t in registry.all_tasks()] == list(ALL)


@pytest.mark.parametrize("name", ["ner", "dp"])
def test_lookup_by_name_and_alias(name: str) -> None:
    task = registry.get(name)
    assert registry.get(f"klue-{name}") is task
    assert registry.get(f" KLUE-{name.upper()} ") is task
    assert registry.resolve(f"{name},{name}") == [task, task]


def test_unknown_name_suggests() -> None:
    with pytest.raises(registry.UnknownTaskError, match="Did you mean 'ner'"):
        registry.get("nerr")


def test_resolve_all() -> None:
    assert registry.resolve("all") == registry.all_tasks()


def test_declarations_are_consistent() -> None:
    for task in registry.all_tasks():
        assert task.key_metric in task.metrics and set(task.main_metrics) <= set(task.metrics)
        assert task.file("dev") is not None, task.name
        assert all(len(f.git_blob) == 40 for f in task.files)
        assert task.default_local_protocol in ("local:dev-80-20", *task.protocols), task.name
        assert set(task.sizes) <= {"train", "dev"}


def test_gold_predictions_round_trip_through_json() -> None:
    from klue.errors import ProblemLog

    ner = registry.get("ner")
    record = ner.record_type("g", "가 나", ("가", " ", "나"), ("B-PS", "O", "O"))
    gold = ner.gold_prediction(record)
    assert ner.parse_prediction(ner.prediction_to_json(gold), ProblemLog("p"), "line 1") == gold


def test_evaluate_returns_metric_reports_for_gold() -> None:
    pytest.importorskip("klue.metrics.dp")
    dp = registry.get("dp")
    record = dp.record_type("g", "가 나", ("가", "나"), ("가", "나"), ("NNG", "VV"), (2, 0), ("NP_SBJ", "VP"))
    report = dp.evaluate([record], [dp.gold_prediction(record)], "official")
    assert isinstance(report, MetricReport) and report.scores["uas_macro_f1"] == pytest.approx(100.0)
