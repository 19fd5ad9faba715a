"""Learning curves where users already look: TensorBoard, MLflow or Weights & Biases, through accelerate's
trackers (`report_to=tensorboard,mlflow`). The results.json learning curve is written either way.

Each tracker writes under the run's `tracking/` directory where it has a directory notion (TensorBoard,
MLflow's file store when no MLFLOW_TRACKING_URI is set); W&B follows its own settings (WANDB_MODE=offline
keeps it on disk). A tracker whose package is missing is refused before training starts, with the install line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from klue.errors import DataError

TRACKERS = ("tensorboard", "mlflow", "wandb")
TRACKING_DIR = "tracking"
PROJECT = "klue"
_PACKAGES = {"tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb"}


def parse_report_to(text: str | None) -> list[str]:
    """`tensorboard,mlflow` -> the tracker names, each known and installed; None or "" or "none" -> []."""
    if text is None or text.strip().lower() in ("", "none"):
        return []
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in TRACKERS]
    if unknown:
        raise DataError(f"--report-to {text!r}: unknown tracker {', '.join(unknown)}; known: {', '.join(TRACKERS)}")
    from accelerate.utils import is_mlflow_available, is_tensorboard_available, is_wandb_available

    available = {"tensorboard": is_tensorboard_available, "mlflow": is_mlflow_available, "wandb": is_wandb_available}
    missing = [name for name in names if not available[name]()]
    if missing:
        packages = " ".join(_PACKAGES[name] for name in missing)
        raise DataError(f"--report-to {', '.join(missing)} needs the package {packages}: pip install {packages}")
    return list(dict.fromkeys(names))


def tracker_config(values: Mapping[str, Any]) -> dict[str, bool | int | float | str]:
    """Hyper-parameters as the trackers take them: scalars kept, None as "none", anything else as JSON."""
    out: dict[str, bool | int | float | str] = {}
    for key, value in values.items():
        if isinstance(value, (bool, int, float, str)):
            out[key] = value
        elif value is None:
            out[key] = "none"
        else:
            out[key] = json.dumps(value, sort_keys=True, default=str)
    return out


def tracking_dir(out_dir: Path) -> Path:
    return out_dir / TRACKING_DIR


def run_name(out_dir: Path) -> str:
    """The run's directory name: the same run resumed logs into the same tracker run."""
    return out_dir.resolve().name
