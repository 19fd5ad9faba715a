"""Fixtures of the embedding tests: a fake embeddings server, and a backend that embeds in the test process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fake_embeddings import FakeEmbeddings, ToyBackend


@pytest.fixture
def fake_server() -> Iterator[FakeEmbeddings]:
    server = FakeEmbeddings()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def toy_backend() -> ToyBackend:
    return ToyBackend()
