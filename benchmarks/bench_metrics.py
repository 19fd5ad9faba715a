"""Speed and agreement of klue.metrics against the reference libraries they replace, and `klue score` wall time.

For every scoring case (real dev sets for NER, DP, NLI, STS; synthetic official-format golds for YNAT,
RE, MRC, WoS): the klue value and time (best of --repeat) beside the reference value and time
(seqeval strict IOB2, sklearn, scipy, difflib transcriptions of the official code), then the wall time of
`klue score --json` per case (best of --repeat, fresh process each, start-up included).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_metrics.py [--quick] [--repeat 3] [--json out.json]

--quick runs seqeval on the first 500 NER sentences only (the full dev set takes minutes per case).
Data: KLUE_DATA_DIR (default ../shared/data/klue) and ../shared/data/scoring-cases.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
KLUE_DIR = Path(os.environ.get("KLUE_DATA_DIR") or SHARED / "klue")
CASES = SHARED / "scoring-cases"
REAL_GOLD = {
    "ner": KLUE_DIR / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv",
    "dp": KLUE_DIR / "klue-dp-v1.1/klue-dp-v1.1_dev.tsv",
    "nli": KLUE_DIR / "klue-nli-v1.1/klue-nli-v1.1_dev.json",
    "sts": KLUE_DIR / "klue-sts-v1.1/klue-sts-v1.1_dev.json",
}


def best_time(fn: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    best = float("inf")
    value = None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return value, best


def load(path: Path) -> Any:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def cases() -> list[tuple[str, Path, Path, list[str]]]:
    """(task, gold, predictions, extra CLI options)."""
    found = []
    for task, gold in REAL_GOLD.items():
        found += [(task, gold, p, []) for p in sorted((CASES / task).glob("pred_*.json.gz"))]
    for task in ("ynat", "re", "mrc", "wos"):
        for p in sorted((CASES / task).glob("pred_*.json.gz")):
            edge = "edge" in p.name
            extra = ["--relation-list", str(CASES / "re/relation_list.json")] if task == "re" else []
            if task == "mrc" and edge:
                extra = ["--gold-format", "unchecked-offsets"]
            found.append((task, CASES / task / ("gold_edge.json" if edge else "gold.json"), p, extra))
    return found


def primitives(task_name: str, gold: Path, predictions: Path, extra: list[str]) -> tuple[Any, Any, Any]:
    """Gold records, aligned predictions, the task (through klue.scoring, as `klue score` reads them)."""
    from klue import registry
    from klue.predictions import align, read_label_list, read_predictions
    from klue.scoring import read_gold

    task = registry.get(task_name)
    fmt = extra[1] if extra[:1] == ["--gold-format"] else None
    golds, _ = read_gold(task, gold, fmt)
    labels = read_label_list(Path(extra[1]), task.labels) if extra[:1] == ["--relation-list"] else None
    guids = [task.guid(g) for g in golds]
    by_guid, _, _ = read_predictions(task, predictions, guids, labels)
    return golds, align(guids, by_guid, str(predictions)), task


def comparisons(task: str, golds: Any, preds: Any, quick: bool) -> list[tuple[str, Callable[[], float],
                                                                               Callable[[], float], str]]:
    """(metric, klue function, reference function, reference name)."""
    import numpy as np
    from sklearn.metrics import accuracy_score, auc, f1_score, precision_recall_curve

    from klue.metrics import dp, mrc, ner, nli, re, sts, wos, ynat

    if task == "ner":
        from seqeval.metrics import f1_score as seqeval_f1
        from seqeval.scheme import IOB2

        from klue.tasks.ner.records import nonspace_prediction

        gold = [list(g.nonspace_tags) for g in golds]
        pred = [list(nonspace_prediction(g, p)) for g, p in zip(golds, preds)]
        head = slice(0, 500) if quick else slice(None)
        flat_gold = [t for s in gold for t in ["O", *s, "O"]]
        flat_pred = [t for s in pred for t in ["O", *s, "O"]]
        seq_gold = [t for s in gold[head] for t in ["O", *s, "O"]]
        seq_pred = [t for s in pred[head] for t in ["O", *s, "O"]]
        label = "entity_macro_f1" + (" (500 sentences)" if quick else "")
        return [
            (label, lambda: ner.entity_macro_f1(gold[head], pred[head]),
             lambda: 100 * seqeval_f1([seq_gold], [seq_pred], average="macro", mode="strict", scheme=IOB2),
             "seqeval strict IOB2"),
            ("character_macro_f1", lambda: ner.character_macro_f1(gold, pred),
             lambda: 100 * f1_score(flat_gold, flat_pred, labels=list(ner.TAGS), average="macro", zero_division=1),
             "sklearn f1_score"),
        ]
    if task == "dp":
        gh = [list(g.heads) for g in golds]
        gl = [list(g.deprels) for g in golds]
        ph = [list(p.heads) for p in preds]
        pl = [list(p.deprels) for p in preds]

        def reference(average: str, labelled: bool) -> float:
            h = np.concatenate([np.asarray(s) for s in gh])
            q = np.concatenate([np.asarray(s) for s in ph])
            if not labelled:
                return 100 * f1_score(h, q, average=average)
            a = np.array([dp.DEPRELS.index(x) for s in gl for x in s])
            b = np.array([dp.DEPRELS.index(x) for s in pl for x in s])
            a, b = np.where(a >= 15, -3, a), np.where(b >= 15, -3, b)
            return 100 * f1_score(a, np.where(h == q, b, -2), average=average)

        return [
            ("uas_macro_f1", lambda: dp.uas_macro_f1(gh, ph), lambda: reference("macro", False), "sklearn f1_score"),
            ("uas_micro_f1", lambda: dp.uas_micro_f1(gh, ph), lambda: reference("micro", False), "sklearn f1_score"),
            ("las_macro_f1", lambda: dp.las_macro_f1(gh, gl, ph, pl), lambda: reference("macro", True),
             "sklearn f1_score"),
            ("las_micro_f1", lambda: dp.las_micro_f1(gh, gl, ph, pl), lambda: reference("micro", True),
             "sklearn f1_score"),
        ]
    if task in ("nli", "ynat"):
        gold = [getattr(g, "gold_label", None) or g.label for g in golds]
        pred = [p.label for p in preds]
        if task == "nli":
            return [("accuracy", lambda: nli.accuracy(gold, pred), lambda: 100 * accuracy_score(gold, pred),
                     "sklearn accuracy_score")]
        return [("macro_f1", lambda: ynat.macro_f1(gold, pred), lambda: 100 * f1_score(gold, pred, average="macro"),
                 "sklearn f1_score")]
    if task == "sts":
        from scipy.stats import pearsonr

        gold = [g.real_label for g in golds]
        pred = [p.score for p in preds]
        g3 = np.where(np.asarray(gold) >= 3, 1, 0)
        return [
            ("pearsonr", lambda: sts.pearsonr(gold, pred), lambda: 100 * pearsonr(pred, gold)[0], "scipy pearsonr"),
            ("f1", lambda: sts.f1(gold, pred),
             lambda: 100 * f1_score(g3, np.where(np.asarray(pred) >= 3, 1, 0)), "sklearn f1_score"),
        ]
    if task == "re":
        from klue.tasks.re.records import RELATIONS

        relations = list(RELATIONS)
        gold = [g.label for g in golds]
        pred = [p.label for p in preds]
        probs = [list(p.probs) for p in preds]

        def reference_auprc() -> float:
            onehot = np.eye(len(relations))[[relations.index(g) for g in gold]]
            matrix = np.asarray(probs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                areas = [auc(*precision_recall_curve(onehot[:, c], matrix[:, c])[1::-1]) for c in range(len(relations))]
            return 100 * float(np.average(areas))

        return [
            ("micro_f1", lambda: re.micro_f1(gold, pred, relations),
             lambda: 100 * f1_score(gold, pred, average="micro", labels=relations[1:]), "sklearn f1_score"),
            ("auprc", lambda: re.auprc(gold, probs, relations), reference_auprc, "sklearn PR curve + auc"),
        ]
    if task == "mrc":
        from difflib import SequenceMatcher

        answers = [list(g.answer_texts) for g in golds]
        pred = [p.answer for p in preds]

        def reference_rouge() -> float:
            import re as regex
            import string

            def norm(s: str) -> str:
                s = regex.sub(r"[\'\"《》<>〈〉]\(\)‘’", " ", s.lower())
                return " ".join("".join(c for c in s if c not in set(string.punctuation)).split())

            total = 0.0
            for a, p in zip(answers, pred):
                p = norm(p)
                best = 0.0
                for g in [norm(x) for x in a] or [""]:
                    if g == "":
                        score = float(p == g)
                    else:
                        size = SequenceMatcher(None, p, g).find_longest_match(0, len(p), 0, len(g)).size
                        pr, rc = (size / len(p) if p else 0.0), size / len(g)
                        score = 0.0 if pr + rc == 0 else 2 * pr * rc / (pr + rc)
                    best = max(best, score)
                total += best
            return 100 * total / len(pred)

        return [("rouge_w", lambda: mrc.rouge_w(answers, pred), reference_rouge, "difflib transcription")]
    if task == "wos":
        gold = [list(g.state) for g in golds]
        pred = [list(p.state) for p in preds]

        def reference_slot() -> float:
            total = 0.0
            for g, p in zip(gold, pred):
                if not g:
                    total += 1.0 if not p else 0.0
                    continue
                tp = sum(1 for x in g if x in p)
                fp = sum(1 for x in p if x not in g)
                pr, rc = (tp / (tp + fp) if tp + fp else 0), tp / len(g)
                total += 2 * pr * rc / (pr + rc) if pr + rc else 0
            return 100 * total / len(gold)

        return [("slot_micro_f1", lambda: wos.slot_micro_f1(gold, pred), reference_slot, "TRADE loop transcription")]
    raise ValueError(task)


def cli_time(task: str, gold: Path, predictions: Path, extra: list[str], repeat: int) -> tuple[float, float]:
    """Best wall time and best user+sys CPU time of one `klue score --json` process."""
    command = [str(REPO / ".venv/bin/klue"), "score", "--task", task, "--gold", str(gold), "--predictions",
               str(predictions), *extra, "--json"]
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
    return best_wall, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="seqeval on 500 NER sentences only")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()

    import_cost = {}
    for module in ("sklearn.metrics", "scipy.stats", "seqeval.metrics"):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        import_cost[module] = time.perf_counter() - start
    rows = []
    print("| case | metric | klue | reference | abs diff | klue s | reference s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for task, gold, predictions, extra in cases():
        golds, preds, _ = primitives(task, gold, predictions, extra)
        for metric, mine, reference, ref_name in comparisons(task, golds, preds, args.quick):
            value, mine_s = best_time(mine, args.repeat)
            ref_repeat = 1 if ref_name.startswith("seqeval") else args.repeat
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref_value, ref_s = best_time(reference, ref_repeat)
            row = {"case": f"{task}/{predictions.name}", "metric": metric, "klue": value, "reference": ref_value,
                   "reference_name": ref_name, "abs_diff": abs(value - ref_value), "klue_s": mine_s,
                   "reference_s": ref_s, "speedup": ref_s / mine_s if mine_s else float("inf")}
            rows.append(row)
            print(f"| {row['case']} | {metric} | {value:.6f} | {ref_value:.6f} ({ref_name}) | {row['abs_diff']:.1e} | "
                  f"{mine_s:.4f} | {ref_s:.4f} | {row['speedup']:.0f}x |", flush=True)
    print()
    print("| `klue score --json` case | best wall s | best user+sys s |")
    print("|---|---|---|")
    cli_rows = []
    for task, gold, predictions, extra in cases():
        wall, cpu = cli_time(task, gold, predictions, extra, args.repeat)
        cli_rows.append({"case": f"{task}/{predictions.name}", "wall_s": wall, "cpu_s": cpu})
        print(f"| {task}/{predictions.name} | {wall:.2f} | {cpu:.2f} |", flush=True)
    print()
    print("import cost in a fresh interpreter (s, includes ~0.02 s start-up): "
          + ", ".join(f"{k} {v:.2f}" for k, v in import_cost.items()))
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps({"metrics": rows, "cli": cli_rows, "imports": import_cost}, indent=2))


if __name__ == "__main__":
    main()
