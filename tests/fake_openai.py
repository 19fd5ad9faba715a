"""A small OpenAI-compatible server on 127.0.0.1 for the HTTP clients' tests, LLM and embeddings (not a test
module).

It answers `/v1/models`, `/v1/completions` (echo + logprobs, generation, GBNF `grammar` or vLLM
`structured_outputs` choices), `/v1/chat/completions` and `/v1/embeddings`. Completions use a toy tokenizer:
words with their leading space (" 긍정"), punctuation alone, so "긍" + "정" is one token across a boundary;
it can add a SentencePiece-style dummy prefix (a leading " " in the token text, which shifts every offset by
one) or a "<s>" token. Embeddings are `toy_vector` of each input, in reverse order (each item carrying its
`index`), as base64 or one too few where asked.

What goes wrong is set on one switchboard (`server.switch`, a `Switchboard`): fail a number of requests
with a status (and headers such as Retry-After), drop connections, answer slowly, misbehave as real servers
and proxies do (reset the connection, cut the body short, answer malformed JSON). The server records every
request (headers included) and the most requests it had in flight at once.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

FAULTS = ("reset", "cut", "malformed")  # a TCP reset, a body cut short, a 200 whose body is not JSON
TOKEN = re.compile(r" ?[\w]+| ?[^\w ]| ")
GENERATED = "!"  # the one token generated after an echoed prompt


def toy_logprob(token: str) -> float:
    """A fixed log-prob per token text, so tests can compute the expected sums."""
    return -0.25 - 0.5 * len(token.strip())


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
class Switchboard:
    """The faults to inject, request by request (POSTs; the model listing always answers). Each request takes,
    in this order: a drop, else the next failure, else its `fault_of` or the next of `faults`; then it waits
    `delay_of(body)` or `delay_s` before answering."""

    failures: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # (status, headers) to answer next
    drops: int = 0  # this many next requests get their connection closed without an answer
    faults: list[str] = field(default_factory=list)  # FAULTS to commit on the next requests, one each
    fault_of: Callable[[dict[str, Any]], str | None] | None = None  # per request body, before `faults`
    delay_s: float = 0.0
    delay_of: Callable[[dict[str, Any]], float] | None = None  # per request body, overrides delay_s
    error_message: Callable[[dict[str, str]], str] | None = None  # a failure's error.message (default: "failure N")

    def take(self, body: dict[str, Any]) -> tuple[bool, tuple[int, dict[str, str]] | None, str | None, float]:
        """(drop, failure, fault, delay) for one request; call it under the server's lock."""
        drop = self.drops > 0
        self.drops -= int(drop)
        failure = self.failures.pop(0) if self.failures and not drop else None
        fault = self.fault_of(body) if self.fault_of else None
        if fault is None and self.faults and not drop and failure is None:
            fault = self.faults.pop(0)
        return drop, failure, fault, self.delay_of(body) if self.delay_of else self.delay_s

    def message(self, status: int, headers: dict[str, str]) -> str:
        return self.error_message(headers) if self.error_message else f"failure {status}"


@dataclass
class FakeOpenAI:
    model_id: str = "fake-model"
    echo: bool = True  # False: echo ignored, as `transformers serve` and llama.cpp's llama-server do
    chat: bool = True
    dialect: str | None = "gbnf"  # "gbnf", "structured_outputs" or None (constraint fields ignored)
    prefix: str = ""  # "dummy": a SentencePiece dummy-prefix space; "bos": a "<s>" token with text "<s>"
    usage: bool = True  # False: no usage block in answers
    # True: echoed log-probs one position late, as llama-cpp-python 0.3.36's for a model without BOS: the value
    # shown for a token is the one at its own position (not the one before), the list lacks the generated token
    shifted: bool = False
    echo_generated: int = 1  # tokens generated after an echoed prompt (llama-cpp-python: up to a whole character)
    # embeddings
    dim: int = 16
    reverse: bool = False  # answer the items last to first (their `index` says where each belongs)
    as_base64: bool = False
    short: bool = False  # one vector fewer than asked
    normalise: bool = False  # unit vectors, as most servers give
    switch: Switchboard = field(default_factory=Switchboard)
    n_ctx: int | None = None  # a context: a longer prompt is refused with HTTP 400, in llama-cpp-python's words
    tokenize: bool = False  # answer llama-cpp-python's POST /extras/tokenize (at the server's root)
    seen: list[Seen] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        # A short poll: stop() waits for serve_forever to notice.
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def posts(self, path: str = "") -> list[Seen]:
        return [s for s in self.seen if s.method == "POST" and s.path.endswith(path)]

    # -- tokenization and answers ---------------------------------------------------------------------------

    def tokens(self, prompt: str) -> list[str]:
        pieces = TOKEN.findall(prompt)
        if self.prefix == "dummy":
            pieces = [" " + pieces[0], *pieces[1:]] if pieces and not pieces[0].startswith(" ") else [" ", *pieces]
        elif self.prefix == "bos":
            pieces = ["<s>", *pieces]
        return pieces

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["prompt"]
        if not isinstance(prompt, str):
            return {"__status__": 500, "error": {"message": "a list of prompts is not supported"}}
        constrained = self.constrained_text(body)
        generated = constrained if constrained is not None else "out" + prompt[-3:]
        # "length" only where the budget was all used (a real server's "length" before it means the context ended)
        finish = "length" if body.get("max_tokens", 16) <= 1 else "stop"
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish, "text": generated}
        pieces = self.tokens(prompt)
        if self.n_ctx is not None and len(pieces) >= self.n_ctx:
            return {"__status__": 400, "error": {"message": f"Requested tokens ({len(pieces)}) exceed context "
                                                            f"window of {self.n_ctx}"}}
        generated_tokens = 1
        if body.get("logprobs") and not body.get("echo") and constrained is None:
            # greedy in the toy world: each token's log-prob is toy_logprob, and it is its position's top token
            made = TOKEN.findall(generated)
            choice["logprobs"] = {"tokens": made, "token_logprobs": [toy_logprob(t) for t in made],
                                  "top_logprobs": [{t: toy_logprob(t)} for t in made],
                                  "text_offset": [len(prompt) + sum(map(len, made[:i])) for i in range(len(made))]}
            generated_tokens = len(made)
        if body.get("echo") and self.echo and self.shifted:
            generated_tokens = self.echo_generated
            choice["text"] = prompt + GENERATED * generated_tokens
            nexts = [*pieces[1:], GENERATED]  # what each position's distribution predicts
            choice["logprobs"] = {"tokens": pieces, "text_offset": [sum(map(len, pieces[:i])) for i in range(len(pieces))],
                                  "token_logprobs": [None] + [toy_logprob(p) - 7.0 for p in pieces[1:]],
                                  "top_logprobs": [None] + [{n: toy_logprob(n)} for n in nexts[1:]]}
        elif body.get("echo") and self.echo:
            generated_tokens = self.echo_generated
            extra = [GENERATED] * generated_tokens
            choice["text"] = prompt + "".join(extra)
            offsets, at = [], 0
            for piece in [*pieces, *extra]:
                offsets.append(at)
                at += len(piece)
            values: list[float | None] = [None] + [toy_logprob(p) for p in pieces[1:]] + [-1.0] * len(extra)
            tops = [None] + [{p: toy_logprob(p)} for p in pieces[1:]] + [{GENERATED: -1.0}] * len(extra)
            choice["logprobs"] = {"tokens": [*pieces, *extra], "text_offset": offsets,
                                  "token_logprobs": values, "top_logprobs": tops}
        answer: dict[str, Any] = {"id": "cmpl-1", "object": "text_completion", "model": self.model_id,
                                  "choices": [choice]}
        if self.usage:
            answer["usage"] = {"prompt_tokens": len(pieces), "completion_tokens": generated_tokens,
                               "total_tokens": len(pieces) + generated_tokens}
        return answer

    def vector(self, text: str) -> np.ndarray:
        v = toy_vector(text, self.dim)
        return v / np.linalg.norm(v) if self.normalise else v

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
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

    def chat_answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if not self.chat:
            return {"__status__": 404, "detail": "Not Found"}
        last = body["messages"][-1]["content"]
        text = self.constrained_text(body)
        if text is None and "response_format" in body and self.dialect == "gbnf":
            schema = body["response_format"].get("schema") or {}
            text = json.dumps(_example_of(schema), ensure_ascii=False)
        return {"id": "chat-1", "model": self.model_id, "usage": {"prompt_tokens": 3, "completion_tokens": 2},
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text if text is not None else "re:" + last}}]}

    def constrained_text(self, body: dict[str, Any]) -> str | None:
        if self.dialect == "gbnf" and "grammar" in body:
            return json.loads(re.search(r'"((?:[^"\\]|\\.)*)"', body["grammar"]).group(0))
        if self.dialect == "structured_outputs" and "structured_outputs" in body:
            spec = body["structured_outputs"]
            return spec["choice"][0] if "choice" in spec else json.dumps(_example_of(spec["json"]), ensure_ascii=False)
        return None

    # -- the HTTP side --------------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 16  # headers and body leave in one write: no Nagle/delayed-ACK stall per answer

            def log_message(self, format: str, *args: object) -> None:  # keep test output clean
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
                    drop, failure, fault, delay = fake.switch.take(body)
                try:
                    time.sleep(delay)
                    if drop:  # a connection that breaks before any answer
                        self.close_connection = True
                        return
                    if failure is not None:
                        status, headers = failure
                        message = fake.switch.message(status, dict(self.headers))
                        self.reply(status, {"error": {"message": message}}, headers)
                        return
                    if self.path.endswith("/extras/tokenize") and fake.tokenize:
                        answer = {"tokens": list(range(len(fake.tokens(body["input"]))))}
                    elif self.path.endswith("/embeddings"):
                        answer = fake.embeddings(body)
                    elif not self.path.endswith("/completions"):
                        answer = {"__status__": 404, "detail": "Not Found"}
                    else:
                        answer = (fake.completion(body) if not self.path.endswith("/chat/completions")
                                  else fake.chat_answer(body))
                    if fault is not None:
                        self.misbehave(fault, answer)
                        return
                    self.reply(answer.pop("__status__", 200), answer)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def misbehave(self, fault: str, answer: dict[str, Any]) -> None:
                raw = json.dumps(answer, ensure_ascii=False).encode("utf-8")
                if fault == "reset":  # SO_LINGER 0: closing sends a RST instead of a FIN
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    return
                if fault == "malformed":
                    raw = raw[: len(raw) // 2]  # half an object: not JSON
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw) if fault == "malformed" else len(raw) * 2))
                self.end_headers()
                self.wfile.write(raw)  # "cut": half of what Content-Length promised, then the connection closes
                self.close_connection = fault == "cut"
                if fault not in FAULTS:
                    raise ValueError(f"unknown fault {fault!r}; faults: {FAULTS}")

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


def _example_of(schema: dict[str, Any]) -> Any:
    """The first value a (small) JSON schema allows: what a constraining server would produce."""
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type") == "object":
        return {k: _example_of(v) for k, v in schema.get("properties", {}).items()}
    if schema.get("type") == "array":
        return []
    return "" if schema.get("type") == "string" else 0
