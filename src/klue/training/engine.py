"""The training loop, on `accelerate`: the same code on CPU, one GPU or several (DDP), fp32/bf16/fp16.

- AdamW (no decay on biases and norm weights), linear warm-up then linear decay, gradient accumulation,
  clipping. One optimizer step consumes one global batch (`batch_size` features over all processes).
- The loss is a global mean: heads return summed losses and each step divides by the number of loss
  items in the whole global batch (known on every process without communication, see sampling.py), so
  1 process, N processes and accumulation optimise the same objective.
- Evaluation `evals_per_epoch` times per epoch (or every `eval_steps`) and at the end; the best model by
  the selection metric (higher or lower is better, as its spec says) goes to `<out>/best`; resumable
  checkpoints at each evaluation.
- The loss is read back from the device only every `logging_steps` steps (no per-step host sync).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from klue.errors import DataError
from klue.io.progress import Progress
from klue.metrics.report import MetricSpec
from klue.models.adapter import Adapter
from klue.models.features import Feature, FeaturizeContext
from klue.models.loading import ModelCard, save_finetuned
from klue.results import CurvePoint
from klue.training import checkpoint, state_files, tracking
from klue.training.recipes import Hyperparameters
from klue.training.sampling import epoch_batches, eval_batches, split_global_batch

StepHook = Callable[[int], None]  # called with the optimizer step number after each step (tests: crash)
BEST_DIR = "best"


@dataclass
class FitResult:
    state: checkpoint.TrainState
    total_steps: int
    steps_per_epoch: int
    selection_metric: str


def improves(score: float, best: float | None, spec: MetricSpec) -> bool:
    """Whether `score` beats the best so far (the first score always does), in the metric's direction."""
    if best is None:
        return True
    return score > best if spec.higher_is_better else score < best


def mixed_precision_for(requested: str, cpu: bool) -> str:
    """`auto`: bf16 where the GPU supports it, fp16 on other GPUs, none on CPU."""
    if requested != "auto":
        return requested
    if cpu or not torch.cuda.is_available():
        return "no"
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def make_accelerator(hp: Hyperparameters, out_dir: Path | None = None) -> Any:
    """The run's accelerator; with `report_to` trackers (and an output directory for their files)."""
    from accelerate import Accelerator

    trackers = tracking.parse_report_to(hp.report_to) if out_dir is not None else []
    return Accelerator(cpu=hp.cpu, mixed_precision=mixed_precision_for(hp.mixed_precision, hp.cpu),
                       log_with=trackers or None,
                       project_dir=str(tracking.tracking_dir(out_dir)) if trackers and out_dir else None)


def optimizer_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        # 1-d parameters are biases and norm weights: the usual BERT recipe exempts them from decay.
        (no_decay if param.ndim < 2 or "norm" in name.lower() else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def adamw_kernel(impl: str, device: torch.device) -> dict[str, bool]:
    """AdamW's implementation as torch's keyword: `auto` is the fused kernel where torch has one for the
    device (CPU and CUDA: one pass over each parameter; on CPU a whole training step ran 1.11x faster than
    with the multi-tensor path, benchmarks/RESULTS.md, "Fine-tuning speed levers"), else the multi-tensor (`foreach`) path."""
    if impl == "auto":
        impl = "fused" if device.type in ("cpu", "cuda") else "foreach"
    return {"fused": True} if impl == "fused" else {"foreach": impl == "foreach"}


def eval_points(steps_per_epoch: int, total_steps: int, hp: Hyperparameters) -> set[int]:
    """Optimizer steps after which to evaluate: `evals_per_epoch` times evenly within each epoch, the last
    at the epoch end (the official val_check_interval 0.25 is 4), or every `eval_steps` instead; always
    after the last step (`evals_per_epoch=0` and no `eval_steps`: only then)."""
    points = {total_steps}
    if hp.eval_steps:
        points.update(range(hp.eval_steps, total_steps + 1, hp.eval_steps))
    elif hp.evals_per_epoch > 0:
        per_epoch = min(hp.evals_per_epoch, steps_per_epoch)
        for epoch_start in range(0, total_steps, steps_per_epoch):
            for k in range(1, per_epoch + 1):
                points.add(min(total_steps, epoch_start + round(steps_per_epoch * k / per_epoch)))
    return points


class Engine:
    """Trains and runs one head model for one task adapter."""

    def __init__(self, accelerator: Any, model: torch.nn.Module, adapter: Adapter, ctx: FeaturizeContext,
                 hp: Hyperparameters) -> None:
        self.accelerator = accelerator
        self.model = model
        self.adapter = adapter
        self.ctx = ctx
        self.hp = hp
        self.eval_examples_per_s: float | None = None

    # Inference ---------------------------------------------------------------------------------------
    def _to_device(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        device = self.accelerator.device
        return {k: v.to(device, non_blocking=True) for k, v in batch.items()}

    def outputs(self, features: Sequence[Feature]) -> list[Any]:
        """The adapter's host-side output for every feature, computed in shards over the processes."""
        acc = self.accelerator
        model = acc.unwrap_model(self.model)  # no DDP in inference: processes may run unequal batch counts
        was_training = model.training
        model.eval()
        start = time.perf_counter()
        local: list[tuple[int, Any]] = []
        batches = eval_batches([len(f) for f in features], self.hp.eval_batch_size, acc.num_processes,
                               acc.process_index)
        with torch.inference_mode(), acc.autocast():
            for indices in batches:
                chunk = [features[i] for i in indices]
                batch = self._to_device(self.adapter.collate(chunk, self.ctx, False, self.hp.pad_to_multiple_of))
                output = model(**batch)
                local.extend(zip(indices, self.adapter.to_host(output, batch, chunk)))
        if acc.num_processes > 1:
            from accelerate.utils import gather_object

            local = gather_object(local)
        elapsed = time.perf_counter() - start
        self.eval_examples_per_s = len(features) / elapsed if elapsed > 0 else None
        result: list[Any] = [None] * len(features)
        for index, value in local:
            result[index] = value
        if was_training:
            model.train()
        return result

    def predict(self, records: Sequence[Any], features: Sequence[Feature]) -> list[Any]:
        return self.adapter.decode(records, features, self.outputs(features))

    # Training ----------------------------------------------------------------------------------------
    def fit(self, train: Sequence[Feature], selection_records: Sequence[Any], selection: Sequence[Feature],
            seed: int, out_dir: Path, mode: str, card: ModelCard, run_fingerprint: str,
            selection_metric: MetricSpec, on_step: StepHook | None = None) -> FitResult:
        from transformers import get_linear_schedule_with_warmup

        acc, hp = self.accelerator, self.hp
        if not train:
            raise DataError("no training examples")
        steps_per_epoch = math.ceil(len(train) / hp.batch_size)
        total_steps = hp.max_steps or math.ceil(steps_per_epoch * hp.epochs)
        warmup = hp.warmup_steps if hp.warmup_steps is not None else math.ceil(total_steps * hp.warmup_ratio)
        points = eval_points(steps_per_epoch, total_steps, hp)

        optimizer = torch.optim.AdamW(optimizer_groups(self.model, hp.weight_decay), lr=hp.learning_rate,
                                      betas=(hp.adam_beta1, hp.adam_beta2), eps=hp.adam_epsilon,
                                      **adamw_kernel(hp.adamw_impl, acc.device))
        scheduler = get_linear_schedule_with_warmup(optimizer, warmup, total_steps)
        # The scheduler is not `prepare`d: accelerate would step it once per process per step.
        self.model, optimizer = acc.prepare(self.model, optimizer)
        parts = state_files.TrainingParts(self.model, optimizer, scheduler, getattr(acc, "scaler", None))

        state = checkpoint.TrainState(fingerprint=run_fingerprint)
        latest = checkpoint.latest_checkpoint(out_dir)
        if latest is not None and hp.resume:
            state = checkpoint.load(acc, latest, run_fingerprint, parts)
            state.resumed_from.append(state.step)
        elif latest is not None:
            checkpoint.remove_all(acc, out_dir)

        lengths = [len(f) for f in train] if hp.group_by_length else None
        n_proc, rank, accum = acc.num_processes, acc.process_index, hp.gradient_accumulation_steps
        progress = Progress("train", total_steps, done=state.step, enabled=hp.progress and acc.is_main_process)
        tracked = bool(acc.log_with)
        if tracked:
            name = tracking.run_name(out_dir)
            acc.init_trackers(tracking.PROJECT, config=tracking.tracker_config(hp.to_json()),
                              init_kwargs={"wandb": {"name": name}, "mlflow": {"run_name": name}})
        # Loss since the last logged point: a device tensor, read back only when logging or checkpointing.
        running_loss = torch.full((), state.pending_loss_sum if acc.is_main_process else 0.0, device=acc.device)
        running_items = state.pending_items
        epoch_cache: tuple[int, list[Any]] | None = None
        window_start, window_examples = time.perf_counter(), 0
        self.model.train()
        try:
            while state.step < total_steps:
                epoch, position = divmod(state.step, steps_per_epoch)
                if epoch_cache is None or epoch_cache[0] != epoch:
                    epoch_cache = (epoch, epoch_batches(len(train), hp.batch_size, seed, epoch, lengths))
                global_batch = epoch_cache[1][position]
                step_start = time.perf_counter()
                items = sum(train[i].n_items for i in global_batch)
                micro_batches = split_global_batch(global_batch, n_proc, accum, rank)
                for k, micro in enumerate(micro_batches):
                    chunk = [train[i] for i in micro.indices]
                    batch = self._to_device(self.adapter.collate(chunk, self.ctx, True, hp.pad_to_multiple_of))
                    sync = k == len(micro_batches) - 1
                    with nullcontext() if sync else acc.no_sync(self.model):
                        with acc.autocast():
                            output = self.model(**batch)
                        # DDP averages gradients over processes: scale by n_proc to get the global mean.
                        loss = output.loss_sum * (micro.weight * n_proc / max(items, 1))
                        acc.backward(loss)
                    running_loss += output.loss_sum.detach() * micro.weight
                if hp.max_grad_norm:
                    acc.clip_grad_norm_(self.model.parameters(), hp.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                state.step += 1
                running_items += items
                state.examples_seen += len(global_batch)
                window_examples += len(global_batch)
                state.train_time_s += time.perf_counter() - step_start

                if state.step % hp.logging_steps == 0 or state.step == total_steps:
                    loss_value = float(acc.reduce(running_loss, reduction="sum").item()) / max(running_items, 1)
                    speed = window_examples / max(time.perf_counter() - window_start, 1e-9)
                    state.learning_curve.append(CurvePoint(state.step, state.step / steps_per_epoch, loss_value,
                                                           scheduler.get_last_lr()[0], speed))
                    progress.update(state.step, f"loss {loss_value:.4f}, {speed:,.0f} ex/s")
                    if tracked:
                        acc.log({"train/loss": loss_value, "train/learning_rate": scheduler.get_last_lr()[0],
                                 "train/examples_per_s": speed, "train/epoch": state.step / steps_per_epoch},
                                step=state.step)
                    running_loss.zero_()
                    running_items = 0
                    window_start, window_examples = time.perf_counter(), 0
                else:
                    progress.update(state.step)

                if state.step in points:
                    progress.update(state.step, description="eval")
                    self._evaluate_and_keep(state, selection_records, selection, mode, selection_metric,
                                            steps_per_epoch, out_dir, card)
                    if tracked and state.learning_curve[-1].selection:
                        acc.log({f"selection/{k}": v for k, v in state.learning_curve[-1].selection.items()},
                                step=state.step)
                    if hp.save_checkpoints and state.step < total_steps:
                        state.pending_loss_sum = float(acc.reduce(running_loss.clone(), reduction="sum").item())
                        state.pending_items = running_items
                        checkpoint.save(acc, out_dir, state, parts)
                    progress.update(state.step, description="train")
                    window_start, window_examples = time.perf_counter(), 0
                if on_step is not None:
                    on_step(state.step)
        finally:
            progress.close()
            if tracked:
                acc.end_training()
        return FitResult(state, total_steps, steps_per_epoch, selection_metric.name)

    def _evaluate_and_keep(self, state: checkpoint.TrainState, records: Sequence[Any],
                           features: Sequence[Feature], mode: str, metric: MetricSpec, steps_per_epoch: int,
                           out_dir: Path, card: ModelCard) -> None:
        predictions = self.predict(records, features)
        # In-memory scoring of the selection set, to choose a checkpoint; reported scores come from the judge.
        report = self.adapter.task.evaluate(records, predictions, mode)
        if metric.name not in report.scores:
            raise DataError(f"selection metric {metric.name!r} is not among the task's scores "
                            f"({', '.join(report.scores)})")
        score = float(report.scores[metric.name])
        state.learning_curve.append(CurvePoint(state.step, state.step / steps_per_epoch,
                                               selection={k: float(v) for k, v in report.scores.items()}))
        if improves(score, state.best_score, metric):
            state.best_score, state.best_step = score, state.step
            acc = self.accelerator
            if acc.is_main_process:
                save_finetuned(out_dir / BEST_DIR, acc.unwrap_model(self.model), self.ctx.tokenizer,
                               card.at_step(state.step, metric.name, score))
            acc.wait_for_everyone()
