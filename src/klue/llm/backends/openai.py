"""The HTTP backend: any OpenAI-compatible server (vLLM, llama-cpp-python, SGLang, a hosted API).

- Log-likelihoods come from `/v1/completions` with `echo` and prompt log-probs on the prompt context +
  continuation. No local tokenizer is needed: the continuation starts at the first token whose
  `logprobs.text_offset` is at or past the end of the context, after measuring the shift some servers add
  (a SentencePiece dummy-prefix space, a BOS string). A token that starts inside the context and ends inside
  the continuation is an error naming the request, never a silent split.
- Generation is greedy (temperature 0) through `/v1/completions` (a prompt) or `/v1/chat/completions`
  (messages), constrained where the server offers it: llama-cpp-python's GBNF `grammar` and chat
  `response_format: {"type": "json_object", "schema": ...}`, vLLM's `structured_outputs`. A capability
  probe at start says which; a request the server cannot constrain is answered unconstrained and marked so.
- One prompt per HTTP request (llama-cpp-python refuses a list of prompts), at most `concurrency` in flight,
  through the shared transport (`klue.io.http`): retried only when a retry can help (connection errors, HTTP
  429 and 502-504; `klue.io.retry`), one-line errors.

The API key is read from the environment variable `api_key_env` and sent only as a Bearer header; it is in
no repr, log line or error message, nor are credentials written into the base URL (`http://user:pass@host`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx

from klue.errors import UnreachableError
from klue.io.http import HttpError, JsonTransport, UnreachableHttpError, run_blocking
from klue.io.redact import redact_text, redact_url
from klue.io.retry import RetryPolicy
from klue.llm.backends.base import (
    ESTIMATE_COUNTER,
    BackendBase,
    BackendError,
    BackendOptions,
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

T = TypeVar("T")

# MODEL@URL split at the first "@" that starts the URL, so a URL's own "user:password@" stays in the URL.
_MODEL_AT_URL = re.compile(r"(?P<model>.+?)@(?P<url>https?://.+)")
GREEDY_TOLERANCE = 1e-6  # log-prob ties between the chosen and the top token count as greedy

# Constraint dialects, as the probe finds them.
GBNF = "gbnf"  # llama-cpp-python: body["grammar"]
STRUCTURED = "structured_outputs"  # vLLM >= 0.12: body["structured_outputs"]
RESPONSE_FORMAT = "response_format"  # llama-cpp-python chat: {"type": "json_object", "schema": ...}

# Servers' words for a prompt longer than the context (llama-cpp-python, vLLM, SGLang, llama.cpp), each with
# the context length it names where it names one.
CONTEXT_ERRORS = (re.compile(r"exceeds? (?:the )?context window of (\d+)", re.IGNORECASE),
                  re.compile(r"maximum context length is (\d+)", re.IGNORECASE),
                  re.compile(r"context length (?:is |of )?(\d+)", re.IGNORECASE),
                  re.compile(r"n_ctx[^0-9]{0,20}(\d+)", re.IGNORECASE),
                  re.compile(r"exceeds? (?:the available )?context size", re.IGNORECASE))
# Tokenize endpoints at the server's root (not under /v1), tried in order: (name, endpoint, body key, answer key)
TOKENIZERS = (("llama-cpp-python", "/extras/tokenize", "input", "tokens"),
              ("vLLM/SGLang", "/tokenize", "prompt", "tokens"),
              ("llama.cpp server", "/tokenize", "content", "tokens"))


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


PROBE_PROMPT = "안녕하세요. 반갑습니다"  # Korean, so multi-byte offsets are exercised from the start
PROBE_CHOICE = "zq"  # an answer no unconstrained model gives by chance
PROBE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"zq": {"type": "string", "enum": ["a"]}},
                                "required": ["zq"], "additionalProperties": False}
# The echo cross-check: ASCII, so every token's text and offset are exact, and a model continues it briefly.
CHECK_PROMPT = "1, 2, 3, 4, 5,"
# Echoed and generated log-probs of the same tokens agree within this (nats, plus a share of the value): the
# same server computes both, but a batched prefill and a decoding step may round differently (bf16 on vLLM).
# A shifted echo is off by nats (SmolLM2 on llama-cpp-python: -12.93 echoed for a token generated at -0.75).
CHECK_TOLERANCE = 0.25
CHECK_TOKENS = 1  # generated for the check: its first token is compared
CHECK_RELATIVE = 0.05
# What the cross-check finds.
ALIGNED = "aligned"  # the echoed values are the generated ones: log-likelihoods are right
SHIFTED = "shifted"  # one position late: the value shown for a token is the one for the token before
MISMATCH = "mismatch"  # they disagree in some other way
UNKNOWN = "unknown"  # the check could not be made (no generated log-probs, a different tokenization)
SHIFT_CAUSE = ("the server's echoed prompt log-probs are shifted by one token (each token is paired with "
               "the next position, the first token's value dropped): a model without a BOS token, a known "
               "llama-cpp-python behaviour")


class ServerUnreachable(BackendError, UnreachableError):
    """No connection to the server after every attempt (the probe stops at it; a missing feature does not);
    exit code 3 in the CLI."""


def api_root(base_url: str) -> str:
    """`http://h:8000` -> `http://h:8000/v1`; a URL with a path (`.../v1`, a proxy prefix) is kept as given."""
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BackendError(f"base URL {base_url!r}: use http://HOST:PORT/v1 (or https://...)")
    return url if parts.path not in ("", "/") else url + "/v1"


def split_target(target: str) -> tuple[str, str]:
    """What follows `openai:` -> (the server's model name, its base URL); BackendError saying the form otherwise."""
    found = _MODEL_AT_URL.fullmatch(target)
    if not (found and found["model"].strip()):
        raise BackendError(f"model spec 'openai:{redact_text(target)}': write openai:MODEL@http://HOST:PORT/v1 "
                           "(the server's model name, then its base URL)")
    return found["model"].strip(), found["url"].rstrip("/")


def check_target(target: str) -> None:
    split_target(target)


def open_backend(target: str, options: BackendOptions) -> OpenAIBackend:
    model, base_url = split_target(target)
    return OpenAIBackend(model, base_url, api_key_env=options.api_key_env, concurrency=options.concurrency,
                         timeout_s=options.timeout_s)


def served_warning(target: str, options: BackendOptions) -> str | None:
    """Before a run: why the server may not serve the model the spec names (its GET /models does not list
    it), or None. ServerUnreachable (exit 3) when no connection can be made: the run stops before it starts."""
    model, base_url = split_target(target)
    backend = OpenAIBackend(model, base_url, api_key_env=options.api_key_env, concurrency=1,
                            timeout_s=options.timeout_s, probe=False)
    return backend.served_warning()


def gbnf_choices(choices: Sequence[str]) -> str:
    """A GBNF grammar whose only sentences are `choices`."""
    if not choices:
        raise BackendError("a constrained request needs at least one choice")
    return "root ::= " + " | ".join(_gbnf_literal(c) for c in choices)


def _gbnf_literal(text: str) -> str:
    escaped = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = []
    for char in text:
        if char in escaped:
            out.append(escaped[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:  # other control characters: GBNF's hex escape
            out.append(f"\\x{ord(char):02X}")
        else:
            out.append(char)  # GBNF literals take UTF-8 as is, Hangul included
    return '"' + "".join(out) + '"'


# ---------------------------------------------------------------------------------------------------------
# Finding the continuation in an echoed prompt


@dataclass(frozen=True)
class Echo:
    """The prompt part of an echo + logprobs answer: one entry per prompt token (generated tokens removed)."""

    tokens: list[str]
    offsets: list[int]
    logprobs: list[float | None]
    top: list[dict[str, float] | None] | None
    end: int | None  # where the prompt ends in the offsets' coordinates (the first generated token's offset)


@dataclass(frozen=True)
class Span:
    """The continuation's tokens in an Echo: `first` to the end of the prompt."""

    first: int
    shift: int  # how far the server's offsets sit from the prompt string's own indices
    boundary: int  # len(context) + shift


def _field(data: Any, path: str) -> Any:
    """`choices.0.logprobs` out of a JSON answer, or BackendError naming the missing field."""
    value = data
    for key in path.split("."):
        try:
            value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, TypeError, ValueError):
            raise BackendError(f"the answer has no {path}") from None
    return value


def parse_echo(answer: Mapping[str, Any], prompt: str) -> Echo:
    """The prompt tokens of a `/v1/completions` answer to `echo: true, logprobs: N, max_tokens: 1`."""
    choice = _field(answer, "choices.0")
    logprobs = _field(choice, "logprobs") if isinstance(choice, dict) else None
    if not isinstance(logprobs, dict):
        raise BackendError("the answer has no prompt log-probs (choices[0].logprobs): the server ignores echo")
    tokens, offsets, values = (_field(logprobs, k) for k in ("tokens", "text_offset", "token_logprobs"))
    top = logprobs.get("top_logprobs")
    if not (isinstance(tokens, list) and isinstance(offsets, list) and isinstance(values, list)
            and len(tokens) == len(offsets) == len(values)):
        raise BackendError("the answer's logprobs.tokens, text_offset and token_logprobs differ in length")
    if not all(isinstance(o, int) for o in offsets) or any(b < a for a, b in itertools.pairwise(offsets)):
        raise BackendError("the answer's logprobs.text_offset is not a non-decreasing list of integers")
    n_generated = _generated_count(answer, tokens, offsets, prompt)
    n = len(tokens) - n_generated
    end = offsets[n] if n_generated else _end_from_last_token(tokens[:n], offsets[:n])
    tops = top[:n] if isinstance(top, list) and len(top) == len(tokens) else None
    return Echo([str(t) for t in tokens[:n]], offsets[:n], values[:n], tops, end)


def _generated_count(answer: Mapping[str, Any], tokens: list[Any], offsets: list[int], prompt: str) -> int:
    """How many of the echoed tokens were generated. Not always one for max_tokens 1: llama-cpp-python goes
    on until the generated bytes make whole UTF-8 characters, and says how far in usage.completion_tokens."""
    usage = answer.get("usage")
    reported = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if isinstance(reported, int) and not isinstance(reported, bool):
        return max(0, min(reported, len(tokens) - 1))
    # No usage: generated tokens start at or past the prompt's end, which the first token's shift locates.
    end = len(prompt) + _shift_from_first_token(str(tokens[0]) if tokens else "", offsets[0] if offsets else 0, prompt)
    return min(sum(1 for o in offsets if o >= end), max(len(tokens) - 1, 0))


def _end_from_last_token(tokens: list[str], offsets: list[int]) -> int | None:
    """The prompt's end when nothing was generated: the last token's offset plus its text, if its text is
    whole (byte tokens come back as '' and partial characters as U+FFFD, which say nothing of length)."""
    if not tokens or not tokens[-1] or "\ufffd" in tokens[-1]:
        return None
    return offsets[-1] + len(tokens[-1])


def measure_shift(echo: Echo, prompt: str) -> int:
    """Offsets minus string indices. The prompt's end says it exactly when known; else the first token:
    the part of its text the prompt does not start with (a dummy-prefix space, "<s>") is the shift."""
    if echo.end is not None:
        shift = echo.end - len(prompt)
    else:
        shift = _shift_from_first_token(echo.tokens[0] if echo.tokens else "", echo.offsets[0] if echo.offsets
                                        else 0, prompt)
    if shift < 0:
        raise BackendError(f"the server's token offsets end {-shift} characters before the prompt does: a "
                           "prompt cut to fit the model's context, or an echo without the generated token "
                           "(llama-cpp-python's for a model without a BOS token)")
    return shift


def _shift_from_first_token(first: str, offset: int, prompt: str) -> int:
    """The leading part of the first token's text that the prompt does not start with ("▁" shown as " ",
    "<s>"), plus that token's own offset."""
    return offset + next(s for s in range(len(first) + 1) if prompt.startswith(first[s:]))


def continuation_span(echo: Echo, context: str, prompt: str) -> Span:
    """Where the continuation's tokens start; BackendError when a token straddles the boundary."""
    shift = measure_shift(echo, prompt)
    boundary = len(context) + shift
    first = next((i for i, o in enumerate(echo.offsets) if o >= boundary), len(echo.offsets))
    ends_past = first == len(echo.offsets) and (echo.end is None or echo.end > boundary)
    if first == len(echo.offsets) and not ends_past:
        raise BackendError("the continuation is empty: there is nothing to score")
    if ends_past or echo.offsets[first] > boundary:
        token = echo.tokens[first - 1] if first > 0 else ""
        raise BackendError(f"the token {token!r} spans the end of the context and the start of the "
                           "continuation: end the context where a token ends (e.g. put the space that "
                           "precedes the answer into the continuation)")
    return Span(first, shift, boundary)


def _is_greedy(echo: Echo, first: int) -> bool | None:
    """Whether each continuation token was the top token. llama-cpp-python keys top_logprobs by token text,
    so two byte tokens ('' both) collide: such a position is unknown rather than guessed."""
    if echo.top is None:
        return None
    verdict: bool | None = True
    for i in range(first, len(echo.tokens)):
        top, chosen = echo.top[i], echo.logprobs[i]
        if not isinstance(top, dict) or not top or chosen is None:
            return None
        others = [v for k, v in top.items() if k != echo.tokens[i]]
        if others and max(others) > chosen + GREEDY_TOLERANCE:
            return False
        if not others and not echo.tokens[i]:
            verdict = None  # a lone '' key: the top token may have been another byte token
    return verdict


def token_scores_from_answer(answer: Mapping[str, Any], text: str) -> tuple[TokenScoresResult, dict[str, Any]]:
    """The log-probs of a text's tokens out of an echo answer, and the part of the answer worth keeping. The
    first token has no context unless the server put a BOS token before it: its null log-prob is left out; a
    null anywhere else is an error (a byte token a server cannot score, say), never a silent gap."""
    echo = parse_echo(answer, text)
    values = echo.logprobs[1:] if echo.logprobs and echo.logprobs[0] is None else echo.logprobs
    if not all(_finite(v) for v in values):
        raise BackendError("a token of the text has no finite log-prob in the echo")
    return (TokenScoresResult(tuple(float(v) for v in values if v is not None)),
            {"tokens": echo.tokens, "text_offset": echo.offsets, "token_logprobs": echo.logprobs})


def loglik_from_answer(answer: Mapping[str, Any], request: LoglikRequest) -> tuple[LoglikResult, dict[str, Any]]:
    """The continuation's log-likelihood out of an echo answer, and the part of the answer worth keeping."""
    prompt = request.context + request.continuation
    echo = parse_echo(answer, prompt)
    span = continuation_span(echo, request.context, prompt)
    values = echo.logprobs[span.first:]
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) for v in values):
        why = "the context is empty (the first token has none)" if span.first == 0 else "the server gave none"
        raise BackendError(f"a continuation token has no finite log-probability: {why}")
    result = LoglikResult(float(sum(float(v) for v in values if v is not None)), len(values),
                          _is_greedy(echo, span.first))
    kept = {"model": answer.get("model"), "shift": span.shift, "boundary": span.boundary,
            "tokens": echo.tokens[span.first:], "text_offset": echo.offsets[span.first:],
            "token_logprobs": values, "top_logprobs": echo.top[span.first:] if echo.top else None,
            "usage": answer.get("usage")}
    return result, kept


@dataclass(frozen=True)
class EchoCheck:
    """The echoed log-probs of a generated continuation against the generation's own: `verdict` (ALIGNED,
    SHIFTED, MISMATCH, UNKNOWN), the two sums (nats) and the text they are of, and why UNKNOWN."""

    verdict: str
    generated: float | None = None
    echoed: float | None = None
    text: str = ""
    why: str = ""

    def reason(self) -> str:
        """Why the echoed log-probs are not used (SHIFTED, MISMATCH), with the values that show it."""
        values = f"{self.echoed:.3f} echoed vs {self.generated:.3f} generated for {self.text!r}"
        if self.verdict == SHIFTED:
            return f"{SHIFT_CAUSE} ({values})"
        return f"the server's echoed prompt log-probs disagree with its own generation ({values})"


def _generated_logprobs(answer: Mapping[str, Any] | None) -> tuple[str, str, float, dict[str, float] | None] | str:
    """(text, the first token's text, its log-prob, its top log-probs) of a `logprobs: 1` generation, or why
    not (the first token must have text of its own: a byte token's '' cannot be found in an echo)."""
    if answer is None:
        return "the server refused a generation with log-probs"
    text = _get(answer, "choices.0.text")
    tokens = _get(answer, "choices.0.logprobs.tokens")
    values = _get(answer, "choices.0.logprobs.token_logprobs")
    tops = _get(answer, "choices.0.logprobs.top_logprobs")
    if not (isinstance(text, str) and isinstance(tokens, list) and isinstance(values, list) and tokens and values):
        return "the generation gave no log-probs"
    first = tokens[0]
    if not (isinstance(first, str) and first and "\ufffd" not in first and text.startswith(first)):
        return "the first generated token has no text of its own"
    if not _finite(values[0]):
        return "the first generated token has no log-prob"
    top = tops[0] if isinstance(tops, list) and tops and isinstance(tops[0], dict) else None
    return text, first, float(values[0]), top


def check_echo(generation: Mapping[str, Any] | None, echo: Mapping[str, Any] | None, prompt: str) -> EchoCheck:
    """Compare the echoed log-prob of the first token the server generated after `prompt` (`echo`: an
    `echo: true, logprobs: 1` answer on `prompt` + the generated text) with the one the generation gave it
    (`generation`: a `logprobs: 1` answer on `prompt`). The token is found by its text offset, not by the
    count of generated tokens, so a list that lacks the generated token (llama-cpp-python without BOS) is
    read right. SHIFTED when, besides, the top log-prob shown one position early is the generation's own:
    the values sit one token late."""
    found = _generated_logprobs(generation)
    if isinstance(found, str):
        return EchoCheck(UNKNOWN, why=found)
    text, first, made, top = found
    logprobs = _get(echo, "choices.0.logprobs") if echo is not None else None
    tokens, offsets, values = ((logprobs or {}).get(k) if isinstance(logprobs, dict) else None
                               for k in ("tokens", "text_offset", "token_logprobs"))
    if not (isinstance(tokens, list) and isinstance(offsets, list) and isinstance(values, list) and tokens
            and len(tokens) == len(offsets) == len(values) and all(isinstance(o, int) for o in offsets)):
        return EchoCheck(UNKNOWN, why="the echo answer has no usable logprobs")
    shift = _shift_from_first_token(str(tokens[0]), offsets[0], prompt + text)
    at = next((i for i, o in enumerate(offsets) if o >= len(prompt) + shift), None)
    if at is None or at == 0 or offsets[at] != len(prompt) + shift or tokens[at] != first:
        return EchoCheck(UNKNOWN, why=f"the generated token {first!r} is not a token of the echo")
    if not _finite(values[at]):
        return EchoCheck(UNKNOWN, why="the echo gave the generated token no log-prob")
    echoed = float(values[at])
    if abs(echoed - made) <= CHECK_TOLERANCE + CHECK_RELATIVE * abs(made):
        return EchoCheck(ALIGNED, made, echoed, first)
    tops = logprobs.get("top_logprobs") if isinstance(logprobs, dict) else None
    early = tops[at - 1] if isinstance(tops, list) and len(tops) == len(tokens) else None
    shifted = (isinstance(early, dict) and top is not None and bool(top)
               and all(k in early and _finite(early[k]) and abs(float(early[k]) - float(v)) <= CHECK_TOLERANCE
                       for k, v in top.items()))
    return EchoCheck(SHIFTED if shifted else MISMATCH, made, echoed, first)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------------------------------------------------
# The backend


@dataclass(frozen=True)
class Dialects:
    """How this server takes constraints (None: it does not)."""

    choices: str | None = None  # GBNF or STRUCTURED
    json_schema: str | None = None  # RESPONSE_FORMAT (chat only) or STRUCTURED


@dataclass
class _Batch:
    """One sync call's event-loop state: the transport's client, the concurrency bound and retry counts."""

    client: httpx.AsyncClient
    semaphore: asyncio.Semaphore
    counts: dict[str, int] = field(default_factory=dict)


class OpenAIBackend(BackendBase):
    """`Backend` over an OpenAI-compatible HTTP server; probes the server on construction."""

    name = "openai"
    streams_results = True  # loglik/generate take `on_result`, so a cache can store answers as they arrive

    def __init__(self, model: str, base_url: str, *, api_key_env: str | None = "OPENAI_API_KEY",
                 concurrency: int = 4, timeout_s: float = 120.0, deadline_s: float | None = None,
                 max_attempts: int = 4, backoff_s: float = 0.5, probe: bool = True) -> None:
        if concurrency < 1:
            raise BackendError(f"concurrency must be at least 1, not {concurrency}")
        if timeout_s <= 0 or (deadline_s is not None and deadline_s <= 0):
            raise BackendError("timeout_s and deadline_s must be positive")
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
        self._tokenizer: tuple[str, str, str, str] | None | bool = False  # False: not probed yet; None: none
        self._context: int | None | bool = False
        self._counts: dict[str, int] = {}
        self._deadline = None if deadline_s is None else time.monotonic() + deadline_s
        self.usage = Usage()
        self.fingerprint = model
        self.dialects = Dialects()
        self.capabilities = Capabilities(loglik=False, completion=False)
        if probe:
            self.fingerprint, self.capabilities, self.dialects = self._run(self._probe())

    def served_warning(self) -> str | None:
        """Why the model name may not be served (`_model_id`'s note when GET /models does not list it)."""
        async def ask() -> list[str]:
            async with self.transport.client() as client:
                return (await self._model_id(_Batch(client, asyncio.Semaphore(1))))[1]

        notes = self._run(ask())
        return notes[0] if notes else None

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
        jobs = [self._loglik_job(i, r) for i, r in enumerate(requests)]
        return self._run(self._gather(jobs, on_result))

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
        jobs = [self._token_scores_job(i, r) for i, r in enumerate(requests)]
        return self._run(self._gather(jobs, on_result))

    def generate(self, requests: Sequence[GenerateRequest],
                 on_result: ResultSink | None = None) -> list[GenerateResult]:
        """Greedy generations in request order; `on_result(i, result, raw)` as each arrives."""
        for i, request in enumerate(requests):
            if request.max_new_tokens < 1:  # llama-cpp-python reads max_tokens 0 as "until the context is full"
                raise BackendError(f"generate request {i}: max_new_tokens must be at least 1")
        jobs = [self._generate_job(i, r) for i, r in enumerate(requests)]
        return self._run(self._gather(jobs, on_result))

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

    def _find_tokenizer(self) -> tuple[str, str, str, str] | None:
        if self._tokenizer is False:
            self._tokenizer = self._run(self._probe_tokenizer())
        return self._tokenizer if isinstance(self._tokenizer, tuple) else None

    async def _root_post(self, client: httpx.AsyncClient, endpoint: str, body: Mapping[str, Any]) -> Any:
        try:
            return await self.root_transport.request(client, "POST", endpoint, body, "counting tokens")
        except UnreachableHttpError as error:
            raise ServerUnreachable(str(error)) from None

    async def _probe_tokenizer(self) -> tuple[str, str, str, str] | None:
        async with self.root_transport.client() as client:
            for name, endpoint, key, answer_key in TOKENIZERS:
                try:
                    answer = await self._root_post(client, endpoint, {"model": self.model, key: PROBE_PROMPT})
                except ServerUnreachable:
                    raise
                except HttpError:
                    continue
                if isinstance(answer.get(answer_key), list) and answer[answer_key]:
                    return name, endpoint, key, answer_key
        return None

    async def _tokenize_all(self, found: tuple[str, str, str, str], texts: list[str]) -> list[int]:
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
                value = _get(answer, path)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return True

    # -- request bodies -------------------------------------------------------------------------------------

    def loglik_body(self, request: LoglikRequest) -> dict[str, Any]:
        # max_tokens 1, not 0: llama-cpp-python reads 0 as unlimited; the one generated token is dropped.
        # logprobs 1 gives the top token at each position, which says whether the continuation is greedy.
        return {"model": self.model, "prompt": request.context + request.continuation, "echo": True,
                "logprobs": 1, "max_tokens": 1, "temperature": 0}

    def generate_body(self, request: GenerateRequest) -> tuple[str, dict[str, Any], bool]:
        """(endpoint, body, constrained) for one generation request."""
        body: dict[str, Any] = {"model": self.model, "max_tokens": request.max_new_tokens, "temperature": 0}
        chat = request.messages is not None
        if chat:
            body["messages"] = [{"role": role, "content": content} for role, content in request.messages or ()]
        else:
            body["prompt"] = request.prompt
        constrained = self._constrain(body, request, chat)
        # A stop string could cut a constrained choice short; the constraint ends the answer by itself.
        if request.stop and not (constrained and request.choices):
            body["stop"] = list(request.stop)
        return ("/chat/completions" if chat else "/completions"), body, constrained

    def _constrain(self, body: dict[str, Any], request: GenerateRequest, chat: bool) -> bool:
        if request.choices is not None:
            if self.dialects.choices == GBNF:
                body["grammar"] = gbnf_choices(request.choices)
                return True
            if self.dialects.choices == STRUCTURED:
                body["structured_outputs"] = {"choice": list(request.choices)}
                return True
            return False
        if request.json_schema is not None:
            schema = json.loads(request.json_schema)
            if self.dialects.json_schema == STRUCTURED:
                body["structured_outputs"] = {"json": schema}
                return True
            if self.dialects.json_schema == RESPONSE_FORMAT and chat:
                body["response_format"] = {"type": "json_object", "schema": schema}
                return True
        return False

    # -- jobs -----------------------------------------------------------------------------------------------

    def _loglik_job(self, index: int, request: LoglikRequest) -> Callable[[_Batch], Awaitable[tuple[Any, Any]]]:
        async def job(batch: _Batch) -> tuple[LoglikResult, dict[str, Any]]:
            answer = await self._post(batch, "/completions", self.loglik_body(request), f"loglik request {index}")
            try:
                return loglik_from_answer(answer, request)
            except BackendError as error:
                raise BackendError(f"{self.root}: loglik request {index} (context ending "
                                   f"{request.context[-30:]!r}, continuation {request.continuation!r}): "
                                   f"{error}") from None
        return job

    def _token_scores_job(self, index: int, request: TokenScoresRequest
                          ) -> Callable[[_Batch], Awaitable[tuple[Any, Any]]]:
        body = self.loglik_body(LoglikRequest(request.text, ""))

        async def job(batch: _Batch) -> tuple[TokenScoresResult, dict[str, Any]]:
            answer = await self._post(batch, "/completions", body, f"token scores request {index}")
            try:
                return token_scores_from_answer(answer, request.text)
            except BackendError as error:
                raise BackendError(f"{self.root}: token scores request {index} (text starting "
                                   f"{request.text[:30]!r}): {error}") from None
        return job

    def _generate_job(self, index: int, request: GenerateRequest) -> Callable[[_Batch], Awaitable[tuple[Any, Any]]]:
        endpoint, body, constrained = self.generate_body(request)

        async def job(batch: _Batch) -> tuple[GenerateResult, dict[str, Any]]:
            answer = await self._post(batch, endpoint, body, f"generate request {index}")
            try:
                return _generate_result(answer, chat=request.messages is not None, constrained=constrained), answer
            except BackendError as error:
                raise BackendError(f"{self.root}{endpoint}: generate request {index}: {error}") from None
        return job

    # -- the event loop -------------------------------------------------------------------------------------

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return run_blocking(coroutine, "klue-openai")

    async def _gather(self, jobs: list[Callable[[_Batch], Awaitable[tuple[Any, Any]]]],
                      on_result: ResultSink | None) -> list[Any]:
        """Run the jobs, at most `concurrency` at once; the first failure cancels the rest and is raised."""
        if not jobs:
            return []
        async with self.transport.client() as client:
            batch = _Batch(client, asyncio.Semaphore(self.concurrency))

            async def one(index: int, job: Callable[[_Batch], Awaitable[tuple[Any, Any]]]) -> Any:
                async with batch.semaphore:
                    result, raw = await job(batch)
                if on_result is not None:
                    on_result(index, result, raw)
                return result

            tasks = [asyncio.ensure_future(one(i, job)) for i, job in enumerate(jobs)]
            try:
                done, pending = await asyncio.wait(tasks, timeout=self._remaining(),
                                                   return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for task in tasks:
                    if not task.done():
                        task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            self._count_retries(batch)
            failed = [t for t in tasks if t in done and not t.cancelled() and t.exception() is not None]
            if failed:
                raise failed[0].exception()  # type: ignore[misc]
            if pending:
                answered = sum(1 for t in tasks if t in done)
                raise BackendError(f"{self.root}: the deadline passed with {answered} of {len(tasks)} requests "
                                   "of this batch answered")
            return [t.result() for t in tasks]

    def _remaining(self) -> float | None:
        if self._deadline is None:
            return None
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise BackendError(f"{self.root}: the deadline has passed; no request was sent")
        return left

    def _count_retries(self, batch: _Batch) -> None:
        for key, value in batch.counts.items():
            self.usage.extra[key] = self.usage.extra.get(key, 0) + value

    # -- HTTP -----------------------------------------------------------------------------------------------

    async def _post(self, batch: _Batch, endpoint: str, body: Mapping[str, Any], what: str,
                    *, count: bool = True) -> dict[str, Any]:
        answer = await self._send(batch, "POST", endpoint, body, what)
        if count:
            self._add_usage(answer)
        return answer

    async def _send(self, batch: _Batch, method: str, endpoint: str, body: Mapping[str, Any] | None,
                    what: str) -> dict[str, Any]:
        """One request through the transport (its retry policy); BackendError (ServerUnreachable) otherwise."""
        try:
            return await self.transport.request(batch.client, method, endpoint, body, what, batch.counts)
        except UnreachableHttpError as error:
            raise ServerUnreachable(str(error)) from None
        except HttpError as error:
            raise context_error(str(error)) or BackendError(str(error)) from None

    def _add_usage(self, answer: Mapping[str, Any]) -> None:
        self.usage.requests += 1
        usage = answer.get("usage")
        if isinstance(usage, dict):
            self.usage.prompt_tokens += _int(usage.get("prompt_tokens"))
            self.usage.completion_tokens += _int(usage.get("completion_tokens"))

    # -- the capability probe -------------------------------------------------------------------------------

    async def _probe(self) -> tuple[str, Capabilities, Dialects]:
        """Ask the server what it can do: its model id, prompt log-probs (echo), chat, and constraints."""
        async with self.transport.client() as client:
            batch = _Batch(client, asyncio.Semaphore(1))
            fingerprint, notes = await self._model_id(batch)
            loglik, completion, note, why_not = await self._probe_echo(batch)
            notes += note
            chat = await self._probe_chat(batch)
            choices = await self._probe_choices(batch) if (completion or chat) else None
            json_dialect = await self._probe_json(batch, chat, completion)
        self.usage.extra["probe_requests"] = batch.counts.pop("probe_requests", 0)
        self._count_retries(batch)
        if json_dialect == RESPONSE_FORMAT:
            notes.append("JSON-schema constraints on chat requests only (response_format)")
        if not (completion or chat):
            raise BackendError(f"{self.root}: neither /completions nor /chat/completions answered; is this an "
                               "OpenAI-compatible server?")
        capabilities = Capabilities(loglik=loglik, completion=completion, chat=chat,
                                    json_schema=json_dialect is not None, choices=choices is not None,
                                    notes=tuple(notes), loglik_why_not=why_not)
        return fingerprint, capabilities, Dialects(choices, json_dialect)

    async def _probe_request(self, batch: _Batch, endpoint: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """One probe request; None when the server refuses it (a missing feature, not a failure)."""
        batch.counts["probe_requests"] = batch.counts.get("probe_requests", 0) + 1
        try:
            return await self._send(batch, "POST", endpoint, {"model": self.model, **body}, "capability probe")
        except ServerUnreachable:
            raise
        except BackendError:
            return None

    async def _model_id(self, batch: _Batch) -> tuple[str, list[str]]:
        """The server's id for the model (GET /models): what the weights are, as far as a server says."""
        try:
            listing = await self._send(batch, "GET", "/models", None, "listing the models")
        except ServerUnreachable:
            raise
        except BackendError as error:
            return self.model, [f"GET /models failed, fingerprint is the model name: {error}"]
        entries = listing.get("data")
        ids = [e.get("id") for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
        ids = [i for i in ids if isinstance(i, str)]  # model names: what the server lists as text
        if self.model in ids:
            return self.model, []
        named = [i for i in ids if i is not None]
        if len(named) == 1:  # a one-model server (llama-cpp-python) answers to any name with that model
            return named[0], [(f"the server lists no model {self.model!r}; it serves its one model "
                               f"{named[0]!r} under that name")]
        return self.model, [f"the server lists no model {self.model!r} (it lists {ids})"]

    async def _probe_echo(self, batch: _Batch) -> tuple[bool, bool, list[str], str]:
        """(loglik, completion, notes, why no log-likelihoods): prompt log-probs work when an echo answer covers
        the probe prompt and its values agree with the server's own generation (`check_echo`)."""
        body = self.loglik_body(LoglikRequest(PROBE_PROMPT[:6], PROBE_PROMPT[6:]))
        answer = await self._probe_request(batch, "/completions", {k: v for k, v in body.items() if k != "model"})
        if answer is None:
            why = "/completions refused: no log-likelihoods, chat generation only"
            return False, False, [why], why
        refused: BackendError | None = None
        shift = 0
        try:
            echo = parse_echo(answer, PROBE_PROMPT)
            if not echo.offsets or echo.offsets[0] >= len(PROBE_PROMPT) or all(v is None for v in echo.logprobs):
                raise BackendError("the echoed tokens do not cover the prompt")
            shift = measure_shift(echo, PROBE_PROMPT)
        except BackendError as error:
            refused = error
        check = await self._check_echo(batch)
        if check.verdict in (SHIFTED, MISMATCH):  # the real cause, whatever the structure check said
            why = check.reason()
            return False, True, [f"no log-likelihoods: {why}; generation modes only"], why
        if refused is not None:
            why = f"no prompt log-probs with echo ({refused})"
            return False, True, [f"{why}: generation modes only"], why
        notes = [f"text_offset shift {shift} on the probe prompt"] if shift else []
        if check.verdict == UNKNOWN:
            notes.append(f"echoed log-probs not cross-checked against generated ones ({check.why})")
        return True, True, notes, ""

    async def _check_echo(self, batch: _Batch) -> EchoCheck:
        """Generate from CHECK_PROMPT with log-probs, echo the prompt and that continuation, compare."""
        generation = await self._probe_request(batch, "/completions", {
            "prompt": CHECK_PROMPT, "max_tokens": CHECK_TOKENS, "temperature": 0, "logprobs": 1})
        found = _generated_logprobs(generation)
        if isinstance(found, str):
            return EchoCheck(UNKNOWN, why=found)
        body = self.loglik_body(LoglikRequest(CHECK_PROMPT, found[0]))
        echo = await self._probe_request(batch, "/completions", {k: v for k, v in body.items() if k != "model"})
        return check_echo(generation, echo, CHECK_PROMPT)

    async def _probe_chat(self, batch: _Batch) -> bool:
        answer = await self._probe_request(batch, "/chat/completions", {
            "messages": [{"role": "user", "content": PROBE_PROMPT}], "max_tokens": 1, "temperature": 0})
        return answer is not None and isinstance(_get(answer, "choices.0.message"), dict)

    async def _probe_choices(self, batch: _Batch) -> str | None:
        """A choice constraint is real when the answer is the one allowed string (an ignored field is not)."""
        for dialect, extra in ((GBNF, {"grammar": gbnf_choices([PROBE_CHOICE])}),
                               (STRUCTURED, {"structured_outputs": {"choice": [PROBE_CHOICE]}})):
            answer = await self._probe_request(batch, "/completions", {
                "prompt": PROBE_PROMPT, "max_tokens": 8, "temperature": 0, **extra})
            if answer is not None and _get(answer, "choices.0.text") == PROBE_CHOICE:
                return dialect
        return None

    async def _probe_json(self, batch: _Batch, chat: bool, completion: bool) -> str | None:
        tries: list[tuple[str, str, dict[str, Any]]] = []
        if chat:
            tries.append((RESPONSE_FORMAT, "/chat/completions",
                          {"response_format": {"type": "json_object", "schema": PROBE_SCHEMA}}))
        if completion:
            tries.append((STRUCTURED, "/completions", {"structured_outputs": {"json": PROBE_SCHEMA}}))
        for dialect, endpoint, extra in tries:
            place = {"messages": [{"role": "user", "content": PROBE_PROMPT}]} if endpoint.startswith("/chat") \
                else {"prompt": PROBE_PROMPT}
            answer = await self._probe_request(batch, endpoint, {**place, "max_tokens": 48, "temperature": 0,
                                                                 **extra})
            path = "choices.0.message.content" if endpoint.startswith("/chat") else "choices.0.text"
            if answer is not None and _parses_to(_get(answer, path), {"zq": "a"}):
                return dialect
        return None


def _generate_result(answer: Mapping[str, Any], *, chat: bool, constrained: bool) -> GenerateResult:
    choice = _field(answer, "choices.0")
    text = _field(choice, "message.content" if chat else "text")
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


def _get(data: Any, path: str) -> Any:
    try:
        return _field(data, path)
    except BackendError:
        return None


def _parses_to(text: Any, expected: Any) -> bool:
    try:
        return isinstance(text, str) and json.loads(text) == expected
    except ValueError:
        return False


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
