"""A run interrupted mid-training and started again resumes exactly: the same losses step by step, the
same final weights, predictions and metrics as a run that was never interrupted (dropout on, so the
restored RNG states matter)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from klue import registry
from klue.protocols import ProtocolData
from klue.training import checkpoint

SETTINGS = {"learning_rate": 3e-3, "epochs": 3, "batch_size": 16, "warmup_ratio": 0.1, "max_len": 64,
            "eval_steps": 4, "logging_steps": 3, "progress": False}  # 12 steps; checkpoints at 4 and 8


class Crash(RuntimeError):
    pass


def crash_after(step: int) -> Callable[[int], None]:
    def hook(done: int) -> None:
        if done == step:
            raise Crash(f"simulated crash after step {step}")

    return hook


@pytest.mark.realdata
def test_interrupted_run_resumes_exactly(examples: Callable[[str], list[Any]], tmp_path: Path) -> None:
    from safetensors.torch import load_file

    import klue.training
    from klue.models.tiny import make_tiny_model_dir

    torch.set_num_threads(1)
    task = registry.get("ynat")
    records = examples("ynat")
    model = make_tiny_model_dir(tmp_path / "model", "bert", [r.title for r in records], vocab_size=1000,
                                dropout=0.1, max_len=64)
    data = ProtocolData("local:memorise-64", False, "64 examples", records, records, None, ())

    straight = klue.training.run(task, str(model), data, 3, tmp_path / "straight", dict(SETTINGS))

    with pytest.raises(Crash):
        klue.training.run(task, str(model), data, 3, tmp_path / "resumed", dict(SETTINGS), on_step=crash_after(6))
    latest = checkpoint.latest_checkpoint(tmp_path / "resumed")
    assert latest is not None and checkpoint.read_state(latest).step == 4
    resumed = klue.training.run(task, str(model), data, 3, tmp_path / "resumed", dict(SETTINGS))

    assert resumed.training.resumed_from_steps == [4]
    assert resumed.scores == pytest.approx(straight.scores, abs=1e-9)
    assert len(resumed.learning_curve) == len(straight.learning_curve)
    for point_a, point_b in zip(resumed.learning_curve, straight.learning_curve):
        a, b = point_a.values(), point_b.values()
        assert (point_a.step, point_a.epoch, a.keys()) == (point_b.step, point_b.epoch, b.keys())
        for key in a:
            if key != "examples_per_s":
                assert a[key] == pytest.approx(b[key], rel=1e-6, abs=1e-7), key
    weights_a = load_file(str(tmp_path / "straight" / "best" / "model.safetensors"))
    weights_b = load_file(str(tmp_path / "resumed" / "best" / "model.safetensors"))
    assert weights_a.keys() == weights_b.keys()
    for name in weights_a:
        torch.testing.assert_close(weights_a[name], weights_b[name], rtol=1e-6, atol=1e-7)
    assert (tmp_path / "straight" / "predictions.jsonl").read_text() == \
        (tmp_path / "resumed" / "predictions.jsonl").read_text()
    assert not (tmp_path / "resumed" / "checkpoints").exists()  # removed once the run finished


def _small_run(examples: Callable[[str], list[Any]], tmp_path: Path) -> tuple[Any, Path, ProtocolData[Any],
                                                                             dict[str, Any]]:
    """32 YNAT titles, a tiny model, 4 steps with checkpoints at 2: (task, model, data, settings)."""
    from klue.models.tiny import make_tiny_model_dir

    torch.set_num_threads(1)
    records = examples("ynat")[:32]
    model = make_tiny_model_dir(tmp_path / "model", "bert", [r.title for r in records], vocab_size=500, max_len=64)
    data = ProtocolData("local:tiny", False, "32 examples", records, records, None, ())
    return registry.get("ynat"), model, data, {**SETTINGS, "epochs": 1, "batch_size": 8, "eval_steps": 2}


@pytest.mark.realdata
def test_a_checkpoint_of_another_run_is_refused(examples: Callable[[str], list[Any]], tmp_path: Path) -> None:
    import klue.training
    from klue.errors import DataError

    task, model, data, settings = _small_run(examples, tmp_path)
    with pytest.raises(Crash):
        klue.training.run(task, str(model), data, 3, tmp_path / "run", settings, on_step=crash_after(3))
    with pytest.raises(DataError, match="different run"):
        klue.training.run(task, str(model), data, 3, tmp_path / "run", {**settings, "learning_rate": 1e-3})
    # resume=false starts over instead
    fresh = klue.training.run(task, str(model), data, 3, tmp_path / "run", {**settings, "resume": False})
    assert fresh.training.resumed_from_steps == []


class _Payload:
    """Unpickling this creates `marker`: a stand-in for code a crafted checkpoint would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.touch, (self.marker,))


def _plant_pickles(checkpoint_dir: Path, marker: Path) -> None:
    import pickle

    # The names accelerate's save_state writes, each a pickle that would run code when loaded.
    for name in ("custom_checkpoint_0.pkl", "random_states_0.pkl", "optimizer.bin", "scheduler.bin", "scaler.pt"):
        (checkpoint_dir / name).write_bytes(pickle.dumps(_Payload(marker)))


@pytest.mark.realdata
def test_resume_never_unpickles_a_checkpoint(examples: Callable[[str], list[Any]], tmp_path: Path) -> None:
    import klue.training
    from klue.errors import DataError
    from klue.training import state_files

    task, model, data, settings = _small_run(examples, tmp_path)
    marker = tmp_path / "code-ran"
    with pytest.raises(Crash):
        klue.training.run(task, str(model), data, 3, tmp_path / "run", settings, on_step=crash_after(3))
    latest = checkpoint.latest_checkpoint(tmp_path / "run")
    assert latest is not None
    assert not list(latest.glob("*.pkl")) and not list(latest.glob("*.bin"))  # nothing klue writes is a pickle
    _plant_pickles(latest, marker)
    resumed = klue.training.run(task, str(model), data, 3, tmp_path / "run", settings)
    assert resumed.training.resumed_from_steps == [2]
    assert not marker.exists()

    # A checkpoint in the old pickle layout is refused with a way out, and still nothing is unpickled.
    with pytest.raises(Crash):
        klue.training.run(task, str(model), data, 3, tmp_path / "old", settings, on_step=crash_after(3))
    old = checkpoint.latest_checkpoint(tmp_path / "old")
    assert old is not None
    for name in state_files.REQUIRED:
        (old / name).unlink()
    _plant_pickles(old, marker)
    with pytest.raises(DataError, match="no longer loads"):
        klue.training.run(task, str(model), data, 3, tmp_path / "old", settings)
    assert not marker.exists()
