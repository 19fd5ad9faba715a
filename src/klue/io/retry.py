"""One retry policy for everything klue fetches over HTTP (the downloader, the LLM and embedding servers).

What a retry can help, and nothing else, is retried:
- a connection that could not be made or broke before the whole answer came (refused while a server
  restarts, reset, a body cut short): `TRANSIENT`;
- HTTP 429 (busy: wait what its `Retry-After` says, in seconds or as an HTTP date) and 502, 503, 504 (a
  proxy or a loading server).

HTTP 500 is not retried: llama-cpp-python answers a request it cannot serve (a prompt longer than the
context, a list of prompts) with 500, and the same request gets the same answer. Nor are 4xx refusals, an
answer that is not JSON, or a read that times out (a slow server gets no more load from us). A server that
asks for a longer pause than `max_retry_after_s` is not waited for: the error says when to come back.

Waits double from `backoff_s` up to `max_backoff_s`; `attempts` counts the first try. `timeout_s` bounds
connecting and each read; `deadline_s`, when set, bounds every attempt of one request together.
"""

from __future__ import annotations

import email.utils
import math
import time
from dataclasses import dataclass

RETRY_STATUSES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4  # tries per request, the first included
    backoff_s: float = 1.0  # wait before the 2nd try; doubled before each further one
    max_backoff_s: float = 16.0
    max_retry_after_s: float = 60.0  # a server asking to wait longer is not waited for
    timeout_s: float = 30.0  # socket timeout for connecting and for each read
    deadline_s: float | None = None  # all attempts of one request together (None: no bound)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {self.attempts}")
        if self.timeout_s <= 0 or (self.deadline_s is not None and self.deadline_s <= 0):
            raise ValueError("timeout_s and deadline_s must be positive")

    def wait_before(self, attempt: int, retry_after_s: float | None = None) -> float:
        """Seconds to sleep before try number `attempt` (1-based; the first try waits 0): the backoff, or
        the server's own Retry-After when longer."""
        if attempt <= 1:
            return 0.0
        backoff = min(self.backoff_s * 2 ** (attempt - 2), self.max_backoff_s)
        return max(backoff, retry_after_s or 0.0)

    def too_long(self, retry_after_s: float | None) -> bool:
        """Whether a server's Retry-After asks for more patience than this policy has."""
        return retry_after_s is not None and retry_after_s > self.max_retry_after_s


def retryable_status(status: int) -> bool:
    return status in RETRY_STATUSES


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A `Retry-After` header in seconds: delta-seconds (`"3"`) or an HTTP date; None when absent or
    unreadable (then the backoff alone decides)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


@dataclass(frozen=True)
class Deadline:
    """When all attempts of one request must be done, on the monotonic clock (None: never)."""

    seconds: float | None
    at: float | None

    @classmethod
    def starting_now(cls, seconds: float | None) -> Deadline:
        return cls(seconds, None if seconds is None else time.monotonic() + seconds)

    def passed(self, after_s: float = 0.0) -> bool:
        """Whether the deadline has passed (or will have, `after_s` seconds from now)."""
        return self.at is not None and time.monotonic() + after_s >= self.at

    def remaining(self) -> float | None:
        return None if self.at is None else max(0.0, self.at - time.monotonic())
