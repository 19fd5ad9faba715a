"""Checkpoint selection follows the selection metric's declared direction, not an assumed one."""

from __future__ import annotations

import pytest

from klue import registry
from klue.metrics.report import MetricSpec
from klue.training.engine import improves

HIGHER = MetricSpec("accuracy", "accuracy")
LOWER = MetricSpec("error_rate", "error rate", higher_is_better=False)


def test_the_first_score_is_always_the_best_so_far() -> None:
    assert improves(10.0, None, HIGHER) and improves(90.0, None, LOWER)


@pytest.mark.parametrize("spec, better, worse", [(HIGHER, 60.0, 40.0), (LOWER, 40.0, 60.0)])
def test_direction_comes_from_the_spec(spec: MetricSpec, better: float, worse: float) -> None:
    assert improves(better, 50.0, spec) and not improves(worse, 50.0, spec)
    assert not improves(50.0, 50.0, spec)  # a tie keeps the earlier checkpoint


def test_every_recipe_selection_metric_is_declared_with_a_direction() -> None:
    from types import SimpleNamespace

    from klue.training.recipes import resolve

    for task in registry.all_tasks():
        for hidden in (768, 1024):
            hp = resolve("paper", task.name, SimpleNamespace(hidden_size=hidden), {}).hyperparameters
            spec = task.metric_spec(hp.selection_metric or task.key_metric)
            assert spec.higher_is_better in (True, False)
