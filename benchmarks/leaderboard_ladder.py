"""The ladder simulation of issue 38: a team submits random perturbations of one prediction file; does it
climb the public board? Plain: the board shows the team's best public score. Ladder (`public_ranking:
ladder`): the board moves only when a submission beats the standing one by the paired test on the public
examples. Neither should move on the private part, which the perturbations know nothing about.

Each submission is scored as the service scores it (klue.leaderboard.judge.part_result: the judge's
`evaluate`, the task's per-example statistics, 1,000 bootstrap resamples with the site's seed) on the public
and the private part of the official NLI dev set split as `klue leaderboard init` splits it (seed 0, half
private); the ladder's decision is klue.leaderboard.jobs' rule (klue.reporting.intervals.paired_test,
p < 0.05). The base file keeps each gold label with probability --accuracy, else a random label; each
submission redraws the labels of a random --flip share of the base file's examples (a fresh draw every time,
not cumulative), so every submission has the same expected accuracy: any climb is noise bought with
submissions.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/leaderboard_ladder.py [--submissions 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from klue import registry
from klue.io.locate import roots_from
from klue.leaderboard.gold import load
from klue.leaderboard.judge import decode_resamples, part_result
from klue.reporting.intervals import ALPHA, paired_test

CHECKPOINTS = (1, 5, 10, 25, 50, 100, 150, 200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="nli")
    parser.add_argument("--submissions", type=int, default=200)
    parser.add_argument("--accuracy", type=float, default=0.75)
    parser.add_argument("--flip", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    task = registry.get(args.task)
    dev = task.file("dev")
    assert dev is not None
    gold = load(task.name, roots_from(args.data_dir, None).klue / dev.path, None, 0, 0.5)
    records = [*gold.public, *gold.private]
    labels = list(task.labels)
    rng = random.Random(args.seed)
    base_labels = {task.guid(r): task.gold_prediction(r).label if rng.random() < args.accuracy else rng.choice(labels)
                   for r in records}

    def predictions(part: list[Any], chosen: dict[str, str]) -> list[Any]:
        return [task.prediction_type(guid=task.guid(r), label=chosen[task.guid(r)]) for r in part]

    plain: dict[str, Any] | None = None
    ladder: dict[str, Any] | None = None
    accepted = plain_moves = 0
    rows, started = [], time.perf_counter()
    for k in range(1, args.submissions + 1):
        chosen = dict(base_labels)
        for guid in rng.sample(sorted(chosen), int(args.flip * len(chosen))):
            chosen[guid] = rng.choice(labels)
        public = part_result(task, gold.public, predictions(gold.public, chosen), "x", 1000)
        private = part_result(task, gold.private, predictions(gold.private, chosen), "x", 0)
        entry = {"k": k, "public": public["task_score"], "private": private["task_score"],
                 "resamples": decode_resamples(public["resamples"])}
        if plain is None or entry["public"] > plain["public"]:
            plain, plain_moves = entry, plain_moves + 1
        if ladder is None:
            ladder, accepted = entry, 1
        else:
            test = paired_test(entry["resamples"], ladder["resamples"], entry["public"] - ladder["public"])
            if test.difference > 0 and test.p_value < ALPHA:
                ladder, accepted = entry, accepted + 1
        if k in CHECKPOINTS or k == args.submissions:
            rows.append({"submissions": k, "plain_public": plain["public"], "plain_private": plain["private"],
                         "ladder_public": ladder["public"], "ladder_private": ladder["private"],
                         "ladder_accepted": accepted, "plain_moves": plain_moves, "this_public": entry["public"], "this_private": entry["private"]})
    elapsed = time.perf_counter() - started
    print(f"{task.name}: {len(gold.public)} public and {len(gold.private)} private examples; base accuracy "
          f"{args.accuracy}, {args.flip:.0%} of labels redrawn per submission; {elapsed:.0f} s\n")
    print("| submissions | plain: public shown | its private | moves | ladder: public shown | its private | moves |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['submissions']} | {row['plain_public']:.2f} | {row['plain_private']:.2f} | {row['plain_moves']} | "
              f"{row['ladder_public']:.2f} | {row['ladder_private']:.2f} | {row['ladder_accepted']} |")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows,
                                         "seconds": elapsed}, indent=1))


if __name__ == "__main__":
    main()
