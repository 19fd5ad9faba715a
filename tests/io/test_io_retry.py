"""klue's one retry policy (klue.io.retry): what is retried, how long it waits, Retry-After in both forms."""

from __future__ import annotations

import email.utils

import pytest

from klue.io.retry import RetryPolicy, retry_after_seconds, retryable_status


def test_only_what_a_retry_can_help_is_retried() -> None:
    assert [s for s in (400, 401, 404, 408, 429, 500, 501, 502, 503, 504, 505) if retryable_status(s)] == \
        [429, 502, 503, 504]  # 500: llama-cpp-python's answer to a request it cannot serve, every time


def test_backoff_doubles_is_capped_and_yields_to_a_longer_retry_after() -> None:
    policy = RetryPolicy(attempts=6, backoff_s=1.0, max_backoff_s=4.0)
    assert [policy.wait_before(a) for a in range(1, 7)] == [0.0, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert policy.wait_before(2, retry_after_s=9.0) == 9.0 and policy.wait_before(4, retry_after_s=0.5) == 4.0
    assert policy.too_long(policy.max_retry_after_s + 1) and not policy.too_long(None)


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    now = 1_700_000_000.0
    assert retry_after_seconds("3") == 3.0 and retry_after_seconds(" 0 ") == 0.0
    assert retry_after_seconds(email.utils.formatdate(now + 120, usegmt=True), now=now) == pytest.approx(120)
    assert retry_after_seconds(email.utils.formatdate(now - 50, usegmt=True), now=now) == 0.0  # already past
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("nan") is None and retry_after_seconds("-5") == 0.0


def test_a_policy_that_cannot_try_is_refused() -> None:
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)
    with pytest.raises(ValueError, match="positive"):
        RetryPolicy(timeout_s=0)
