"""Fine-tuning one task adapter's head model on `accelerate`: the same code on CPU, one GPU or several (DDP),
fp32/bf16/fp16.

- AdamW (no decay on biases and norm weights), linear warm-up then linear decay; the steps themselves
  (gradient accumulation, clipping, mixed precision, the global-mean loss, logging, checkpoints) are the
  shared training loop's (loop.py). One optimizer step consumes one global batch (`batch_size` features
  over all processes); the loss is a global mean over the loss items of the global batch, known on every
  process without communication (sampling.py).
- Evaluation `evals_per_epoch` times per epoch (or every `eval_steps`) and at the end; the best model by
  the selection metric (higher or lower is better, as its spec says) goes to `<out>/best` (weights, config,
  tokenizer and card; no optimizer state), once per improvement.
- The resume state (model, optimizer, RNG: checkpoint.py) is written on a time budget (`checkpoint_minutes`),
  every `checkpoint_steps` steps when set, and at each epoch end, not at each evaluation: on a 118M-parameter
  encoder it is 1.4 GB. After the last step a small "finished" record is enough, as best/ holds the model
  the run reports (`keep_checkpoints`: the full state instead, kept).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from klue.errors import DataError
from klue.metrics.report import MetricSpec
from klue.models.adapter import Adapter
from klue.models.features import Feature, FeaturizeContext
from klue.models.loading import ModelCard, save_finetuned
from klue.results import CurvePoint
from klue.training import checkpoint, state_files, tracking
from klue.training.loop import CheckpointPolicy, LoopSettings, StepHook, StepPlan, train_steps
from klue.training.recipes import Hyperparameters
from klue.training.sampling import epoch_batches, eval_batches, split_global_batch

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


# CPU flags of bf16 matrix-multiply units (Intel AMX, AVX-512 BF16; AMD Zen 4 has the latter). Without them
# torch emulates bf16 and a step is slower, not faster: 5.1x the CPU time of fp32 on the real encoder (YNAT)
# on an AVX2-only AMD EPYC; with avx512_bf16, 1.5-1.8x less than fp32, same scores within seed noise
# (benchmarks/RESULTS.md, "bf16 on CPUs").
BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
CPUINFO = Path("/proc/cpuinfo")


def cpu_bf16_flags(cpuinfo: Path = CPUINFO) -> list[str]:
    """Which of `BF16_CPU_FLAGS` the CPU declares (its first `flags` line); none where the file is absent
    (not Linux: no bf16 is assumed, so `auto` keeps fp32, the safe side)."""
    if not cpuinfo.is_file():
        return []
    for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags = set(value.split())
            return [flag for flag in BF16_CPU_FLAGS if flag in flags]
    return []


def mixed_precision_for(requested: str, cpu: bool, cpuinfo: Path = CPUINFO) -> str:
    """`auto`: bf16 where the GPU supports it, fp16 on other GPUs; on CPU, bf16 where the CPU has bf16 units
    (`cpu_bf16_flags`), else none. bf16 asked for on a CPU without them is done, with a warning."""
    on_cpu = cpu or not torch.cuda.is_available()
    if requested == "bf16" and on_cpu and not cpu_bf16_flags(cpuinfo):
        warnings.warn("mixed_precision=bf16 on a CPU without bf16 units (no amx_bf16 or avx512_bf16 flag): "
                      "torch emulates bf16 here, and a training step is several times slower than in fp32 "
                      "(mixed_precision=auto or no avoids it)", stacklevel=2)
    if requested != "auto":
        return requested
    if on_cpu:
        return "bf16" if cpu_bf16_flags(cpuinfo) else "no"
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def fresh_accelerator(**options: Any) -> Any:
    """An `accelerate.Accelerator` with these options, whatever an earlier run in this process chose.

    accelerate keeps its state process-wide, and refuses an Accelerator whose mixed precision differs from
    the first one's ("AcceleratorState has already been initialized"): a second run in one process (the
    benchmark runner's cells, `klue.training.run` then `pretrain` from Python) asking for another precision
    would fail. So each run drops that state first. The process group (PartialState: rank, world size,
    device) is kept, so this is safe inside a DDP launch."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=False)
    GradientState._reset_state()
    return Accelerator(**options)


def make_accelerator(hp: Hyperparameters, out_dir: Path | None = None) -> Any:
    """The run's accelerator; with `report_to` trackers (and an output directory for their files)."""
    trackers = tracking.parse_report_to(hp.report_to) if out_dir is not None else []
    return fresh_accelerator(cpu=hp.cpu, mixed_precision=mixed_precision_for(hp.mixed_precision, hp.cpu),
                             log_with=trackers or None,
                             project_dir=str(tracking.tracking_dir(out_dir)) if trackers and out_dir else None)


def checkpoint_policy(hp: Hyperparameters, steps_per_epoch: int, total_steps: int) -> CheckpointPolicy | None:
    """When fine-tuning writes its resume state (see the module docstring); None without `save_checkpoints`."""
    if not hp.save_checkpoints:
        return None
    return CheckpointPolicy(
        every_seconds=60 * hp.checkpoint_minutes if hp.checkpoint_minutes is not None else None,
        every_steps=hp.checkpoint_steps, at_steps=frozenset(range(steps_per_epoch, total_steps, steps_per_epoch)),
        at_end="state" if hp.keep_checkpoints else "finished")


def optimizer_groups(model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay: list[torch.nn.Parameter] = []
    no_decay: list[torch.nn.Parameter] = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        # 1-d parameters are biases and norm weights: the usual BERT recipe exempts them from decay.
        (no_decay if param.ndim < 2 or "norm" in name.lower() else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def adamw_kernel(impl: str, device: torch.device) -> dict[str, bool]:
    """AdamW's implementation as torch's keyword: `auto` is the fused kernel where torch has one for the
    device (CPU and CUDA: one pass over each parameter; on CPU a whole training step ran 1.11x faster than
    with the multi-tensor path, benchmarks/history/fine-tuning-speed.md, "Fine-tuning speed levers"), else the
    multi-tensor (`foreach`) path."""
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


@dataclass
class _FineTuning:
    """The training loop's objective (loop.py) for one task adapter: each epoch's seeded global batches
    (sampling.py), split over processes and accumulation steps; a feature counts its loss items."""

    engine: Engine
    train: Sequence[Feature]
    seed: int
    lengths: list[int] | None  # given: length-grouped batches
    epoch: tuple[int, list[Any]] | None = None  # (epoch, its global batches), computed once per epoch

    def plan(self, step: int) -> StepPlan:
        hp, acc = self.engine.hp, self.engine.accelerator
        epoch, position = divmod(step, math.ceil(len(self.train) / hp.batch_size))
        if self.epoch is None or self.epoch[0] != epoch:
            self.epoch = (epoch, epoch_batches(len(self.train), hp.batch_size, self.seed, epoch, self.lengths))
        global_batch = self.epoch[1][position]
        micro_batches = split_global_batch(global_batch, acc.num_processes, hp.gradient_accumulation_steps,
                                           acc.process_index)
        return StepPlan([(micro.indices, micro.weight) for micro in micro_batches],
                        sum(self.train[i].n_items for i in global_batch), len(global_batch))

    def loss_sum(self, micro_batch: tuple[int, ...]) -> torch.Tensor:
        engine = self.engine
        chunk = [self.train[i] for i in micro_batch]
        batch = engine._to_device(engine.adapter.collate(chunk, engine.ctx, True, engine.hp.pad_to_multiple_of))
        loss_sum: torch.Tensor = engine.model(**batch).loss_sum
        return loss_sum


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
        self.best_written_here = False  # whether this session wrote best/: later writes reuse its other files

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
        state = checkpoint.resume_or_start(acc, out_dir, run_fingerprint, parts, hp.resume)

        tracked = bool(acc.log_with)
        if tracked:
            name = tracking.run_name(out_dir)
            acc.init_trackers(tracking.PROJECT, config=tracking.tracker_config(hp.to_json()),
                              init_kwargs={"wandb": {"name": name}, "mlflow": {"run_name": name}})

        def log(point: CurvePoint) -> None:
            if tracked:
                acc.log({"train/loss": point.loss, "train/learning_rate": point.learning_rate,
                         "train/examples_per_s": point.examples_per_s, "train/epoch": point.epoch}, step=point.step)

        def evaluate(state: checkpoint.TrainState) -> None:
            start = time.perf_counter()
            self._evaluate_and_keep(state, selection_records, selection, mode, selection_metric, steps_per_epoch,
                                    out_dir, card)
            state.eval_time_s += time.perf_counter() - start
            if tracked and state.learning_curve[-1].selection:
                acc.log({f"selection/{k}": v for k, v in state.learning_curve[-1].selection.items()},
                        step=state.step)

        settings = LoopSettings(total_steps, steps_per_epoch, hp.logging_steps, hp.max_grad_norm or 0.0,
                                frozenset(points), checkpoint_policy(hp, steps_per_epoch, total_steps),
                                progress=hp.progress)
        objective = _FineTuning(self, train, seed, [len(f) for f in train] if hp.group_by_length else None)
        try:
            train_steps(acc, parts, objective, settings, state, out_dir, on_log=log, on_point=evaluate,
                        on_step=on_step)
        finally:
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
            start = time.perf_counter()
            if acc.is_main_process:
                # The config and tokenizer do not change during a run: once this session has written them,
                # the next best/ links them instead of writing them again (a best/ of an earlier session,
                # or of another run in this directory, is not trusted to hold them).
                save_finetuned(out_dir / BEST_DIR, acc.unwrap_model(self.model), self.ctx.tokenizer,
                               card.at_step(state.step, metric.name, score), reuse=self.best_written_here)
            acc.wait_for_everyone()
            self.best_written_here = True
            state.best_written += 1
            state.best_time_s += time.perf_counter() - start
