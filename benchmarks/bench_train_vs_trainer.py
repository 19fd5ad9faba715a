"""Training and inference speed of `klue train` against Hugging Face `Trainer`, same model, data and threads.

One process, one thread count (`torch.set_num_threads`), the same tiny encoder built from one config with
the same seed, the same NLI examples (the train part of `local:dev-80-20`), the same batch size, optimizer
(AdamW, lr 5e-5, linear schedule) and number of epochs, no evaluation during training, no checkpoints.
Trainer is run twice: as the official KLUE baseline feeds it (every example padded to max_len, which is
what its featurisation does) and with `DataCollatorWithPadding` (dynamic padding, the better-informed use).
Each side is run `--repeat` times, alternating, and the best examples/s is kept (the machine is shared).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_train_vs_trainer.py [--threads 1] [--json out.json]

klue's training speed is `results.train_examples_per_s` (optimizer steps only, as the progress bar shows);
Trainer's is examples / the wall time of `trainer.train()`. Inference: examples/s of one pass over the
eval part (597 pairs), klue's `Engine.outputs` against `trainer.predict`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from klue import registry
from klue.io.locate import roots_from
from klue.models.tiny import make_tiny_model_dir
from klue.protocols import resolve


def build_model_dir(texts: list[str], out: Path, args: argparse.Namespace) -> Path:
    return make_tiny_model_dir(out, arch="bert", texts=texts, vocab_size=args.vocab_size, hidden_size=args.hidden,
                               layers=args.layers, heads=args.heads, intermediate_size=args.hidden * 4,
                               max_len=args.max_len, dropout=0.1)


def run_klue(task: Any, model_dir: Path, data: Any, args: argparse.Namespace, out: Path) -> dict[str, float]:
    from klue.training.run import run

    overrides = {"epochs": args.epochs, "batch_size": args.batch_size, "eval_batch_size": args.eval_batch_size,
                 "learning_rate": 5e-5, "warmup_ratio": 0.0, "max_len": args.max_len, "evals_per_epoch": 0,
                 "save_checkpoints": False, "progress": False, "logging_steps": 50}
    results = run(task, str(model_dir), data, args.seed, out, overrides)
    return {"train_examples_per_s": float(results.train_examples_per_s or 0.0),
            "eval_examples_per_s": float(results.eval_examples_per_s or 0.0),
            "accuracy": results.scores["accuracy"]}


class PairDataset(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, encoded: dict[str, list[list[int]]], labels: list[int]) -> None:
        self.encoded, self.labels = encoded, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict[str, Any]:
        item: dict[str, Any] = {k: v[i] for k, v in self.encoded.items()}
        item["labels"] = self.labels[i]
        return item


def run_trainer(task: Any, model_dir: Path, data: Any, args: argparse.Namespace, out: Path,
                pad_to_max_len: bool) -> dict[str, float]:
    import numpy as np
    from transformers import (
        AutoConfig,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
        default_data_collator,
        set_seed,
    )

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    label_index = {label: i for i, label in enumerate(task.labels)}

    def dataset(records: list[Any]) -> PairDataset:
        encoded = tokenizer([r.premise for r in records], [r.hypothesis for r in records], truncation=True,
                            max_length=args.max_len, padding="max_length" if pad_to_max_len else False)
        return PairDataset(dict(encoded), [label_index[r.gold_label] for r in records])

    train, evaluation = dataset(data.train), dataset(data.eval)
    set_seed(args.seed)
    config = AutoConfig.from_pretrained(str(model_dir), num_labels=len(task.labels))
    model = AutoModelForSequenceClassification.from_config(config)
    training_args = TrainingArguments(
        output_dir=str(out), per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.eval_batch_size, num_train_epochs=args.epochs, learning_rate=5e-5,
        warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0, lr_scheduler_type="linear", seed=args.seed,
        eval_strategy="no", save_strategy="no", logging_steps=50, report_to=[], disable_tqdm=True,
        use_cpu=True, dataloader_num_workers=0)
    collator = default_data_collator if pad_to_max_len else DataCollatorWithPadding(tokenizer)
    trainer = Trainer(model=model, args=training_args, train_dataset=train, data_collator=collator)
    start = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - start
    start = time.perf_counter()
    predicted = trainer.predict(evaluation)
    eval_s = time.perf_counter() - start
    accuracy = float(np.mean(np.argmax(predicted.predictions, axis=-1) == np.array(evaluation.labels))) * 100
    return {"train_examples_per_s": len(train) * args.epochs / train_s,
            "eval_examples_per_s": len(evaluation) / eval_s, "accuracy": accuracy}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--eval-batch-size", type=int, default=64)
    parser.add_argument("--max-len", type=int, default=128)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--data-dir")
    parser.add_argument("--extra-data-dir")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    task = registry.get("nli")
    data = resolve(task, "local:dev-80-20", roots_from(args.data_dir, args.extra_data_dir))
    runs: dict[str, list[dict[str, float]]] = {"klue": [], "trainer_max_len": [], "trainer_dynamic": []}
    with tempfile.TemporaryDirectory(prefix="klue-bench-trainer-") as tmp:
        model_dir = build_model_dir([t for r in data.train for t in (r.premise, r.hypothesis)], Path(tmp) / "m", args)
        for k in range(args.repeat):
            for name, done in runs.items():
                out = Path(tmp) / f"{name}-{k}"
                if name == "klue":
                    row = run_klue(task, model_dir, data, args, out)
                else:
                    row = run_trainer(task, model_dir, data, args, out, pad_to_max_len=name == "trainer_max_len")
                done.append(row)
                print(f"{name:16s} run {k + 1}: train {row['train_examples_per_s']:7.1f} ex/s, "
                      f"eval {row['eval_examples_per_s']:7.1f} ex/s, accuracy {row['accuracy']:.2f}", flush=True)
    best = {name: {key: max(r[key] for r in rows) for key in ("train_examples_per_s", "eval_examples_per_s")}
            for name, rows in runs.items()}
    summary = {
        "setup": {"task": "nli", "protocol": data.protocol, "n_train": len(data.train), "n_eval": len(data.eval),
                  "model": f"bert {args.layers}x{args.hidden} (from config, random init)", **vars(args),
                  "json": str(args.json) if args.json else None, "torch": torch.__version__},
        "runs": runs, "best": best,
        "ratios": {f"klue / {name}": {key: best["klue"][key] / best[name][key] for key in best["klue"]}
                   for name in ("trainer_max_len", "trainer_dynamic")},
    }
    for name, ratio in summary["ratios"].items():
        print(f"{name}: train {ratio['train_examples_per_s']:.2f}x, inference {ratio['eval_examples_per_s']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
