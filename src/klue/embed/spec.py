"""Model specs of sentence-embedding models, as `klue embed --model` and `klue benchmark --model` take them:

- `emb:DIR`: a local directory, a sentence-transformers model (its own modules, pooling and prompts) or a
  plain Hugging Face encoder (pooled as `--pooling` says, mean by default), run in this process;
- `emb:openai:MODEL@BASE_URL`: any OpenAI-compatible `/v1/embeddings` server (text-embeddings-inference,
  vLLM, Ollama, llama.cpp, a hosted API); the API key comes from the environment variable `--api-key-env`
  names, never from the spec. A base URL may carry `user:password@` (a proxy's Basic auth): they are sent,
  and blanked wherever the spec is shown or written (`klue.io.redact`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from klue.errors import DataError
from klue.io.redact import redact_text

PREFIX = "emb:"
OPENAI = "openai:"
LOCAL_KIND = "local"
OPENAI_KIND = "openai"
_MODEL_AT_URL = re.compile(r"(?P<model>.+?)@(?P<url>https?://.+)")  # the first @ before the URL: user:pw@ stays in


@dataclass(frozen=True)
class EmbeddingSpec:
    kind: str  # LOCAL_KIND or OPENAI_KIND
    model: str  # the directory, or the server's model name
    base_url: str | None = None  # OPENAI_KIND only

    def __str__(self) -> str:
        return f"{PREFIX}{self.model}" if self.kind == LOCAL_KIND else f"{PREFIX}{OPENAI}{self.model}@{self.base_url}"


def recognises(text: str) -> bool:
    """Whether `text` names a sentence-embedding model (`emb:...`)."""
    return text.startswith(PREFIX)


def parse_spec(text: str) -> EmbeddingSpec:
    """`emb:DIR` or `emb:openai:MODEL@URL` -> EmbeddingSpec; DataError saying the two forms otherwise."""
    body = text[len(PREFIX):].strip() if recognises(text) else ""
    if body.startswith(OPENAI):
        found = _MODEL_AT_URL.fullmatch(body[len(OPENAI):])
        if found and found["model"].strip():
            return EmbeddingSpec(OPENAI_KIND, found["model"].strip(), found["url"].rstrip("/"))
    elif body:
        return EmbeddingSpec(LOCAL_KIND, body)
    raise DataError(f"model spec {redact_text(text)!r}: use emb:DIR (a local sentence-transformers or Hugging Face encoder "
                    "directory) or emb:openai:MODEL@http://HOST:PORT/v1 (an OpenAI-compatible embeddings server)")


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
