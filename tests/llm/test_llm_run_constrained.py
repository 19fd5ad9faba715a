"""`hyperparameters.constrained` in results.json says whether a constraint was applied to the task's answers,
not whether one was asked for (issue 26): true only where the backend constrained some answer; false for a
task whose constraints the backend cannot apply, for a backend that constrains nothing, and with
`constrained` off."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fake_backend import FakeBackend

from klue import registry
from klue.llm.backends.base import Capabilities, GenerateRequest, GenerateResult, ResultSink, hand_over
from klue.llm.run import LlmSettings, run
from klue.protocols import ProtocolData
from klue.results import Results
from klue.scoring import RunRequest
from klue.tasks.nli.records import NliRecord
from klue.tasks.re.records import Entity, ReRecord


class ConstrainingBackend(FakeBackend):
    """The fake backend that also applies the constraints its capabilities name (as a grammar would: the
    answer is WORD either way) and says so per answer."""

    def __init__(self, word: str, capabilities: Capabilities) -> None:
        super().__init__(word)
        self.capabilities = capabilities

    def generate(self, requests: Sequence[GenerateRequest],
                 on_result: ResultSink | None = None) -> list[GenerateResult]:
        self.usage.requests += len(requests)
        applied = [any(c is not None for c in (r.json_schema, r.choices, r.regex, r.span_of)) for r in requests]
        return hand_over([GenerateResult(self.model, constrained=a) for a in applied], on_result)


CHOICES = Capabilities(loglik=False, choices=True)  # a server with a closed-choice constraint
SCHEMA_ONLY = Capabilities(loglik=False, json_schema=True)  # one that takes only JSON schemas


def _re_data(n: int = 6) -> ProtocolData[ReRecord]:
    labels = ("per:title", "no_relation", "per:employee_of")
    records = [ReRecord(f"re-{i}", f"홍길동은 회사{i}의 대표이다.", Entity("홍길동", 0, 2, "PER"),
                        Entity(f"회사{i}", 5, 7, "ORG"), labels[i % 3], "wikipedia") for i in range(n)]
    return ProtocolData("files", False, "synthetic RE", records[:3], records[3:], None, ())


def _nli_data(n: int = 6) -> ProtocolData[NliRecord]:
    labels = ("entailment", "contradiction", "neutral")
    records = [NliRecord(f"nli-{i}", "synthetic", f"전제 문장 {i}.", f"가설 문장 {i}.", labels[i % 3]) for i in range(n)]
    return ProtocolData("files", False, "synthetic NLI", records[:3], records[3:], None, ())


def _run(task_name: str, data: ProtocolData[Any], backend: FakeBackend, out: Path, constrained: bool = True) -> Results:
    settings = LlmSettings(method="generate", shots=1, constrained=constrained, progress=False)
    return run(RunRequest(registry.get(task_name), f"fake:{backend.model}", data, 1, out), settings=settings, backend=backend)


def test_constrained_is_true_where_the_backend_constrained_answers(tmp_path: Path) -> None:
    results = _run("re", _re_data(), ConstrainingBackend("per:title", CHOICES), tmp_path / "re")
    assert results.llm is not None and results.llm.n_constrained == results.n_eval == 3
    assert results.hyperparameters["constrained"] is True


@pytest.mark.parametrize(("task_name", "backend", "constrained"), [
    ("nli", ConstrainingBackend("모순", SCHEMA_ONLY), True),  # the task's constraint is not one it applies
    ("re", FakeBackend("per:title"), True),  # a backend without constraints
    ("re", ConstrainingBackend("per:title", CHOICES), False),  # constraints switched off
])
def test_constrained_is_false_where_no_constraint_applied(task_name: str, backend: FakeBackend, constrained: bool,
                                                          tmp_path: Path) -> None:
    data = _re_data() if task_name == "re" else _nli_data()
    results = _run(task_name, data, backend, tmp_path / task_name, constrained)
    assert results.status == "ok" and results.llm is not None and results.llm.mode == "generate"
    assert results.llm.n_constrained == 0
    assert results.hyperparameters["constrained"] is False
