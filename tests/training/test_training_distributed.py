"""Two CPU processes (DDP over gloo) train to the same weights and metrics as one process.

The processes are started by torchrun (`accelerate launch --cpu` starts several CPU processes only
through mpirun); accelerate picks the distributed setting up from torchrun's environment.

The loss is normalised over the whole global batch, so splitting a batch over processes changes only the
order of floating-point sums; NER is used because its loss items (tokens) split unevenly over processes,
and max_len is small so that long sentences are windowed and evaluation is sharded and gathered."""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from shared_builds import built_once

from klue import registry
from klue.protocols import ProtocolData
from klue.scoring import RunRequest

# fp32: these tests check that DDP splits the work without changing it, which bf16 rounding (what
# mixed_precision=auto picks on a CPU with bf16 units) would blur beyond their tolerances.
SETTINGS = {"learning_rate": 3e-3, "epochs": 2, "batch_size": 8, "warmup_ratio": 0.1, "max_len": 48,
            "eval_steps": 4, "logging_steps": 2, "progress": False, "save_checkpoints": False,
            "mixed_precision": "no"}
WORKER = Path(__file__).with_name("ddp_worker.py")


def ner_spec(examples: Callable[[str], list[Any]], tiny_model: Callable[[str, str], Path], folder: Path
             ) -> dict[str, Any]:
    records = examples("ner")[:30]  # 30: the last global batch is short, so one process gets fewer items
    data = ProtocolData("local:ner-30", False, "30 NER dev sentences", records, records, None, ())
    model = shutil.copytree(tiny_model("ner", "bert"), folder / "ner-model")  # where every worker finds it
    return {"task": "ner", "model": str(model), "data": data, "seed": 5, "out": str(folder / "ner"),
            "overrides": dict(SETTINGS)}


def wos_spec(klue_data_dir: Path, shared_data_dir: Path, folder: Path) -> dict[str, Any] | None:
    """4 real WoS turns and 4 synthetic ones with no value to generate; None without the WoS dev sample."""
    from klue import protocols
    from klue.io.locate import roots_from
    from klue.models.tiny import make_tiny_model_dir
    from klue.tasks.wos.records import WosDialogue, WosUtterance, expand_turns

    if not (shared_data_dir / "klue-partial" / "wos-v1.1").is_dir():
        return None
    roots = roots_from(klue_data_dir, shared_data_dir)
    real = protocols.resolve(registry.get("wos"), "local:wos-dev-sample10", roots).train[:4]
    gate_only = expand_turns([WosDialogue(f"synthetic-{k}", ("숙소",), (WosUtterance(
        "user", f"{k}명 묵을 숙소는 주차만 되면 종류는 상관없어요", ("숙소-주차 가능-yes", "숙소-종류-dontcare")),))
        for k in range(4)])
    records = [x for pair in zip(real, gate_only) for x in pair]
    data = ProtocolData("local:wos-8", False, "4 real and 4 synthetic WoS turns", records, records, None, (),
                        roots)
    texts = [u.text for t in records for u in t.dialogue.dialogue]
    model = make_tiny_model_dir(folder / "wos-model", "bert", texts, tokenizer="bpe", vocab_size=800, dropout=0.0)
    return {"task": "wos", "model": str(model), "data": data, "seed": 3, "out": str(folder / "wos"),
            "overrides": {**SETTINGS, "batch_size": 2, "epochs": 1, "max_len": 128}}


@pytest.fixture(scope="module")
def two_processes(examples: Callable[[str], list[Any]], tiny_model: Callable[[str, str], Path], klue_data_dir: Path,
                  shared_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The runs of both tests by task name, each already trained in two DDP processes: one torchrun
    launch for both (a launch starts three Python processes, seconds of CPU each), once per session."""
    specs: dict[str, dict[str, Any]] = {}

    def build(folder: Path) -> None:
        found = [ner_spec(examples, tiny_model, folder), wos_spec(klue_data_dir, shared_data_dir, folder)]
        runs = [spec for spec in found if spec is not None]
        run_in_two_processes(runs, folder)
        (folder / "specs.pkl").write_bytes(pickle.dumps(runs))

    folder = built_once(tmp_path_factory, "ddp-runs", build)
    for spec in pickle.loads((folder / "specs.pkl").read_bytes()):
        specs[spec["task"]] = spec
    return specs


def run_in_two_processes(specs: list[dict[str, Any]], tmp_path: Path) -> None:
    """`klue.training.run(RunRequest(**spec))` of each spec in turn, in two DDP processes (torchrun, gloo)."""
    spec_file = tmp_path / "spec.pkl"
    spec_file.write_bytes(pickle.dumps(specs))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "TOKENIZERS_PARALLELISM": "false",
           "ACCELERATE_USE_CPU": "true"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(WORKER),
               str(spec_file)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]


def run_in_one_process(spec: dict[str, Any], out: Path) -> Any:
    import klue.training

    torch.set_num_threads(1)
    request = RunRequest(registry.get(spec["task"]), spec["model"], spec["data"], spec["seed"], out)
    return klue.training.run(request, dict(spec["overrides"]))


def assert_same_training(single: Any, one: Path, two: Path) -> Any:
    """The two-process run in `two` has the losses and best weights of the one-process `single` (in `one`);
    returns its results."""
    from safetensors.torch import load_file

    from klue.results import read_results

    double = read_results(two / "results.json")
    assert double.training.num_processes == 2
    losses_one = [p.loss for p in single.learning_curve if p.loss is not None]
    losses_two = [p.loss for p in double.learning_curve if p.loss is not None]
    assert losses_two == pytest.approx(losses_one, rel=1e-4)
    weights_one = load_file(str(one / "best" / "model.safetensors"))
    weights_two = load_file(str(two / "best" / "model.safetensors"))
    for name in weights_one:
        torch.testing.assert_close(weights_two[name], weights_one[name], rtol=1e-4, atol=1e-5)
    return double


@pytest.mark.slow
@pytest.mark.realdata
def test_two_processes_match_one(two_processes: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    spec = two_processes["ner"]
    single = run_in_one_process(spec, tmp_path / "one")
    double = assert_same_training(single, tmp_path / "one", Path(spec["out"]))
    assert double.scores == pytest.approx(single.scores, abs=1e-6)
    assert (tmp_path / "one" / "predictions.jsonl").read_text() == (Path(spec["out"]) / "predictions.jsonl").read_text()


@pytest.mark.slow
@pytest.mark.realdata
def test_wos_tracker_under_ddp_matches_one_process(two_processes: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """Half of the turns have no value to generate, so some process steps run no value decoder: DDP must
    still find a gradient for every parameter, and the weights match one process."""
    if "wos" not in two_processes:
        pytest.skip("the WoS dev sample is absent")
    spec = two_processes["wos"]
    single = run_in_one_process(spec, tmp_path / "one")
    assert_same_training(single, tmp_path / "one", Path(spec["out"]))
