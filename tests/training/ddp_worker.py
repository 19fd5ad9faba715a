"""Run by torchrun from test_training_distributed.py: the training runs of a pickled list of specs, one after
the other in the same process group (one launch instead of one per run: each costs seconds of start-up)."""

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
    for spec in pickle.loads(Path(sys.argv[1]).read_bytes()):
        klue.training.run(RunRequest(registry.get(spec["task"]), spec["model"], spec["data"], spec["seed"],
                                     Path(spec["out"])), spec["overrides"])


if __name__ == "__main__":
    main()
