"""Every task says how sentence-embedding models meet it, or why they do not: its declaration names exactly
one of `embedding` and `no_embedding`, and a declared use turns real records into texts and gold-made
outputs into predictions that score the maximum through the task."""

from __future__ import annotations

from typing import Any

import pytest

from klue import registry
from klue.errors import DataError
from klue.tasks.embedding import Classification, Similarity

TASKS = registry.all_tasks()


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_each_task_declares_a_use_or_the_reason_it_has_none(task: Any) -> None:
    assert (task.embedding is None) != (task.no_embedding is None), task.name
    if task.embedding is None:
        assert len(task.no_embedding) > 30  # a sentence, said to the user
        with pytest.raises(DataError, match=task.no_embedding):
            task.make_embedding()
    else:
        use = task.make_embedding()
        assert isinstance(use, Classification | Similarity) and use.n_texts in (1, 2) and use.inputs
        if isinstance(use, Classification):
            assert task.labels, "a classification use needs the task's label set"


@pytest.mark.realdata
@pytest.mark.parametrize("task", [t for t in TASKS if t.embedding], ids=lambda t: t.name)
def test_gold_outputs_make_predictions_that_score_the_maximum(task: Any, protocol_slice: Any) -> None:
    data = protocol_slice(task.name, 0, 60)
    use = task.make_embedding()
    predictions = []
    for record in data.eval:
        texts = use.texts(record)
        assert len(texts) == use.n_texts and all(isinstance(t, str) and t.strip() for t in texts)
        if isinstance(use, Similarity):
            predictions.append(use.predict(record, use.gold(record)))
        else:
            gold = use.gold(record)
            assert gold in task.labels
            predictions.append(use.predict(record, gold, {label: float(label == gold) for label in task.labels}))
    report = task.evaluate(data.eval, predictions, "official")
    gold_report = task.evaluate(data.eval, [task.gold_prediction(r) for r in data.eval], "official")
    assert report.scores == pytest.approx(gold_report.scores)
