"""The sentence-embedding model family, as the benchmark runner and `klue embed` plug it in: how a spec is
recognised, the family's options, whether a cell uses a GPU, and how a cell runs. (It becomes the family
registry's `families/embedding.py`; nothing else in klue needs to know this family.)"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from klue.embed.spec import LOCAL_KIND, PREFIX, EmbeddingSpec, local_directory, parse_spec, recognises
from klue.errors import DataError
from klue.protocols import ProtocolData
from klue.results import EMBEDDING, Results
from klue.tasks.base import Task

NAME = EMBEDDING
__all__ = ["NAME", "PREFIX", "EmbedOptions", "not_applicable", "open_backend", "recognises", "run_cell", "uses_gpu"]


@dataclass(frozen=True)
class EmbedOptions:
    """`klue embed`'s options (and `klue benchmark --override KEY=VALUE` for an embedding cell)."""

    prompt: str | None = None  # before every text; None: the model's own prompt, if it declares one
    pooling: str | None = None  # local plain encoders: mean (default), cls or last
    batch_size: int = 32  # texts per forward pass (local) or per request (HTTP)
    concurrency: int = 4  # requests in flight (HTTP)
    timeout_s: float = 60.0  # per request (HTTP)
    api_key_env: str | None = "OPENAI_API_KEY"  # the environment variable holding the API key (HTTP)
    max_length: int | None = None  # tokens per text (local); None: the model's own limit
    cpu: bool = False  # local: stay off the GPU
    limit: int | None = None  # the first N evaluation examples only
    cache: str | None = None  # the embedding cache file; None: the cell's own directory
    progress: bool = True

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, Any]) -> EmbedOptions:
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise DataError(f"embedding cells take only {', '.join(known)}, not {', '.join(unknown)}")
        return cls(**dict(overrides))


def not_applicable(task: Task[Any, Any]) -> str | None:
    """Why the family does not apply to `task` (its declared reason), or None when it does."""
    if task.embedding is not None:
        return None
    return task.no_embedding or "the task declares no embedding use"


def uses_gpu(model: str) -> bool:
    """A local model runs on a GPU where there is one; a server is someone else's machine."""
    return recognises(model) and parse_spec(model).kind == LOCAL_KIND


def open_backend(spec: EmbeddingSpec, options: EmbedOptions) -> Any:
    """The backend a spec names (imports its libraries only now)."""
    if spec.kind == LOCAL_KIND:
        try:
            from klue.embed.local import LocalBackend
        except ImportError as error:
            raise DataError(f"emb:DIR needs sentence-transformers ({error}): pip install 'klue[embed]'") from None
        return LocalBackend(local_directory(spec), pooling=options.pooling, batch_size=options.batch_size,
                            cpu=options.cpu, max_length=options.max_length)
    if options.pooling is not None or options.max_length is not None:
        raise DataError("--pooling and --max-length apply to emb:DIR models; a server pools and truncates itself")
    try:
        from klue.embed.http import OpenAIEmbeddings
    except ImportError as error:
        raise DataError(f"emb:openai: needs httpx ({error}): pip install 'klue[embed]'") from None
    assert spec.base_url is not None
    return OpenAIEmbeddings(spec.model, spec.base_url, api_key_env=options.api_key_env,
                            concurrency=options.concurrency, batch_size=options.batch_size,
                            timeout_s=options.timeout_s)


def run_cell(task: Task[Any, Any], model: str, protocol_data: ProtocolData[Any], seed: int, out_dir: Path,
             mode: str, overrides: Mapping[str, Any]) -> Results:
    """One benchmark cell of an `emb:` model (the runner's `ModelFamily` signature)."""
    from klue.embed.run import EmbedSettings, run

    options = EmbedOptions.from_overrides(overrides)
    task.make_embedding()  # a task the family does not apply to is refused before a model loads
    backend = open_backend(parse_spec(model), options)
    try:
        return run(task, model, protocol_data, seed, out_dir, mode, backend,
                   EmbedSettings(options.prompt, options.limit, options.progress),
                   cache_path=Path(options.cache) if options.cache else None)
    finally:
        backend.close()
