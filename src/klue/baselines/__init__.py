"""CPU baselines that need no pretrained model, one module per task (see `klue.baselines.base`).

``klue.baselines.run(task, protocol_data, seed, out_dir, mode="official") -> Results`` trains the
task's baseline, writes ``predictions.jsonl`` and ``results.json`` into ``out_dir`` and returns the
results. The task modules are imported only when a task is run, so importing this package is cheap.
"""

from __future__ import annotations

from klue.baselines.base import (
    Baseline,
    NoBaselineError,
    available_baselines,
    baseline_module,
    make_baseline,
    run,
)

__all__ = ["Baseline", "NoBaselineError", "available_baselines", "baseline_module", "make_baseline", "run"]
