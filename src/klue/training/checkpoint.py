"""Resumable checkpoints in formats that cannot run code when read: tensors in safetensors files, every
other value in JSON. Nothing here unpickles (accelerate's `save_state` writes pickles, and loading one
from a crafted checkpoint directory would execute it), so no checkpoint file is ever a code path.

Layout under the run's output directory:
    checkpoints/step-00000120/   the training state (klue.training.state_files) + klue_state.json
    checkpoints/LATEST           the name of the newest complete checkpoint, replaced atomically
A checkpoint only becomes LATEST once fully written, so a crash while saving leaves the previous one.
A finished run may leave only a record instead (`save_finished`: klue_state.json with `finished` true, no
training state): its final model is kept elsewhere (fine-tuning's best/), so resuming it trains nothing.
The data position needs no state of its own: the batch order is a pure function of (seed, epoch) and
the step counter says where in it the run was (klue.training.sampling).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from klue.errors import DataError
from klue.io.atomic import write_text_atomic
from klue.results import CurvePoint
from klue.training import state_files

CHECKPOINTS = "checkpoints"
LATEST = "LATEST"
STATE_FILE = "klue_state.json"


@dataclass
class TrainState:
    step: int = 0  # optimizer steps done
    best_score: float | None = None
    best_step: int | None = None
    learning_curve: list[CurvePoint] = field(default_factory=list)
    train_time_s: float = 0.0  # time in training steps (evaluation excluded), over all sessions
    examples_seen: int = 0  # what the throughput counts: examples (fine-tuning) or tokens (masked-LM)
    fingerprint: str = ""  # what the run is (model, data, hyper-parameters, seed): resume only the same run
    resumed_from: list[int] = field(default_factory=list)  # steps at which earlier sessions stopped
    pending_loss_sum: float = 0.0  # summed loss (all processes) since the last logged point
    pending_items: int = 0  # loss items behind pending_loss_sum
    finished: bool = False  # a record that training ended, without the training state (`save_finished`)
    # What the run's bookkeeping cost, over all sessions up to the last checkpoint (and this session's):
    eval_time_s: float = 0.0  # evaluations on the selection set
    checkpoints_written: int = 0  # full resume states
    checkpoint_time_s: float = 0.0
    best_written: int = 0  # best/ model directories
    best_time_s: float = 0.0


def fingerprint(obj: Any) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def latest_checkpoint(out_dir: Path) -> Path | None:
    pointer = out_dir / CHECKPOINTS / LATEST
    if not pointer.is_file():
        return None
    path = out_dir / CHECKPOINTS / pointer.read_text(encoding="utf-8").strip()
    if not (path / STATE_FILE).is_file():
        raise DataError(f"{pointer} names {path.name}, which is not a complete checkpoint; delete "
                        f"{out_dir / CHECKPOINTS} to start over", pointer)
    return path


def read_state(path: Path) -> TrainState:
    obj = json.loads((path / STATE_FILE).read_text(encoding="utf-8"))
    obj["learning_curve"] = [CurvePoint.from_json(p) for p in obj.get("learning_curve", [])]
    return TrainState(**obj)


def checkpoint_dir(out_dir: Path, step: int) -> Path:
    return out_dir / CHECKPOINTS / f"step-{step:08d}"


def save(accelerator: Any, out_dir: Path, state: TrainState, parts: state_files.TrainingParts) -> Path:
    """Every process calls this (each writes its own RNG state)."""
    path = _fresh_dir(accelerator, out_dir, state.step)
    state_files.save(path, parts, accelerator.process_index, accelerator.is_main_process)
    accelerator.wait_for_everyone()
    _commit(accelerator, out_dir, path, state)
    return path


def save_finished(accelerator: Any, out_dir: Path, state: TrainState) -> Path:
    """A record that training finished at `state.step`, without the training state (every process calls
    this): resuming from it trains nothing. It replaces the full checkpoints, which are of no more use."""
    path = _fresh_dir(accelerator, out_dir, state.step)
    state.finished = True
    _commit(accelerator, out_dir, path, state)
    return path


def _fresh_dir(accelerator: Any, out_dir: Path, step: int) -> Path:
    path = checkpoint_dir(out_dir, step)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
    accelerator.wait_for_everyone()
    return path


def _commit(accelerator: Any, out_dir: Path, path: Path, state: TrainState) -> None:
    """Make the checkpoint at `path` (fully written) the latest, and remove the older ones."""
    if accelerator.is_main_process:
        write_text_atomic(path / STATE_FILE, json.dumps(asdict(state), indent=1))
        write_text_atomic(out_dir / CHECKPOINTS / LATEST, path.name)
        for old in (out_dir / CHECKPOINTS).glob("step-*"):
            if old.is_dir() and old.name != path.name:
                shutil.rmtree(old, ignore_errors=True)
    accelerator.wait_for_everyone()


def load(accelerator: Any, path: Path, expected_fingerprint: str, parts: state_files.TrainingParts,
         start_over: str = "another --output directory, or resume=false") -> TrainState:
    """The state of the checkpoint at `path`, with `parts` restored; `start_over` says how to avoid a
    checkpoint of another run (the command's options)."""
    state = read_state(path)
    if state.fingerprint != expected_fingerprint:
        raise DataError(f"{path} is a checkpoint of a different run (model, data, recipe or seed differ); use "
                        f"{start_over} to start this one over", path)
    if not state.finished:  # a finished record has no training state: nothing is left to train
        state_files.load(path, parts, accelerator.process_index, accelerator.device)
    return state


def resume_or_start(accelerator: Any, out_dir: Path, run_fingerprint: str, parts: state_files.TrainingParts,
                    resume: bool, start_over: str = "another --output directory, or resume=false") -> TrainState:
    """The state to train from: the latest checkpoint's (its steps added to `resumed_from`), or a new one;
    without `resume`, any checkpoint is removed."""
    latest = latest_checkpoint(out_dir)
    if latest is not None and resume:
        state = load(accelerator, latest, run_fingerprint, parts, start_over)
        state.resumed_from.append(state.step)
        return state
    if latest is not None:
        remove_all(accelerator, out_dir)
    return TrainState(fingerprint=run_fingerprint)


def remove_all(accelerator: Any, out_dir: Path) -> None:
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        shutil.rmtree(out_dir / CHECKPOINTS, ignore_errors=True)
    accelerator.wait_for_everyone()
