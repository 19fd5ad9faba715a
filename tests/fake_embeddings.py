"""A small OpenAI-compatible embeddings server on 127.0.0.1 for the HTTP backend's tests (not a test module).

It answers `GET /v1/models` and `POST /v1/embeddings` with `toy_vector` of each input: a character-trigram
bag hashed into `dim` buckets (stable across processes), so texts that share words point alike. It can answer
in reverse order (each item carrying its `index`), as base64, with one vector too few, fail a number of
requests with a status (and headers such as Retry-After), drop connections, answer slowly, and it records
every request and the most requests it had in flight at once.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def toy_vector(text: str, dim: int = 16) -> np.ndarray:
    """Counts of the text's character trigrams hashed into `dim` buckets, plus one constant bucket (so no
    text, however short, gives a zero vector)."""
    vector = np.zeros(dim, dtype=np.float32)
    vector[0] = 1.0
    padded = f"  {text} "
    for i in range(len(padded) - 2):
        bucket = int.from_bytes(hashlib.sha256(padded[i:i + 3].encode("utf-8")).digest()[:4], "little")
        vector[1 + bucket % (dim - 1)] += 1.0
    return vector


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


@dataclass
class FakeEmbeddings:
    model_id: str = "fake-embedder"
    dim: int = 16
    reverse: bool = False  # answer the items last to first (their `index` says where each belongs)
    as_base64: bool = False
    short: bool = False  # one vector fewer than asked
    normalise: bool = False  # unit vectors, as most servers give
    delay_s: float = 0.0
    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # (status, headers) to answer next
    drops: int = 0  # this many next requests get their connection closed without an answer
    seen: list[Seen] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def posts(self) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST"]

    def vector(self, text: str) -> np.ndarray:
        v = toy_vector(text, self.dim)
        return v / np.linalg.norm(v) if self.normalise else v

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        items = []
        for i, text in enumerate(texts):
            v = self.vector(text)
            items.append({"object": "embedding", "index": i,
                          "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode() if self.as_base64
                          else [float(x) for x in v]})
        if self.reverse:
            items.reverse()
        if self.short:
            items = items[:-1]
        return {"object": "list", "data": items, "model": self.model_id,
                "usage": {"prompt_tokens": sum(len(t) for t in texts), "total_tokens": sum(len(t) for t in texts)}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_GET(self) -> None:
                fake.seen.append(Seen("GET", self.path, dict(self.headers), None))
                self.reply(200, {"object": "list", "data": [{"id": fake.model_id, "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.seen.append(Seen("POST", self.path, dict(self.headers), body))
                with fake._lock:
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                    drop = fake.drops > 0
                    fake.drops -= int(drop)
                    failure = fake.failures.pop(0) if fake.failures and not drop else None
                try:
                    time.sleep(fake.delay_s)
                    if drop:
                        self.close_connection = True
                        return
                    if failure is not None:
                        status, headers = failure
                        self.reply(status, {"error": {"message": f"failure {status}"}}, headers)
                        return
                    self.reply(200, fake.answer(body))
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def reply(self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(data, ensure_ascii=False).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

        return Handler


class ToyBackend:
    """An `EmbeddingBackend` in this process: `toy_vector` of prompt + text, counting what it is asked."""

    name = "toy"
    default_prompt: str | None = None

    def __init__(self, fingerprint: str = "toy-1", dim: int = 16) -> None:
        self.fingerprint = fingerprint
        self.dim = dim
        self.notes: list[str] = []
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        self.asked += [prompt + t for t in texts]
        return np.stack([toy_vector(prompt + t, self.dim) for t in texts]) if texts else np.zeros((0, self.dim))

    def close(self) -> None:
        pass
