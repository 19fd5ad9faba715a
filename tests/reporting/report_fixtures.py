"""Builders of fixture Results for the report tests (no model is trained)."""

from __future__ import annotations

import random
from typing import Any

from klue.io.provenance import DataSource
from klue.metrics.report import ConfusionMatrix
from klue.results import CurvePoint, Results
from klue.tasks.base import Task

ENCODER = "klue/roberta-small"
PARTIAL = "tiny-bert"


def fixture_results(task: Task[Any, Any], model: str, seed: int, official: bool, rng: random.Random) -> Results:
    """Plausible scores with every optional part filled: confusion, breakdowns, learning curve."""
    base = 55.0 if model == "classic" else 75.0
    scores = {m: round(base + 10 * rng.random() + (5 if i else 0), 3) for i, m in enumerate(task.metrics)}
    labels = list(task.labels)
    breakdown: dict[str, dict[str, float]] = {}
    confusion: ConfusionMatrix | None = None
    if labels and len(labels) <= 10:
        counts = tuple(tuple(40 if i == j else rng.randint(0, 6) for j in range(len(labels)))
                       for i in range(len(labels)))
        confusion = ConfusionMatrix(tuple(labels), counts)
        breakdown["f1_per_class"] = {x: round(40 + 50 * rng.random(), 3) for x in labels}
    else:
        breakdown["per_question_type"] = {f"{k}/{m}": round(30 + 60 * rng.random(), 3)
                                          for k in (1, 2, 3) for m in task.metrics[:2]}
    curve: list[CurvePoint] = []
    if model != "classic":
        # the shape klue.training logs: train points with loss, learning rate and speed; selection points
        curve = [CurvePoint(s, s / 100, loss=2.0 / (1 + s / 50) + 0.05 * rng.random(),
                            learning_rate=5e-5 * (1 - s / 300), examples_per_s=80.0) for s in range(0, 301, 50)]
        curve += [CurvePoint(s, s / 100, selection={task.key_metric: base * (1 - 0.5 / (1 + s / 60)) + seed})
                  for s in (100, 200, 300)]
    protocol = "official" if official else "local:dev-80-20"
    return Results(
        task=task.name, task_version=task.version, model=model, model_family="classic" if model == "classic"
        else "encoder", seed=seed, protocol=protocol, protocol_official=official,
        protocol_description="official train → official dev" if official else "dev split 80/20 by group hash",
        metric_mode="official", scores=scores, breakdown=breakdown, confusion=confusion, n_train=800,
        n_eval=200, recipe="tfidf-logreg" if model == "classic" else "paper", hyperparameters={"lr": 5e-5},
        data_sources=[DataSource(f.path, f.git_blob, 100, f.role) for f in task.files[:2]],
        learning_curve=curve, wall_time_s=12.5, library_versions={"klue": "0.1.0", "numpy": "2"},
        git_revision="0" * 40, created_at="2025-01-01T00:00:00+00:00", predictions_file="predictions.jsonl",
    )
