"""Validation of `klue contamination mink` against a split we made (issue 41, validation 2): continue training
SmolLM2-135M-Instruct on half of a set of KLUE NLI dev examples, then ask `klue contamination mink --members`
how well each score tells the trained-on half (members) from the other half.

- Examples: `--n` NLI dev pairs, one per premise (a premise appears in three pairs, and a pair whose premise
  was trained on is not a fair non-member), drawn with `--seed`; half of them, drawn again with the seed, are
  the members. The text is exactly what `mink` scores: the task's input fields (premise, hypothesis) joined
  by a newline (`klue.contamination.mink.samples_of`).
- Model: SmolLM2-135M-Instruct's GGUF (`../shared/tools/real_models.py`), read by transformers (dequantised to
  float32) and saved as a plain directory (a GGUF-loaded model refuses `save_pretrained`:
  `bench_llm_vs_lm_eval.gguf_to_dir`). Training: causal-LM loss on the members' texts, `--epochs` epochs of
  AdamW at `--lr`, batches of `--batch-size`, only the last `--train-layers` decoder layers and the final norm
  trainable (0: every weight), on the CPU with `--threads` threads. The trained model is saved beside it.
- Scores: `klue contamination mink --model hf:DIR --tasks nli --eval SUBSET.json --members MEMBERS.txt`, on the
  trained model and, as a control, on the untrained one (its AUROC should be near 0.5: the split is random).

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/contamination_mink_validation.py [--n 200] [--epochs 3]
        [--lr 1e-4] [--train-layers 10] [--work DIR] [--json out.json] [--gguf FILE]

Needs KLUE_DATA_DIR (the NLI dev file) and the SmolLM2 GGUF; prints a Markdown table of AUROC (95% bootstrap
interval) and TPR at 5% FPR per score, for both models, and the training loss per epoch.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))


def pick_examples(n: int, seed: int) -> tuple[list[dict[str, Any]], set[str]]:
    """`n` NLI dev pairs, one per premise, and the guids of the members (half of them), both drawn with `seed`."""
    from klue.io.locate import roots_from

    path = roots_from(None, None).klue / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json"
    if not path.is_file():
        raise SystemExit(f"{path} is absent: set KLUE_DATA_DIR to the official layout")
    rows = json.loads(path.read_text(encoding="utf-8"))
    by_premise: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_premise.setdefault(row["premise"], []).append(row)
    rng = random.Random(seed)
    premises = sorted(by_premise)
    rng.shuffle(premises)
    chosen = [rng.choice(by_premise[p]) for p in premises[:n]]
    members = {row["guid"] for row in rng.sample(chosen, n // 2)}
    return chosen, members


def texts_of(subset: Path) -> dict[str, str]:
    """guid -> the text `mink` scores, read from the subset file the way `mink` reads it."""
    from klue import registry
    from klue.contamination.mink import samples_of
    from klue.tasks.reading import read

    task = registry.get("nli")
    records = read(task, subset, None, purpose="train").records
    return {s.guid: s.text for s in samples_of(task, records).samples}


def train(base: Path, out: Path, texts: list[str], epochs: int, lr: float, train_layers: int, batch_size: int,
          seed: int) -> list[float]:
    """Continue training `base` on `texts`; saves to `out`; the mean loss of each epoch."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    layers = model.model.layers
    for param in model.parameters():
        param.requires_grad = train_layers == 0
    if train_layers:
        for layer in layers[len(layers) - train_layers:]:
            for param in layer.parameters():
                param.requires_grad = True
        for param in model.model.norm.parameters():
            param.requires_grad = True
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.0)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    encoded = [tokenizer(t, add_special_tokens=True)["input_ids"] for t in texts]
    rng = random.Random(seed)
    losses = []
    model.train()
    for epoch in range(epochs):
        order = list(range(len(encoded)))
        rng.shuffle(order)
        total, started = 0.0, time.perf_counter()
        for start in range(0, len(order), batch_size):
            batch = [encoded[i] for i in order[start:start + batch_size]]
            width = max(len(b) for b in batch)
            ids = torch.tensor([b + [pad] * (width - len(b)) for b in batch])
            mask = torch.tensor([[1] * len(b) + [0] * (width - len(b)) for b in batch])
            labels = ids.masked_fill(mask == 0, -100)
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total += loss.item() * len(batch)
        losses.append(total / len(encoded))
        print(f"epoch {epoch + 1}: loss {losses[-1]:.4f} ({time.perf_counter() - started:.0f} s)", flush=True)
    model.eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return losses


def mink(model_dir: Path, subset: Path, members: Path, out: Path, resamples: int) -> dict[str, Any]:
    command = [str(REPO / ".venv" / "bin" / "klue"), "contamination", "mink", "--model", f"hf:{model_dir}",
               "--tasks", "nli", "--eval", str(subset), "--members", str(members), "--out", str(out), "--cpu",
               "--resamples", str(resamples)]
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"klue contamination mink failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return dict(json.loads((out / "summary.json").read_text(encoding="utf-8")))


def table(results: dict[str, dict[str, Any]]) -> str:
    names = list(next(iter(results.values()))["tasks"]["nli"]["auroc"])
    lines = ["| score | " + " | ".join(f"{m}: AUROC [95% CI] | {m}: TPR@5%FPR" for m in results) + " |",
             "|---|" + "---:|---:|" * len(results)]
    for name in names:
        cells = []
        for summary in results.values():
            found = summary["tasks"]["nli"]["auroc"][name]
            cells += [f"{found['auroc']:.3f} [{found['low']:.3f}, {found['high']:.3f}]", f"{found['tpr_at_5_fpr']:.3f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="examples (one per premise); half are members")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--train-layers", type=int, default=10, help="last decoder layers trained (0: all)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-control", action="store_true", help="skip scoring the untrained model")
    parser.add_argument("--gguf", type=Path, help="SmolLM2's GGUF (default: what ../shared/tools/real_models.py "
                        "prints)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/klue-mink-validation"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    import torch
    from bench_llm_vs_lm_eval import gguf_to_dir

    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    gguf = args.gguf
    if gguf is None:
        locator = REPO.parent / "shared" / "tools" / "real_models.py"
        if not locator.is_file():
            raise SystemExit(f"{locator} is absent: give the SmolLM2 GGUF with --gguf")
        done = subprocess.run([sys.executable, str(locator)], capture_output=True, text=True, check=True)
        gguf = Path(json.loads(done.stdout)["smollm2_gguf"])
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    chosen, members = pick_examples(args.n, args.seed)
    subset, members_file = work / "nli_subset.json", work / "members.txt"
    subset.write_text(json.dumps(chosen, ensure_ascii=False), encoding="utf-8")
    members_file.write_text("".join(f"{g}\n" for g in sorted(members)), encoding="utf-8")
    texts = texts_of(subset)
    started = time.perf_counter()
    base = work / "base"
    if not (base / "config.json").is_file():
        gguf_to_dir(gguf, base)
    trained = work / f"trained-e{args.epochs}-lr{args.lr:g}-l{args.train_layers}-s{args.seed}"
    losses: list[float] = []
    if not (trained / "config.json").is_file():
        losses = train(base, trained, [texts[g] for g in sorted(members)], args.epochs, args.lr, args.train_layers,
                       args.batch_size, args.seed)
    trained_s = time.perf_counter() - started
    results = {"trained": mink(trained, subset, members_file, work / f"mink-{trained.name}", args.resamples)}
    if not args.no_control:
        results["untrained"] = mink(base, subset, members_file, work / "mink-base", args.resamples)
    total_s = time.perf_counter() - started
    print(table(results))
    print(f"training losses per epoch: {', '.join(f'{x:.4f}' for x in losses) or '(model reused)'}; "
          f"training {trained_s:.0f} s, all {total_s:.0f} s; load average {os.getloadavg()}")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "losses": losses,
                                         "train_s": trained_s, "total_s": total_s, "results": results},
                                        ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
