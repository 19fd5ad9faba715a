"""Where a model server is and how it is asked: the API root of a base URL, the `MODEL@URL` of a model spec
and the options every model backend opens with (`ServerOptions`), shared by both engines' HTTP clients
(`klue.llm.backends.openai`, `klue.embed.http`), their in-process backends and the spec parsers, which run
without the httpx extra (`klue.io.http` needs it)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from klue.errors import DataError
from klue.io.redact import redact_url

# MODEL@URL split at the first "@" that starts the URL, so a URL's own "user:password@" stays in the URL.
_MODEL_AT_URL = re.compile(r"(?P<model>.+?)@(?P<url>https?://.+)")


def api_root(base_url: str) -> str:
    """`http://h:8000` -> `http://h:8000/v1`; a URL with a path (`.../v1`, a proxy prefix) is kept as given;
    DataError for one that is not an http(s) URL."""
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise DataError(f"base URL {redact_url(base_url)!r}: use http://HOST:PORT/v1 (or https://...)")
    return url if parts.path not in ("", "/") else url + "/v1"


def split_model_at_url(text: str) -> tuple[str, str] | None:
    """`MODEL@http://HOST:PORT/v1` -> (the server's model name, its base URL); None when `text` has not that
    form (the caller says which spec it expected)."""
    found = _MODEL_AT_URL.fullmatch(text)
    if not (found and found["model"].strip()):
        return None
    return found["model"].strip(), found["url"].rstrip("/")


@dataclass(frozen=True)
class ServerOptions:
    """How a model backend is opened, for both engines (`klue llm`'s backends, `klue embed`'s): each backend
    takes the fields that concern it and leaves the others. Checked here, once, for every caller.

    The defaults, and why: `timeout_s` 120 is a ceiling against a hung server, not a speed setting; the
    longest single request either engine sends (a generation up to its token budget, a batch of texts) ends
    well within it on a CPU server. `concurrency` 4 keeps a local server busy without queueing behind
    itself. `batch_size` is per engine: 8 prompts for the LLM engine (a few-shot prompt may fill the model's
    context, thousands of tokens) and `EMBED_BATCH_SIZE` texts for embeddings (one sentence each, tens of
    tokens), so either batch takes about the same memory.
    """

    concurrency: int = 4  # requests in flight at once (HTTP)
    timeout_s: float = 120.0  # seconds per request (HTTP)
    batch_size: int = 8  # sequences per forward pass (in process) or texts per request (HTTP embeddings)
    api_key_env: str | None = "OPENAI_API_KEY"  # the environment variable holding an API key (HTTP)
    cpu: bool = False  # stay on the CPU where there is a GPU (in process)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise DataError(f"--concurrency must be 1 or more, not {self.concurrency}")
        if self.batch_size < 1:
            raise DataError(f"--batch-size must be 1 or more, not {self.batch_size}")
        if not self.timeout_s > 0:
            raise DataError(f"--timeout must be positive, not {self.timeout_s}")


EMBED_BATCH_SIZE = 32  # texts per forward pass or request for embedding backends (ServerOptions says why)
