"""KLUE-NER: character-level named entity recognition (IOB2 over 6 entity types), scored by entity and
character macro F1.

The official reader drops space characters and their tags, so the metric sees only the non-space
characters of each sentence; a prediction may carry one tag per character or per non-space character.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.metrics import ner as metric
from klue.metrics.report import spec_map
from klue.tasks.base import ExampleText, Task, TextFields, declare
from klue.tasks.kinds import metric_binding

from .records import (
    TAGS,
    NerPrediction,
    NerRecord,
    gold_prediction,
    marked_entities,
    nonspace_prediction,
    parse_prediction,
    read,
)


def tag_columns(golds: Sequence[NerRecord], preds: Sequence[NerPrediction]) -> tuple[list[list[str]], list[list[str]]]:
    """The gold and the predicted tags of each sentence's non-space characters."""
    gold_tags = [list(g.nonspace_tags) for g in golds]
    pred_tags = [list(nonspace_prediction(g, p)) for g, p in zip(golds, preds)]
    return gold_tags, pred_tags


def example_text(record: NerRecord) -> ExampleText:
    """The sentence is the input; each entity as `text:TYPE`, as the marked-up header writes it, an answer."""
    return ExampleText((record.text,), tuple(f"{text}:{kind}" for text, kind in marked_entities(record.marked)))


TASK: Task[NerRecord, NerPrediction] = declare(
    __name__, labels=TAGS, metric_specs=spec_map(metric.SPECS), record_type=NerRecord,
    prediction_type=NerPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=metric_binding(metric.compute, tag_columns),
    statistics=metric_binding(metric.statistics, tag_columns), adapter=".adapter:make_adapter",
    baseline=".baseline:make_baseline", text_fields=TextFields(("sentence",), ("entities",), example_text),
    no_embedding="its predictions are a tag per character, and a sentence embedding is one vector per sentence",
)
