"""Every `klue score` value on ../shared/data/scoring-cases, both metric modes, as one JSON line per case.

Usage:
  .venv/bin/python benchmarks/scoring_snapshot.py [--shared DIR] [--out FILE] [--compare FILE]

Writes `{"case": ..., "result": <klue score --json object without the file paths>}` per line (to stdout
or --out); with --compare, exits 1 and lists the cases whose result differs from a previous snapshot.
It only calls `klue.registry.get` and `klue.scoring.score_files`, which kept their signatures across the
layout redesign, so a checkout of an older revision (PYTHONPATH=<old>/src) makes a comparable snapshot.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def cases(shared: Path) -> list[tuple[str, str, Path, Path, dict[str, Any]]]:
    """(case name, task, gold, predictions, options) for every scoring case."""
    sc, klue = shared / "scoring-cases", shared / "klue"
    dev_gold = {"nli": klue / "klue-nli-v1.1/klue-nli-v1.1_dev.json", "sts": klue / "klue-sts-v1.1/klue-sts-v1.1_dev.json",
                "ner": klue / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv", "dp": klue / "klue-dp-v1.1/klue-dp-v1.1_dev.tsv"}
    out = []
    for task, gold in dev_gold.items():
        out += [(f"{task}/{p.name}", task, gold, p, {}) for p in sorted((sc / task).glob("pred_*.json.gz"))]
    out += [(f"ynat/{p.name}", "ynat", sc / "ynat/gold.json", p, {}) for p in sorted((sc / "ynat").glob("pred_*.json.gz"))]
    out += [(f"re/{p.name}", "re", sc / "re/gold.json", p, {"label_list_path": sc / "re/relation_list.json"})
            for p in sorted((sc / "re").glob("pred_*.json.gz"))]
    for task in ("mrc", "wos"):
        out += [(f"{task}/{p.name}", task, sc / task / "gold.json", p, {})
                for p in sorted((sc / task).glob("pred_[0-9].json.gz"))]
    out.append(("mrc/edge", "mrc", sc / "mrc/gold_edge.json", sc / "mrc/pred_edge.json.gz",
                {"gold_format": "unchecked-offsets"}))
    out.append(("wos/edge", "wos", sc / "wos/gold_edge.json", sc / "wos/pred_edge.json.gz", {}))
    return out


def snapshot(shared: Path) -> list[dict[str, Any]]:
    from klue import registry
    from klue.scoring import result_to_json, score_files

    lines = []
    for mode in ("official", "corrected"):
        for name, task, gold, predictions, options in cases(shared):
            result = result_to_json(score_files(registry.get(task), gold, predictions, mode, **options))
            for key in ("gold", "predictions"):
                result.pop(key)
            lines.append({"case": f"{name}/{mode}", "result": result})
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--out", type=Path, help="Write the snapshot here (default: stdout).")
    parser.add_argument("--compare", type=Path, help="A previous snapshot to compare with.")
    args = parser.parse_args()
    lines = snapshot(args.shared)
    text = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    elif not args.compare:
        sys.stdout.write(text)
    if args.compare:
        before = {d["case"]: d["result"] for d in map(json.loads, args.compare.read_text(encoding="utf-8").splitlines())}
        after = {d["case"]: d["result"] for d in lines}
        differ = sorted(c for c in before.keys() | after.keys() if before.get(c) != after.get(c))
        values = sum(len([k for k, v in r.items() if isinstance(v, float)]) for r in after.values())
        print(f"{len(after)} cases ({values} top-level metric values) compared with {args.compare}: "
              f"{len(differ)} differ" + (f": {', '.join(differ)}" if differ else ""))
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
