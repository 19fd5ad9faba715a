"""Run by `accelerate launch` from test_training_distributed.py: one training run from a pickled spec."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import torch

import klue.training
from klue import registry
from klue.scoring import RunRequest


def main() -> None:
    torch.set_num_threads(1)
    spec = pickle.loads(Path(sys.argv[1]).read_bytes())
    klue.training.run(RunRequest(registry.get(spec["task"]), spec["model"], spec["data"], spec["seed"], Path(spec["out"])),
                      spec["overrides"])


if __name__ == "__main__":
    main()
