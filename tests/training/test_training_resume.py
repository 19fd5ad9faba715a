"""A run interrupted mid-training and started again resumes exactly: the same losses step by step, the
same final weights, predictions and metrics as a run that was never interrupted (dropout on, so the
restored RNG states matter), whichever checkpoint policy (epoch end, step budget, time budget) wrote the
state it resumes from; and the state is not written at every evaluation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from klue import registry
from klue.protocols import ProtocolData
from klue.results import Results
from klue.scoring import RunRequest
from klue.training import checkpoint, state_files

SETTINGS = {"learning_rate": 3e-3, "epochs": 3, "batch_size": 16, "warmup_ratio": 0.1, "max_len": 64,
            "eval_steps": 3, "logging_steps": 3, "progress": False}  # 12 steps, 4 an epoch; evaluations at 3, 6, 9


class Crash(RuntimeError):
    pass


def crash_after(step: int) -> Callable[[int], None]:
    def hook(done: int) -> None:
        if done == step:
            raise Crash(f"simulated crash after step {step}")

    return hook


Straight = tuple[Any, Path, ProtocolData[Any], Results, Path]


@pytest.fixture(scope="module")
def straight(examples: Callable[[str], list[Any]], tmp_path_factory: pytest.TempPathFactory) -> Straight:
    """(task, model, data, results, output directory) of a run never interrupted."""
    import klue.training
    from klue.models.tiny import make_tiny_model_dir

    torch.set_num_threads(1)
    tmp = tmp_path_factory.mktemp("resume")
    records = examples("ynat")
    model = make_tiny_model_dir(tmp / "model", "bert", [r.title for r in records], vocab_size=1000,
                                dropout=0.1, max_len=64)
    data = ProtocolData("local:memorise-64", False, "64 examples", records, records, None, ())
    task = registry.get("ynat")
    results = klue.training.run(RunRequest(task, str(model), data, 3, tmp / "straight"), dict(SETTINGS))
    return task, model, data, results, tmp / "straight"


def assert_same_run(resumed: Results, straight: Results, resumed_dir: Path, straight_dir: Path) -> None:
    from safetensors.torch import load_file

    assert resumed.scores == straight.scores
    assert len(resumed.learning_curve) == len(straight.learning_curve)
    for point_a, point_b in zip(resumed.learning_curve, straight.learning_curve):
        a, b = point_a.values(), point_b.values()
        assert (point_a.step, point_a.epoch, a.keys()) == (point_b.step, point_b.epoch, b.keys())
        for key in a:
            if key != "examples_per_s":
                assert a[key] == b[key], key
    weights_a = load_file(str(resumed_dir / "best" / "model.safetensors"))
    weights_b = load_file(str(straight_dir / "best" / "model.safetensors"))
    assert weights_a.keys() == weights_b.keys()
    for name in weights_a:
        assert torch.equal(weights_a[name], weights_b[name]), name  # bit for bit
    assert (resumed_dir / "predictions.jsonl").read_text() == (straight_dir / "predictions.jsonl").read_text()
    assert not (resumed_dir / "checkpoints").exists()  # removed once the run finished


@pytest.mark.realdata
@pytest.mark.parametrize(("policy", "crash", "saved"), [
    ({}, 6, 4),  # the epoch end (4), not the evaluation at 6: the default 10-minute budget has not run out
    ({"checkpoint_steps": 5, "checkpoint_minutes": None}, 7, 5),  # neither logged nor evaluated: a pending loss
    ({"checkpoint_minutes": 1e-9}, 7, 7),  # a time budget that runs out at every step
], ids=["epoch-end", "step-budget", "time-budget"])
def test_interrupted_run_resumes_exactly(straight: Straight, tmp_path: Path, policy: dict[str, Any], crash: int,
                                         saved: int) -> None:
    import klue.training

    task, model, data, straight_results, straight_dir = straight
    settings = {**SETTINGS, **policy}
    with pytest.raises(Crash):
        klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "resumed"), settings, on_step=crash_after(crash))
    latest = checkpoint.latest_checkpoint(tmp_path / "resumed")
    assert latest is not None and checkpoint.read_state(latest).step == saved
    assert (latest / state_files.MODEL_FILE).is_file()
    resumed = klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "resumed"), settings)

    assert resumed.training is not None and resumed.training.resumed_from_steps == [saved]
    assert_same_run(resumed, straight_results, tmp_path / "resumed", straight_dir)


@pytest.mark.realdata
def test_a_finished_run_leaves_a_record_not_the_state(straight: Straight, tmp_path: Path) -> None:
    """Killed after its last step, a run has written a small record (best/ holds its model): started again,
    it trains nothing and reports what the uninterrupted run does."""
    import klue.training

    task, model, data, straight_results, straight_dir = straight
    assert straight_results.training is not None
    # One full state in 12 steps (the epoch ends at 4 and 8; the evaluations at 3, 6, 9, 12 write none).
    assert straight_results.training.checkpoints_written == 2
    assert straight_results.training.best_written is not None and straight_results.training.best_written >= 1
    with pytest.raises(Crash):
        klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "run"), dict(SETTINGS), on_step=crash_after(12))
    latest = checkpoint.latest_checkpoint(tmp_path / "run")
    assert latest is not None and [p.name for p in latest.iterdir()] == [checkpoint.STATE_FILE]
    assert checkpoint.read_state(latest).finished
    again = klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "run"), dict(SETTINGS))
    assert again.training is not None and again.training.resumed_from_steps == [12]
    assert_same_run(again, straight_results, tmp_path / "run", straight_dir)


def _small_run(examples: Callable[[str], list[Any]], tmp_path: Path) -> tuple[Any, Path, ProtocolData[Any],
                                                                             dict[str, Any]]:
    """32 YNAT titles, a tiny model, 4 steps (one epoch) with checkpoints at 2: (task, model, data, settings)."""
    from klue.models.tiny import make_tiny_model_dir

    torch.set_num_threads(1)
    records = examples("ynat")[:32]
    model = make_tiny_model_dir(tmp_path / "model", "bert", [r.title for r in records], vocab_size=500, max_len=64)
    data = ProtocolData("local:tiny", False, "32 examples", records, records, None, ())
    return registry.get("ynat"), model, data, {**SETTINGS, "epochs": 1, "batch_size": 8, "eval_steps": 2,
                                               "checkpoint_steps": 2}


@pytest.mark.realdata
def test_keep_checkpoints_keeps_the_final_state(examples: Callable[[str], list[Any]], tmp_path: Path) -> None:
    import klue.training

    task, model, data, settings = _small_run(examples, tmp_path)
    results = klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "run"), {**settings, "keep_checkpoints": True})
    latest = checkpoint.latest_checkpoint(tmp_path / "run")
    assert latest is not None and (latest / state_files.MODEL_FILE).is_file()
    state = checkpoint.read_state(latest)
    assert (state.step, state.finished) == (4, False)
    assert results.training is not None and results.training.checkpoints_written == 2  # at 2 and after the last


@pytest.mark.realdata
def test_a_checkpoint_of_another_run_is_refused(examples: Callable[[str], list[Any]], tmp_path: Path) -> None:
    import klue.training
    from klue.errors import DataError

    task, model, data, settings = _small_run(examples, tmp_path)
    with pytest.raises(Crash):
        klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "run"), settings, on_step=crash_after(3))
    with pytest.raises(DataError, match="different run"):
        klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "run"), {**settings, "learning_rate": 1e-3})
    # resume=false starts over instead
    fresh = klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "run"), {**settings, "resume": False})
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

    task, model, data, settings = _small_run(examples, tmp_path)
    marker = tmp_path / "code-ran"
    with pytest.raises(Crash):
        klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "run"), settings, on_step=crash_after(3))
    latest = checkpoint.latest_checkpoint(tmp_path / "run")
    assert latest is not None
    assert not list(latest.glob("*.pkl")) and not list(latest.glob("*.bin"))  # nothing klue writes is a pickle
    _plant_pickles(latest, marker)
    resumed = klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "run"), settings)
    assert resumed.training.resumed_from_steps == [2]
    assert not marker.exists()

    # A checkpoint in the old pickle layout is refused with a way out, and still nothing is unpickled.
    with pytest.raises(Crash):
        klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "old"), settings, on_step=crash_after(3))
    old = checkpoint.latest_checkpoint(tmp_path / "old")
    assert old is not None
    for name in state_files.REQUIRED:
        (old / name).unlink()
    _plant_pickles(old, marker)
    with pytest.raises(DataError, match="no longer loads"):
        klue.training.run(RunRequest(task, str(model), data, 3, tmp_path / "old"), settings)
    assert not marker.exists()
