"""The JSON-over-HTTP transport every server client shares (the OpenAI-compatible LLM backend, and the
embedding backends): one connection pool per batch of calls, the retry policy of `klue.io.retry`, one-line
errors, credentials kept out of every message.

The plumbing the server clients share sits here too: `gather_first_failure` (concurrent requests, the first
failure cancelling the rest) and `served_model_id` (the id a server lists for the model asked); their
addresses (`api_root`, a spec's `MODEL@URL`) are read by `klue.io.endpoints`, which needs no httpx.

A client builds a `JsonTransport` for a server root (`http://host:8000/v1`), opens `client()` for a batch of
requests (at most `concurrency` connections) and awaits `request(...)` for each. It gets the decoded JSON
object, or one of:
- `UnreachableHttpError` (exit code 3): no connection could be made, after every attempt;
- `HttpError`: anything else, one sentence naming the URL (credentials blanked), what the request was for,
  and why: an HTTP refusal with the server's own words, a connection that broke off every time, no answer
  within the timeout, an answer that is not a JSON object, a 429 asking for a longer pause than we wait.

Secrets: the API key is sent only as a Bearer header and held by a `Secret` (no repr shows it); a
`user:password@` in the root URL becomes a Basic header and leaves the URL; every message goes through
`safe`, which blanks the key and any URL credentials a server or library echoes back. httpx is imported
here only: a client that needs this module needs the `klue[llm]` extra.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import threading
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from klue.errors import DataError, UnreachableError
from klue.io.redact import redact_text, redact_url, split_credentials
from klue.io.retry import RetryPolicy, retry_after_seconds, retryable_status

# Nothing answered: a retry helps only if the server comes up meanwhile; after the last, it is unreachable.
CONNECT_ERRORS: tuple[type[Exception], ...] = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The server was reached but the connection broke before the whole answer came (reset, body cut short).
BROKEN_ERRORS: tuple[type[Exception], ...] = (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
MESSAGE_CHARS = 300  # of a server's error text, in a message
DEFAULT_POLICY = RetryPolicy()
T = TypeVar("T")


class HttpError(DataError):
    """One request that failed; the message is one line."""


class UnreachableHttpError(HttpError, UnreachableError):
    """No connection to the server at all, after every attempt."""


class Secret:
    """Holds an API key so that no repr, traceback local or f-string shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value

    def reveal(self) -> str | None:
        return self._value

    def __repr__(self) -> str:
        return "<secret>" if self._value else "<none>"

    __str__ = __repr__


class JsonTransport:
    """JSON requests to one server root under one retry policy (see the module docstring)."""

    def __init__(self, root: str, *, api_key: Secret | None = None, key_hint: str = "",
                 policy: RetryPolicy = DEFAULT_POLICY, concurrency: int = 4) -> None:
        self.root, basic = split_credentials(root.rstrip("/"))
        self._basic = Secret(basic)
        self.shown_root = redact_url(root.rstrip("/"))
        self._key = api_key or Secret(None)
        self.key_hint = key_hint  # said after an HTTP 401/403: where the key comes from
        self.policy = policy
        self.concurrency = concurrency
        self._ssl: ssl.SSLContext | None = None

    @classmethod
    def for_server(cls, root: str, api_key_env: str | None, *, concurrency: int,
                   policy: RetryPolicy = DEFAULT_POLICY) -> JsonTransport:
        """The transport of a model server whose API key is in the environment variable `api_key_env` (None:
        no key is sent)."""
        key_hint = (f"the API key comes from ${api_key_env}" if api_key_env
                    else "no API key is sent: api_key_env is None")
        key = Secret(os.environ.get(api_key_env) if api_key_env else None)
        return cls(root, api_key=key, key_hint=key_hint, policy=policy, concurrency=concurrency)

    def __repr__(self) -> str:
        return f"JsonTransport({self.shown_root!r})"

    def client(self) -> httpx.AsyncClient:
        """A pool of at most `concurrency` connections, to use in one event loop (`async with`)."""
        headers = {"Content-Type": "application/json"}
        key, basic = self._key.reveal(), self._basic.reveal()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        elif basic:
            headers["Authorization"] = basic
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        if self._ssl is None:  # built once: loading the CA store costs ~50 ms, and each batch opens a client
            self._ssl = httpx.create_ssl_context()
        return httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(self.policy.timeout_s), limits=limits,
                                 verify=self._ssl)

    async def request(self, client: httpx.AsyncClient, method: str, endpoint: str, body: Mapping[str, Any] | None,
                      what: str, counts: dict[str, int] | None = None) -> dict[str, Any]:
        """One request, retried where a retry can help (`klue.io.retry`); `counts["retries"]` counts the
        retries. `what` names the request in messages ("generate request 3")."""
        url, shown = self.root + endpoint, self.shown_root + endpoint
        policy = self.policy
        retry_after: float | None = None
        for attempt in range(1, policy.attempts + 1):
            last = attempt == policy.attempts
            if attempt > 1:
                if counts is not None:
                    counts["retries"] = counts.get("retries", 0) + 1
                await asyncio.sleep(policy.wait_before(attempt, retry_after))
            retry_after = None
            try:
                response = await asyncio.wait_for(client.request(method, url, json=body), policy.timeout_s)
            except (asyncio.TimeoutError, httpx.ReadTimeout, httpx.WriteTimeout):
                raise HttpError(f"{shown}: no answer within {policy.timeout_s:g} s ({what}); not retried, "
                                "so that a slow server gets no more load") from None
            except CONNECT_ERRORS as error:
                if not last:
                    continue
                raise UnreachableHttpError(f"cannot reach {self.shown_root}: {self.safe(error)} ({what}, "
                                           f"{attempt} attempts)") from None
            except BROKEN_ERRORS as error:
                if not last:
                    continue
                raise HttpError(f"{shown}: the connection broke off before the answer was complete, "
                                f"{attempt} times ({self.safe(error)}; {what})") from None
            except httpx.HTTPError as error:
                raise HttpError(f"{shown}: {self.safe(error)} ({what})") from None
            if retryable_status(response.status_code):
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
                if policy.too_long(retry_after):
                    raise HttpError(f"{shown} answered HTTP {response.status_code} and asks to wait "
                                    f"{retry_after:.0f} s, longer than klue waits ({policy.max_retry_after_s:g} s; "
                                    f"{what}); run the same command again later")
                if not last:
                    continue
            return self._decode(response, shown, what)
        raise AssertionError("unreachable")  # the last attempt always returns or raises

    def _decode(self, response: httpx.Response, shown: str, what: str) -> dict[str, Any]:
        status = response.status_code
        if status >= 400:
            hint = f" ({self.key_hint})" if status in (401, 403) and self.key_hint else ""
            tried = f" after {self.policy.attempts} attempts" if retryable_status(status) else ""
            raise HttpError(f"{shown} answered HTTP {status}{tried}: {self.server_message(response)}{hint} ({what})")
        try:
            answer = response.json()
        except ValueError:  # malformed JSON or a body in another encoding: the same request gets the same answer
            raise HttpError(f"{shown}: the answer is not JSON ({what}): {self.safe(response.text[:200])!r}") from None
        if not isinstance(answer, dict):
            raise HttpError(f"{shown}: the answer is not a JSON object ({what})")
        return answer

    def server_message(self, response: httpx.Response) -> str:
        """The server's own words: OpenAI's error.message, FastAPI's detail, or the start of the body."""
        try:
            data = response.json()
        except ValueError:
            data = None
        message: Any = response.text
        if isinstance(data, dict):
            error = data.get("error")
            message = (error.get("message") if isinstance(error, dict) else error) or data.get("detail") or data
        text = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
        text = " ".join(text.split())
        cut = text[:MESSAGE_CHARS] + ("..." if len(text) > MESSAGE_CHARS else "")
        return self.safe(cut) or response.reason_phrase

    def safe(self, value: object) -> str:
        """Text for a message: the API key and the Basic credentials blanked should a server or library echo
        them back, and the credentials of any URL in it."""
        text = str(value) or type(value).__name__
        for secret in (self._key.reveal(), self._basic.reveal()):
            if secret:
                text = text.replace(secret, "<secret>")
        return redact_text(text)


def run_blocking(coroutine: Coroutine[Any, Any, T], name: str = "klue-http") -> T:
    """Run `coroutine` to the end from sync code (a client's sync methods over this async transport), in a
    thread of its own (`name`) when an event loop already runs here (a notebook), since asyncio.run refuses
    to nest."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coroutine)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = error
    thread = threading.Thread(target=target, name=name)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


# ---------------------------------------------------------------------------------------------------------
# What every server client does the same way


class DeadlinePassed(TimeoutError):
    """`gather_first_failure`'s deadline passed with `answered` of `total` awaitables done."""

    def __init__(self, answered: int, total: int) -> None:
        super().__init__(f"{answered} of {total} answered")
        self.answered, self.total = answered, total


async def gather_first_failure(coroutines: Sequence[Coroutine[Any, Any, T]], concurrency: int,
                               timeout_s: float | None = None) -> list[T]:
    """The coroutines' results in order, at most `concurrency` running at once (a request waiting for the
    transport's pool would spend its timeout waiting); the first failure cancels the rest and is raised, and
    so is DeadlinePassed after `timeout_s`."""
    semaphore = asyncio.Semaphore(concurrency)

    async def bounded(coroutine: Coroutine[Any, Any, T]) -> T:
        try:
            async with semaphore:
                return await coroutine
        finally:
            coroutine.close()  # one cancelled while it waited never started: closed, not left unawaited

    tasks = [asyncio.ensure_future(bounded(c)) for c in coroutines]
    if not tasks:
        return []
    try:
        done, pending = await asyncio.wait(tasks, timeout=timeout_s, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in tasks:
        error = task.exception() if task in done and not task.cancelled() else None
        if error is not None:
            raise error
    if pending:
        raise DeadlinePassed(sum(1 for t in tasks if t in done), len(tasks))
    return [t.result() for t in tasks]


@dataclass(frozen=True)
class ServedModel:
    """What GET /models says of the model asked for: the id it is served under, and a note where that is not
    simply the name asked (None: listed under that name)."""

    id: str
    note: str | None = None


async def served_model_id(transport: JsonTransport, client: httpx.AsyncClient, model: str,
                          counts: dict[str, int] | None = None) -> ServedModel:
    """The server's id for `model` (GET /models): what the weights are, as far as a server says. A one-model
    server (llama-cpp-python) answers to any name with its model: then its id. UnreachableHttpError when no
    connection can be made; any other failure is a note, and the id is the name asked."""
    try:
        listing = await transport.request(client, "GET", "/models", None, "listing the models", counts)
    except UnreachableHttpError:
        raise
    except HttpError as error:
        return ServedModel(model, f"GET /models failed, the fingerprint is the model name: {error}")
    entries = listing.get("data")
    listed = [e.get("id") for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    ids: list[str] = [i for i in listed if isinstance(i, str)]  # model names: what the server lists as text
    if model in ids:
        return ServedModel(model)
    if len(ids) == 1:
        return ServedModel(ids[0], f"the server lists no model {model!r}; it serves its one model {ids[0]!r} "
                                   "under that name")
    return ServedModel(model, f"the server lists no model {model!r} (it lists {ids})")
