"""GGUF files read once (docs/llm.md, "GGUF files in process"): `hf:FILE.gguf` is loaded through transformers'
GGUF support, which reads the file's fields three times and builds a tensor-name map once per tensor: a process
that loads the 98 MB SmolLM2-135M and scores three prompts spends 42 CPU-s here, 13 with the same float32 weights
as safetensors (benchmarks/RESULTS.md, "GGUF files in process (issue 40)"). So the first load
writes what transformers made of the file (float32 safetensors, config, tokenizer) to a cache directory named
by the file's sha256 and the transformers version, and every later load reads that directory.

Hand-written: transformers refuses `save_pretrained` on a GGUF-loaded model, so the weights are written with
safetensors' `save_model` (which keeps tied tensors tied) and the config and tokenizer with their own savers.
The directory appears whole or not at all (written beside, then renamed), and a file lock beside it lets one
process convert a file while the others wait for its copy.
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.llm.backends import base

# The cache's folder, or "off" to read the GGUF file every time (nothing written). Default: the user's cache
# folder (platformdirs), `gguf/` inside it.
CACHE_ENV = "KLUE_GGUF_CACHE"
OFF = "off"
# What a converted directory holds; a new layout is a new key, never a reinterpretation of an old directory.
LAYOUT = 1
WEIGHTS = "model.safetensors"
COMPLETE = "klue_gguf.json"


@dataclass(frozen=True)
class Converted:
    """Where the weights were read from: `directory` is None when the cache is off."""

    directory: Path | None
    written: bool  # this load converted the file (the first load)


def cache_root() -> Path | None:
    """The cache's folder, or None when `KLUE_GGUF_CACHE=off`."""
    setting = os.environ.get(CACHE_ENV, "").strip()
    if setting.lower() == OFF:
        return None
    if setting:
        return Path(setting).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("klue", appauthor=False)) / "gguf"


def cache_key(file_sha256: str) -> str:
    """The file's content and the transformers version that converts it (a later release may read a GGUF
    differently), plus klue's layout."""
    import transformers

    return f"{file_sha256}-transformers{transformers.__version__}-layout{LAYOUT}"


def load(path: Path, file_sha256: str, files: dict[str, Any], weights: dict[str, Any]) -> tuple[Any, Any, Converted]:
    """(tokenizer, model, where) of the GGUF file at `path` whose content hashes to `file_sha256`. `files` and
    `weights` are the keyword sets every klue loader passes (klue.models.loading)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    root = cache_root()
    if root is None:
        tokenizer, model = _read_gguf(path, files, weights)
        return tokenizer, model, Converted(None, written=False)
    directory = root / cache_key(file_sha256)
    written = False
    if not (directory / COMPLETE).is_file():
        from filelock import FileLock

        root.mkdir(parents=True, exist_ok=True)
        # one conversion per file at a time: a second process (the other test worker, another leaderboard job)
        # waits, then reads the first one's copy instead of spending the same minute again
        with FileLock(str(root / f".{directory.name}.lock")):
            if not (directory / COMPLETE).is_file():
                _convert(path, directory, file_sha256, files, weights)
                written = True
    # The first load reads the copy too, so every run computes with the same weights in the same memory.
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(directory), **files)
        model = AutoModelForCausalLM.from_pretrained(str(directory), **weights)
    except (OSError, ValueError) as error:
        raise base.BackendError(f"hf:{path}: its converted copy in {directory} cannot be read ({error}); "
                                f"delete that folder to convert the file again, or set {CACHE_ENV}=off") from None
    _own_memory(model)
    return tokenizer, model, Converted(directory, written=written)


def _own_memory(model: Any) -> None:
    """Each weight copied out of the memory-mapped file into memory of its own. The mapped tensors start 8 bytes
    past a 64-byte boundary (the file's header), where the CPU's matrix kernels round differently in the last
    bit: SmolLM2's log-probability of " yes" after a prompt is -7.914110 there against -7.914109 from the GGUF
    file itself or from the same weights copied. Tied weights stay tied (one parameter, copied once)."""
    import torch

    with torch.no_grad():
        for parameter in model.parameters():  # each shared parameter once
            parameter.data = parameter.data.clone()


def _read_gguf(path: Path, files: dict[str, Any], weights: dict[str, Any]) -> tuple[Any, Any]:
    """(tokenizer, model) as transformers reads the GGUF file itself (`gguf_file=`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = {"gguf_file": path.name}
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), **where, **files)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), **where, **weights)
    return tokenizer, model


def _convert(path: Path, directory: Path, file_sha256: str, files: dict[str, Any], weights: dict[str, Any]) -> None:
    """What transformers makes of the GGUF file, written to `directory`."""
    tokenizer, model = _read_gguf(path, files, weights)
    _write(directory, tokenizer, model, source=path, file_sha256=file_sha256)
    print(f"hf:{path}: converted once to float32 safetensors in {directory} "
          f"({_size_mb(directory):,.0f} MB); later loads read that ({CACHE_ENV}=off to keep nothing)",
          file=sys.stderr)


def _write(directory: Path, tokenizer: Any, model: Any, *, source: Path, file_sha256: str) -> None:
    """The converted copy, complete or absent: written in a sibling folder, then renamed into place."""
    import json

    from safetensors.torch import save_model

    scratch = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    try:
        save_model(model, str(scratch / WEIGHTS), metadata={"format": "pt"})
        config = copy.deepcopy(model.config)
        if hasattr(config, "quantization_config"):  # the GGUF quantizer's: the saved weights are plain float32
            del config.quantization_config
        config.save_pretrained(str(scratch))
        model.generation_config.save_pretrained(str(scratch))
        tokenizer.save_pretrained(str(scratch))
        (scratch / COMPLETE).write_text(json.dumps({"source": str(source), "sha256": file_sha256,
                                                    "layout": LAYOUT}, indent=2), encoding="utf-8")
        try:
            scratch.rename(directory)
        except OSError as error:
            if not (directory / COMPLETE).is_file():  # not another process's complete copy: a real failure
                raise base.BackendError(f"hf:{source}: cannot keep its converted copy in {directory} ({error}); "
                                        f"delete that folder, or set {CACHE_ENV}=off") from None
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)


def _size_mb(directory: Path) -> float:
    return sum(p.stat().st_size for p in directory.iterdir() if p.is_file()) / 1e6
