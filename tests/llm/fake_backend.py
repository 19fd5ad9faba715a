"""A backend module as a plug-in writes one (klue.llm.backends): `fake:WORD` prefers the continuation WORD
(log-likelihood -1 for it, -5 for any other) and generates WORD; it needs no model and no server."""

from __future__ import annotations

from collections.abc import Sequence

from klue.errors import DataError
from klue.io.endpoints import ServerOptions
from klue.llm.backends.base import (
    BackendBase,
    Capabilities,
    GenerateRequest,
    GenerateResult,
    LoglikRequest,
    LoglikResult,
    ResultSink,
    Usage,
    hand_over,
)


def check_target(target: str) -> None:
    if " " in target:
        raise DataError(f"fake:{target}: the word has no spaces")


def open_backend(target: str, options: ServerOptions) -> FakeBackend:
    return FakeBackend(target)


class FakeBackend(BackendBase):
    name = "fake"

    def __init__(self, word: str) -> None:
        self.model = word
        self.fingerprint = f"fake-word:{word}"
        self.capabilities = Capabilities(loglik=True)
        self.usage = Usage()
        self.closed = False

    def loglik(self, requests: Sequence[LoglikRequest], on_result: ResultSink | None = None) -> list[LoglikResult]:
        self.usage.requests += len(requests)
        return hand_over([LoglikResult(-1.0 if r.continuation.strip() == self.model else -5.0, 1)
                          for r in requests], on_result)

    def generate(self, requests: Sequence[GenerateRequest],
                 on_result: ResultSink | None = None) -> list[GenerateResult]:
        self.usage.requests += len(requests)
        return hand_over([GenerateResult(self.model) for _ in requests], on_result)
