"""The in-process backend: a local sentence-transformers model, or a plain Hugging Face encoder pooled here.

sentence-transformers (6.3, which installs beside transformers 5.24 unchanged) runs both: a directory with
`modules.json` loads as the model it is (its pooling, dense and normalisation modules, its prompts); any other
encoder directory becomes a Transformer module followed by a Pooling module of `--pooling` (mean by default,
as sentence-transformers does; cls; last = the last non-padding token). Loading never runs code from the
directory and never unpickles: no remote code, local files only, safetensors weights only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from klue.embed.base import EmbedBackendOptions, EmbeddingError, as_matrix
from klue.embed.spec import EmbeddingSpec, local_directory
from klue.errors import DataError
from klue.io.endpoints import EMBED_BATCH_SIZE, ServerOptions
from klue.io.provenance import tree_sha256

POOLINGS = ("mean", "cls", "last")
DEFAULT_POOLING = "mean"
_ST_POOLING = {"mean": "mean", "cls": "cls", "last": "lasttoken"}  # klue's names -> sentence-transformers'
ST_MODULES_FILE = "modules.json"
# Passed to every from_pretrained under sentence-transformers: nothing downloaded, no code run, no pickle.
_SAFE = {"local_files_only": True, "trust_remote_code": False}


def is_sentence_transformer(directory: Path) -> bool:
    return (directory / ST_MODULES_FILE).is_file()


def open_backend(spec: EmbeddingSpec, options: EmbedBackendOptions) -> LocalBackend:
    """The backend of an `emb:DIR` spec (klue.embed.spec.KINDS)."""
    return LocalBackend(local_directory(spec), pooling=options.pooling, batch_size=options.server.batch_size,
                        cpu=options.server.cpu, max_length=options.max_length)


class LocalBackend:
    """`EmbeddingBackend` over a model directory, in this process (a GPU when there is one, unless `cpu`)."""

    name = "local"

    def __init__(self, directory: Path, *, pooling: str | None = None, batch_size: int = EMBED_BATCH_SIZE,
                 cpu: bool = False, max_length: int | None = None) -> None:
        if pooling is not None and pooling not in POOLINGS:
            raise DataError(f"--pooling takes {', '.join(POOLINGS)}, not {pooling!r}")
        ServerOptions(batch_size=batch_size)  # checks it
        self.directory = directory
        self.batch_size = batch_size
        self.notes: list[str] = []
        self.model = self._load(directory, pooling, "cpu" if cpu else _device(), max_length)
        self.pooling = pooling or (DEFAULT_POOLING if not is_sentence_transformer(directory) else "the model's own")
        self.default_prompt = self._own_prompt()
        self.dimension = int(self.model.get_embedding_dimension())
        self.max_length = int(self.model.max_seq_length)
        self.fingerprint = (f"local:{tree_sha256(directory)}:pooling={self.pooling}:max_length={self.max_length}")

    def _load(self, directory: Path, pooling: str | None, device: str, max_length: int | None) -> Any:
        from klue.models.loading import check_loads_without_code, refusing_model_code

        if is_sentence_transformer(directory) and pooling is not None:
            raise DataError(f"{directory} is a sentence-transformers model: its own Pooling module pools; drop "
                            "--pooling", directory)
        for place in _weight_directories(directory):
            check_loads_without_code(place)  # weights only as pickles: refused before anything is unpickled
        try:
            with refusing_model_code(directory):
                model = _build(directory, pooling, device, max_length)
        except (OSError, ValueError) as error:
            raise EmbeddingError(f"{directory}: cannot load the model ({' '.join(str(error).split())})",
                                 directory) from None
        if max_length is not None:
            model.max_seq_length = max_length
        model.eval()
        return model

    def _own_prompt(self) -> str | None:
        """The prompt a sentence-transformers model declares for plain encoding: its default prompt, else its
        "query" prompt (what its `encode_query` uses: every KLUE input is a query, none a document)."""
        prompts = dict(getattr(self.model, "prompts", None) or {})
        name = getattr(self.model, "default_prompt_name", None) or ("query" if "query" in prompts else None)
        if name is None or name not in prompts:
            if prompts:
                self.notes.append(f"the model declares prompts {sorted(prompts)} and no default: none is used "
                                  "unless --prompt gives one")
            return None
        self.notes.append(f"the model's own prompt {name!r} ({prompts[name]!r}) is used")
        return str(prompts[name])

    def embed(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        import torch

        with torch.inference_mode():
            vectors = self.model.encode(list(texts), prompt=prompt, batch_size=self.batch_size,
                                        convert_to_numpy=True, normalize_embeddings=False, show_progress_bar=False)
        return as_matrix(vectors, len(texts), str(self.directory))

    def close(self) -> None:
        self.model = None


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _build(directory: Path, pooling: str | None, device: str, max_length: int | None) -> Any:
    """The sentence-transformers model of a directory: its own modules, or a Transformer and a Pooling."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    model_kwargs = {**_SAFE, "use_safetensors": True}
    if is_sentence_transformer(directory):
        return SentenceTransformer(str(directory), device=device, model_kwargs=model_kwargs, local_files_only=True,
                                   trust_remote_code=False)
    transformer = Transformer(str(directory), model_kwargs=model_kwargs, processor_kwargs=dict(_SAFE),
                              config_kwargs=dict(_SAFE), max_seq_length=max_length)
    pool = Pooling(transformer.get_embedding_dimension(), pooling_mode=_ST_POOLING[pooling or DEFAULT_POOLING])
    return SentenceTransformer(modules=[transformer, pool], device=device)


def _weight_directories(directory: Path) -> list[Path]:
    """Where a model's weights may be: the directory, and each module directory a sentence-transformers
    model lists in modules.json."""
    import json

    places = [directory]
    if is_sentence_transformer(directory):
        try:
            modules = json.loads((directory / ST_MODULES_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise DataError(f"cannot read {ST_MODULES_FILE}: {error}", directory / ST_MODULES_FILE) from None
        places += [directory / m["path"] for m in modules if isinstance(m, dict) and isinstance(m.get("path"), str)
                   and m["path"] and (directory / m["path"]).is_dir()]
    return places
