"""Speed of the bootstrap over per-example statistics (klue.metrics.resampling) on real dev-set sizes.

For the full NER dev set (5,000 sentences, scoring case pred_1 / pred_2): building the per-sentence
statistics, 1,000 bootstrap resamples of entity macro F1 alone and of both NER metrics, a full paired
comparison (1,000 paired-bootstrap resamples + 1,000 approximate-randomisation draws), and, interleaved
with them, the plain way (each resample's sentences repeated explicitly and `ner.compute` run again) on a
few resamples, extrapolated to 1,000. Then RE AUPRC (the non-decomposable metric, vectorised over
weights) on the RE scoring case and on synthetic data of the RE dev set's size. Best of --repeat per measurement.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_statistics.py [--repeat 3] [--resamples 1000]

Data: KLUE_DATA_DIR (default ../shared/data/klue) and ../shared/data/scoring-cases.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from klue.errors import ProblemLog
from klue.metrics import ner
from klue.metrics import re as re_metric
from klue.metrics.resampling import Side, Units, bootstrap, bootstrap_indices, compare, streams

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
KLUE_DIR = Path(os.environ.get("KLUE_DATA_DIR") or SHARED / "klue")
CASES = SHARED / "scoring-cases"


def best_of(repeat: int, work: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def case(task: str, k: int) -> Any:
    with gzip.open(CASES / task / f"pred_{k}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--plain", type=int, default=5, help="resamples recomputed the plain way")
    args = parser.parse_args()
    from klue.tasks import ner as ner_task

    log = ProblemLog("ner dev")
    records = ner_task.read(KLUE_DIR / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv", log)
    log.raise_if_errors()
    gold = [list(r.nonspace_tags) for r in records]
    pred_a, pred_b = case("ner", 1), case("ner", 2)
    units = Units.single(len(gold))
    stats_a, stats_b = ner.statistics(gold, pred_a), ner.statistics(gold, pred_b)
    side_a, side_b = Side([stats_a], units), Side([stats_b], units)
    entity_only = Side([stats_a.only(["entity_macro_f1"])], units)
    drawn = next(bootstrap_indices(streams(0)[0], len(gold), args.plain))

    def plain() -> None:
        for row in drawn:
            ner.compute([gold[i] for i in row], [pred_a[i] for i in row])

    rows = []
    for _ in range(args.repeat):  # interleaved: each round measures every way once
        rows.append((
            best_of(1, partial(ner.statistics, gold, pred_a))[0],
            best_of(1, partial(bootstrap, [entity_only], args.resamples, 0))[0],
            best_of(1, partial(bootstrap, [side_a], args.resamples, 0))[0],
            best_of(1, partial(compare, side_a, side_b, args.resamples, 0))[0],
            best_of(1, plain)[0] / args.plain * args.resamples,
        ))
    best = np.min(np.array(rows), axis=0)
    print(f"NER dev: {len(gold):,} sentences, {stats_a.matrix.shape[1]} statistics per sentence, "
          f"{args.resamples} resamples, best of {args.repeat}")
    print(f"  per-sentence statistics (one run):            {best[0]:8.3f} s")
    print(f"  bootstrap, entity macro F1 only:              {best[1]:8.3f} s")
    print(f"  bootstrap, entity + character macro F1:       {best[2]:8.3f} s")
    print(f"  paired comparison (bootstrap + randomisation): {best[3]:8.3f} s")
    print(f"  plain recomputation (ner.compute), est.:      {best[4]:8.3f} s  "
          f"(from {args.plain} resamples; {best[4] / best[1]:.0f}x the entity-F1 bootstrap)")

    cases = CASES / "re"
    relations = json.loads((cases / "relation_list.json").read_text(encoding="utf-8"))["relations"]
    re_gold = [r["label"] for r in json.loads((cases / "gold.json").read_text(encoding="utf-8"))]
    items = case("re", 1)
    re_pred = [relations[x["label"]] if isinstance(x["label"], int) else x["label"] for x in items]
    probs = [x["probs"] for x in items]
    re_stats = re_metric.statistics(re_gold, re_pred, probs, relations)
    re_side = Side([re_stats], Units.single(len(re_gold)))
    t_re, _ = best_of(args.repeat, lambda: bootstrap([re_side], args.resamples, seed=0))
    print(f"RE scoring case: {len(re_gold):,} examples x {len(relations)} relations; bootstrap of micro F1 + "
          f"AUPRC, {args.resamples} resamples: {t_re:.3f} s")
    # RE at the official dev size (the dev file is not in the shared data): synthetic gold (40% no_relation)
    # and a synthetic classifier's probabilities (logits N(0, 1), +3 on the gold relation; ~76 micro F1).
    from klue.tasks import re as re_task

    relations = list(re_task.TASK.labels)
    n = re_task.TASK.sizes["dev"]
    rng = np.random.default_rng(0)
    codes = rng.choice(len(relations), n, p=np.r_[0.4, np.full(len(relations) - 1, 0.6 / (len(relations) - 1))])
    logits = rng.normal(0.0, 1.0, (n, len(relations)))
    logits[np.arange(n), codes] += 3.0
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    pred = [relations[i] for i in probs.argmax(axis=1)]
    full = Side([re_metric.statistics([relations[c] for c in codes], pred, probs.tolist(), relations)],
                Units.single(n))
    t_full, _ = best_of(args.repeat, lambda: bootstrap([full], args.resamples, seed=0))
    print(f"RE at dev size: {n:,} examples x {len(relations)} relations (synthetic), micro F1 + AUPRC, "
          f"{args.resamples} resamples: {t_full:.3f} s")


if __name__ == "__main__":
    main()
