"""The optimizer-step loop that fine-tuning (engine.py) and masked-LM pretraining (klue.pretraining.mlm) share.

One optimizer step consumes one global batch. The caller's `Objective` says what that batch is on this
process (its micro-batches, one per gradient-accumulation step) and gives a micro-batch's summed loss; the
loop does the rest, the same way for both:
- the loss is a global mean: each micro-batch's summed loss is divided by the loss items of the whole global
  batch (all processes and micro-batches, `StepPlan.items`) and multiplied by the process count (DDP averages
  gradients over processes), so 1 process, N processes and accumulation optimise the same objective;
- gradients are synchronised on the last micro-batch only, under mixed precision (`accelerator.autocast`),
  then clipped; then the optimizer and the scheduler step;
- the loss is read back from the device only every `logging_steps` steps (no per-step host sync): the mean
  over the loss items since the last logged point, summed over processes; each logged point goes into the
  state's learning curve and to `on_log`;
- after each step in `point_steps`, `on_point` runs (fine-tuning evaluates there);
- then the resume state is saved (checkpoint.py) when the `CheckpointPolicy` says so: on a time budget, every
  N steps, at given steps (epoch ends); after the last step the full state, a small "finished" record, or
  nothing. A checkpoint holds the loss not logged yet, so a resumed run logs what an uninterrupted one does;
- a time budget (`max_seconds`) stops the loop early with a checkpoint, so the run resumes.
The data position needs no state of its own: a step's batch is a pure function of the step (and the seed),
so a checkpoint may fall after any step: a resumed run computes what an uninterrupted one does, bit for bit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import torch

from klue.io.progress import ProgressBar
from klue.results import CurvePoint
from klue.training import checkpoint, state_files


@dataclass(frozen=True)
class StepPlan:
    """What one optimizer step trains on, on this process."""

    micro_batches: Sequence[tuple[Any, float]]  # (what `Objective.loss_sum` takes, weight), one per accumulation
    # step; weight 0.0 marks a stand-in that only takes part in the gradient synchronisation
    items: int  # loss items in the whole global batch (all processes): the loss is their mean
    examples: int  # what the throughput figure counts in the whole global batch (examples, or tokens)


class Objective(Protocol):
    def plan(self, step: int) -> StepPlan:
        """This process's share of the global batch of optimizer step `step` (0-based)."""
        ...

    def loss_sum(self, micro_batch: Any) -> torch.Tensor:
        """The summed loss over one micro-batch's loss items (the forward pass)."""
        ...


AtEnd = Literal["state", "finished", "none"]


@dataclass(frozen=True)
class CheckpointPolicy:
    """When the resume state is written. Before the last step: after a step of `at_steps`, every
    `every_steps` steps, or when `every_seconds` have passed since the last write (or the session's start);
    the time is read after every step on one process, and under several only after steps that synchronise
    anyway (logged ones and `point_steps`), where the processes agree on it. After the last step: the full
    state (`state`), a small record that the run finished (`finished`: its final model is the caller's to
    keep), or nothing."""

    every_seconds: float | None = None
    every_steps: int | None = None
    at_steps: frozenset[int] = frozenset()
    at_end: AtEnd = "none"


@dataclass(frozen=True)
class LoopSettings:
    total_steps: int
    steps_per_epoch: int  # for the epoch figure of the learning curve
    logging_steps: int
    max_grad_norm: float  # 0: no clipping
    point_steps: frozenset[int]  # after these steps: `on_point`
    checkpoints: CheckpointPolicy | None = None  # None: no checkpoint, not even on the time budget
    max_seconds: float | None = None  # stop after this much time in this session, with a checkpoint
    progress: bool = True  # a progress bar (on the main process)
    label: str = "train"  # the progress bar's
    unit: str = "ex/s"  # the throughput's, on the progress bar


LogHook = Callable[[CurvePoint], None]  # called with each logged loss point (every process)
PointHook = Callable[[checkpoint.TrainState], None]  # called after each step of `point_steps`
StepHook = Callable[[int], None]  # called with the optimizer step number after each step (tests: crash)


def train_steps(accelerator: Any, parts: state_files.TrainingParts, objective: Objective, settings: LoopSettings,
                state: checkpoint.TrainState, out_dir: Path, *, on_log: LogHook | None = None,
                on_point: PointHook | None = None, on_step: StepHook | None = None) -> None:
    """Run optimizer steps from `state.step` until `settings.total_steps` (or the time budget), updating
    `state`; `parts` are the prepared model and optimizer, and the scheduler (not `prepare`d: accelerate
    would step it once per process per step)."""
    acc, model, optimizer, scheduler = accelerator, parts.model, parts.optimizer, parts.scheduler
    if scheduler is None:
        raise ValueError("the training loop steps a learning-rate scheduler: give one in `parts`")
    n_proc, total = acc.num_processes, settings.total_steps
    progress = ProgressBar(settings.label, total, done=state.step, enabled=settings.progress and acc.is_main_process)
    # Loss since the last logged point: a device tensor, read back only when logging or checkpointing.
    running_loss = torch.full((), state.pending_loss_sum if acc.is_main_process else 0.0, device=acc.device)
    running_items = state.pending_items

    policy = settings.checkpoints
    last_save = time.perf_counter()

    def save() -> None:
        nonlocal last_save
        state.pending_loss_sum = float(acc.reduce(running_loss.clone(), reduction="sum").item())
        state.pending_items = running_items
        start = time.perf_counter()
        state.checkpoints_written += 1  # counted before the write, so the checkpoint counts itself
        checkpoint.save(acc, out_dir, state, parts)
        last_save = time.perf_counter()
        state.checkpoint_time_s += last_save - start

    def time_is_up(synchronised: bool) -> bool:
        """Whether the time budget since the last write has run out, as every process agrees."""
        if policy is None or policy.every_seconds is None or (n_proc > 1 and not synchronised):
            return False
        up = time.perf_counter() - last_save >= policy.every_seconds
        if n_proc == 1:
            return up
        return bool(acc.reduce(torch.tensor(float(up), device=acc.device), reduction="sum").item() > 0)

    def checkpoint_due(logged: bool) -> bool:
        if policy is None:
            return False
        if state.step >= total:
            return policy.at_end == "state"
        return (state.step in policy.at_steps
                or (policy.every_steps is not None and state.step % policy.every_steps == 0)
                or time_is_up(logged or state.step in settings.point_steps))

    started = time.perf_counter()
    window_start, window_examples = started, 0
    model.train()
    try:
        while state.step < total:
            if settings.max_seconds is not None and time.perf_counter() - started > settings.max_seconds:
                if policy is not None:
                    save()  # stopped by the time budget: resumable
                break
            step_start = time.perf_counter()
            plan = objective.plan(state.step)
            last = len(plan.micro_batches) - 1
            for k, (micro_batch, weight) in enumerate(plan.micro_batches):
                with nullcontext() if k == last else acc.no_sync(model):
                    with acc.autocast():
                        loss_sum = objective.loss_sum(micro_batch)
                    # DDP averages gradients over processes: scale by n_proc to get the global mean.
                    loss = loss_sum * (weight * n_proc / max(plan.items, 1))
                    acc.backward(loss)
                running_loss += loss_sum.detach() * weight
            if settings.max_grad_norm:
                acc.clip_grad_norm_(model.parameters(), settings.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            state.step += 1
            running_items += plan.items
            state.examples_seen += plan.examples
            window_examples += plan.examples
            state.train_time_s += time.perf_counter() - step_start

            logged = state.step % settings.logging_steps == 0 or state.step == total
            if logged:
                loss_value = float(acc.reduce(running_loss, reduction="sum").item()) / max(running_items, 1)
                speed = window_examples / max(time.perf_counter() - window_start, 1e-9)
                point = CurvePoint(state.step, state.step / settings.steps_per_epoch, loss_value,
                                   scheduler.get_last_lr()[0], speed)
                state.learning_curve.append(point)
                progress.update(state.step, info=f"loss {loss_value:.4f} · {speed:,.0f} {settings.unit}")
                if on_log is not None:
                    on_log(point)
                running_loss.zero_()
                running_items = 0
                window_start, window_examples = time.perf_counter(), 0
            else:
                progress.update(state.step)

            paused = False
            if state.step in settings.point_steps and on_point is not None:
                progress.update(label="eval")
                on_point(state)
                paused = True
            if checkpoint_due(logged):
                progress.update(label="save")
                save()
                paused = True
            elif state.step == total and policy is not None and policy.at_end == "finished":
                checkpoint.save_finished(acc, out_dir, state)
            if paused:  # the throughput counts training time only
                progress.update(label=settings.label)
                window_start, window_examples = time.perf_counter(), 0
            if on_step is not None:
                on_step(state.step)
    finally:
        progress.close()
