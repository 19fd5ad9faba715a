"""The request cache: every answer a model gave, in one SQLite file, so a run that stops (a killed server, a
deadline, Ctrl-C) resumes by asking only for what is missing, and a rerun asks nothing.

A key is the SHA-256 of a canonical JSON of what decides the answer: the backend's name, the model's
fingerprint, the request kind, every field of the request (decoding limits, stop strings, constraint) and
whether the backend can apply the request's constraint. Greedy decoding is the only decoding a backend
does, so it is part of the key's version rather than a field. The value is the result as JSON, plus the raw
answer where the backend hands one over (the HTTP backend: the server's answer, its log-probs cut down to
the continuation's tokens), so a result can be audited against what the server said.

One process writes (the run holds the output directory's lock); threads inside it share one connection
behind a lock. WAL lets a reader (a progress display, a test) look while the run writes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from klue.io.output import OutputError
from klue.io.store import open_store
from klue.llm.backends.base import (
    Backend,
    BackendError,
    Capabilities,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    TokenScoresRequest,
    TokenScoresResult,
    Usage,
)

SCHEMA_VERSION = "1"
KEY_VERSION = 1  # bump when what a key covers changes, so old answers stop matching rather than mislead
DEFAULT_CHUNK = 32  # requests per call to a backend that cannot hand answers over as they arrive

LOGLIK = "loglik"
GENERATE = "generate"
TOKEN_SCORES = "token_scores"

Request = LoglikRequest | GenerateRequest | TokenScoresRequest
R = TypeVar("R", LoglikResult, GenerateResult, TokenScoresResult)


def canonical_json(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces, Unicode as is (tuples and lists spell alike)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def request_key(backend: str, fingerprint: str, kind: str, request: Request,
                extra: Mapping[str, Any] | None = None) -> str:
    payload = {"version": KEY_VERSION, "decoding": "greedy", "backend": backend, "fingerprint": fingerprint,
               "kind": kind, "request": dataclasses.asdict(request), "extra": dict(extra or {})}
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class RequestCache:
    """Answers by key in SQLite (`path` is created with its directory when missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()  # serialises the threads that share the connection
        self._db = open_store(self.path, SCHEMA_VERSION, "answers (key TEXT PRIMARY KEY, kind TEXT NOT NULL, "
                              "request TEXT NOT NULL, result TEXT NOT NULL, raw TEXT, created REAL NOT NULL)",
                              "request cache")

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored results (as JSON objects) of those keys that have one."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, dict[str, Any]] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):  # SQLite caps the number of parameters per statement
                part = wanted[start:start + 500]
                rows = self._db.execute(f"SELECT key, result FROM answers WHERE key IN ({','.join('?' * len(part))})",
                                        part).fetchall()
                found.update((key, json.loads(result)) for key, result in rows)
        return found

    def put(self, key: str, kind: str, request: Request, result: Any, raw: Mapping[str, Any] | None = None) -> None:
        """Store one answer now (its own transaction: an interrupted run keeps every answer stored before)."""
        row = (key, kind, canonical_json(dataclasses.asdict(request)), canonical_json(dataclasses.asdict(result)),
               None if raw is None else json.dumps(raw, ensure_ascii=False, separators=(",", ":")), time.time())
        try:
            with self._lock:
                self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?)", row)
        except sqlite3.OperationalError as error:  # "database or disk is full", a read-only file
            raise OutputError(f"cannot write {self.path}: {error}") from None

    def raw(self, key: str) -> dict[str, Any] | None:
        """The raw answer stored with a key, for an audit."""
        with self._lock:
            row = self._db.execute("SELECT raw FROM answers WHERE key = ?", (key,)).fetchone()
        return None if row is None or row[0] is None else json.loads(row[0])

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __repr__(self) -> str:
        return f"RequestCache({str(self.path)!r})"


class CachedBackend:
    """A `Backend` that answers from the cache and asks `backend` only for what the cache lacks.

    Its `usage` is the inner backend's own object, so `requests` stays what the model was asked and
    `cache_hits` counts the requests answered without asking it.
    """

    def __init__(self, backend: Backend, cache: RequestCache, *, chunk_size: int = DEFAULT_CHUNK) -> None:
        self.backend = backend
        self.cache = cache
        self.chunk_size = max(1, chunk_size)

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def model(self) -> str:
        return self.backend.model

    @property
    def fingerprint(self) -> str:
        return self.backend.fingerprint

    @property
    def capabilities(self) -> Capabilities:
        return self.backend.capabilities

    @property
    def usage(self) -> Usage:
        return self.backend.usage

    def loglik(self, requests: Sequence[LoglikRequest]) -> list[LoglikResult]:
        return self._answer(LOGLIK, requests, self.backend.loglik, LoglikResult)

    def generate(self, requests: Sequence[GenerateRequest]) -> list[GenerateResult]:
        return self._answer(GENERATE, requests, self.backend.generate, GenerateResult)

    def token_scores(self, requests: Sequence[TokenScoresRequest]) -> list[TokenScoresResult]:
        return self._answer(TOKEN_SCORES, requests, self.backend.token_scores, TokenScoresResult)

    def close(self) -> None:
        try:
            self.backend.close()
        finally:
            self.cache.close()

    def key(self, kind: str, request: Request) -> str:
        return request_key(self.name, self.fingerprint, kind, request, self._constraint(request))

    def _constraint(self, request: Request) -> dict[str, Any]:
        """Whether the backend can apply the request's constraint: a server that gains grammar support must
        not be answered with the unconstrained text an older one gave."""
        if not isinstance(request, GenerateRequest):
            return {}
        if request.choices is not None:
            return {"constrainable": self.capabilities.choices}
        if request.json_schema is not None:
            return {"constrainable": self.capabilities.json_schema}
        if request.regex is not None:
            return {"constrainable": self.capabilities.regex}
        if request.span_of is not None:
            return {"constrainable": self.capabilities.spans}
        return {}

    def _answer(self, kind: str, requests: Sequence[Any], ask: Callable[..., list[R]], result_type: type[R]) -> list[R]:
        keys = [self.key(kind, r) for r in requests]
        stored = self.cache.get_many(keys)
        results: dict[str, R] = {}
        for key, value in stored.items():
            result = _result_from_json(result_type, value)
            if result is not None:
                results[key] = result
        # Each missing key once, in first-seen order: a request repeated in the batch is asked once.
        missing = list(dict.fromkeys(k for k in keys if k not in results))
        request_of = dict(zip(keys, requests))
        self.usage.cache_hits += len(keys) - len(missing)
        if missing:
            results.update(self._ask(kind, [request_of[k] for k in missing], missing, ask))
        return [results[k] for k in keys]

    def _ask(self, kind: str, requests: list[Any], keys: list[str], ask: Callable[..., list[R]]) -> dict[str, R]:
        """Ask the inner backend, storing each answer as soon as it comes: by `on_result` where the backend
        hands answers over one by one, else chunk by chunk (what a chunk had done is kept)."""
        def store(index: int, result: Any, raw: Mapping[str, Any] | None = None) -> None:
            self.cache.put(keys[index], kind, requests[index], result, raw)

        if self.backend.streams_results:
            answers = ask(requests, on_result=store)
        else:
            answers = []
            for start in range(0, len(requests), self.chunk_size):
                part = ask(requests[start:start + self.chunk_size])
                for offset, result in enumerate(part):
                    store(start + offset, result)
                answers.extend(part)
        if len(answers) != len(requests):
            raise BackendError(f"the {self.name} backend answered {len(answers)} of {len(requests)} requests")
        return dict(zip(keys, answers))


def _result_from_json(result_type: type[R], value: Any) -> R | None:
    """A stored result, or None when it no longer fits the result type (then the model is asked again)."""
    names = {f.name for f in dataclasses.fields(result_type)}
    if not isinstance(value, dict) or set(value) != names:
        return None
    try:
        return result_type(**value)
    except (TypeError, ValueError):
        return None
