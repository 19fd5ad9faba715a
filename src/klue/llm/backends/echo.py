"""Echo-offset alignment: reading a continuation's log-likelihood out of an OpenAI-compatible server's
`/v1/completions` answer to `echo: true, logprobs: 1` on the prompt context + continuation (pure functions of
the answer; the HTTP backend, `klue.llm.backends.openai`, sends the requests).

No local tokenizer is needed: the continuation starts at the first token whose `logprobs.text_offset` is at or
past the end of the context, after measuring the shift some servers add (a SentencePiece dummy-prefix space,
a BOS string). A token that starts inside the context and ends inside the continuation is an error, never a
silent split. `check_echo` cross-checks echoed log-probs against a generation's own (the capability probe,
`klue.llm.backends.probe`, asks for both).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from klue.llm.backends.base import BackendError, LoglikRequest, LoglikResult, TokenScoresResult

GREEDY_TOLERANCE = 1e-6  # log-prob ties between the chosen and the top token count as greedy
# Echoed and generated log-probs of the same tokens agree within this (nats, plus a share of the value): the
# same server computes both, but a batched prefill and a decoding step may round differently (bf16 on vLLM).
# A shifted echo is off by nats (SmolLM2 on llama-cpp-python: -12.93 echoed for a token generated at -0.75).
CHECK_TOLERANCE = 0.25
CHECK_RELATIVE = 0.05
# What the cross-check finds.
ALIGNED = "aligned"  # the echoed values are the generated ones: log-likelihoods are right
SHIFTED = "shifted"  # one position late: the value shown for a token is the one for the token before
MISMATCH = "mismatch"  # they disagree in some other way
UNKNOWN = "unknown"  # the check could not be made (no generated log-probs, a different tokenization)
SHIFT_CAUSE = ("the server's echoed prompt log-probs are shifted by one token (each token is paired with "
               "the next position, the first token's value dropped): a model without a BOS token, a known "
               "llama-cpp-python behaviour")


def loglik_body(model: str, request: LoglikRequest) -> dict[str, Any]:
    """The echo request whose answer `loglik_from_answer` reads."""
    # max_tokens 1, not 0: llama-cpp-python reads 0 as unlimited; the one generated token is dropped.
    # logprobs 1 gives the top token at each position, which says whether the continuation is greedy.
    return {"model": model, "prompt": request.context + request.continuation, "echo": True,
            "logprobs": 1, "max_tokens": 1, "temperature": 0}


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


def field_at(data: Any, path: str) -> Any:
    """`choices.0.logprobs` out of a JSON answer, or BackendError naming the missing field."""
    value = data
    for key in path.split("."):
        try:
            value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, TypeError, ValueError):
            raise BackendError(f"the answer has no {path}") from None
    return value


def get_at(data: Any, path: str) -> Any:
    """`field_at`, or None where the field is missing."""
    try:
        return field_at(data, path)
    except BackendError:
        return None


def parse_echo(answer: Mapping[str, Any], prompt: str) -> Echo:
    """The prompt tokens of a `/v1/completions` answer to `echo: true, logprobs: N, max_tokens: 1`."""
    choice = field_at(answer, "choices.0")
    logprobs = field_at(choice, "logprobs") if isinstance(choice, dict) else None
    if not isinstance(logprobs, dict):
        raise BackendError("the answer has no prompt log-probs (choices[0].logprobs): the server ignores echo")
    tokens, offsets, values = (field_at(logprobs, k) for k in ("tokens", "text_offset", "token_logprobs"))
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
    if not all(finite(v) for v in values):
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


def generated_logprobs(answer: Mapping[str, Any] | None) -> tuple[str, str, float, dict[str, float] | None] | str:
    """(text, the first token's text, its log-prob, its top log-probs) of a `logprobs: 1` generation, or why
    not (the first token must have text of its own: a byte token's '' cannot be found in an echo)."""
    if answer is None:
        return "the server refused a generation with log-probs"
    text = get_at(answer, "choices.0.text")
    tokens = get_at(answer, "choices.0.logprobs.tokens")
    values = get_at(answer, "choices.0.logprobs.token_logprobs")
    tops = get_at(answer, "choices.0.logprobs.top_logprobs")
    if not (isinstance(text, str) and isinstance(tokens, list) and isinstance(values, list) and tokens and values):
        return "the generation gave no log-probs"
    first = tokens[0]
    if not (isinstance(first, str) and first and "\ufffd" not in first and text.startswith(first)):
        return "the first generated token has no text of its own"
    if not finite(values[0]):
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
    found = generated_logprobs(generation)
    if isinstance(found, str):
        return EchoCheck(UNKNOWN, why=found)
    text, first, made, top = found
    logprobs = get_at(echo, "choices.0.logprobs") if echo is not None else None
    tokens, offsets, values = ((logprobs or {}).get(k) if isinstance(logprobs, dict) else None
                               for k in ("tokens", "text_offset", "token_logprobs"))
    if not (isinstance(tokens, list) and isinstance(offsets, list) and isinstance(values, list) and tokens
            and len(tokens) == len(offsets) == len(values) and all(isinstance(o, int) for o in offsets)):
        return EchoCheck(UNKNOWN, why="the echo answer has no usable logprobs")
    shift = _shift_from_first_token(str(tokens[0]), offsets[0], prompt + text)
    at = next((i for i, o in enumerate(offsets) if o >= len(prompt) + shift), None)
    if at is None or at == 0 or offsets[at] != len(prompt) + shift or tokens[at] != first:
        return EchoCheck(UNKNOWN, why=f"the generated token {first!r} is not a token of the echo")
    if not finite(values[at]):
        return EchoCheck(UNKNOWN, why="the echo gave the generated token no log-prob")
    echoed = float(values[at])
    if abs(echoed - made) <= CHECK_TOLERANCE + CHECK_RELATIVE * abs(made):
        return EchoCheck(ALIGNED, made, echoed, first)
    tops = logprobs.get("top_logprobs") if isinstance(logprobs, dict) else None
    early = tops[at - 1] if isinstance(tops, list) and len(tops) == len(tokens) else None
    shifted = (isinstance(early, dict) and top is not None and bool(top)
               and all(k in early and finite(early[k]) and abs(float(early[k]) - float(v)) <= CHECK_TOLERANCE
                       for k, v in top.items()))
    return EchoCheck(SHIFTED if shifted else MISMATCH, made, echoed, first)


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

