"""The embedding family: sentence-embedding models (klue.embed), `emb:DIR` in process and
`emb:openai:MODEL@URL` over HTTP, on the tasks that declare an embedding use (`klue.tasks.embedding`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from klue.embed.base import EmbedBackendOptions, EmbeddingBackend, EmbedSettings
from klue.embed.spec import LOCAL_KIND, backend_module, kind_named, local_directory, parse_spec, recognises
from klue.errors import DataError
from klue.families.base import ModelFamily
from klue.io.endpoints import ServerOptions
from klue.results import EMBEDDING, Results

if TYPE_CHECKING:
    from klue.scoring import RunRequest
    from klue.tasks.base import Task


@dataclass(frozen=True)
class EmbedOptions:
    """`klue embed`'s options (and `klue benchmark --override KEY=VALUE` for an embedding cell), by flat key:
    EmbedSettings' fields (prompt, limit, progress), `cache`, ServerOptions' fields (batch_size, concurrency,
    timeout_s, api_key_env, cpu) and the in-process `pooling` and `max_length`."""

    settings: EmbedSettings = field(default_factory=EmbedSettings)
    backend: EmbedBackendOptions = field(default_factory=EmbedBackendOptions)
    cache: str | None = None  # the embedding cache file; None: the cell's own directory


def option_defaults() -> dict[str, Any]:
    """Every key `EmbeddingFamily.options` takes, with its default."""
    defaults = EmbedOptions()
    return {**_fields(defaults.settings), "cache": defaults.cache, **_fields(defaults.backend.server),
            "pooling": defaults.backend.pooling, "max_length": defaults.backend.max_length}


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


class EmbeddingFamily(ModelFamily[EmbedOptions]):
    name = EMBEDDING
    command = "embed"

    def recognises(self, model: str) -> bool:
        return recognises(model)

    def uses_gpu(self, model: str) -> bool:
        """A local model runs on a GPU where there is one; a server is someone else's machine."""
        return kind_named(parse_spec(model).kind).uses_gpu

    def check(self, model: str) -> None:
        spec = parse_spec(model)
        if spec.kind == LOCAL_KIND:
            local_directory(spec)  # a directory that is not there (or holds no model) is refused now

    def not_applicable(self, task: Task[Any, Any]) -> str | None:
        if task.embedding is not None:
            return None
        return task.no_embedding or "the task declares no embedding use"

    def options(self, values: Mapping[str, Any]) -> EmbedOptions:
        known = list(option_defaults())
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise DataError(f"embedding cells take only {', '.join(known)}, not {', '.join(unknown)}")
        given = {**option_defaults(), **values}
        server = {f.name: given[f.name] for f in dataclasses.fields(ServerOptions)}
        return EmbedOptions(
            EmbedSettings(**{f.name: given[f.name] for f in dataclasses.fields(EmbedSettings)}),
            EmbedBackendOptions(ServerOptions(**server), given["pooling"], given["max_length"]), given["cache"])

    def run(self, request: RunRequest, options: EmbedOptions) -> Results:
        from klue.embed.run import run

        request.task.make_embedding()  # a task the family does not apply to is refused before a model loads
        backend = open_backend(request.model_spec, options.backend)
        try:
            return run(request, backend, options.settings, cache_path=Path(options.cache) if options.cache else None)
        finally:
            backend.close()


def open_backend(model: str, options: EmbedBackendOptions) -> EmbeddingBackend:
    """The backend a spec names (its kind's module and libraries imported only now)."""
    spec = parse_spec(model)
    backend: EmbeddingBackend = backend_module(spec).open_backend(spec, options)
    return backend


FAMILY = EmbeddingFamily()
