"""Two CPU processes (DDP over gloo) train to the same weights and metrics as one process.

The processes are started by torchrun (`accelerate launch --cpu` starts several CPU processes only
through mpirun); accelerate picks the distributed setting up from torchrun's environment.

The loss is normalised over the whole global batch, so splitting a batch over processes changes only the
order of floating-point sums; NER is used because its loss items (tokens) split unevenly over processes,
and max_len is small so that long sentences are windowed and evaluation is sharded and gathered."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from klue import registry
from klue.protocols import ProtocolData
from klue.scoring import RunRequest

# fp32: these tests check that DDP splits the work without changing it, which bf16 rounding (what
# mixed_precision=auto picks on a CPU with bf16 units) would blur beyond their tolerances.
SETTINGS = {"learning_rate": 3e-3, "epochs": 2, "batch_size": 8, "warmup_ratio": 0.1, "max_len": 48,
            "eval_steps": 4, "logging_steps": 2, "progress": False, "save_checkpoints": False,
            "mixed_precision": "no"}
WORKER = Path(__file__).with_name("ddp_worker.py")


def run_in_two_processes(spec: dict[str, Any], tmp_path: Path) -> None:
    """`klue.training.run(RunRequest(**spec))` in two DDP processes (torchrun, gloo)."""
    spec_file = tmp_path / "spec.pkl"
    spec_file.write_bytes(pickle.dumps(spec))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "TOKENIZERS_PARALLELISM": "false",
           "ACCELERATE_USE_CPU": "true"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(WORKER),
               str(spec_file)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]


def assert_same_training(single: Any, tmp_path: Path) -> Any:
    """The two-process run under tmp_path/two has the losses and best weights of the one-process `single`
    (tmp_path/one); returns its results."""
    from safetensors.torch import load_file

    from klue.results import read_results

    double = read_results(tmp_path / "two" / "results.json")
    assert double.training.num_processes == 2
    losses_one = [p.loss for p in single.learning_curve if p.loss is not None]
    losses_two = [p.loss for p in double.learning_curve if p.loss is not None]
    assert losses_two == pytest.approx(losses_one, rel=1e-4)
    weights_one = load_file(str(tmp_path / "one" / "best" / "model.safetensors"))
    weights_two = load_file(str(tmp_path / "two" / "best" / "model.safetensors"))
    for name in weights_one:
        torch.testing.assert_close(weights_two[name], weights_one[name], rtol=1e-4, atol=1e-5)
    return double


@pytest.mark.slow
@pytest.mark.realdata
def test_two_processes_match_one(examples: Callable[[str], list[Any]], tiny_model: Callable[[str, str], Path],
                                 tmp_path: Path) -> None:

    import klue.training

    torch.set_num_threads(1)
    task = registry.get("ner")
    records = examples("ner")[:30]  # 30: the last global batch is short, so one process gets fewer items
    data = ProtocolData("local:ner-30", False, "30 NER dev sentences", records, records, None, ())
    model = str(tiny_model("ner", "bert"))
    single = klue.training.run(RunRequest(task, model, data, 5, tmp_path / "one"), dict(SETTINGS))

    run_in_two_processes({"task": "ner", "model": model, "data": data, "seed": 5, "out": str(tmp_path / "two"),
                          "overrides": dict(SETTINGS)}, tmp_path)

    double = assert_same_training(single, tmp_path)
    assert double.scores == pytest.approx(single.scores, abs=1e-6)
    assert (tmp_path / "one" / "predictions.jsonl").read_text() == (tmp_path / "two" / "predictions.jsonl").read_text()


@pytest.mark.slow
@pytest.mark.realdata
def test_wos_tracker_under_ddp_matches_one_process(klue_data_dir: Path, shared_data_dir: Path,
                                                    tmp_path: Path) -> None:
    """Half of the turns have no value to generate, so some process steps run no value decoder: DDP must
    still find a gradient for every parameter, and the weights match one process."""

    import klue.training
    from klue import protocols
    from klue.io.locate import roots_from
    from klue.models.tiny import make_tiny_model_dir
    from klue.tasks.wos.records import WosDialogue, WosUtterance, expand_turns

    torch.set_num_threads(1)
    task = registry.get("wos")
    roots = roots_from(klue_data_dir, shared_data_dir)
    if not (shared_data_dir / "klue-partial" / "wos-v1.1").is_dir():
        pytest.skip("the WoS dev sample is absent")
    real = protocols.resolve(task, "local:wos-dev-sample10", roots).train[:4]
    gate_only = expand_turns([WosDialogue(f"synthetic-{k}", ("숙소",), (WosUtterance(
        "user", f"{k}명 묵을 숙소는 주차만 되면 종류는 상관없어요", ("숙소-주차 가능-yes", "숙소-종류-dontcare")),))
        for k in range(4)])
    records = [x for pair in zip(real, gate_only) for x in pair]
    data = ProtocolData("local:wos-8", False, "4 real and 4 synthetic WoS turns", records, records, None, (),
                        roots)
    texts = [u.text for t in records for u in t.dialogue.dialogue]
    model = str(make_tiny_model_dir(tmp_path / "model", "bert", texts, tokenizer="bpe", vocab_size=800,
                                   dropout=0.0))
    settings = {**SETTINGS, "batch_size": 2, "epochs": 1, "max_len": 128}
    single = klue.training.run(RunRequest(task, model, data, 3, tmp_path / "one"), dict(settings))
    run_in_two_processes({"task": "wos", "model": model, "data": data, "seed": 3, "out": str(tmp_path / "two"),
                          "overrides": dict(settings)}, tmp_path)

    assert_same_training(single, tmp_path)
