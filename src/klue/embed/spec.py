"""Model specs of sentence-embedding models, as `klue embed --model` and `klue benchmark --model` take them:
`emb:` and then a backend kind's form (the registry `KINDS`):

- `emb:DIR`: a local directory, a sentence-transformers model (its own modules, pooling and prompts) or a
  plain Hugging Face encoder (pooled as `--pooling` says, mean by default), run in this process;
- `emb:openai:MODEL@BASE_URL`: any OpenAI-compatible `/v1/embeddings` server (text-embeddings-inference,
  vLLM, Ollama, llama.cpp, a hosted API); the API key comes from the environment variable `--api-key-env`
  names, never from the spec. A base URL may carry `user:password@` (a proxy's Basic auth): they are sent,
  and blanked wherever the spec is shown or written (`klue.io.redact`).

Adding a backend is its module and one line in `KINDS`: the module defines

    open_backend(spec: EmbeddingSpec, options: EmbedBackendOptions) -> EmbeddingBackend

and its backend implements `klue.embed.base.EmbeddingBackend`. The modules are imported only when a
backend opens, so parsing a spec needs none of their libraries.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from klue.errors import DataError
from klue.io.endpoints import split_model_at_url
from klue.io.redact import redact_text

PREFIX = "emb:"
LOCAL_KIND = "local"
OPENAI_KIND = "openai"


def _whole(target: str) -> tuple[str, str | None] | None:
    return (target, None) if target else None


@dataclass(frozen=True)
class EmbeddingKind:
    name: str  # what the spec records: "local", "openai"
    prefix: str  # after "emb:" ("openai:"); "" for the kind a spec with no other kind's prefix is (a directory)
    form: str  # how such a spec is written, for the help and the errors
    description: str
    module: str  # the module with `open_backend`
    uses_gpu: bool  # whether it computes on this machine's GPU (the benchmark gives its cells one)
    # What follows the prefix -> (the model, the server's base URL or None); None when it is malformed.
    parse: Callable[[str], tuple[str, str | None] | None] = _whole
    install: str = "klue[embed]"  # what to install when the module's libraries are missing


KINDS: tuple[EmbeddingKind, ...] = (
    EmbeddingKind(LOCAL_KIND, "", "emb:DIR", "a local sentence-transformers or Hugging Face encoder directory",
                  "klue.embed.local", uses_gpu=True),
    EmbeddingKind(OPENAI_KIND, "openai:", "emb:openai:MODEL@http://HOST:PORT/v1", "an OpenAI-compatible "
                  "embeddings server", "klue.embed.http", uses_gpu=False, parse=split_model_at_url),
)


@dataclass(frozen=True)
class EmbeddingSpec:
    kind: str  # an EmbeddingKind's name
    model: str  # the directory, or the server's model name
    base_url: str | None = None  # a server's kinds only

    def __str__(self) -> str:
        prefix = kind_named(self.kind).prefix
        return f"{PREFIX}{prefix}{self.model}" + (f"@{self.base_url}" if self.base_url is not None else "")


def recognises(text: str) -> bool:
    """Whether `text` names a sentence-embedding model (`emb:...`)."""
    return text.startswith(PREFIX)


def kind_named(name: str) -> EmbeddingKind:
    return next(kind for kind in KINDS if kind.name == name)


def parse_spec(text: str) -> EmbeddingSpec:
    """`emb:` + a kind's form -> EmbeddingSpec; DataError saying the forms otherwise."""
    body = text[len(PREFIX):].strip() if recognises(text) else ""
    kind = next((k for k in KINDS if k.prefix and body.startswith(k.prefix)),
                next(k for k in KINDS if not k.prefix))
    found = kind.parse(body[len(kind.prefix):]) if body else None
    if found is None:
        forms = " or ".join(f"{k.form} ({k.description})" for k in KINDS)
        raise DataError(f"model spec {redact_text(text)!r}: use {forms}")
    return EmbeddingSpec(kind.name, *found)


def backend_module(spec: EmbeddingSpec) -> ModuleType:
    """The module of a spec's kind (imported now, with its libraries)."""
    kind = kind_named(spec.kind)
    try:
        return importlib.import_module(kind.module)
    except ImportError as error:
        raise DataError(f"{kind.form} needs {error.name or error} ({error}): pip install '{kind.install}'") from None


def local_directory(spec: EmbeddingSpec) -> Path:
    """The directory of an `emb:DIR` spec; DataError when it is not one (no model hub is asked)."""
    path = Path(spec.model).expanduser()
    if not path.is_dir():
        raise DataError(f"emb:{spec.model}: no such directory (emb:DIR takes a local model directory; nothing is "
                        "downloaded)")
    if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
        raise DataError(f"emb:{spec.model}: neither a sentence-transformers model (modules.json) nor a Hugging Face "
                        "encoder (config.json)", path)
    return path
