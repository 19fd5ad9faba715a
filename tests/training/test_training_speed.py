"""The training loop's speed levers keep its arithmetic: the fused AdamW kernel follows the learning curve of
the multi-tensor path step by step (same seed, same data order, dropout on), and length grouping, the one
lever that changes the order, is the default with the previous uniformly shuffled order one override away."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from klue import registry
from klue.protocols import ProtocolData
from klue.scoring import RunRequest
from klue.training.engine import adamw_kernel
from klue.training.recipes import Hyperparameters, resolve

SETTINGS = {"learning_rate": 3e-3, "max_steps": 6, "batch_size": 8, "max_len": 64, "evals_per_epoch": 0,
            "logging_steps": 1, "progress": False, "save_checkpoints": False, "group_by_length": False}


def test_adamw_kernel_is_fused_where_torch_has_it() -> None:
    assert adamw_kernel("auto", torch.device("cpu")) == {"fused": True}
    assert adamw_kernel("auto", torch.device("meta")) == {"foreach": True}
    assert adamw_kernel("foreach", torch.device("cpu")) == {"foreach": True}
    assert adamw_kernel("for_loop", torch.device("cpu")) == {"foreach": False}


def test_length_grouping_is_the_default_and_the_shuffled_order_an_override() -> None:
    class Config:
        hidden_size = 256

    assert Hyperparameters().group_by_length
    assert resolve("paper", "nli", Config(), {}).hyperparameters.group_by_length
    assert not resolve("paper", "nli", Config(), {"group_by_length": "false"}).hyperparameters.group_by_length


@pytest.mark.realdata
def test_fused_adamw_follows_the_multi_tensor_loss_curve(examples: Callable[[str], list[Any]],
                                                         tmp_path: Path) -> None:
    import klue.training
    from klue.models.tiny import make_tiny_model_dir

    torch.set_num_threads(1)
    records = examples("ynat")[:32]
    model = make_tiny_model_dir(tmp_path / "model", "bert", [r.title for r in records], vocab_size=500,
                                dropout=0.1, max_len=64)
    data = ProtocolData("local:tiny", False, "32 examples", records, records, None, ())
    curves = {}
    for impl in ("foreach", "fused"):
        results = klue.training.run(RunRequest(registry.get("ynat"), str(model), data, 5, tmp_path / impl),
                                    {**SETTINGS, "adamw_impl": impl})
        curves[impl] = [point.loss for point in results.learning_curve if point.loss is not None]
    assert len(curves["fused"]) == SETTINGS["max_steps"]
    assert curves["fused"][-1] < curves["fused"][0] * 0.95  # a curve that moves: the updates matter
    assert curves["fused"] == pytest.approx(curves["foreach"], rel=1e-5)
