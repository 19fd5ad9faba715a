"""KLUE-DP: dependency parsing over words (eojeol) with KLUE's 38 dependency labels, scored by the
official UAS / LAS macro F1 (LAS collapses labels 15-37 into one class) and micro F1.

UD Korean CoNLL-U files read into the same records with UD labels (`DpRecord.label_set == "ud"`); they
are scored with the standard, uncollapsed definitions.
"""

from __future__ import annotations

from collections.abc import Sequence

from klue.errors import DataError, Problem
from klue.metrics import dp as metric
from klue.metrics.report import MetricMode, MetricReport, spec_map
from klue.tasks.base import Task, declare

from .records import DEPRELS, DpPrediction, DpRecord, gold_prediction, parse_prediction, read, read_conllu


def score(golds: Sequence[DpRecord], preds: Sequence[DpPrediction], mode: MetricMode) -> MetricReport:
    known = frozenset(DEPRELS)
    problems = []
    for gold, pred in zip(golds, preds):
        if len(pred.heads) != len(gold.words):
            problems.append(Problem("predictions", pred.guid,
                                    f"{len(pred.heads)} predicted heads for a sentence of {len(gold.words)} words"))
        elif gold.label_set == "klue" and not set(pred.deprels) <= known:
            problems.append(Problem("predictions", pred.guid, f"unknown DEPREL {sorted(set(pred.deprels) - known)}"))
    if problems:
        raise DataError(problems)
    label_sets = {g.label_set for g in golds}
    if len(label_sets) > 1:
        raise DataError("dp: the gold records mix KLUE and UD dependency labels; score them apart")
    compute = metric.compute_ud if label_sets == {"ud"} else metric.compute
    return compute([list(g.heads) for g in golds], [list(g.deprels) for g in golds], [list(p.heads) for p in preds],
                   [list(p.deprels) for p in preds], mode=mode)


TASK: Task[DpRecord, DpPrediction] = declare(
    __name__, labels=DEPRELS, metric_specs=spec_map(metric.SPECS), record_type=DpRecord,
    prediction_type=DpPrediction, read=read, gold_prediction=gold_prediction,
    parse_prediction=parse_prediction, score=score, other_readers={"conllu": read_conllu},
    adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
)
