"""What a model family declares: which model specs are its own, its options (a dataclass), whether it uses
a GPU, and how it runs a `klue.scoring.RunRequest`: train (or prompt) on the protocol's training part, write
`out_dir/predictions.jsonl` and return the Results the judge made of that file (`klue.scoring.judge`, the
path `klue score` takes).

The families are listed in `klue.families` (the registry); `klue train`, `klue llm`, `klue benchmark` and
the benchmark's cells ask it, so a spec is told apart in one place. A family imports its producer
(`klue.baselines`, `klue.training`, `klue.llm`) only when it runs, so the registry is cheap to ask and a
missing extra fails only the runs that need it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from klue.results import Results

if TYPE_CHECKING:
    from klue.scoring import RunRequest
    from klue.tasks.base import Task

O = TypeVar("O")  # a family's options dataclass


class ModelFamilyUnavailable(RuntimeError):
    """The code of a model family cannot be imported (an extra is not installed)."""


class ModelFamily(ABC, Generic[O]):
    name: str  # the family results.json records (klue.results: CLASSIC, ENCODER, LLM)
    command: str  # the `klue` command that runs one model of the family on its own ("train", "llm")
    takes_options: bool = True  # False: a benchmark's --override values are not meant for it

    @abstractmethod
    def recognises(self, model: str) -> bool:
        """Whether `model` is a spec of this family."""

    @abstractmethod
    def uses_gpu(self, model: str) -> bool:
        """Whether a run of `model` computes on this machine's GPU where there is one."""

    def check(self, model: str) -> None:
        """Refuse a spec this family cannot run before any work (a DataError, exit 2): a malformed one, or one
        naming a local model that is not there. `klue.families.check_specs` asks it of every model before a
        command or the benchmark runner runs a cell or writes anything. By default every spec it recognises
        is whole (a hub name cannot be checked without asking the hub)."""

    def not_applicable(self, task: Task[Any, Any]) -> str | None:
        """Why the family's models do not apply to `task` (a benchmark plans no cell for it; the report shows
        "not applicable"), or None: by default a family applies to every task."""
        return None

    @abstractmethod
    def options(self, values: Mapping[str, Any]) -> O:
        """The family's options from key=value settings (a benchmark's overrides, a command's options);
        a DataError for one it does not take."""

    @abstractmethod
    def run(self, request: RunRequest, options: O) -> Results:
        """One run into `request.out_dir` (see the module docstring), as a benchmark cell: under the benchmark's
        lock."""

    def run_alone(self, request: RunRequest, options: O) -> Results:
        """A run of its own (`klue train`), holding `out_dir` (klue.io.lock) while it writes: the one place a
        run takes the lock, for every family."""
        from klue.io.lock import exclusive_in_main_process
        from klue.io.redact import redact_text

        command = f"klue {self.command} {request.task.name} {redact_text(request.model_spec)}"
        with exclusive_in_main_process(Path(request.out_dir), command):
            return self.run(request, options)

    def run_cell(self, request: RunRequest, overrides: Mapping[str, Any]) -> Results:
        """A benchmark cell (klue.benchmark.cells.CellFamily): `run` with the options its overrides give."""
        return self.run(request, self.options(overrides))
