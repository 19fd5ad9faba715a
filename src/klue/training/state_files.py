"""A training state on disk without pickles: model, optimizer, scheduler, loss scaler and RNG states.

Tensors go to safetensors files and every other value to JSON, so reading a checkpoint back can never run
code (a pickle can, and accelerate's `save_state` and `torch.save` write pickles). Written by hand because
no library offers a pickle-free optimizer and RNG state; the values saved are the same ones accelerate saves.

Files in a state directory:
    model.safetensors            the unwrapped model's state dict (main process)
    optimizer.safetensors/.json  every tensor of the optimizer state / its param groups and other values
    scheduler.json, scaler.json  learning-rate scheduler and fp16 loss scaler (when there is one)
    rng-<rank>.safetensors/.json each process's torch (CPU, CUDA) / Python and numpy generator states
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from klue.errors import DataError
from klue.io.atomic import follow_umask, write_json_atomic
from klue.io.text import read_json_file

MODEL_FILE = "model.safetensors"
OPTIMIZER_TENSORS = "optimizer.safetensors"
OPTIMIZER_VALUES = "optimizer.json"
SCHEDULER_FILE = "scheduler.json"
SCALER_FILE = "scaler.json"
REQUIRED = (MODEL_FILE, OPTIMIZER_TENSORS, OPTIMIZER_VALUES, SCHEDULER_FILE)


@dataclass
class TrainingParts:
    """What a checkpoint restores; `model` may be wrapped (DDP), its unwrapped module is what is saved."""

    model: torch.nn.Module
    optimizer: Any  # torch.optim.Optimizer or accelerate's wrapper of one
    scheduler: Any | None = None  # anything with state_dict()/load_state_dict() of JSON values
    scaler: Any | None = None  # torch.amp.GradScaler (fp16 only)


def _unwrapped(model: torch.nn.Module) -> torch.nn.Module:
    return getattr(model, "module", model)


def _rng_names(rank: int) -> tuple[str, str]:
    return f"rng-{rank}.safetensors", f"rng-{rank}.json"


def _to_json(value: Any) -> Any:
    """Tuples become lists; anything that is not a JSON value is refused rather than silently dropped."""
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a training state value of type {type(value).__name__} has no JSON form")


def optimizer_split(state: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """An optimizer state dict as (tensors by "state.<param>.<name>", JSON of everything else)."""
    tensors: dict[str, torch.Tensor] = {}
    values: dict[str, dict[str, Any]] = {}
    for index, entries in state["state"].items():
        for name, value in entries.items():
            if isinstance(value, torch.Tensor):
                tensors[f"state.{index}.{name}"] = value.detach().cpu().contiguous().clone()
            else:
                values.setdefault(str(index), {})[name] = _to_json(value)
    groups = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()} for g in state["param_groups"]]
    return tensors, {"param_groups": _to_json(groups), "values": values,
                     "tuples": sorted({k for g in state["param_groups"] for k, v in g.items() if isinstance(v, tuple)})}


def optimizer_join(tensors: dict[str, torch.Tensor], values: dict[str, Any]) -> dict[str, Any]:
    """The inverse of `optimizer_split`."""
    state: dict[int, dict[str, Any]] = {}
    for key, tensor in tensors.items():
        _, index, name = key.split(".", 2)
        state.setdefault(int(index), {})[name] = tensor
    for index, entries in values["values"].items():
        state.setdefault(int(index), {}).update(entries)
    tuple_keys = set(values.get("tuples", []))
    groups = [{k: (tuple(v) if k in tuple_keys else v) for k, v in g.items()} for g in values["param_groups"]]
    return {"state": state, "param_groups": groups}


def rng_split() -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    tensors = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, cuda_state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"cuda.{i}"] = cuda_state
    kind, keys, position, has_gauss, cached = np.random.get_state()
    version, internal, gauss = random.getstate()
    values = {"python": [version, list(internal), gauss],
              "numpy": [kind, [int(k) for k in keys], int(position), int(has_gauss), float(cached)]}
    return tensors, values


def rng_restore(tensors: dict[str, torch.Tensor], values: dict[str, Any]) -> None:
    torch.set_rng_state(tensors["torch"])
    cuda = [tensors[k] for k in sorted((k for k in tensors if k.startswith("cuda.")), key=lambda k: int(k[5:]))]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda[:torch.cuda.device_count()])
    version, internal, gauss = values["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, position, has_gauss, cached = values["numpy"]
    np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), position, has_gauss, cached))


def _save_tensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    from safetensors.torch import save_file

    save_file(tensors, str(path))
    follow_umask(path)


def save(path: Path, parts: TrainingParts, rank: int, is_main: bool) -> None:
    """Every process calls this: the main one writes the shared state, each one its RNG state."""

    path.mkdir(parents=True, exist_ok=True)
    if is_main:
        model_state = {k: v.detach().cpu().contiguous().clone() for k, v in _unwrapped(parts.model).state_dict().items()}
        _save_tensors(model_state, path / MODEL_FILE)
        tensors, values = optimizer_split(parts.optimizer.state_dict())
        _save_tensors(tensors, path / OPTIMIZER_TENSORS)
        write_json_atomic(path / OPTIMIZER_VALUES, values)
        scheduler = parts.scheduler.state_dict() if parts.scheduler is not None else None
        write_json_atomic(path / SCHEDULER_FILE, _to_json(scheduler))
        if parts.scaler is not None:
            write_json_atomic(path / SCALER_FILE, _to_json(parts.scaler.state_dict()))
    rng_tensors, rng_values = rng_split()
    tensor_file, value_file = _rng_names(rank)
    _save_tensors(rng_tensors, path / tensor_file)
    write_json_atomic(path / value_file, rng_values)


def load(path: Path, parts: TrainingParts, rank: int, device: torch.device) -> None:
    """Restore `parts` and this process's RNG state from `path`; only safetensors and JSON are read."""
    from safetensors.torch import load_file

    tensor_file, value_file = _rng_names(rank)
    missing = [name for name in (*REQUIRED, tensor_file, value_file) if not (path / name).is_file()]
    if missing:
        raise DataError(f"{path} is not a checkpoint this klue reads (no {', '.join(missing)}); checkpoints of "
                        "older versions were pickles, which klue no longer loads because loading one can run "
                        f"code. Delete {path.parent} to start the run over", path)
    _unwrapped(parts.model).load_state_dict(load_file(str(path / MODEL_FILE), device=str(device)), strict=True)
    values = read_json_file(path / OPTIMIZER_VALUES, "a checkpoint file")
    parts.optimizer.load_state_dict(optimizer_join(load_file(str(path / OPTIMIZER_TENSORS)), values))
    scheduler = read_json_file(path / SCHEDULER_FILE, "a checkpoint file")
    if parts.scheduler is not None and scheduler is not None:
        parts.scheduler.load_state_dict(scheduler)
    if parts.scaler is not None and (path / SCALER_FILE).is_file():
        parts.scaler.load_state_dict(read_json_file(path / SCALER_FILE, "a checkpoint file"))
    rng_restore(load_file(str(path / tensor_file)), read_json_file(path / value_file, "a checkpoint file"))
