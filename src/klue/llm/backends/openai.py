"""The HTTP backend: any OpenAI-compatible server (vLLM, llama-cpp-python, SGLang, a hosted API).

- Log-likelihoods come from `/v1/completions` with `echo` and prompt log-probs on the prompt context +
  continuation, aligned by text offset (`klue.llm.backends.echo`); a token that straddles the boundary is an
  error naming the request, never a silent split.
- Generation is greedy (temperature 0) through `/v1/completions` (a prompt) or `/v1/chat/completions`
  (messages), constrained where the server offers it: llama-cpp-python's GBNF `grammar` and chat
  `response_format: {"type": "json_object", "schema": ...}`, vLLM's `structured_outputs`. A capability
  probe at start (`klue.llm.backends.probe`) says which; a request the server cannot constrain is answered
  unconstrained and marked so.
- One prompt per HTTP request (llama-cpp-python refuses a list of prompts), at most `concurrency` in flight,
  through the shared transport (`klue.io.http`): retried only when a retry can help (connection errors, HTTP
  429 and 502-504; `klue.io.retry`), one-line errors.

The API key is read from the environment variable `api_key_env` and sent only as a Bearer header; it is in
no repr, log line or error message, nor are credentials written into the base URL (`http://user:pass@host`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from klue.io.endpoints import ServerOptions, api_root, split_model_at_url
from klue.io.http import (
    DeadlinePassed,
    HttpError,
    JsonTransport,
    UnreachableHttpError,
    gather_first_failure,
    run_blocking,
)
from klue.io.redact import redact_text, redact_url
from klue.io.retry import RetryPolicy
from klue.llm.backends.base import (
    ESTIMATE_COUNTER,
    BackendBase,
    BackendError,
    Capabilities,
    ContextExceeded,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    ResultSink,
    TokenScoresRequest,
    TokenScoresResult,
    Usage,
    estimate_tokens,
)
from klue.llm.backends.echo import field_at, get_at, loglik_body, loglik_from_answer, token_scores_from_answer
from klue.llm.backends.probe import (
    Dialects,
    ServerUnreachable,
    Tokenizer,
    constrain,
    probe_server,
    probe_tokenizer,
    served_note,
)

T = TypeVar("T")
# One request's coroutine: (client, retry counts, index, what to ask) -> (result, the raw answer kept)
Job = Callable[[httpx.AsyncClient, dict[str, int], int, Any], Awaitable[tuple[Any, Any]]]

# Servers' words for a prompt longer than the context (llama-cpp-python, vLLM, SGLang, llama.cpp), each with
# the context length it names where it names one.
CONTEXT_ERRORS = (re.compile(r"exceeds? (?:the )?context window of (\d+)", re.IGNORECASE),
                  re.compile(r"maximum context length is (\d+)", re.IGNORECASE),
                  re.compile(r"context length (?:is |of )?(\d+)", re.IGNORECASE),
                  re.compile(r"n_ctx[^0-9]{0,20}(\d+)", re.IGNORECASE),
                  re.compile(r"exceeds? (?:the available )?context size", re.IGNORECASE))


def context_error(message: str) -> ContextExceeded | None:
    """A ContextExceeded for a server's refusal of a too-long prompt (None: the message says nothing of it)."""
    for pattern in CONTEXT_ERRORS:
        found = pattern.search(message)
        if found:
            return ContextExceeded(message, int(found.group(1)) if found.groups() else None)
    return None


def server_root(root: str) -> str:
    """`http://h:8000/v1` -> `http://h:8000`: where tokenize endpoints and `/props` live."""
    return root.removesuffix("/v1")


def split_target(target: str) -> tuple[str, str]:
    """What follows `openai:` -> (the server's model name, its base URL); BackendError saying the form otherwise."""
    found = split_model_at_url(target)
    if found is None:
        raise BackendError(f"model spec 'openai:{redact_text(target)}': write openai:MODEL@http://HOST:PORT/v1 "
                           "(the server's model name, then its base URL)")
    return found


def check_target(target: str) -> None:
    split_target(target)


def open_backend(target: str, options: ServerOptions) -> OpenAIBackend:
    model, base_url = split_target(target)
    return OpenAIBackend(model, base_url, api_key_env=options.api_key_env, concurrency=options.concurrency,
                         timeout_s=options.timeout_s)


def served_warning(target: str, options: ServerOptions) -> str | None:
    """Before a run: why the server may not serve the model the spec names (its GET /models does not list
    it), or None. ServerUnreachable (exit 3) when no connection can be made: the run stops before it starts."""
    model, base_url = split_target(target)
    backend = OpenAIBackend(model, base_url, api_key_env=options.api_key_env, concurrency=1,
                            timeout_s=options.timeout_s, probe=False)
    return backend.served_warning()


class OpenAIBackend(BackendBase):
    """`Backend` over an OpenAI-compatible HTTP server; probes the server on construction."""

    name = "openai"
    streams_results = True  # loglik/generate take `on_result`, so a cache can store answers as they arrive

    def __init__(self, model: str, base_url: str, *, api_key_env: str | None = "OPENAI_API_KEY",
                 concurrency: int = 4, timeout_s: float = 120.0, deadline_s: float | None = None,
                 max_attempts: int = 4, backoff_s: float = 0.5, probe: bool = True) -> None:
        ServerOptions(concurrency=concurrency, timeout_s=timeout_s)  # checks them (a DataError)
        if deadline_s is not None and deadline_s <= 0:
            raise BackendError("deadline_s must be positive")
        self.model = model
        self.base_url = redact_url(base_url)  # as shown; the transport holds the credentials, if any
        root = api_root(base_url)
        self.root = redact_url(root)
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.transport = JsonTransport.for_server(root, api_key_env, concurrency=concurrency, policy=RetryPolicy(
            attempts=max(1, max_attempts), backoff_s=backoff_s, timeout_s=timeout_s))
        # Tokenize endpoints and /props sit at the server's root; asked once, when prompts are first fitted.
        self.root_transport = JsonTransport.for_server(server_root(root), api_key_env, concurrency=1,
                                                       policy=RetryPolicy(attempts=1, timeout_s=timeout_s))
        self._tokenizer: Tokenizer | None | bool = False  # False: not probed yet; None: none
        self._context: int | None | bool = False
        self._counts: dict[str, int] = {}
        self._deadline = None if deadline_s is None else time.monotonic() + deadline_s
        self.usage = Usage()
        self.fingerprint = model
        self.dialects = Dialects()
        self.capabilities = Capabilities(loglik=False, completion=False)
        if probe:
            probed = self._run(probe_server(self.transport, model))
            self.fingerprint, self.capabilities, self.dialects = probed.fingerprint, probed.capabilities, probed.dialects
            self.usage.extra["probe_requests"] = probed.requests
            self._count_retries(probed.counts)

    def served_warning(self) -> str | None:
        """Why the model name may not be served (GET /models does not list it under that name), or None."""
        return self._run(served_note(self.transport, self.model))

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r}, concurrency={self.concurrency})"

    # -- the Backend interface ------------------------------------------------------------------------------

    def loglik(self, requests: Sequence[LoglikRequest], on_result: ResultSink | None = None) -> list[LoglikResult]:
        """Continuation log-likelihoods in request order; `on_result(i, result, raw)` as each arrives."""
        for i, request in enumerate(requests):
            if not request.continuation:
                raise BackendError(f"loglik request {i}: the continuation is empty: there is nothing to score")
            if not request.context:  # a server gives the prompt's first token no log-prob
                raise BackendError(f"loglik request {i}: the context is empty: the first token has no "
                                   "log-probability")
        return self._run(self._gather(self._loglik_job, list(requests), on_result))

    @property
    def gives_token_scores(self) -> bool:
        """Per-token log-probs of a text come from the same echo as log-likelihoods, where the probe trusts it."""
        return self.capabilities.loglik

    def token_scores(self, requests: Sequence[TokenScoresRequest],
                     on_result: ResultSink | None = None) -> list[TokenScoresResult]:
        """Each text's echoed prompt log-probs (`echo: true, logprobs: 1, max_tokens: 1`), in request order;
        the server gives no next-token distributions, so a request for their moments is refused."""
        if not self.capabilities.loglik:
            raise BackendError(f"{self.root} gives no usable prompt log-probs "
                               f"({self.capabilities.loglik_why_not or 'its echo gives none'})")
        for i, request in enumerate(requests):
            if request.distribution:
                raise BackendError(f"token scores request {i}: next-token distributions (Min-K%++) need the "
                                   "in-process backend")
            if not request.text:
                raise BackendError(f"token scores request {i}: the text is empty")
        return self._run(self._gather(self._token_scores_job, list(requests), on_result))

    def generate(self, requests: Sequence[GenerateRequest],
                 on_result: ResultSink | None = None) -> list[GenerateResult]:
        """Greedy generations in request order; `on_result(i, result, raw)` as each arrives."""
        for i, request in enumerate(requests):
            if request.max_new_tokens < 1:  # llama-cpp-python reads max_tokens 0 as "until the context is full"
                raise BackendError(f"generate request {i}: max_new_tokens must be at least 1")
        bodies = [(request, *self.generate_body(request)) for request in requests]  # malformed: refused before any
        return self._run(self._gather(self._generate_job, bodies, on_result))

    def close(self) -> None:
        """Nothing stays open between calls: each call opens and closes its own connection pool."""

    # -- token counts and the context (klue.llm.fitting) ----------------------------------------------------

    @property
    def token_counter(self) -> str:
        found = self._find_tokenizer()
        return f"the server's {found[1]} ({found[0]})" if found else ESTIMATE_COUNTER

    @property
    def context_length(self) -> int | None:
        """The context the server states: vLLM's `max_model_len` in /v1/models, llama.cpp's /props n_ctx
        (llama-cpp-python states none: then None, and the engine learns it from a refusal or --max-context)."""
        if self._context is False:
            self._context = self._run(self._ask_context())
        return None if self._context is True or self._context is False else self._context

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens per text by the server's tokenize endpoint where it has one (special tokens included, as
        the server adds them to a prompt), else the stated estimate; each text counted once."""
        found = self._find_tokenizer()
        missing = list(dict.fromkeys(t for t in texts if t not in self._counts))
        if found and missing:
            self._counts.update(zip(missing, self._run(self._tokenize_all(found, missing))))
        return [self._counts[t] if found else estimate_tokens(t) for t in texts]

    def _find_tokenizer(self) -> Tokenizer | None:
        if self._tokenizer is False:
            self._tokenizer = self._run(probe_tokenizer(self.root_transport, self.model))
        return self._tokenizer if isinstance(self._tokenizer, tuple) else None

    async def _root_post(self, client: httpx.AsyncClient, endpoint: str, body: Mapping[str, Any]) -> Any:
        try:
            return await self.root_transport.request(client, "POST", endpoint, body, "counting tokens")
        except UnreachableHttpError as error:
            raise ServerUnreachable(str(error)) from None

    async def _tokenize_all(self, found: Tokenizer, texts: list[str]) -> list[int]:
        _, endpoint, key, answer_key = found
        async with self.root_transport.client() as client:
            counts = []
            for text in texts:
                try:
                    answer = await self._root_post(client, endpoint, {"model": self.model, key: text})
                except HttpError as error:
                    raise BackendError(str(error)) from None
                tokens = answer.get(answer_key)
                if not isinstance(tokens, list):
                    raise BackendError(f"{self.root_transport.shown_root}{endpoint}: no token list in the answer")
                counts.append(len(tokens))
        return counts

    async def _ask_context(self) -> int | bool:
        """The context length the server states, or True when it states none."""
        for transport, endpoint, path in ((self.transport, "/models", None),
                                          (self.root_transport, "/props", "default_generation_settings.n_ctx")):
            async with transport.client() as client:
                try:
                    answer = await transport.request(client, "GET", endpoint, None, "the context length")
                except UnreachableHttpError as error:
                    raise ServerUnreachable(str(error)) from None
                except HttpError:
                    continue
            if path is None:
                entries = answer.get("data")
                found = [e.get("max_model_len") for e in entries if isinstance(e, dict)
                         and e.get("id") in (self.model, self.fingerprint)] if isinstance(entries, list) else []
                value = found[0] if found else None
            else:
                value = get_at(answer, path)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return True

    # -- request bodies -------------------------------------------------------------------------------------

    def loglik_body(self, request: LoglikRequest) -> dict[str, Any]:
        return loglik_body(self.model, request)

    def generate_body(self, request: GenerateRequest) -> tuple[str, dict[str, Any], bool]:
        """(endpoint, body, constrained) for one generation request."""
        body: dict[str, Any] = {"model": self.model, "max_tokens": request.max_new_tokens, "temperature": 0}
        chat = request.messages is not None
        if chat:
            body["messages"] = [{"role": role, "content": content} for role, content in request.messages or ()]
        else:
            body["prompt"] = request.prompt
        constrained = constrain(body, request, chat, self.dialects)
        # A stop string could cut a constrained choice short; the constraint ends the answer by itself.
        if request.stop and not (constrained and request.choices):
            body["stop"] = list(request.stop)
        return ("/chat/completions" if chat else "/completions"), body, constrained

    # -- jobs -----------------------------------------------------------------------------------------------

    async def _loglik_job(self, client: httpx.AsyncClient, counts: dict[str, int], index: int,
                          request: LoglikRequest) -> tuple[LoglikResult, dict[str, Any]]:
        answer = await self._post(client, counts, "/completions", self.loglik_body(request), f"loglik request {index}")
        try:
            return loglik_from_answer(answer, request)
        except BackendError as error:
            raise BackendError(f"{self.root}: loglik request {index} (context ending "
                               f"{request.context[-30:]!r}, continuation {request.continuation!r}): "
                               f"{error}") from None

    async def _token_scores_job(self, client: httpx.AsyncClient, counts: dict[str, int], index: int,
                                request: TokenScoresRequest) -> tuple[TokenScoresResult, dict[str, Any]]:
        body = self.loglik_body(LoglikRequest(request.text, ""))
        answer = await self._post(client, counts, "/completions", body, f"token scores request {index}")
        try:
            return token_scores_from_answer(answer, request.text)
        except BackendError as error:
            raise BackendError(f"{self.root}: token scores request {index} (text starting "
                               f"{request.text[:30]!r}): {error}") from None

    async def _generate_job(self, client: httpx.AsyncClient, counts: dict[str, int], index: int,
                            asked: tuple[GenerateRequest, str, dict[str, Any], bool]) -> tuple[GenerateResult, Any]:
        request, endpoint, body, constrained = asked
        answer = await self._post(client, counts, endpoint, body, f"generate request {index}")
        try:
            return _generate_result(answer, chat=request.messages is not None, constrained=constrained), answer
        except BackendError as error:
            raise BackendError(f"{self.root}{endpoint}: generate request {index}: {error}") from None

    # -- the event loop -------------------------------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return run_blocking(coroutine, "klue-openai")

    async def _gather(self, job: Job, requests: Sequence[Any], on_result: ResultSink | None) -> list[Any]:
        """`job(client, counts, index, request)` for each request, at most `concurrency` at once; the first
        failure cancels the rest and is raised."""
        if not requests:
            return []
        timeout = self._remaining()
        counts: dict[str, int] = {}
        async with self.transport.client() as client:
            async def one(index: int, request: Any) -> Any:
                result, raw = await job(client, counts, index, request)
                if on_result is not None:
                    on_result(index, result, raw)
                return result

            try:
                return await gather_first_failure([one(i, r) for i, r in enumerate(requests)], self.concurrency,
                                                  timeout)
            except DeadlinePassed as late:
                raise BackendError(f"{self.root}: the deadline passed with {late.answered} of {late.total} "
                                   "requests of this batch answered") from None
            finally:
                self._count_retries(counts)

    def _remaining(self) -> float | None:
        if self._deadline is None:
            return None
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise BackendError(f"{self.root}: the deadline has passed; no request was sent")
        return left

    def _count_retries(self, counts: Mapping[str, int]) -> None:
        for key, value in counts.items():
            self.usage.extra[key] = self.usage.extra.get(key, 0) + value

    # -- HTTP -----------------------------------------------------------------------------------------------

    async def _post(self, client: httpx.AsyncClient, counts: dict[str, int], endpoint: str,
                    body: Mapping[str, Any], what: str) -> dict[str, Any]:
        """One request through the transport (its retry policy), its usage counted; BackendError
        (ServerUnreachable, ContextExceeded) otherwise."""
        try:
            answer = await self.transport.request(client, "POST", endpoint, body, what, counts)
        except UnreachableHttpError as error:
            raise ServerUnreachable(str(error)) from None
        except HttpError as error:
            raise context_error(str(error)) or BackendError(str(error)) from None
        self._add_usage(answer)
        return answer

    def _add_usage(self, answer: Mapping[str, Any]) -> None:
        self.usage.requests += 1
        usage = answer.get("usage")
        if isinstance(usage, dict):
            self.usage.prompt_tokens += _int(usage.get("prompt_tokens"))
            self.usage.completion_tokens += _int(usage.get("completion_tokens"))


def _generate_result(answer: Mapping[str, Any], *, chat: bool, constrained: bool) -> GenerateResult:
    choice = field_at(answer, "choices.0")
    text = field_at(choice, "message.content" if chat else "text")
    if text is None and chat:
        text = ""  # a chat answer of only tool calls or nothing at all
    if not isinstance(text, str):
        raise BackendError("the answer's text is not a string")
    found_usage = answer.get("usage")
    usage: dict[str, Any] = found_usage if isinstance(found_usage, dict) else {}
    finish = choice.get("finish_reason") if isinstance(choice, dict) else None
    return GenerateResult(text=text, n_prompt_tokens=_opt_int(usage.get("prompt_tokens")),
                          n_tokens=_opt_int(usage.get("completion_tokens")), constrained=constrained,
                          finish_reason=finish if isinstance(finish, str) else None)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
