"""benchmarks/gpu_throughput.py, the prepared GPU benchmark, runs end to end at tiny size on the CPU: every
task shape trains and infers, the LLM backend scores, and the figures are consistent with each other."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_throughput.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_throughput", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_tiny_run_measures_every_shape_and_the_llm(tmp_path: Path) -> None:
    script = load_script()
    out = tmp_path / "gpu.json"
    assert script.main(["--sizes", "tiny", "--device", "cpu", "--dtype", "fp32", "--steps", "2", "--warmup", "1",
                        "--llm-requests", "3", "--peak-tflops", "1.0", "--out", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = report["measurements"]
    kinds = [(m["kind"], m["task"]) for m in rows]
    assert kinds == [(k, t) for t in ("nli", "ner", "mrc") for k in ("train", "infer")] + [("llm-loglik", "nli")]
    for m in rows:
        assert m["examples_per_s"] > 0 and m["peak_memory_gb"] > 0
        if m["kind"] != "llm-loglik":
            assert m["tokens_per_s"] == pytest.approx(m["examples_per_s"] * m["seq_len"])
        assert m["mfu"] == pytest.approx(m["tflops"] / 1.0)
    assert rows[-1]["steps"] == 9  # three examples, three choices each


def test_paper_shapes_come_from_the_recipe() -> None:
    script = load_script()
    assert script.paper_shape("nli", "base") == (128, 32)
    assert script.paper_shape("mrc", "base")[0] == 510
    assert script.paper_shape("ner", "large")[1] == 8


def test_unknown_device_has_no_mfu_without_a_peak() -> None:
    import torch

    script = load_script()
    assert script.device_peak_tflops(torch.device("cpu"), None) is None
    assert script.device_peak_tflops(torch.device("cpu"), 2.5) == 2.5
