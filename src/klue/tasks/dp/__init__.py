"""KLUE-DP: dependency parsing over words (eojeol) with KLUE's 38 dependency labels, scored by the
official UAS / LAS macro F1 (LAS collapses labels 15-37 into one class) and micro F1.

UD Korean CoNLL-U files read into the same records with UD labels (`DpRecord.label_set == "ud"`); they
are scored with the standard, uncollapsed definitions (`las` as CoNLL 2018 computes it, on the universal
part of each label; `las_full` on the full labels).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from klue.errors import DataError, Problem
from klue.metrics import dp as metric
from klue.metrics.report import MetricMode, MetricReport, spec_map
from klue.metrics.statistics import ExampleStatistics
from klue.tasks.base import ExampleText, Task, TextFields, declare
from klue.tasks.kinds import require_labelled

from .records import (
    DEPRELS,
    DpPrediction,
    DpRecord,
    gold_prediction,
    head_range_problem,
    parse_prediction,
    read,
    read_conllu,
)

_KNOWN = frozenset(DEPRELS)


def prediction_problems(gold: DpRecord, pred: DpPrediction) -> list[str]:
    """What makes `pred` unusable for `gold`: a head count other than the word count, a head outside the
    sentence (an error in a gold file too, so never scored), a KLUE label that does not exist."""
    if len(pred.heads) != len(gold.words):
        return [f"{len(pred.heads)} predicted heads for a sentence of {len(gold.words)} words"]
    problems = []
    head_problem = head_range_problem(pred.heads, len(gold.words))
    if head_problem is not None:
        problems.append(head_problem)
    if gold.label_set == "klue" and not set(pred.deprels) <= _KNOWN:
        problems.append(f"unknown DEPREL {sorted(set(pred.deprels) - _KNOWN)}")
    return problems


def _checked(golds: Sequence[DpRecord], preds: Sequence[DpPrediction]) -> bool:
    """Whether the gold records carry UD labels, after refusing unusable predictions and mixed label sets."""
    require_labelled(golds)  # records read for prediction hold no gold to score against
    problems = [Problem("predictions", pred.guid, message)
                for gold, pred in zip(golds, preds) for message in prediction_problems(gold, pred)]
    if problems:
        raise DataError(problems)
    label_sets = {g.label_set for g in golds}
    if len(label_sets) > 1:
        raise DataError("dp: the gold records mix KLUE and UD dependency labels; score them apart")
    return label_sets == {"ud"}


def _columns(golds: Sequence[DpRecord], preds: Sequence[DpPrediction]) -> tuple[
        list[list[Any]], list[list[Any]], list[list[Any]], list[list[Any]]]:
    return ([list(g.heads) for g in golds], [list(g.deprels) for g in golds], [list(p.heads) for p in preds],
            [list(p.deprels) for p in preds])


def score(golds: Sequence[DpRecord], preds: Sequence[DpPrediction], mode: MetricMode) -> MetricReport:
    compute = metric.compute_ud if _checked(golds, preds) else metric.compute
    return compute(*_columns(golds, preds), mode=mode)


def statistics(golds: Sequence[DpRecord], preds: Sequence[DpPrediction], mode: MetricMode) -> ExampleStatistics:
    compute = metric.statistics_ud if _checked(golds, preds) else metric.statistics
    return compute(*_columns(golds, preds), mode=mode)


# the answer: the heads and the relations of the words, each as one space-separated text
TEXT_FIELDS = TextFields[DpRecord](
    ("sentence",), ("heads", "deprels"),
    lambda r: ExampleText((r.sentence,), (" ".join(map(str, r.heads)), " ".join(r.deprels))))

TASK: Task[DpRecord, DpPrediction] = declare(
    __name__, labels=DEPRELS, metric_specs=spec_map(metric.SPECS), record_type=DpRecord,
    prediction_type=DpPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=score, statistics=statistics, other_readers={"conllu": read_conllu},
    reader_suffixes={"conllu": (".conllu", ".tsv")},  # CoNLL-U is tab-separated: a .tsv may hold it
    adapter=".adapter:make_adapter", baseline=".baseline:make_baseline", text_fields=TEXT_FIELDS,
    no_embedding="its predictions are a head and a relation per word, and a sentence embedding is one vector per "
    "sentence",
)
