"""The interface every LLM backend offers the engine, and the plain records that cross it.

Requests are plain values (hashable into the request cache, `klue.llm.cache`); a backend answers a list of
requests in order, batching or running them concurrently as it can. Log-likelihoods are sums of natural-log
token probabilities of the continuation given the context, where the continuation starts exactly at the end
of the context string (a token straddling the boundary is an error, never split silently).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from klue.errors import DataError


class BackendError(DataError):
    """The model or server failed in a way a user must hear about (unreachable, refused, a bad answer)."""


class ContextExceeded(BackendError):
    """The server refused a prompt longer than the model's context; `context_length` is the length its
    message names (None where it names none), which the engine learns and fits the next prompts to."""

    def __init__(self, message: str, context_length: int | None = None) -> None:
        super().__init__(message)
        self.context_length = context_length


# How prompts are counted where neither the server nor a tokenizer can count them: an upper bound for
# byte-level BPE and byte-fallback SentencePiece tokenizers (no token is shorter than one UTF-8 byte), plus
# room for special tokens, so a prompt fitted by it always fits (at the cost of cutting more than needed).
ESTIMATE_COUNTER = "estimate: UTF-8 bytes + 8 (an upper bound; no tokenizer or tokenize endpoint)"


def estimate_tokens(text: str) -> int:
    """`ESTIMATE_COUNTER`'s count of `text`."""
    return len(text.encode("utf-8")) + 8


@dataclass(frozen=True)
class LoglikRequest:
    context: str  # the prompt, up to and including the answer cue
    continuation: str  # the answer to score, usually " " + choice


@dataclass(frozen=True)
class LoglikResult:
    logprob: float  # sum over the continuation's tokens
    n_tokens: int  # tokens of the continuation
    is_greedy: bool | None = None  # whether greedy decoding would give the continuation (None: unknown)


@dataclass(frozen=True)
class TokenScoresRequest:
    """The log-probability of each token of `text` given the tokens before it (membership signals such as
    Min-K% Prob, klue.contamination.mink); with `distribution`, also the mean and variance of log p over each
    position's whole next-token distribution (Min-K%++: a backend with `gives_distributions` only)."""

    text: str
    distribution: bool = False


@dataclass(frozen=True)
class TokenScoresResult:
    """Per scored token, in order: `logprobs[i]` = log p(token i+1 | tokens 0..i) of the text's tokens (special
    tokens the tokenizer adds included as context: with a BOS every text token is scored, without one the
    first is not, having no context); `means`/`variances`: E[log p] and Var[log p] under that position's
    next-token distribution (None unless asked for). `n_truncated`: tokens cut off the end to fit the model."""

    logprobs: tuple[float, ...]
    means: tuple[float, ...] | None = None
    variances: tuple[float, ...] | None = None
    n_truncated: int = 0

    def __post_init__(self) -> None:  # the request cache hands back JSON lists: stored as tuples all the same
        for name in ("logprobs", "means", "variances"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(float(v) for v in value))


@dataclass(frozen=True)
class GenerateRequest:
    """Greedy generation from a completion `prompt` or chat `messages` (exactly one is given)."""

    prompt: str | None = None
    messages: tuple[tuple[str, str], ...] | None = None  # (role, content) pairs
    max_new_tokens: int = 32
    stop: tuple[str, ...] = ()
    json_schema: str | None = None  # a JSON schema, serialised (sorted keys), for constrained decoding
    choices: tuple[str, ...] | None = None  # a closed set of whole answers, for constrained decoding
    regex: str | None = None  # a regular expression the whole answer matches, for constrained decoding
    span_of: str | None = None  # extractive answers: the answer is a substring of this text (or empty)

    def __post_init__(self) -> None:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("a GenerateRequest has a prompt or messages, exactly one")
        if sum(c is not None for c in (self.json_schema, self.choices, self.regex, self.span_of)) > 1:
            raise ValueError("a GenerateRequest has at most one constraint (json_schema, choices, regex, span_of)")


@dataclass(frozen=True)
class GenerateResult:
    text: str  # the generated text, stops removed
    n_prompt_tokens: int | None = None
    n_tokens: int | None = None
    constrained: bool = False  # whether a constraint was applied by the backend
    finish_reason: str | None = None


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, probed at start and recorded in results.json."""

    loglik: bool  # continuation log-likelihoods (in process; HTTP: echo + prompt logprobs)
    completion: bool = True  # raw-prompt generation
    chat: bool = False  # chat messages (a chat template / the chat endpoint)
    json_schema: bool = False  # constrained generation by a JSON schema
    choices: bool = False  # constrained generation to one of a closed set of strings
    regex: bool = False  # constrained generation by a regular expression
    spans: bool = False  # constrained generation to a substring of a given text
    constrained_by: str | None = None  # what applies the constraints, e.g. "llguidance 1.9.1" (in process)
    notes: tuple[str, ...] = ()
    loglik_why_not: str = ""  # why `loglik` is False, where a probe found out (e.g. an echo shifted by a token)

    def to_json(self) -> dict[str, Any]:
        return {"loglik": self.loglik, "completion": self.completion, "chat": self.chat,
                "json_schema": self.json_schema, "choices": self.choices, "regex": self.regex,
                "spans": self.spans, "constrained_by": self.constrained_by, "notes": list(self.notes),
                **({"loglik_why_not": self.loglik_why_not} if self.loglik_why_not else {})}


@dataclass
class Usage:
    """Counts a backend keeps: requests asked of the model (cache hits excluded) and tokens."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    extra: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, int]:
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cache_hits": self.cache_hits, **self.extra}


ResultSink = Callable[[int, Any, Mapping[str, Any] | None], None]  # (request index, result, raw answer)
R = TypeVar("R")


class Backend(Protocol):
    """What the engine (klue.llm.run) and the request cache (klue.llm.cache) ask of a backend."""

    name: str  # the backend's kind: "hf", "openai", ...
    model: str  # as the user named it (no secret)
    fingerprint: str  # what the weights are: HF commit or file hash, or the server's model id
    capabilities: Capabilities
    usage: Usage
    # True: `on_result` is called as each answer arrives, so the cache stores it at once and asks for all
    # at once; False: only when the call returns, so the cache asks chunk by chunk (a chunk's answers kept).
    streams_results: bool
    renders_chat: bool  # whether `chat_prompt` gives a chat as the prompt text (chat-form log-likelihood)
    @property
    def gives_token_scores(self) -> bool:
        """Whether `token_scores` answers (per-token log-probs of a text)."""

    @property
    def gives_distributions(self) -> bool:
        """Whether `token_scores` also gives the next-token distributions' moments (in process)."""

    @property
    def token_counter(self) -> str:
        """How `count_tokens` counts: a server endpoint, the model's tokenizer, or an estimate."""

    @property
    def context_length(self) -> int | None:
        """The model's context in tokens, where the model or server says (None: unknown)."""

    def count_tokens(self, texts: Sequence[str]) -> list[int]: ...

    def loglik(self, requests: Sequence[LoglikRequest],
               on_result: ResultSink | None = None) -> list[LoglikResult]: ...

    def generate(self, requests: Sequence[GenerateRequest],
                 on_result: ResultSink | None = None) -> list[GenerateResult]: ...

    def token_scores(self, requests: Sequence[TokenScoresRequest],
                     on_result: ResultSink | None = None) -> list[TokenScoresResult]: ...

    def chat_prompt(self, messages: Sequence[tuple[str, str]]) -> str: ...

    def close(self) -> None: ...


class BackendBase:
    """The defaults of a backend that hands its answers over when a call returns and renders no chat as text."""

    name: str
    streams_results = False
    renders_chat = False

    @property
    def gives_token_scores(self) -> bool:
        """A backend with the whole next-token distributions has each token's log-prob too."""
        return self.gives_distributions

    @property
    def gives_distributions(self) -> bool:
        return False

    @property
    def token_counter(self) -> str:
        return ESTIMATE_COUNTER

    @property
    def context_length(self) -> int | None:
        return None

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Prompt tokens per text, special tokens included (`token_counter` says how)."""
        return [estimate_tokens(text) for text in texts]

    def token_scores(self, requests: Sequence[TokenScoresRequest],
                     on_result: ResultSink | None = None) -> list[TokenScoresResult]:
        raise BackendError(f"the {self.name} backend gives no per-token log-probabilities of a text")

    def chat_prompt(self, messages: Sequence[tuple[str, str]]) -> str:
        raise BackendError(f"the {self.name} backend cannot give a chat as prompt text; use "
                           "--form completion for log-likelihood, or --method generate")

    def close(self) -> None:
        """Nothing to give back."""


def hand_over(results: list[R], on_result: ResultSink | None) -> list[R]:
    """`results`, each also given to `on_result` (with no raw answer): a backend that computes a call's answers
    together hands them over this way."""
    if on_result is not None:
        for index, result in enumerate(results):
            on_result(index, result, None)
    return results


def schema_text(schema: Mapping[str, Any] | None) -> str | None:
    """A JSON schema as the stable string a request carries."""
    import json

    return None if schema is None else json.dumps(schema, sort_keys=True, ensure_ascii=False)
