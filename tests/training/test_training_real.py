"""Fine-tuning a real pretrained encoder (multilingual-e5-small, 118M parameters, a 250k vocabulary): its
loss falls, its predictions score through the judge, `klue predict` applies its best/, and a run killed
after a checkpoint resumes to the same weights bit for bit. One tiny fine-tune (16 YNAT titles, 32 tokens,
2 steps) serves every test; skipped, with the reason, where ../shared/tools cannot provide the model."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from shared_builds import built_once

from klue import registry
from klue.protocols import ProtocolData
from klue.results import Results, read_results
from klue.scoring import RunRequest
from klue.training import checkpoint
from real_models import me5_directory

# 1 step an epoch (all 16 titles), 2 epochs: the loss logged once per epoch, one evaluation, at the end only; a
# step costs the optimizer's update of all 118M parameters whatever the batch, so 2 steps, not 4 of 8 titles.
# The straight run writes no resume state (it changes nothing that the run computes).
SETTINGS = {"learning_rate": 1e-4, "epochs": 2, "batch_size": 16, "warmup_ratio": 0.0, "max_len": 32,
            "evals_per_epoch": 0, "logging_steps": 1, "progress": False}


class Crash(RuntimeError):
    pass


Finetuned = tuple[Path, ProtocolData[Any], Results, Path]


@pytest.fixture(scope="module")
def finetuned(examples: Callable[[str], list[Any]], tmp_path_factory: pytest.TempPathFactory) -> Finetuned:
    """(model, data, results, output directory) of one uninterrupted fine-tune, made once per session
    (`built_once`: the xdist workers that run this module's tests share it)."""
    import klue.training

    model, why = me5_directory()
    if model is None:
        pytest.skip(why)
    torch.set_num_threads(1)
    records = examples("ynat")[::4]  # 16 titles over the 7 classes (the examples come class by class)
    data = ProtocolData("local:memorise-16", False, "16 examples", records, records, None, ())

    def build(folder: Path) -> None:
        klue.training.run(RunRequest(registry.get("ynat"), str(model), data, 7, folder / "straight"),
                          {**SETTINGS, "save_checkpoints": False})

    out = built_once(tmp_path_factory, "real-ynat-finetune", build) / "straight"
    return model, data, read_results(out / "results.json"), out


@pytest.mark.slow  # the module's real fine-tune runs for the first of them
@pytest.mark.realdata
def test_the_loss_falls_and_the_predictions_are_judged(finetuned: Finetuned) -> None:
    _, data, results, out = finetuned
    losses = [p.loss for p in results.learning_curve if p.loss is not None]
    assert len(losses) == 2 and losses[1] < losses[0], losses  # epoch 2's mean loss below epoch 1's
    assert results.status == "ok" and results.n_eval == len(data.eval) == 16
    assert set(results.scores) == {"macro_f1", "accuracy"}
    lines = (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 16
    # The judge's accuracy is what the prediction file says.
    gold = {r.guid: r.label for r in data.eval}
    hits = sum(gold[obj["guid"]] == obj["label"] for obj in map(json.loads, lines))
    assert results.scores["accuracy"] == pytest.approx(100 * hits / 16)


@pytest.mark.slow  # the module's real fine-tune runs for the first of them
@pytest.mark.realdata
def test_klue_predict_applies_best(finetuned: Finetuned, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from klue.cli import app

    _, data, _, out = finetuned
    titles = tmp_path / "titles.json"
    titles.write_text(json.dumps([{"guid": r.guid, "title": r.title, "label": r.label} for r in data.eval],
                                 ensure_ascii=False), encoding="utf-8")
    done = CliRunner().invoke(app, ["predict", "--task", "ynat", "--model", str(out / "best"), "--input",
                                    str(titles), "--input-format", "ynat-resplit", "--output",
                                    str(tmp_path / "p.jsonl"), "--cpu"])
    assert done.exit_code == 0, done.output
    labels = [json.loads(line)["label"] for line in (tmp_path / "p.jsonl").read_text(encoding="utf-8").splitlines()]
    assert labels == [json.loads(line)["label"] for line in
                      (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.mark.longest(seconds=95)  # about 70 s, and the session-shared fine-tune (25 s) it waits for
@pytest.mark.realdata
def test_a_killed_run_resumes_to_the_same_weights(finetuned: Finetuned, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    import klue.training

    model, data, straight, straight_dir = finetuned

    def crash(step: int) -> None:
        if step == 1:
            raise Crash("killed after step 1")

    with pytest.raises(Crash):
        klue.training.run(RunRequest(registry.get("ynat"), str(model), data, 7, tmp_path / "run"), dict(SETTINGS), on_step=crash)
    latest = checkpoint.latest_checkpoint(tmp_path / "run")
    assert latest is not None and checkpoint.read_state(latest).step == 1  # the end of epoch 1
    resumed = klue.training.run(RunRequest(registry.get("ynat"), str(model), data, 7, tmp_path / "run"), dict(SETTINGS))
    assert resumed.training is not None and resumed.training.resumed_from_steps == [1]
    assert resumed.scores == straight.scores
    assert [p.loss for p in resumed.learning_curve] == [p.loss for p in straight.learning_curve]
    weights_a = load_file(str(tmp_path / "run" / "best" / "model.safetensors"))
    weights_b = load_file(str(straight_dir / "best" / "model.safetensors"))
    assert weights_a.keys() == weights_b.keys()
    assert all(torch.equal(weights_a[name], weights_b[name]) for name in weights_a)
