"""KLUE-WoS (dialogue state tracking): joint goal accuracy and "slot micro F1".

One example per user turn; its state is a list of `domain-slot-value` strings (the cumulative state).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from klue.metrics.classification import check_aligned, check_mode, f1_ratio
from klue.metrics.report import MetricMode, MetricReport, MetricSpec
from klue.metrics.statistics import ExampleStatistics, Formula, column, combine

TASK_NAME = "wos"
JOINT_GOAL_ACC = MetricSpec("joint_goal_acc", "JGA")
SLOT_MICRO_F1 = MetricSpec("slot_micro_f1", "slot micro F1")  # a misnomer: a mean of per-turn F1
TURN_SLOT_F1 = MetricSpec("turn_slot_f1", "turn slot F1")  # corrected mode only: the official value
SPECS = (JOINT_GOAL_ACC, SLOT_MICRO_F1, TURN_SLOT_F1)


def domain_of(item: str) -> str:
    """The domain of a `domain-slot-value` item (the text before the first "-").

    >>> domain_of("식당-예약 시간-18:00")
    '식당'
    """
    return item.split("-", 1)[0]


def turn_f1(gold: Sequence[str], pred: Sequence[str]) -> float:
    """The official per-turn F1 (0-1), from TRADE: TP = gold items (with repetition) found in the
    prediction, FN = gold items not found, FP = predicted items (with repetition) not in gold; a turn
    with empty gold scores 1 if the prediction is empty too, else 0.

    >>> turn_f1(["a", "b"], ["a", "c", "c"])  # P 1/3, R 1/2
    0.4
    >>> turn_f1([], []), turn_f1([], ["x-none"])
    (1.0, 0.0)
    """
    if not gold:
        return 1.0 if not pred else 0.0
    pred_set, gold_set = set(pred), set(gold)
    tp = sum(1 for g in gold if g in pred_set)
    fn = len(gold) - tp
    fp = sum(1 for p in pred if p not in gold_set)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


@dataclass(frozen=True)
class WosCounts:
    """Mergeable sufficient statistics (add with `+`): turns, turns with the exact state, the sum of the
    official per-turn F1, and the item-level tp / fp / fn over deduplicated states."""

    n_turns: int = 0
    n_joint: int = 0
    turn_f1_sum: float = 0.0
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @classmethod
    def of(cls, gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> WosCounts:
        check_aligned(gold, pred, "turns")
        n_joint = tp = fp = fn = 0
        f1s = []
        for g, p in zip(gold, pred):
            gold_set, pred_set = set(g), set(p)
            n_joint += gold_set == pred_set
            f1s.append(turn_f1(g, p))
            common = len(gold_set & pred_set)
            tp += common
            fp += len(pred_set) - common
            fn += len(gold_set) - common
        return cls(len(gold), n_joint, math.fsum(f1s), tp, fp, fn)

    def __add__(self, other: WosCounts) -> WosCounts:
        return WosCounts(self.n_turns + other.n_turns, self.n_joint + other.n_joint,
                         self.turn_f1_sum + other.turn_f1_sum, self.tp + other.tp, self.fp + other.fp,
                         self.fn + other.fn)

    def joint_goal_acc(self) -> float:
        # Official: 0 (not NaN) for no turns.
        return 0.0 if self.n_turns == 0 else 100.0 * self.n_joint / self.n_turns

    def official_slot_f1(self) -> float:
        return 0.0 if self.n_turns == 0 else 100.0 * self.turn_f1_sum / self.n_turns

    def item_micro_f1(self) -> float:
        # Nothing expected and nothing predicted anywhere: perfect, as the official per-turn rule says.
        return 100.0 * f1_ratio(self.tp, self.tp + self.fp, self.tp + self.fn, zero_division=1.0)


def joint_goal_acc(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> float:
    """KLUE-WoS `joint_goal_acc` (0-100): share of turns whose predicted state equals the gold state as a
    SET (order and duplicates ignored). Same in both modes.

    >>> joint_goal_acc([["식당-가격대-저렴"], []], [["식당-가격대-저렴", "식당-가격대-저렴"], ["식당-지역-none"]])
    50.0
    """
    return WosCounts.of(gold, pred).joint_goal_acc()


def slot_micro_f1(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], mode: MetricMode = "official") -> (
        float):
    """KLUE-WoS `slot_micro_f1` (0-100).

    Official (a misnomer: a macro average over turns): the mean over turns of `turn_f1` (TRADE's per-turn
    F1, duplicates counted, an empty gold turn scoring 1 only for an empty prediction). A `-none` value
    in a prediction is an ordinary false positive.
    Corrected: a true micro F1 over all turns' items: tp / fp / fn of the deduplicated states summed over
    turns, F1 = 2tp / (2tp + fp + fn) (100 when nothing is expected or predicted anywhere).

    >>> gold = [[], ["a-x-1", "a-y-2"]]
    >>> pred = [["a-z-none"], ["a-x-1"]]
    >>> slot_micro_f1(gold, pred)  # turns: 0 and 2/3
    33.33333333333333
    >>> slot_micro_f1(gold, pred, mode="corrected")  # tp 1, fp 1, fn 1
    50.0
    """
    check_mode(mode)
    counts = WosCounts.of(gold, pred)
    return counts.official_slot_f1() if mode == "official" else counts.item_micro_f1()


@dataclass(frozen=True)
class DomainCounts:
    """Per domain: turns where it is active (in gold or prediction), turns where its part of the state
    is exact, and item tp / fp / fn."""

    active: dict[str, int] = field(default_factory=dict)
    joint: dict[str, int] = field(default_factory=dict)
    tp: dict[str, int] = field(default_factory=dict)
    fp: dict[str, int] = field(default_factory=dict)
    fn: dict[str, int] = field(default_factory=dict)


def per_domain(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> dict[str, float]:
    """Per domain d: `d/joint_goal_acc` over the turns where d appears in gold or prediction (the d-part
    of the state exact), and `d/slot_f1`, micro F1 of d's items (deduplicated per turn).

    >>> per_domain([["식당-가격대-저렴"]], [["식당-가격대-저렴", "택시-도착지-서울역"]])["택시/slot_f1"]
    0.0
    """
    check_aligned(gold, pred, "turns")
    counts = DomainCounts()
    for g, p in zip(gold, pred):
        gold_by: dict[str, set[str]] = {}
        pred_by: dict[str, set[str]] = {}
        for item in g:
            gold_by.setdefault(domain_of(item), set()).add(item)
        for item in p:
            pred_by.setdefault(domain_of(item), set()).add(item)
        for domain in gold_by.keys() | pred_by.keys():
            gs, ps = gold_by.get(domain, set()), pred_by.get(domain, set())
            common = len(gs & ps)
            for table, value in ((counts.active, 1), (counts.joint, int(gs == ps)), (counts.tp, common),
                                 (counts.fp, len(ps) - common), (counts.fn, len(gs) - common)):
                table[domain] = table.get(domain, 0) + value
    result: dict[str, float] = {}
    for domain in sorted(counts.active):
        tp = counts.tp[domain]
        result[f"{domain}/joint_goal_acc"] = 100.0 * counts.joint[domain] / counts.active[domain]
        result[f"{domain}/slot_f1"] = 100.0 * f1_ratio(tp, tp + counts.fp[domain], tp + counts.fn[domain])
        result[f"{domain}/n_turns"] = float(counts.active[domain])
    return result


def compute(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], mode: MetricMode = "official") -> (
        MetricReport):
    """Scores `joint_goal_acc`, `slot_micro_f1` (official or corrected definition by `mode`), and in
    corrected mode also `turn_slot_f1` (the official per-turn mean, under an honest name); breakdown
    `per_domain`."""
    check_mode(mode)
    counts = WosCounts.of(gold, pred)
    scores = {"joint_goal_acc": counts.joint_goal_acc()}
    if mode == "official":
        scores["slot_micro_f1"] = counts.official_slot_f1()
    else:
        scores["slot_micro_f1"] = counts.item_micro_f1()
        scores["turn_slot_f1"] = counts.official_slot_f1()
    return MetricReport(
        task=TASK_NAME,
        mode=mode,
        scores=scores,
        breakdown={"per_domain": per_domain(gold, pred)},
        n_examples=len(gold),
    )


def statistics(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], mode: MetricMode = "official") -> (
        ExampleStatistics):
    """Per-turn statistics of `compute`'s scores (the per-turn `WosCounts`): 1, exact state, the official
    turn F1, and item tp / predicted / gold over the deduplicated states."""
    check_mode(mode)
    check_aligned(gold, pred, "turns")
    rows = np.zeros((len(gold), 5))
    for i, (g, p) in enumerate(zip(gold, pred)):
        gold_set, pred_set = set(g), set(p)
        rows[i] = (gold_set == pred_set, turn_f1(g, p), len(gold_set & pred_set), len(pred_set), len(gold_set))
    parts = [column("turns", np.ones(len(gold)))] + [column(name, rows[:, j]) for j, name in enumerate(
        ("joint", "turn_f1", "item.tp", "item.pred", "item.gold"))]
    jga = Formula("joint_goal_acc", "ratio", {"num": "joint", "den": "turns", "empty": 0.0})
    turn_mean = {"num": "turn_f1", "den": "turns", "empty": 0.0}
    if mode == "official":
        formulas = [jga, Formula("slot_micro_f1", "ratio", turn_mean)]
    else:
        formulas = [jga, Formula("slot_micro_f1", "f1", {"tp": "item.tp", "pred": "item.pred", "gold": "item.gold",
                                                         "zero_division": 1.0}),
                    Formula("turn_slot_f1", "ratio", turn_mean)]
    return combine(parts, formulas)
