"""Model specs for prompted LMs, as `klue llm --model` and `klue benchmark --model` take them:

- `hf:NAME_OR_DIR`: a transformers causal LM in this process (a hub name or a local directory);
- `openai:MODEL@BASE_URL`: any OpenAI-compatible server (vLLM, llama.cpp, SGLang, a hosted API); the API
  key comes from the environment variable named by `--api-key-env` (default OPENAI_API_KEY), never from the
  spec, and is written to no output. A base URL may carry `user:password@` (a proxy's Basic auth): they are
  sent, and blanked wherever the spec is shown or written (`klue.io.redact`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from klue.errors import DataError
from klue.io.redact import redact_text

HF_PREFIX = "hf:"
OPENAI_PREFIX = "openai:"
# MODEL@URL split at the first "@" that starts the URL, so a URL's own "user:password@" stays in the URL.
_MODEL_AT_URL = re.compile(r"(?P<model>.+?)@(?P<url>https?://.+)")


@dataclass(frozen=True)
class ModelSpec:
    kind: str  # "hf" or "openai"
    model: str  # hub name / directory, or the server's model name
    base_url: str | None = None  # openai only

    def __str__(self) -> str:
        return f"{HF_PREFIX}{self.model}" if self.kind == "hf" else f"{OPENAI_PREFIX}{self.model}@{self.base_url}"


def is_llm_spec(text: str) -> bool:
    return text.startswith((HF_PREFIX, OPENAI_PREFIX))


def parse_spec(text: str) -> ModelSpec:
    """`hf:...` or `openai:MODEL@URL` -> ModelSpec; DataError saying the two forms otherwise."""
    if text.startswith(HF_PREFIX) and text[len(HF_PREFIX):].strip():
        return ModelSpec("hf", text[len(HF_PREFIX):].strip())
    if text.startswith(OPENAI_PREFIX):
        found = _MODEL_AT_URL.fullmatch(text[len(OPENAI_PREFIX):])
        if found and found["model"].strip():
            return ModelSpec("openai", found["model"].strip(), found["url"].rstrip("/"))
    raise DataError(f"model spec {redact_text(text)!r}: use hf:NAME_OR_DIR (in process) or "
                    "openai:MODEL@http://HOST:PORT/v1 (an OpenAI-compatible server)")


def open_backend(spec: ModelSpec, *, concurrency: int = 4, timeout_s: float = 120.0,
                 api_key_env: str | None = "OPENAI_API_KEY", cpu: bool = False, batch_size: int = 8) -> Any:
    """The backend a spec names (imports its libraries only now)."""
    if spec.kind == "hf":
        from klue.llm.backends.hf import HfBackend

        return HfBackend(spec.model, cpu=cpu, batch_size=batch_size)
    try:
        from klue.llm.backends.openai import OpenAIBackend
    except ImportError as error:
        raise DataError(f"the HTTP backend needs httpx ({error}): pip install 'klue[llm]'") from None
    assert spec.base_url is not None
    return OpenAIBackend(spec.model, spec.base_url, api_key_env=api_key_env, concurrency=concurrency,
                         timeout_s=timeout_s)
