"""CPU seconds of bare training steps (forward, backward, clipping, AdamW) under one speed lever at a time.

The model and batches of bench_train_vs_trainer.py (tiny 4 x 256 BERT, NLI `local:dev-80-20`, batch 32, one
thread), klue's own head, collate and batch order, without the rest of `klue train`: each configuration runs
`--steps` steps after 3 warm-up steps (compilation happens there), configurations alternate over `--repeat`
rounds, and the best CPU time (`time.process_time`, steady on a shared machine) is kept.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_train_step_levers.py [--steps 30] [--repeat 2] \\
        [--configs base,fused,grouped,compile,compile_grouped,eager_attention,for_loop,bf16]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from klue import registry
from klue.io.locate import roots_from
from klue.models.features import FeaturizeContext
from klue.models.heads import HeadSpec, build_head
from klue.models.loading import load_encoder
from klue.models.tiny import make_tiny_model_dir
from klue.protocols import resolve
from klue.training.sampling import epoch_batches

CONFIGS: dict[str, dict[str, Any]] = {
    "base": {},  # shuffled order, multi-tensor AdamW, SDPA, fp32: the previous klue defaults
    "fused": {"adamw": {"fused": True}},
    "for_loop": {"adamw": {"foreach": False}},
    "grouped": {"grouped": True},
    "eager_attention": {"attention": "eager"},
    "compile": {"compile": True},
    "compile_grouped": {"compile": True, "grouped": True},
    "bf16": {"bf16": True},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--data-dir")
    parser.add_argument("--extra-data-dir")
    args = parser.parse_args()
    torch.set_num_threads(1)
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    if unknown := [n for n in names if n not in CONFIGS]:
        parser.error(f"unknown configs: {', '.join(unknown)} (known: {', '.join(CONFIGS)})")

    task = registry.get("nli")
    data = resolve(task, "local:dev-80-20", roots_from(args.data_dir, args.extra_data_dir))
    tmp = Path(tempfile.mkdtemp(prefix="klue-bench-levers-"))
    model_dir = make_tiny_model_dir(tmp / "m", arch="bert", texts=[t for r in data.train for t in (r.premise, r.hypothesis)],
                                    vocab_size=8000, hidden_size=256, layers=4, heads=4, intermediate_size=1024,
                                    max_len=128, dropout=0.1)
    adapter = task.make_adapter()
    ctx = FeaturizeContext(load_encoder(model_dir).tokenizer, 128, True, 32)
    features = adapter.featurize(data.train, ctx)
    lengths = [len(f) for f in features]

    def run(config: dict[str, Any]) -> float:
        torch.manual_seed(0)
        encoder = load_encoder(model_dir).encoder
        if "attention" in config:
            encoder.set_attn_implementation(config["attention"])
        model = build_head(encoder, HeadSpec("sequence_classification", tuple(task.labels), 0.1))
        model.train()
        if config.get("compile"):
            model.compile(dynamic=True)
        optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, **config.get("adamw", {"foreach": True}))
        batches = epoch_batches(len(features), 32, 42, 0, lengths if config.get("grouped") else None)
        spent = 0.0
        for k, indices in enumerate(batches[: args.steps + 3]):
            batch = adapter.collate([features[i] for i in indices], ctx, True, None)
            start = time.process_time()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(config.get("bf16"))):
                output = model(**batch)
            (output.loss_sum / len(indices)).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if k >= 3:
                spent += time.process_time() - start
        return spent

    best: dict[str, float] = {}
    for round_ in range(args.repeat):
        for name in names:
            spent = run(CONFIGS[name])
            best[name] = min(best.get(name, spent), spent)
            print(f"round {round_ + 1} {name:16s} {spent:6.2f} CPU s for {args.steps} steps", flush=True)
    reference = best.get("base")
    for name, spent in best.items():
        gain = f", {reference / spent:.2f}x base" if reference else ""
        print(f"{name:16s} best {spent:6.2f} CPU s{gain}")


if __name__ == "__main__":
    main()
