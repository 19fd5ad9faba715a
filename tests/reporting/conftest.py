"""Fixture benchmark directories built from Results written here (no model is trained)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from report_fixtures import ENCODER, PARTIAL, fixture_results

from klue import registry
from klue.results import Results, write_results


@pytest.fixture(scope="session")
def bench_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All registered tasks x {classic (local protocol), an encoder (official)} x 3 seeds, a model with
    only two tasks (partial), and one failed cell."""
    tasks = registry.all_tasks()
    if len(tasks) < 2:
        pytest.fail("the registry holds fewer than 2 tasks")
    root = tmp_path_factory.mktemp("bench")
    rng = random.Random(7)
    for task in tasks:
        for model, official in (("classic", False), (ENCODER, True)):
            for seed in (1, 2, 3):
                path = root / task.name / model.replace("/", "--") / f"seed{seed}" / "results.json"
                write_results(path, fixture_results(task, model, seed, official, rng))
    for task in tasks[:2]:
        write_results(root / task.name / PARTIAL / "seed1" / "results.json",
                      fixture_results(task, PARTIAL, 1, True, rng))
    failed = Results(task=tasks[-1].name, task_version=tasks[-1].version, model=PARTIAL, model_family="encoder",
                     seed=1, protocol="auto", protocol_official=False, protocol_description="",
                     metric_mode="official", status="failed", error="DataError: the dev file is missing")
    write_results(root / tasks[-1].name / PARTIAL / "seed1" / "results.json", failed)
    return root
