"""`klue benchmark`: tasks x models x seeds, resumable, failures recorded (see runner.py)."""

from klue.benchmark.cells import CellSpec, ModelFamily, choose_protocol, model_slug, run_cell
from klue.benchmark.runner import BenchmarkPlan, BenchmarkSummary, cell_done, run_benchmark

__all__ = ["BenchmarkPlan", "BenchmarkSummary", "CellSpec", "ModelFamily", "cell_done", "choose_protocol",
           "model_slug", "run_benchmark", "run_cell"]
