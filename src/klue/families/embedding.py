"""The embedding family: sentence-embedding models (klue.embed), `emb:DIR` in process and
`emb:openai:MODEL@URL` over HTTP, on the tasks that declare an embedding use (`klue.tasks.embedding`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from klue.embed.spec import LOCAL_KIND, local_directory, parse_spec, recognises
from klue.errors import DataError
from klue.families.base import ModelFamily, ModelFamilyUnavailable
from klue.io.redact import redact_text
from klue.results import EMBEDDING, Results

if TYPE_CHECKING:
    from klue.protocols import ProtocolData
    from klue.tasks.base import Task


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


class EmbeddingFamily(ModelFamily[EmbedOptions]):
    name = EMBEDDING
    command = "embed"

    def recognises(self, model: str) -> bool:
        return recognises(model)

    def uses_gpu(self, model: str) -> bool:
        """A local model runs on a GPU where there is one; a server is someone else's machine."""
        return parse_spec(model).kind == LOCAL_KIND

    def check(self, model: str) -> None:
        spec = parse_spec(model)
        if spec.kind == LOCAL_KIND:
            local_directory(spec)  # a directory that is not there (or holds no model) is refused now

    def not_applicable(self, task: Task[Any, Any]) -> str | None:
        if task.embedding is not None:
            return None
        return task.no_embedding or "the task declares no embedding use"

    def options(self, values: Mapping[str, Any]) -> EmbedOptions:
        known = [f.name for f in dataclasses.fields(EmbedOptions)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise DataError(f"embedding cells take only {', '.join(known)}, not {', '.join(unknown)}")
        return EmbedOptions(**dict(values))

    def run(self, task: Task[Any, Any], model: str, protocol_data: ProtocolData[Any], seed: int, out_dir: Path,
            mode: str, options: EmbedOptions) -> Results:
        from klue.embed.run import EmbedSettings, run

        task.make_embedding()  # a task the family does not apply to is refused before a model loads
        backend = open_backend(model, options)
        try:
            return run(task, model, protocol_data, seed, out_dir, mode, backend,
                       EmbedSettings(options.prompt, options.limit, options.progress),
                       cache_path=Path(options.cache) if options.cache else None)
        finally:
            backend.close()

    def run_alone(self, task: Task[Any, Any], model: str, protocol_data: ProtocolData[Any], seed: int,
                  out_dir: Path, mode: str, options: EmbedOptions) -> Results:
        from klue.io.lock import exclusive

        with exclusive(Path(out_dir), f"klue embed {task.name} {redact_text(model)}"):
            return self.run(task, model, protocol_data, seed, out_dir, mode, options)


def open_backend(model: str, options: EmbedOptions) -> Any:
    """The backend a spec names (its libraries imported only now)."""
    spec = parse_spec(model)
    if spec.kind == LOCAL_KIND:
        try:
            from klue.embed.local import LocalBackend
        except ImportError as error:
            raise ModelFamilyUnavailable(f"emb:DIR needs sentence-transformers ({error}): pip install "
                                         "'klue[embed]'") from None
        return LocalBackend(local_directory(spec), pooling=options.pooling, batch_size=options.batch_size,
                            cpu=options.cpu, max_length=options.max_length)
    if options.pooling is not None or options.max_length is not None:
        raise DataError("--pooling and --max-length apply to emb:DIR models; a server pools and truncates itself")
    try:
        from klue.embed.http import OpenAIEmbeddings
    except ImportError as error:
        raise ModelFamilyUnavailable(f"emb:openai: needs httpx ({error}): pip install 'klue[embed]'") from None
    assert spec.base_url is not None
    return OpenAIEmbeddings(spec.model, spec.base_url, api_key_env=options.api_key_env,
                            concurrency=options.concurrency, batch_size=options.batch_size,
                            timeout_s=options.timeout_s)


FAMILY = EmbeddingFamily()
