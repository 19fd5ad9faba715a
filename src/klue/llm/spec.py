"""Model specs for prompted LMs, as `klue llm --model` and `klue benchmark --model` take them: a backend's
prefix (the registry `klue.llm.backends.KINDS`) and what that backend needs after it, e.g.

- `hf:NAME_OR_DIR`: a transformers causal LM in this process (a hub name or a local directory);
- `openai:MODEL@BASE_URL`: any OpenAI-compatible server (vLLM, llama.cpp, SGLang, a hosted API); the API
  key comes from the environment variable named by `--api-key-env` (default OPENAI_API_KEY), never from the
  spec, and is written to no output. A base URL may carry `user:password@` (a proxy's Basic auth): they are
  sent, and blanked wherever the spec is shown or written (`klue.io.redact`).

A spec no backend claims is a DataError that lists the kinds there are; never a guess.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from klue.errors import DataError
from klue.io.endpoints import ServerOptions
from klue.io.redact import redact_text
from klue.llm import backends
from klue.llm.backends import BackendKind
from klue.llm.backends.base import Backend


@dataclass(frozen=True)
class ModelSpec:
    kind: BackendKind
    target: str  # what follows the prefix: a hub name or directory, MODEL@BASE_URL, ...

    def __str__(self) -> str:
        return f"{self.kind.prefix}{self.target}"


def kind_of(text: str) -> BackendKind | None:
    """The backend kind whose prefix `text` starts with (None: no backend's)."""
    return next((kind for kind in backends.KINDS if text.startswith(kind.prefix)), None)


def known_kinds() -> str:
    """The kinds of spec there are, for the help and the errors."""
    return "; ".join(f"{kind.form} ({kind.description})" for kind in backends.KINDS)


def parse_spec(text: str) -> ModelSpec:
    """`text` -> ModelSpec, checked by its backend; DataError naming the known kinds otherwise."""
    kind = kind_of(text)
    target = text[len(kind.prefix):].strip() if kind is not None else ""
    if kind is None or not target:
        raise DataError(f"model spec {redact_text(text)!r}: no LLM backend takes it; the known kinds: {known_kinds()}")
    backend_module(kind).check_target(target)
    return ModelSpec(kind, target)


def backend_module(kind: BackendKind) -> ModuleType:
    """The module of a kind (imported now, with its libraries)."""
    try:
        return importlib.import_module(kind.module)
    except ImportError as error:
        raise DataError(f"the {kind.prefix} backend needs {error.name or error} ({error}): "
                        f"pip install '{kind.install}'") from None


def open_backend(spec: ModelSpec, options: ServerOptions | None = None) -> Backend:
    """The backend a spec names, opened with `options` (the defaults where None)."""
    backend: Backend = backend_module(spec.kind).open_backend(spec.target, options or ServerOptions())
    return backend


def served_warning(spec: ModelSpec, options: ServerOptions | None = None) -> str | None:
    """Before a run: why the backend may not serve the model the spec names (a server whose model list lacks
    it), or None; a backend without such a check (`served_warning` in its module) says nothing. An
    UnreachableError (exit 3) when the server cannot be reached."""
    check = getattr(backend_module(spec.kind), "served_warning", None)
    return None if check is None else check(spec.target, options or ServerOptions())
