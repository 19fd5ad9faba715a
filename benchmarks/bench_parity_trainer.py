"""Fine-tuning parity of `klue train` with Hugging Face `Trainer` on real pretrained weights (issue 27, item 1).

Both sides fine-tune the same pretrained encoder (by default multilingual-e5-small, a BertModel directory
from ../shared/tools/real_models.py) on the same training features, in the same order, from the same
initial head, with the same hyper-parameters, and their predictions are scored by the same judge:
- features: klue's own (`adapter.featurize`), handed to Trainer as token ids, so both see the same tokens;
- order: klue's sequential-seeded order (`sampling.epoch_batches`, `group_by_length=false`), fed to Trainer
  through a sampler that yields the same indices (Trainer's own `train_sampling_strategy` is not used);
- head: Trainer runs the encoder family's own head (`BertForSequenceClassification`: pooler dense + tanh
  on [CLS], dropout, linear; `BertForTokenClassification`: dropout, linear), whose fresh layers are
  overwritten with the weights klue's head starts from for that seed (the pretrained directory has no pooler);
- hyper-parameters: the paper recipe for the task (klue.training.recipes, base block), AdamW fused on both,
  linear warm-up and decay, clipping 1.0, fp32 on CPU, `epochs` as given, no evaluation during training;
- scores: Trainer's `predict()` outputs (sequential order, aligned by feature index) go through klue's
  adapter decoder into a predictions file that `klue.scoring.score_predictions` scores, as klue's own are.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_parity_trainer.py --task ynat --check exact \\
        --n-train 960 --n-eval 500 --seeds 1 --json ynat-exact.json
    ... --task ynat --check seeds --n-train 3000 --n-eval 500 --seeds 1 --json s1.json   (one process per seed)
    ... --summarise s1.json s2.json s3.json

`--check exact`: every dropout off (a copy of the model directory whose config sets the encoder's dropout
to 0; klue's head reads the same), so the two runs compute the same function of the same data: per-step
losses must agree to float rounding and the predictions must be the same. `--check seeds`: dropout as
the model config says; mean and standard deviation over the seeds of the task's main metric per side.

Speed: CPU seconds (`time.process_time`) and wall seconds per optimizer step over steps 2 .. N-1 (the first
holds one-off set-up, the last is partial), from klue's `on_step` hook and a Trainer callback's `on_step_end`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from klue import registry
from klue.io.locate import roots_from
from klue.protocols import ProtocolData, resolve
from klue.scoring import RunRequest
from klue.tasks.base import Task

ROOT = Path(__file__).resolve().parents[1]
REAL_MODELS = ROOT.parent / "shared" / "tools" / "real_models.py"
DROPOUT_KEYS = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout")


@dataclass
class StepClock:
    """(wall, CPU) seconds at the end of every optimizer step."""

    marks: list[tuple[float, float]] = field(default_factory=list)

    def tick(self, *_: Any) -> None:
        self.marks.append((time.perf_counter(), time.process_time()))

    def seconds_per_step(self) -> tuple[float, float]:
        """(wall, CPU) seconds per step over steps 2 .. N-1."""
        if len(self.marks) < 3:
            raise ValueError("the step window needs at least 3 optimizer steps")
        (wall0, cpu0), (wall1, cpu1) = self.marks[0], self.marks[-2]
        steps = len(self.marks) - 2
        return (wall1 - wall0) / steps, (cpu1 - cpu0) / steps


@dataclass
class SideResult:
    side: str
    seed: int
    step_losses: list[float]
    scores: dict[str, float]
    labels: list[str] | None  # one predicted label (or tag string) per eval record: compared between sides
    wall_s_per_step: float
    cpu_s_per_step: float


def real_model_dir() -> Path:
    out = subprocess.run([sys.executable, str(REAL_MODELS)], check=True, capture_output=True, text=True).stdout
    return Path(json.loads(out.strip().splitlines()[-1])["me5_small"])


def without_dropout(model_dir: Path, out: Path) -> Path:
    """A copy of `model_dir` (weights linked, not copied) whose config turns every dropout off."""
    out.mkdir(parents=True)
    for item in model_dir.iterdir():
        if item.name != "config.json":
            (out / item.name).symlink_to(item.resolve())
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    config.update({key: 0.0 for key in DROPOUT_KEYS})
    (out / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return out


def reset_accelerate() -> None:
    # accelerate's state is process-wide; each run (klue or Trainer) starts afresh.
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()


def klue_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {"epochs": args.epochs, "group_by_length": False, "adamw_impl": "fused", "mixed_precision": "no",
            "evals_per_epoch": 0, "save_checkpoints": False, "progress": False, "logging_steps": 1, "cpu": True,
            "resume": False, **dict(kv.split("=", 1) for kv in args.set)}


def resolved_hp(task: Task[Any, Any], model_dir: Path, args: argparse.Namespace) -> Any:
    from transformers import AutoConfig

    from klue.training import recipes

    config = AutoConfig.from_pretrained(str(model_dir))
    return recipes.resolve(recipes.PAPER, task.name, config, klue_overrides(args)).hyperparameters


def labels_of(task: Task[Any, Any], predictions_path: Path) -> list[str]:
    rows = [json.loads(line) for line in predictions_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.dumps(row.get("label", row.get("tags")), ensure_ascii=False) for row in rows]


def run_klue(task: Task[Any, Any], model_dir: Path, data: ProtocolData[Any], seed: int, out: Path,
             args: argparse.Namespace) -> SideResult:
    from klue.results import PREDICTIONS_FILE
    from klue.training.run import run

    clock = StepClock()
    results = run(RunRequest(task, str(model_dir), data, seed, out), klue_overrides(args), on_step=clock.tick)
    wall, cpu = clock.seconds_per_step()
    losses = [float(p.loss) for p in results.learning_curve if p.loss is not None]
    return SideResult("klue", seed, losses, {k: float(v) for k, v in results.scores.items()},
                      labels_of(task, out / PREDICTIONS_FILE), wall, cpu)


def klue_initial_head(task: Task[Any, Any], model_dir: Path, data: ProtocolData[Any], seed: int,
                      dropout: float | None) -> dict[str, torch.Tensor]:
    """The head weights `klue train` starts from for `seed`, built the way klue.training.run builds them."""
    from accelerate.utils import set_seed

    from klue.models.loading import fit_embeddings, load_encoder

    set_seed(seed)
    loaded = load_encoder(str(model_dir))
    adapter = task.make_adapter()
    adapter.attach_data(data.roots)
    adapter.prepare(loaded.tokenizer, data.train)
    if fit_embeddings(loaded.encoder, loaded.tokenizer):
        raise ValueError("the adapter added tokens: this benchmark covers tasks without added tokens")
    spec = adapter.head_spec(dropout, {})
    set_seed(seed)
    model = adapter.build_model(loaded.encoder, spec)
    return {k: v.detach().clone() for k, v in model.state_dict().items() if not k.startswith("encoder.")}


class FeatureDataset(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """klue's features as the token-id dicts a Trainer collator pads."""

    def __init__(self, features: Sequence[Any], with_labels: bool) -> None:
        self.features, self.with_labels = features, with_labels

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, i: int) -> dict[str, Any]:
        f = self.features[i]
        item: dict[str, Any] = {"input_ids": list(f.input_ids), "attention_mask": [1] * len(f.input_ids)}
        if f.token_type_ids is not None:
            item["token_type_ids"] = list(f.token_type_ids)
        if self.with_labels:
            item["labels"] = list(f.label) if isinstance(f.label, tuple) else f.label
        return item


class FixedOrder(torch.utils.data.Sampler[int]):
    """klue's epoch order (sampling.epoch_batches without length grouping), one epoch per iteration."""

    def __init__(self, n: int, batch_size: int, seed: int) -> None:
        self.n, self.batch_size, self.seed, self.epoch = n, batch_size, seed, 0

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[int]:
        from klue.training.sampling import epoch_batches

        batches = epoch_batches(self.n, self.batch_size, self.seed, self.epoch)
        self.epoch += 1
        return iter([int(i) for batch in batches for i in batch])


def run_trainer(task: Task[Any, Any], model_dir: Path, data: ProtocolData[Any], seed: int, out: Path,
                args: argparse.Namespace) -> SideResult:
    from transformers import (
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
        DataCollatorForTokenClassification,
        DataCollatorWithPadding,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    from klue.models.features import FeaturizeContext
    from klue.models.loading import load_tokenizer, uses_token_type_ids
    from klue.predictions import write_predictions
    from klue.scoring import score_predictions

    hp = resolved_hp(task, model_dir, args)
    head = klue_initial_head(task, model_dir, data, seed, hp.dropout)
    tokenizer = load_tokenizer(model_dir)
    adapter = task.make_adapter()
    adapter.attach_data(data.roots)
    adapter.prepare(tokenizer, data.train)
    spec = adapter.head_spec(hp.dropout, {})
    config_probe = AutoModelForSequenceClassification  # chosen below by the head kind
    token_head = spec.kind == "token_classification"
    if token_head:
        config_probe = AutoModelForTokenClassification
    model = config_probe.from_pretrained(str(model_dir), num_labels=spec.num_outputs, use_safetensors=True)
    with torch.no_grad():
        if token_head:
            model.classifier.weight.copy_(head["out.weight"])
            model.classifier.bias.copy_(head["out.bias"])
        else:
            model.bert.pooler.dense.weight.copy_(head["dense.weight"])
            model.bert.pooler.dense.bias.copy_(head["dense.bias"])
            model.classifier.weight.copy_(head["out.weight"])
            model.classifier.bias.copy_(head["out.bias"])

    ctx = FeaturizeContext(tokenizer, hp.max_len, uses_token_type_ids(model.config), hp.overlap)
    train_features = adapter.featurize(data.train, ctx)
    eval_features = adapter.featurize(data.eval, ctx)
    steps = math.ceil(math.ceil(len(train_features) / hp.batch_size) * hp.epochs)
    warmup = hp.warmup_steps if hp.warmup_steps is not None else math.ceil(steps * hp.warmup_ratio)

    clock = StepClock()
    step_losses: list[torch.Tensor] = []

    class Clock(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, *_: Any, **__: Any) -> None:
            clock.tick()

    class ParityTrainer(Trainer):  # type: ignore[misc]
        def _get_train_sampler(self, train_dataset: Any = None) -> Any:
            return FixedOrder(len(train_features), hp.batch_size, seed)

        def compute_loss(self, model: Any, inputs: Any, return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            result = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            if model.training:
                step_losses.append((result[0] if return_outputs else result).detach())
            return result

    training_args = TrainingArguments(
        output_dir=str(out), per_device_train_batch_size=hp.batch_size, per_device_eval_batch_size=hp.eval_batch_size,
        num_train_epochs=hp.epochs, max_steps=steps, learning_rate=hp.learning_rate, warmup_steps=warmup,
        weight_decay=hp.weight_decay, adam_beta1=hp.adam_beta1, adam_beta2=hp.adam_beta2,
        adam_epsilon=hp.adam_epsilon, max_grad_norm=hp.max_grad_norm or 0.0, lr_scheduler_type="linear",
        optim="adamw_torch_fused", seed=seed, eval_strategy="no", save_strategy="no", logging_strategy="no",
        report_to=[], disable_tqdm=True, use_cpu=True, dataloader_num_workers=0,
        gradient_accumulation_steps=hp.gradient_accumulation_steps)
    collator = DataCollatorForTokenClassification(tokenizer) if token_head else DataCollatorWithPadding(tokenizer)
    trainer = ParityTrainer(model=model, args=training_args, train_dataset=FeatureDataset(train_features, True),
                            data_collator=collator, callbacks=[Clock()])
    trainer.train()
    wall, cpu = clock.seconds_per_step()

    predicted = trainer.predict(FeatureDataset(eval_features, False)).predictions
    if token_head:
        outputs: list[Any] = [np.argmax(predicted[i, : len(f)], axis=-1) for i, f in enumerate(eval_features)]
    else:
        outputs = [predicted[i] for i in range(len(eval_features))]
    predictions = adapter.decode(data.eval, eval_features, outputs)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "predictions.jsonl"
    write_predictions(path, task, data.eval, predictions, "Trainer")
    scores = score_predictions(task, data.eval, path).report.scores
    return SideResult("trainer", seed, [float(x) for x in step_losses], {k: float(v) for k, v in scores.items()},
                      labels_of(task, path), wall, cpu)


def sliced(data: ProtocolData[Any], n_train: int | None, n_eval: int | None) -> ProtocolData[Any]:
    return replace(data, train=data.train[:n_train] if n_train else data.train,
                   eval=data.eval[:n_eval] if n_eval else data.eval, selection=None)


def summary_of(task: Task[Any, Any], rows: list[SideResult], check: str) -> dict[str, Any]:
    metric = task.key_metric
    out: dict[str, Any] = {"metric": metric}
    for side in ("klue", "trainer"):
        mine = [r for r in rows if r.side == side]
        values = [r.scores[metric] for r in mine]
        out[side] = {"scores": values, "mean": statistics.mean(values),
                     "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
                     "cpu_s_per_step": statistics.mean(r.cpu_s_per_step for r in mine),
                     "wall_s_per_step": statistics.mean(r.wall_s_per_step for r in mine)}
    out["cpu_ratio_klue_over_trainer"] = out["klue"]["cpu_s_per_step"] / out["trainer"]["cpu_s_per_step"]
    pairs = []
    for k in (r for r in rows if r.side == "klue"):
        t = next(r for r in rows if r.side == "trainer" and r.seed == k.seed)
        n = min(len(k.step_losses), len(t.step_losses))
        diffs = [abs(a - b) for a, b in zip(k.step_losses[:n], t.step_losses[:n])]
        pairs.append({"seed": k.seed, "steps": [len(k.step_losses), len(t.step_losses)],
                      "max_abs_loss_diff": max(diffs), "first_loss": [k.step_losses[0], t.step_losses[0]],
                      "last_loss": [k.step_losses[-1], t.step_losses[-1]],
                      "differing_predictions": (sum(a != b for a, b in zip(k.labels, t.labels))
                                                if k.labels and t.labels else None),
                      "cpu_ratio": k.cpu_s_per_step / t.cpu_s_per_step, "scores_klue": k.scores,
                      "scores_trainer": t.scores})
    out["pairs"] = pairs
    if check == "seeds" and len(rows) > 2:
        gap = out["klue"]["mean"] - out["trainer"]["mean"]
        noise = math.sqrt(out["klue"]["sd"] ** 2 / len(pairs) + out["trainer"]["sd"] ** 2 / len(pairs))
        out["mean_gap"], out["gap_se"] = gap, noise
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="ynat")
    parser.add_argument("--protocol", help="default: the task's default local protocol")
    parser.add_argument("--check", choices=("exact", "seeds"), default="exact")
    parser.add_argument("--n-train", type=int, help="the first N training records (default: all)")
    parser.add_argument("--n-eval", type=int, help="the first N eval records (default: all)")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--sides", default="klue,trainer")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", type=Path, help="a BertModel directory (default: me5_small from real_models.py)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a klue hyper-parameter override for both sides (e.g. max_len=128)")
    parser.add_argument("--data-dir")
    parser.add_argument("--extra-data-dir")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--summarise", type=Path, nargs="+", metavar="JSON",
                        help="only print the summary over the runs of these --json files (seeds run apart)")
    args = parser.parse_args()
    if args.summarise:
        files = [json.loads(path.read_text(encoding="utf-8")) for path in args.summarise]
        runs = [SideResult(**run) for f in files for run in f["runs"]]
        print(json.dumps(summary_of(registry.get(files[0]["setup"]["task"]), runs, files[0]["setup"]["check"]),
                         indent=1))
        return
    torch.set_num_threads(args.threads)
    task = registry.get(args.task)
    protocol = args.protocol or task.default_local_protocol
    data = sliced(resolve(task, protocol, roots_from(args.data_dir, args.extra_data_dir)), args.n_train, args.n_eval)
    seeds = [int(s) for s in args.seeds.split(",")]
    sides = [s.strip() for s in args.sides.split(",")]
    rows: list[SideResult] = []
    started = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory(prefix="klue-parity-") as tmp:
        model_dir = args.model or real_model_dir()
        if args.check == "exact":
            model_dir = without_dropout(model_dir, Path(tmp) / "model-no-dropout")
        for seed in seeds:
            for side in sides:
                reset_accelerate()
                out = Path(tmp) / f"{side}-{seed}"
                row = (run_klue if side == "klue" else run_trainer)(task, model_dir, data, seed, out, args)
                rows.append(row)
                shutil.rmtree(out, ignore_errors=True)
                print(f"{side:8s} seed {seed}: {task.key_metric} {row.scores[task.key_metric]:.2f}, "
                      f"{len(row.step_losses)} steps, loss {row.step_losses[0]:.6f} -> {row.step_losses[-1]:.6f}, "
                      f"{row.cpu_s_per_step:.2f} CPU s/step ({row.wall_s_per_step:.2f} wall)", flush=True)
    hp = resolved_hp(task, args.model or real_model_dir(), args)
    summary = {
        "setup": {"task": task.name, "protocol": protocol, "check": args.check, "n_train": len(data.train),
                  "n_eval": len(data.eval), "model": str(args.model or "me5_small"), "seeds": seeds,
                  "threads": args.threads, "hyperparameters": hp.to_json(), "torch": torch.__version__,
                  "load_average": os.getloadavg(), "wall_s": time.perf_counter() - started[0],
                  "cpu_s": time.process_time() - started[1]},
        "runs": [vars(r) for r in rows],
    }
    if set(sides) == {"klue", "trainer"}:
        summary["summary"] = summary_of(task, rows, args.check)
        print(json.dumps(summary["summary"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
