"""Fixtures for the LLM backend tests: a fake OpenAI-compatible server per test (stopped afterwards)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fake_openai import FakeOpenAI


@pytest.fixture
def fake_server() -> Iterator[Callable[..., FakeOpenAI]]:
    """`fake_server(**options)` starts a FakeOpenAI on 127.0.0.1; every one started is stopped at the end."""
    started: list[FakeOpenAI] = []

    def start(**options: Any) -> FakeOpenAI:
        server = FakeOpenAI(**options)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
