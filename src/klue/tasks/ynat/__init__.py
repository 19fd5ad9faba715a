"""KLUE-YNAT: topic classification of news headlines into 7 categories, scored by macro F1.

Other tools order the labels differently (the Hugging Face copy: IT과학, 경제, 사회, 생활문화, 세계, 스포츠,
정치), so labels are exchanged by name, never by index.
"""

from __future__ import annotations

from klue.metrics.classification import ACCURACY, MACRO_F1
from klue.tasks.base import ExampleText, Task, TextFields
from klue.tasks.labels import declare_label_task

from .records import CATEGORY, LABELS, YnatPrediction, YnatRecord, read, read_resplit

# A prediction names its category: an index is refused, since tools disagree on the label order.
# a title is the input, its topic the answer (klue.contamination)
TEXT_FIELDS = TextFields[YnatRecord](("title",), ("label",), lambda r: ExampleText((r.title,), (r.label,)))

TASK: Task[YnatRecord, YnatPrediction] = declare_label_task(
    __name__, labels=LABELS, specs=(MACRO_F1, ACCURACY), record_type=YnatRecord, prediction_type=YnatPrediction,
    nouns=CATEGORY, refuse_index=True, read=read, other_readers={"ynat-resplit": read_resplit},
    reader_suffixes={"ynat-resplit": (".json",)},
    adapter=".adapter:make_adapter", baseline=".baseline:make_baseline",
    embedding=".embedding:EMBEDDING", text_fields=TEXT_FIELDS,
)
