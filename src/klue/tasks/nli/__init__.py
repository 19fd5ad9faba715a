"""KLUE-NLI: natural language inference (entailment / contradiction / neutral), scored by accuracy.

Each dev premise appears in exactly three pairs, one per label, so local splits group by premise.
"""

from __future__ import annotations

from klue.metrics.classification import ACCURACY, MACRO_F1
from klue.tasks.base import ExampleText, Task, TextFields
from klue.tasks.labels import declare_label_task

from .records import LABELS, NliPrediction, NliRecord, read, read_kornli

TEXT_FIELDS = TextFields[NliRecord](("premise", "hypothesis"), ("gold_label",),
                                    lambda r: ExampleText((r.premise, r.hypothesis), (r.gold_label,)))

TASK: Task[NliRecord, NliPrediction] = declare_label_task(
    __name__, labels=LABELS, specs=(ACCURACY, MACRO_F1), record_type=NliRecord, prediction_type=NliPrediction,
    read=read, group_key=lambda r: r.premise, other_readers={"kornli": read_kornli},
    reader_suffixes={"kornli": (".tsv",)},
    adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
    embedding=".embedding:EMBEDDING", text_fields=TEXT_FIELDS,
)
