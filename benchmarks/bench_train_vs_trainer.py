"""Training and inference speed of `klue train` against Hugging Face `Trainer`, same model, data and threads.

One process, one thread count (`torch.set_num_threads`), the same tiny encoder built from one config with
the same seed, the same NLI examples (the train part of `local:dev-80-20`), the same batch size, optimizer
(AdamW, lr 5e-5, linear schedule) and number of epochs, no evaluation during training, no checkpoints.

Variants (`--variants`, run in turn, alternating over `--repeat` rounds; the best of each is kept because
the machine may be shared):
    klue                      `klue train` as it runs by default (length-grouped batches, fused AdamW)
    klue_before               the previous defaults: uniformly shuffled order, multi-tensor AdamW
    klue_random_order         default but `group_by_length=false` (the lever: length grouping)
    klue_foreach              default but `adamw_impl=foreach` (the lever: fused AdamW)
    klue_bf16                 default plus `mixed_precision=bf16` (not the same arithmetic as the others)
    trainer_dynamic           Trainer + `DataCollatorWithPadding` (dynamic padding; the goal's reference)
    trainer_dynamic_grouped   the same with `train_sampling_strategy="group_by_length"`
    trainer_max_len           Trainer with every input padded to max_len (as the official baseline featurises)

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_train_vs_trainer.py [--threads 1] [--repeat 2] \\
        [--variants klue,klue_before,trainer_dynamic] [--json out.json]

Training speed is measured the same way for every variant: a clock read at the end of each optimizer step
(klue: `run(..., on_step=...)`; Trainer: a callback's `on_step_end`), examples of steps 2 .. N-1 over the
time from the end of step 1 to the end of step N-1 (the first step holds one-off set-up, the last one is
partial), in wall-clock seconds and in CPU seconds of this process (`time.process_time`; on a shared
machine the CPU figure is the steadier one: waiting for a core does not count). Inference: one pass over
the eval part (597 pairs), klue's `Engine.outputs` against `trainer.predict`, wall and CPU.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from klue import registry
from klue.io.locate import roots_from
from klue.models.tiny import make_tiny_model_dir
from klue.protocols import resolve
from klue.scoring import RunRequest

KLUE_VARIANTS: dict[str, dict[str, Any]] = {
    "klue": {},
    "klue_before": {"group_by_length": False, "adamw_impl": "foreach"},
    "klue_random_order": {"group_by_length": False},
    "klue_foreach": {"adamw_impl": "foreach"},
    "klue_bf16": {"mixed_precision": "bf16"},
}
TRAINER_VARIANTS: dict[str, dict[str, Any]] = {
    "trainer_dynamic": {"pad_to_max_len": False, "grouped": False},
    "trainer_dynamic_grouped": {"pad_to_max_len": False, "grouped": True},
    "trainer_max_len": {"pad_to_max_len": True, "grouped": False},
}
DEFAULT_VARIANTS = "klue,klue_before,klue_random_order,klue_foreach,trainer_dynamic,trainer_dynamic_grouped"
METRICS = ("train_examples_per_s", "train_examples_per_cpu_s", "eval_examples_per_s", "eval_examples_per_cpu_s")


@dataclass
class StepClock:
    """(wall, CPU) seconds at the end of every optimizer step."""

    marks: list[tuple[float, float]] = field(default_factory=list)

    def tick(self, *_: Any) -> None:
        self.marks.append((time.perf_counter(), time.process_time()))

    def examples_per_s(self, batch_size: int) -> tuple[float, float]:
        """Examples/s over steps 2 .. N-1 (wall, CPU): full batches only, no set-up, no final evaluation."""
        if len(self.marks) < 3:
            raise ValueError("the step window needs at least 3 optimizer steps")
        (wall0, cpu0), (wall1, cpu1) = self.marks[0], self.marks[-2]
        examples = batch_size * (len(self.marks) - 2)
        return examples / (wall1 - wall0), examples / (cpu1 - cpu0)


def timed(work: Callable[[], Any]) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = work()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def build_model_dir(texts: list[str], out: Path, args: argparse.Namespace) -> Path:
    return make_tiny_model_dir(out, arch="bert", texts=texts, vocab_size=args.vocab_size, hidden_size=args.hidden,
                               layers=args.layers, heads=args.heads, intermediate_size=args.hidden * 4,
                               max_len=args.max_len, dropout=0.1)


def run_klue(task: Any, model_dir: Path, data: Any, args: argparse.Namespace, out: Path,
             extra: dict[str, Any]) -> dict[str, float]:
    from klue.models.features import FeaturizeContext
    from klue.models.loading import load_finetuned, uses_token_type_ids
    from klue.training.engine import BEST_DIR, Engine, make_accelerator
    from klue.training.recipes import Hyperparameters
    from klue.training.run import run

    overrides = {"epochs": args.epochs, "batch_size": args.batch_size, "eval_batch_size": args.eval_batch_size,
                 "learning_rate": 5e-5, "warmup_ratio": 0.0, "max_len": args.max_len, "evals_per_epoch": 0,
                 "save_checkpoints": False, "progress": False, "logging_steps": 50, "cpu": True, **extra}
    clock = StepClock()
    results = run(RunRequest(task, str(model_dir), data, args.seed, out), overrides, on_step=clock.tick)
    train_wall, train_cpu = clock.examples_per_s(args.batch_size)

    # Inference timed apart from featurisation, as trainer.predict gets an already tokenised dataset.
    finetuned = load_finetuned(out / BEST_DIR)
    adapter = task.make_adapter()
    adapter.prepare(finetuned.tokenizer, None)
    model = adapter.build_model(finetuned.encoder, finetuned.head)
    finetuned.load_weights_into(model)
    hp = Hyperparameters(max_len=args.max_len, eval_batch_size=args.eval_batch_size, cpu=True,
                         mixed_precision=str(extra.get("mixed_precision", "no")), progress=False)
    accelerator = make_accelerator(hp)
    ctx = FeaturizeContext(finetuned.tokenizer, args.max_len, uses_token_type_ids(finetuned.encoder.config),
                           hp.overlap)
    features = adapter.featurize(data.eval, ctx)
    engine = Engine(accelerator, accelerator.prepare(model), adapter, ctx, hp)
    _, eval_wall, eval_cpu = timed(lambda: engine.outputs(features))
    return {"train_examples_per_s": train_wall, "train_examples_per_cpu_s": train_cpu,
            "eval_examples_per_s": len(features) / eval_wall, "eval_examples_per_cpu_s": len(features) / eval_cpu,
            "reported_train_examples_per_s": float(results.train_examples_per_s or 0.0),
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
                pad_to_max_len: bool, grouped: bool) -> dict[str, float]:
    import numpy as np
    from transformers import (
        AutoConfig,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainerCallback,
        TrainingArguments,
        default_data_collator,
        set_seed,
    )

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    label_index = {label: i for i, label in enumerate(task.labels)}

    def dataset(records: list[Any]) -> PairDataset:
        encoded = tokenizer([r.premise for r in records], [r.hypothesis for r in records], truncation=True,
                            max_length=args.max_len, padding="max_length" if pad_to_max_len else False)
        # Trainer's length-grouped sampler reads each item's input_ids when the dataset has no length column.
        return PairDataset(dict(encoded), [label_index[r.gold_label] for r in records])

    clock = StepClock()

    class Clock(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, *_: Any, **__: Any) -> None:
            clock.tick()

    train, evaluation = dataset(data.train), dataset(data.eval)
    set_seed(args.seed)
    config = AutoConfig.from_pretrained(str(model_dir), num_labels=len(task.labels))
    model = AutoModelForSequenceClassification.from_config(config)
    training_args = TrainingArguments(
        output_dir=str(out), per_device_train_batch_size=args.batch_size,
        per_device_eval_batch_size=args.eval_batch_size, num_train_epochs=args.epochs, learning_rate=5e-5,
        warmup_steps=0, weight_decay=0.0, max_grad_norm=1.0, lr_scheduler_type="linear", seed=args.seed,
        eval_strategy="no", save_strategy="no", logging_steps=50, report_to=[], disable_tqdm=True,
        use_cpu=True, dataloader_num_workers=0,
        train_sampling_strategy="group_by_length" if grouped else "random")
    collator = default_data_collator if pad_to_max_len else DataCollatorWithPadding(tokenizer)
    trainer = Trainer(model=model, args=training_args, train_dataset=train, data_collator=collator,
                      callbacks=[Clock()])
    _, train_wall_s, _ = timed(trainer.train)
    train_wall, train_cpu = clock.examples_per_s(args.batch_size)
    predicted, eval_wall, eval_cpu = timed(lambda: trainer.predict(evaluation))
    accuracy = float(np.mean(np.argmax(predicted.predictions, axis=-1) == np.array(evaluation.labels))) * 100
    return {"train_examples_per_s": train_wall, "train_examples_per_cpu_s": train_cpu,
            "eval_examples_per_s": len(evaluation) / eval_wall, "eval_examples_per_cpu_s": len(evaluation) / eval_cpu,
            "reported_train_examples_per_s": len(train) * args.epochs / train_wall_s, "accuracy": accuracy}


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
    parser.add_argument("--variants", default=DEFAULT_VARIANTS,
                        help=f"comma list of: {', '.join([*KLUE_VARIANTS, *TRAINER_VARIANTS])}")
    parser.add_argument("--data-dir")
    parser.add_argument("--extra-data-dir")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [n for n in names if n not in KLUE_VARIANTS and n not in TRAINER_VARIANTS]
    if unknown:
        parser.error(f"unknown variants: {', '.join(unknown)}")

    task = registry.get("nli")
    data = resolve(task, "local:dev-80-20", roots_from(args.data_dir, args.extra_data_dir))
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="klue-bench-trainer-") as tmp:
        model_dir = build_model_dir([t for r in data.train for t in (r.premise, r.hypothesis)], Path(tmp) / "m", args)
        for k in range(args.repeat):
            for name, done in runs.items():
                out = Path(tmp) / f"{name}-{k}"
                # accelerate's state is process-wide; each variant (bf16 or not, klue or Trainer) starts afresh.
                from accelerate.state import AcceleratorState, GradientState

                AcceleratorState._reset_state(reset_partial_state=True)
                GradientState._reset_state()
                if name in KLUE_VARIANTS:
                    row = run_klue(task, model_dir, data, args, out, KLUE_VARIANTS[name])
                else:
                    row = run_trainer(task, model_dir, data, args, out, **TRAINER_VARIANTS[name])
                done.append(row)
                print(f"{name:24s} run {k + 1}: train {row['train_examples_per_s']:6.1f} ex/s "
                      f"({row['train_examples_per_cpu_s']:6.1f} per CPU s), eval {row['eval_examples_per_s']:6.1f} "
                      f"ex/s ({row['eval_examples_per_cpu_s']:6.1f} per CPU s), accuracy {row['accuracy']:.2f}",
                      flush=True)
    best = {name: {key: max(r[key] for r in rows) for key in METRICS} for name, rows in runs.items()}
    references = [n for n in names if n != "klue"]
    ratios = {f"klue / {name}": {key: best["klue"][key] / best[name][key] for key in METRICS}
              for name in references if "klue" in best}
    summary = {
        "setup": {"task": "nli", "protocol": data.protocol, "n_train": len(data.train), "n_eval": len(data.eval),
                  "model": f"bert {args.layers}x{args.hidden} (from config, random init)", **vars(args),
                  "json": str(args.json) if args.json else None, "torch": torch.__version__},
        "runs": runs, "best": best, "ratios": ratios,
    }
    for name, ratio in ratios.items():
        print(f"{name}: train {ratio['train_examples_per_s']:.2f}x wall, {ratio['train_examples_per_cpu_s']:.2f}x CPU; "
              f"inference {ratio['eval_examples_per_s']:.2f}x wall, {ratio['eval_examples_per_cpu_s']:.2f}x CPU")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
