"""Published reference numbers, declared once, as facts with their source.

The report shows them beside measured rows, always marked as reference: they were measured by the KLUE
authors on the official dev sets with the official train sets, so they compare only with rows whose
protocol is `official`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReferenceRow:
    model: str
    source: str
    scores: dict[str, dict[str, float]]  # task name -> metric name -> score (0-100)


# SPEC section 5: KLUE paper (arXiv:2105.09680) appendix A, dev-set results. The paper's DP UAS / LAS are
# the official macro F1 values (`uas_macro_f1`, `las_macro_f1`), the metrics the official code reports.
KLUE_ROBERTA_LARGE = ReferenceRow(
    model="KLUE-RoBERTa-large",
    source="KLUE paper (Park et al., arXiv:2105.09680), appendix A, dev sets",
    scores={
        "ynat": {"macro_f1": 85.88},
        "sts": {"pearsonr": 93.20, "f1": 86.13},
        "nli": {"accuracy": 89.50},
        "ner": {"entity_macro_f1": 84.54, "character_macro_f1": 91.45},
        "re": {"micro_f1": 71.06, "auprc": 73.33},
        "dp": {"uas_macro_f1": 93.84, "las_macro_f1": 87.93},
        "mrc": {"exact_match": 75.26, "rouge_w": 80.30},
        "wos": {"joint_goal_acc": 49.39, "slot_micro_f1": 92.19},
    },
)

REFERENCES: tuple[ReferenceRow, ...] = (KLUE_ROBERTA_LARGE,)
