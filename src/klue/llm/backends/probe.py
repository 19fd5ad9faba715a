"""The capability probe of an OpenAI-compatible server: what the HTTP backend (`klue.llm.backends.openai`) may
ask of it, found by asking once at start.

- The model id the server lists (`klue.io.http.served_model_id`), which fingerprints the weights.
- Prompt log-probs: an echo answer that covers the probe prompt, cross-checked against the server's own
  generation (`klue.llm.backends.echo.check_echo`), so a shifted echo is refused with its cause.
- Chat, and the constraint dialects: llama-cpp-python's GBNF `grammar` and chat `response_format`, vLLM's
  `structured_outputs`. A constraint counts only when the answer is the one allowed (a field a server ignores
  does not); `constrain` writes a request's constraint in the dialect found.
- Tokenize endpoints at the server's root, for counting prompt tokens.

A missing feature is a note or a capability left off; a server that cannot be reached stops the probe
(`ServerUnreachable`, exit code 3 in the CLI).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from klue.errors import UnreachableError
from klue.io.http import HttpError, JsonTransport, UnreachableHttpError, served_model_id
from klue.llm.backends.base import BackendError, Capabilities, GenerateRequest, LoglikRequest
from klue.llm.backends.echo import (
    MISMATCH,
    SHIFTED,
    UNKNOWN,
    EchoCheck,
    check_echo,
    generated_logprobs,
    get_at,
    loglik_body,
    measure_shift,
    parse_echo,
)

# Constraint dialects, as the probe finds them.
GBNF = "gbnf"  # llama-cpp-python: body["grammar"]
STRUCTURED = "structured_outputs"  # vLLM >= 0.12: body["structured_outputs"]
RESPONSE_FORMAT = "response_format"  # llama-cpp-python chat: {"type": "json_object", "schema": ...}

PROBE_PROMPT = "안녕하세요. 반갑습니다"  # Korean, so multi-byte offsets are exercised from the start
PROBE_CHOICE = "zq"  # an answer no unconstrained model gives by chance
PROBE_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"zq": {"type": "string", "enum": ["a"]}},
                                "required": ["zq"], "additionalProperties": False}
# The echo cross-check: ASCII, so every token's text and offset are exact, and a model continues it briefly.
CHECK_PROMPT = "1, 2, 3, 4, 5,"
CHECK_TOKENS = 1  # generated for the check: its first token is compared
# Tokenize endpoints at the server's root (not under /v1), tried in order: (name, endpoint, body key, answer key)
TOKENIZERS = (("llama-cpp-python", "/extras/tokenize", "input", "tokens"),
              ("vLLM/SGLang", "/tokenize", "prompt", "tokens"),
              ("llama.cpp server", "/tokenize", "content", "tokens"))
Tokenizer = tuple[str, str, str, str]  # a row of TOKENIZERS


class ServerUnreachable(BackendError, UnreachableError):
    """No connection to the server after every attempt (the probe stops at it; a missing feature does not);
    exit code 3 in the CLI."""


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


@dataclass(frozen=True)
class Dialects:
    """How this server takes constraints (None: it does not)."""

    choices: str | None = None  # GBNF or STRUCTURED
    json_schema: str | None = None  # RESPONSE_FORMAT (chat only) or STRUCTURED


def constrain(body: dict[str, Any], request: GenerateRequest, chat: bool, dialects: Dialects) -> bool:
    """Write `request`'s constraint into `body` in the server's dialect; False when it has none for it."""
    if request.choices is not None:
        if dialects.choices == GBNF:
            body["grammar"] = gbnf_choices(request.choices)
            return True
        if dialects.choices == STRUCTURED:
            body["structured_outputs"] = {"choice": list(request.choices)}
            return True
        return False
    if request.json_schema is not None:
        schema = json.loads(request.json_schema)
        if dialects.json_schema == STRUCTURED:
            body["structured_outputs"] = {"json": schema}
            return True
        if dialects.json_schema == RESPONSE_FORMAT and chat:
            body["response_format"] = {"type": "json_object", "schema": schema}
            return True
    return False


@dataclass(frozen=True)
class Probed:
    """What the probe found, and what it cost."""

    fingerprint: str
    capabilities: Capabilities
    dialects: Dialects
    requests: int  # probe requests sent (the model listing is not one)
    counts: dict[str, int]  # the transport's counts (retries)


async def probe_server(transport: JsonTransport, model: str) -> Probed:
    """Ask the server what it can do: its model id, prompt log-probs (echo), chat, and constraints."""
    async with transport.client() as client:
        probe = _Probe(transport, client, model)
        fingerprint, note = await probe.model_id()
        notes = [note] if note else []
        loglik, completion, echo_notes, why_not = await probe.echo()
        notes += echo_notes
        chat = await probe.chat()
        choices = await probe.choices() if (completion or chat) else None
        json_dialect = await probe.json(chat, completion)
    if json_dialect == RESPONSE_FORMAT:
        notes.append("JSON-schema constraints on chat requests only (response_format)")
    if not (completion or chat):
        raise BackendError(f"{transport.shown_root}: neither /completions nor /chat/completions answered; is this "
                           "an OpenAI-compatible server?")
    capabilities = Capabilities(loglik=loglik, completion=completion, chat=chat,
                                json_schema=json_dialect is not None, choices=choices is not None,
                                notes=tuple(notes), loglik_why_not=why_not)
    return Probed(fingerprint, capabilities, Dialects(choices, json_dialect), probe.requests, probe.counts)


async def served_note(transport: JsonTransport, model: str) -> str | None:
    """Why the model name may not be served (GET /models does not list it), or None."""
    async with transport.client() as client:
        return (await _Probe(transport, client, model).model_id())[1]


@dataclass
class _Probe:
    transport: JsonTransport
    client: httpx.AsyncClient
    model: str
    requests: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    async def request(self, endpoint: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """One probe request; None when the server refuses it (a missing feature, not a failure)."""
        self.requests += 1
        try:
            return await self.transport.request(self.client, "POST", endpoint, {"model": self.model, **body},
                                                "capability probe", self.counts)
        except UnreachableHttpError as error:
            raise ServerUnreachable(str(error)) from None
        except HttpError:
            return None

    async def model_id(self) -> tuple[str, str | None]:
        try:
            served = await served_model_id(self.transport, self.client, self.model, self.counts)
        except UnreachableHttpError as error:
            raise ServerUnreachable(str(error)) from None
        return served.id, served.note

    async def echo(self) -> tuple[bool, bool, list[str], str]:
        """(loglik, completion, notes, why no log-likelihoods): prompt log-probs work when an echo answer covers
        the probe prompt and its values agree with the server's own generation (`check_echo`)."""
        answer = await self.request("/completions", loglik_body(self.model, LoglikRequest(PROBE_PROMPT[:6],
                                                                                          PROBE_PROMPT[6:])))
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
        check = await self.check_echo()
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

    async def check_echo(self) -> EchoCheck:
        """Generate from CHECK_PROMPT with log-probs, echo the prompt and that continuation, compare."""
        generation = await self.request("/completions", {
            "prompt": CHECK_PROMPT, "max_tokens": CHECK_TOKENS, "temperature": 0, "logprobs": 1})
        found = generated_logprobs(generation)
        if isinstance(found, str):
            return EchoCheck(UNKNOWN, why=found)
        echo = await self.request("/completions", loglik_body(self.model, LoglikRequest(CHECK_PROMPT, found[0])))
        return check_echo(generation, echo, CHECK_PROMPT)

    async def chat(self) -> bool:
        answer = await self.request("/chat/completions", {
            "messages": [{"role": "user", "content": PROBE_PROMPT}], "max_tokens": 1, "temperature": 0})
        return answer is not None and isinstance(get_at(answer, "choices.0.message"), dict)

    async def choices(self) -> str | None:
        """A choice constraint is real when the answer is the one allowed string (an ignored field is not)."""
        for dialect, extra in ((GBNF, {"grammar": gbnf_choices([PROBE_CHOICE])}),
                               (STRUCTURED, {"structured_outputs": {"choice": [PROBE_CHOICE]}})):
            answer = await self.request("/completions", {
                "prompt": PROBE_PROMPT, "max_tokens": 8, "temperature": 0, **extra})
            if answer is not None and get_at(answer, "choices.0.text") == PROBE_CHOICE:
                return dialect
        return None

    async def json(self, chat: bool, completion: bool) -> str | None:
        tries: list[tuple[str, str, dict[str, Any]]] = []
        if chat:
            tries.append((RESPONSE_FORMAT, "/chat/completions",
                          {"response_format": {"type": "json_object", "schema": PROBE_SCHEMA}}))
        if completion:
            tries.append((STRUCTURED, "/completions", {"structured_outputs": {"json": PROBE_SCHEMA}}))
        for dialect, endpoint, extra in tries:
            place = {"messages": [{"role": "user", "content": PROBE_PROMPT}]} if endpoint.startswith("/chat") \
                else {"prompt": PROBE_PROMPT}
            answer = await self.request(endpoint, {**place, "max_tokens": 48, "temperature": 0, **extra})
            path = "choices.0.message.content" if endpoint.startswith("/chat") else "choices.0.text"
            if answer is not None and _parses_to(get_at(answer, path), {"zq": "a"}):
                return dialect
        return None


async def probe_tokenizer(transport: JsonTransport, model: str) -> Tokenizer | None:
    """The first of TOKENIZERS the server's root (`transport`) answers with a token list, or None."""
    async with transport.client() as client:
        for name, endpoint, key, answer_key in TOKENIZERS:
            try:
                answer = await transport.request(client, "POST", endpoint, {"model": model, key: PROBE_PROMPT},
                                                 "counting tokens")
            except UnreachableHttpError as error:
                raise ServerUnreachable(str(error)) from None
            except HttpError:
                continue
            if isinstance(answer.get(answer_key), list) and answer[answer_key]:
                return name, endpoint, key, answer_key
    return None


def _parses_to(text: Any, expected: Any) -> bool:
    try:
        return isinstance(text, str) and json.loads(text) == expected
    except ValueError:
        return False
