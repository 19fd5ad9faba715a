"""Fixtures of the embedding tests: the fake OpenAI-compatible server (tests/fake_openai.py) serving embeddings, and a backend that embeds in the test process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_embeddings import ToyBackend
from fake_openai import FakeOpenAI


@pytest.fixture
def fake_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI(model_id="fake-embedder")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def toy_backend() -> ToyBackend:
    return ToyBackend()
