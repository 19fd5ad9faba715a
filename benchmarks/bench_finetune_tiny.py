"""Real `klue train` runs here: a tiny encoder trained from scratch per task, through the command line.

For each job: a tokenizer is trained on the protocol's TRAIN texts only and a BERT config written
(`klue.models.tiny.make_tiny_model_dir`, no weights: `klue train` starts from random weights), then

    klue train --task T --model <dir> --protocol P --output <out> learning_rate=... epochs=...

runs in a fresh process with OMP_NUM_THREADS set, and its results.json is summarised (scores, n_train,
n_eval, train and inference examples/s, wall time). From-scratch tiny models prove the pipeline on real
data; they are not pretrained encoders, so the scores are far below the paper's.

    .venv/bin/python benchmarks/bench_finetune_tiny.py [--jobs ner,re,dp,dp-ud] [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from klue import registry
from klue.io.locate import roots_from
from klue.models.tiny import make_tiny_model_dir
from klue.protocols import resolve

# name -> (task, protocol, overrides). From scratch, a tiny model needs a far higher learning rate than
# the paper's 5e-5 for pretrained encoders; the other settings are the paper recipe's unless given.
JOBS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "ner": ("ner", "local:ner-train5000", {"learning_rate": 1e-3, "epochs": 3, "warmup_ratio": 0.1}),
    "re": ("re", "local:re-sample-80-20", {"learning_rate": 1e-3, "epochs": 5}),
    "dp": ("dp", "local:dev-80-20", {"learning_rate": 1e-3, "epochs": 10}),
    "dp-ud": ("dp", "local:ud-gsd", {"learning_rate": 1e-3, "epochs": 10}),
    "nli": ("nli", "local:dev-80-20", {"learning_rate": 5e-4, "epochs": 3}),
    # MRC: a fixed budget of 300 steps of 16 windows (about one pass over 4,800 of the ~14,000 windows).
    "mrc": ("mrc", "local:korquad-80-20", {"learning_rate": 1e-3, "max_steps": 300, "max_len": 384,
                                           "warmup_ratio": 0.1}),
    # WoS: only the 10 dev-sample dialogues exist here, so train = eval: it shows that the tracker learns
    # its training dialogues (the test suite's check, with this bench's larger model), not generalisation.
    "wos": ("wos", "local:wos-dev-sample10", {"learning_rate": 1e-3, "epochs": 80, "warmup_ratio": 0.1,
                                              "weight_decay": 0.0, "max_len": 512}),
}
MODEL = {"hidden_size": 256, "layers": 4, "heads": 4, "intermediate_size": 1024, "max_len": 512}


def texts_of(records: list[Any]) -> list[str]:
    out = []
    for record in records:
        for name in ("text", "sentence", "context", "question", "premise", "hypothesis", "title", "sentence1", "sentence2"):
            value = getattr(record, name, None)
            if isinstance(value, str):
                out.append(value)
        out.extend(u.text for u in getattr(record, "history", ()))  # WoS turns: the dialogue so far
    return out


def run_job(name: str, roots: Any, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    task_name, protocol, overrides = JOBS[name]
    task = registry.get(task_name)
    data = resolve(task, protocol, roots)
    model_dir = make_tiny_model_dir(tmp / f"model-{name}", arch="bert", texts=texts_of(data.train),
                                    vocab_size=args.vocab_size, dropout=0.1, **MODEL)
    out = tmp / f"run-{name}"
    command = [str(Path(sys.executable).with_name("klue")), "train", "--task", task_name, "--model", str(model_dir),
               "--protocol", protocol, "--output", str(out), "--seed", str(args.seed),
               *(f"{k}={v}" for k, v in overrides.items()), "evals_per_epoch=1", "progress=false"]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return {"job": name, "task": task_name, "protocol": protocol, "n_train": results["n_train"],
            "n_eval": results["n_eval"], "overrides": overrides, "scores": results["scores"],
            "train_examples_per_s": results["train_examples_per_s"],
            "eval_examples_per_s": results["eval_examples_per_s"], "train_time_s": results["train_time_s"],
            "wall_s": wall, "best_step": results["hyperparameters"]["best_step"],
            "total_steps": results["hyperparameters"]["total_steps"],
            "command": " ".join(command[1:]).replace(str(tmp), "<tmp>")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", default="ner,re,dp,dp-ud")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--vocab-size", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data-dir")
    parser.add_argument("--extra-data-dir")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    roots = roots_from(args.data_dir, args.extra_data_dir)
    rows = []
    with tempfile.TemporaryDirectory(prefix="klue-bench-finetune-") as tmp:
        for name in args.jobs.split(","):
            row = run_job(name, roots, args, Path(tmp))
            rows.append(row)
            scores = ", ".join(f"{k} {v:.2f}" for k, v in row["scores"].items())
            print(f"{name:6s} {row['protocol']:22s} train {row['n_train']:>5,} eval {row['n_eval']:>5,} "
                  f"train {row['train_examples_per_s']:6.1f} ex/s eval {row['eval_examples_per_s']:7.1f} ex/s "
                  f"wall {row['wall_s']:6.1f}s | {scores}", flush=True)
            if args.json:  # after every job, so a long run leaves what it finished
                args.json.write_text(json.dumps(rows, indent=2, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
