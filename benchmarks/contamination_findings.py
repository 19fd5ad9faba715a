"""Real findings of issue 41: the dev sets on hand (NLI, STS, NER, DP) scanned against each real Korean corpus
beside them, with the default method, characters (re-spaced copies) and the GPT-3 method.

    .venv/bin/python benchmarks/contamination_findings.py --out /tmp/findings [--json F]

Corpora (from KLUE_EXTRA_DATA_DIR, written once to --out/corpora): KorQuAD 1.0 dev contexts and the first
5,000 KLUE NER train sentences as JSON Lines (a `text` field), KorSTS train+dev and KorNLI's XNLI dev as they
are (TSV read as plain text: one pair, with its label or score, a line). Each scan is `klue contamination
scan` (the CLI, in this process); the report lists, per corpus, method and task, the counts and every dirty
example's guid with its longest match and where it is.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from klue import registry
from klue.cli import app
from klue.tasks.reading import read

METHODS: dict[str, list[str]] = {
    "eojeol-8": [],
    "char-25": ["--unit", "char"],
    "gpt3-word-13": ["--unit", "word", "--n", "13", "--normalise", "gpt3"],
}


def corpora(extra: Path, out: Path) -> dict[str, list[Path]]:
    out.mkdir(parents=True, exist_ok=True)
    korquad = json.loads((extra / "korean/korquad-v1/KorQuAD_v1.0_dev.json").read_text(encoding="utf-8"))
    contexts = list(dict.fromkeys(p["context"] for a in korquad["data"] for p in a["paragraphs"]))
    korquad_path = out / "korquad_v1_dev_contexts.jsonl"
    korquad_path.write_text("".join(json.dumps({"text": c}, ensure_ascii=False) + "\n" for c in contexts), "utf-8")
    ner = registry.get("ner")
    train = read(ner, extra / "klue-partial/klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv", purpose="score")
    ner_path = out / "klue_ner_train_first5000.jsonl"
    ner_path.write_text("".join(json.dumps({"text": r.text, "guid": r.guid}, ensure_ascii=False) + "\n"
                                for r in train.records), "utf-8")
    return {"korquad-dev-contexts": [korquad_path], "klue-ner-train-5000": [ner_path],
            "korsts": [extra / "korean/korsts/sts-train.tsv", extra / "korean/korsts/sts-dev.tsv"],
            "kornli-xnli-dev": [extra / "korean/kornli/xnli.dev.ko.tsv"]}


def scan(paths: list[Path], out: Path, options: list[str]) -> dict[str, Any]:
    args = ["contamination", "scan", "--tasks", "nli,sts,ner,dp", "--out", str(out), *options]
    for path in paths:
        args += ["--corpus", str(path)]
    result = CliRunner().invoke(app, args)
    if result.exit_code != 0:
        raise SystemExit(f"scan failed: {result.output}\n{result.exception!r}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    found: dict[str, Any] = {}
    for task, row in summary["tasks"].items():
        dirty = [json.loads(line) for line in (out / task / "examples.jsonl").read_text("utf-8").splitlines()]
        dirty = [d for d in dirty if d["dirty_input"]]
        found[task] = {**{k: row[k] for k in ("examples", "dirty_input", "dirty_with_answer", "too_short",
                                              "longest_match", "mean_covered_of_dirty")},
                       "dirty": [{"guid": d["guid"], "longest": d["longest_match"], "covered": d["covered"],
                                  "with_answer": d["dirty_with_answer"], "at": d["longest_match_at"],
                                  "match": d["longest_match_text"]} for d in dirty]}
    return {"mb_per_s": summary["run"]["mb_per_s"], "tasks": found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    extra = Path(os.environ["KLUE_EXTRA_DATA_DIR"])
    report: dict[str, Any] = {}
    for name, paths in corpora(extra, args.out / "corpora").items():
        for method, options in METHODS.items():
            result = scan(paths, args.out / name / method, options)
            report[f"{name} / {method}"] = result
            counts = ", ".join(f"{t} {r['dirty_input']}/{r['examples']} ({r['dirty_with_answer']} with answer)"
                               for t, r in result["tasks"].items())
            print(f"{name} / {method}: {counts}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
