"""The LLM family: prompted generative LMs (klue.llm), a spec per backend kind (klue.llm.backends.KINDS:
`hf:` in process, `openai:` over HTTP, ...)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from klue.errors import DataError
from klue.families.base import ModelFamily, ModelFamilyUnavailable
from klue.io.endpoints import ServerOptions
from klue.llm.spec import kind_of, open_backend, parse_spec
from klue.results import LLM, Results

if TYPE_CHECKING:
    from klue.llm.run import LlmSettings
    from klue.scoring import RunRequest


@dataclass(frozen=True)
class LlmOptions:
    settings: LlmSettings  # how the prompts run: method, form, shots, limit, constrained decoding, progress
    backend: ServerOptions  # how the backend opens: concurrency, timeout, API key variable, CPU, batch size


class LlmFamily(ModelFamily[LlmOptions]):
    name = LLM
    command = "llm"

    def recognises(self, model: str) -> bool:
        return kind_of(model) is not None

    def uses_gpu(self, model: str) -> bool:
        kind = kind_of(model)
        return kind is not None and kind.uses_gpu

    def check(self, model: str) -> None:
        parse_spec(model)

    def options(self, values: Mapping[str, Any]) -> LlmOptions:
        from klue.llm.run import LlmSettings

        settings_keys = [f.name for f in dataclasses.fields(LlmSettings)]
        backend_keys = [f.name for f in dataclasses.fields(ServerOptions)]
        unknown = sorted(set(values) - set(settings_keys) - set(backend_keys))
        if unknown:
            raise DataError(f"LLM cells take only {', '.join(settings_keys + backend_keys)}, not {', '.join(unknown)}")
        return LlmOptions(LlmSettings(**{k: v for k, v in values.items() if k in settings_keys}),
                          ServerOptions(**{k: v for k, v in values.items() if k in backend_keys}))

    def run(self, request: RunRequest, options: LlmOptions) -> Results:
        try:
            from klue.llm.run import run
        except ImportError as error:
            raise ModelFamilyUnavailable(f"LLM evaluation is not available ({error}); install klue[train,llm]") from None
        backend = open_backend(parse_spec(request.model_spec), options.backend)
        try:
            return run(request, options.settings, backend=backend)
        finally:
            backend.close()


FAMILY = LlmFamily()
