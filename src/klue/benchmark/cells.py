"""One benchmark cell (task x model x seed): resolve the protocol, train, predict, score.

`run_cell` is the default `CellRunner`. The model runs through its family (the registry `klue.families`:
`classic` -> the CPU baselines, `hf:`/`openai:` -> prompted LMs, anything else -> a fine-tuned encoder), as

    family(request: klue.scoring.RunRequest, overrides) -> Results

which trains on `protocol_data.train`, writes `out_dir/predictions.jsonl` and returns the Results the
judge made of that file (`klue.scoring.judge`, the path `klue score` takes). A family imports its
producer inside the cell, so the runner starts fast and a missing extra fails only its cells. Tests and
plug-ins pass their own: `functools.partial(run_cell, family=my_family)`.

`execute_cell` is what every executor (klue.benchmark.executors) runs for a cell: the runner, then the
cell's results.json written atomically as its last act, or its failure recorded.
"""

from __future__ import annotations

import os
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from klue.errors import DataError, UnreachableError
from klue.families import family_of
from klue.io.atomic import write_text_atomic
from klue.io.locate import DataRoots
from klue.io.output import OutputError, output_error
from klue.io.redact import redact_text
from klue.protocols import ProtocolData
from klue.results import PREDICTIONS_FILE, RESULTS_FILE, Results, write_results
from klue.tasks.base import Task

if TYPE_CHECKING:
    from klue.scoring import RunRequest

LOG_FILE = "log.txt"
ERROR_FILE = "error.txt"
AUTO_PROTOCOL = "auto"  # `official` where the official train file is present, else the task's local default


FILES_PROTOCOL = "files"
HF_PROTOCOL = "hf"


@dataclass(frozen=True)
class FilesChoice:
    """The user's own files (`--train/--eval/--selection`, formats inferred unless given): protocol `files`."""

    train: str
    eval: str | None = None
    selection: str | None = None
    train_format: str | None = None
    eval_format: str | None = None
    selection_format: str | None = None
    eval_fraction: float | None = None

    def __post_init__(self) -> None:
        if self.eval is None and self.eval_fraction is None:
            raise DataError("--train needs --eval FILE, or --eval-fraction F to split the evaluation part off it")
        if self.eval_fraction is not None and not 0 < self.eval_fraction < 1:
            raise DataError(f"--eval-fraction must be between 0 and 1, not {self.eval_fraction}")


def resolve_data(task: Task[Any, Any], protocol: str, roots: DataRoots,
                 files: FilesChoice | None = None) -> ProtocolData[Any]:
    """The protocol data of a run: the user's files, the Hugging Face copy, or a declared protocol."""
    from klue import protocols

    if files is not None:
        return protocols.resolve_files(
            task, Path(files.train), Path(files.eval) if files.eval else None,
            Path(files.selection) if files.selection else None, train_format=files.train_format,
            eval_format=files.eval_format, selection_format=files.selection_format,
            eval_fraction=files.eval_fraction, roots=roots)
    if protocol == HF_PROTOCOL:
        return protocols.resolve_hf(task, roots=roots)
    return protocols.resolve(task, choose_protocol(task, protocol, roots), roots)


@dataclass(frozen=True)
class CellSpec:
    """Everything a cell needs, as plain values: it crosses into a worker process by pickling."""

    task: str
    model: str
    seed: int
    protocol: str  # as asked: AUTO_PROTOCOL, "official", "heldout", "local:..."
    mode: str  # metric mode
    out_dir: str  # the cell's directory: <out>/<task>/<model slug>/seed<k>
    data_dir: str | None = None
    extra_data_dir: str | None = None
    overrides: tuple[tuple[str, Any], ...] = ()  # training overrides, key=value
    files: FilesChoice | None = None  # protocol `files`: the user's own train/eval files

    @property
    def path(self) -> Path:
        return Path(self.out_dir)

    @property
    def shown_model(self) -> str:
        """The model as every output names it: a server URL's credentials blanked."""
        return redact_text(self.model)

    @property
    def label(self) -> str:
        return f"{self.task} · {self.shown_model} · seed {self.seed}"


class CellFamily(Protocol):
    """What runs a cell's model: a family's `run_cell` (klue.families), or a test's or plug-in's own."""

    def __call__(self, request: RunRequest, overrides: Mapping[str, Any]) -> Results: ...


CellRunner = Callable[[CellSpec], Results]


def model_slug(model: str) -> str:
    """A directory name for a model: `klue/roberta-base` -> `klue--roberta-base` (never a URL's credentials)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", redact_text(model).strip().strip("/").replace("/", "--")).strip("-.")
    if not slug:
        raise ValueError(f"model name {model!r} gives an empty directory name")
    return slug


def data_roots(spec: CellSpec) -> DataRoots:
    from klue.io.locate import roots_from

    return roots_from(spec.data_dir, spec.extra_data_dir)


def choose_protocol(task: Task[Any, Any], asked: str, roots: DataRoots) -> str:
    """`auto` = `official` when the task's official train file is present, else its local default."""
    if asked != AUTO_PROTOCOL:
        return asked
    train = task.file("train")
    if train is not None and (roots.klue / train.path).is_file():
        return "official"
    return task.default_local_protocol


def run_cell(spec: CellSpec, family: CellFamily | None = None) -> Results:
    """The default cell: registry task, protocol data, the model's family (whose Results come from the judge)."""
    from klue import registry
    from klue.metrics.classification import check_mode
    from klue.scoring import RunRequest

    task = registry.get(spec.task)
    data = resolve_data(task, spec.protocol, data_roots(spec), spec.files)
    spec.path.mkdir(parents=True, exist_ok=True)
    request = RunRequest(task, spec.model, data, spec.seed, spec.path, check_mode(spec.mode))
    results = (family or family_of(spec.model).run_cell)(request, dict(spec.overrides))
    check_results(results, spec, task, data)
    return results


def check_results(results: Results, spec: CellSpec, task: Task[Any, Any], data: ProtocolData[Any]) -> None:
    """A family's Results must be the judge's (scored from the cell's predictions.jsonl) for this cell."""
    if results.predictions_file != PREDICTIONS_FILE:
        raise ValueError(f"a model family must write {PREDICTIONS_FILE} and return the Results the judge made of "
                         f"it (klue.scoring.judge); this one returned predictions_file={results.predictions_file!r}")
    expected = {"task": task.name, "seed": spec.seed, "metric_mode": spec.mode, "protocol": data.protocol}
    wrong = {k: (getattr(results, k), v) for k, v in expected.items() if getattr(results, k) != v}
    if wrong:
        raise ValueError(f"the model family returned results for another cell: {wrong} (got, expected)")


@dataclass(frozen=True)
class FailureInfo:
    error: str  # one paragraph for results.json
    trace: str  # the full traceback, for error.txt


def describe_failure(error: BaseException) -> FailureInfo:
    text = str(error).strip() or type(error).__name__
    if not type(error).__module__.startswith("klue."):  # klue's own errors are written to be read as they are
        text = f"{type(error).__name__}: {text}"
    return FailureInfo(redact_text(" ".join(text.split())), redact_text("".join(traceback.format_exception(error))))


def failed_results(spec: CellSpec, error: str, wall_time_s: float) -> Results:
    """A failed cell's record: what is known of the cell, and its error."""
    from klue import registry
    from klue.scoring import failure_results

    try:
        task_version = registry.get(spec.task).version
    except KeyError:  # an unknown task name is itself the failure being recorded
        task_version = ""
    return failure_results(spec.task, task_version, spec.shown_model, family_of(spec.model).name, spec.seed,
                           spec.protocol, spec.mode, error, wall_time_s)


@dataclass
class CellOutcome:
    """What a worker reports back to the runner about one cell."""

    spec: CellSpec
    status: str  # "ok" | "failed"
    error: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    wall_time_s: float = 0.0
    protocol: str = ""
    cannot_write: bool = False  # the cell failed to write its output (full disk, read-only): so would the rest
    unreachable: bool = False  # a server the cell needs answered nothing at all: exit code 3, the run stops


@contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors too, for C libraries) to `path`."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with path.open("a", encoding="utf-8") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def execute_cell(cell_runner: CellRunner, spec: CellSpec, capture_output: bool = True) -> CellOutcome:
    """Run one cell and write its results.json (ok or failed). KeyboardInterrupt writes nothing.

    A cell whose failure cannot even be recorded (the disk filled up) still reports it to the runner, with
    both errors, so the terminal and the manifest say what happened."""
    start = time.perf_counter()
    try:
        spec.path.mkdir(parents=True, exist_ok=True)
        (spec.path / ERROR_FILE).unlink(missing_ok=True)
        capture = _output_to(spec.path / LOG_FILE) if capture_output else _nothing()
    except OSError as error:
        return CellOutcome(spec, "failed", describe_failure(output_error(spec.path, error)).error, {},
                           time.perf_counter() - start, spec.protocol, cannot_write=True)
    with capture:
        try:
            results = cell_runner(spec)
            if not results.wall_time_s:
                results.wall_time_s = time.perf_counter() - start
            write_results(spec.path / RESULTS_FILE, results)
            return CellOutcome(spec, results.status, results.error, dict(results.scores), results.wall_time_s,
                               results.protocol)
        except Exception as error:  # noqa: BLE001 - any failure of a cell is recorded, and the run goes on
            info = describe_failure(error)
            elapsed = time.perf_counter() - start
            message, cannot_write = info.error, isinstance(error, OutputError)
            try:
                write_text_atomic(spec.path / ERROR_FILE, info.trace)
                write_results(spec.path / RESULTS_FILE, failed_results(spec, info.error, elapsed))
            except (OSError, DataError) as unrecorded:
                message = f"{info.error}; the failure itself could not be recorded: {describe_failure(unrecorded).error}"
                cannot_write = True
            return CellOutcome(spec, "failed", message, {}, elapsed, spec.protocol, cannot_write=cannot_write,
                               unreachable=isinstance(error, UnreachableError))


@contextmanager
def _nothing() -> Iterator[None]:
    yield
