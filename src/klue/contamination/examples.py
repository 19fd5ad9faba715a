"""The benchmark side: which examples a scan looks for. By default each task's official dev file, read whole
(nothing is trained, so nothing is split); a protocol's evaluation set, or a file the user names, instead."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue import protocols
from klue.contamination.index import Example
from klue.errors import DataError
from klue.io.formats import ReadPurpose
from klue.io.locate import DataRoots, how_to_get
from klue.io.provenance import DataSource, data_source
from klue.registry import all_tasks, resolve
from klue.tasks.base import Task
from klue.tasks.reading import read


@dataclass(frozen=True)
class TaskSet:
    """The examples of one task a scan looks for, and where they came from."""

    task: str
    examples: list[Example]
    source: DataSource
    what: str  # as EvalSet.what


def examples_of(task: Task[Any, Any], records: list[Any]) -> list[Example]:
    """The records as examples: their guids and the texts the task declares as input and answer."""
    out = []
    for record in records:
        text = task.example_text(record)
        out.append(Example(task.name, task.guid(record), text.input, text.answer))
    return out


@dataclass(frozen=True)
class EvalSet:
    """The records of one task a contamination command looks at, and where they came from."""

    records: list[Any]
    source: DataSource
    what: str  # "the official dev file PATH", "the evaluation set of protocol NAME", "--eval FILE (FORMAT)"


def evaluation_set(task: Task[Any, Any], roots: DataRoots, protocol: str | None = None,
                   eval_file: Path | None = None, eval_format: str | None = None,
                   purpose: ReadPurpose = "train") -> EvalSet:
    """The task's official dev file whole (nothing is trained, so nothing is split off), the evaluation set of
    `protocol`, or the file `eval_file`; read for `purpose` (a scan reads the dev file as gold is read, for
    `score`). The dev file missing: DataError ending with how to get it."""
    if eval_file is not None:
        named = protocols.read_named(task, eval_file, eval_format, role="eval")
        source = DataSource(named.shown, named.identity.git_blob, len(named.records), "scanned",
                            named.identity.sha256)
        return EvalSet(list(named.records), source, f"--eval {named.shown} ({named.format})")
    if protocol is not None:
        data = protocols.resolve(task, protocol, roots)
        source = next((s for s in data.sources if "eval" in s.used_as), data.sources[-1])
        return EvalSet(list(data.eval), source, f"the evaluation set of protocol {protocol}")
    dev = task.file("dev")
    if dev is None:
        raise DataError(f"task {task.name!r} has no official dev file: name one with --eval")
    path = roots.klue / dev.path
    if not path.is_file():
        raise DataError(f"the official {task.label} dev file is missing: {how_to_get(task.name)}", path)
    records = read(task, path, "official" if purpose == "score" else None, purpose=purpose).records
    return EvalSet(records, data_source(path, len(records), "scanned", roots.klue), f"the official dev file {dev.path}")


def task_sets(names: str, roots: DataRoots, protocol: str | None = None, eval_file: Path | None = None,
              eval_format: str | None = None) -> tuple[list[TaskSet], list[str]]:
    """The sets to scan and, for `all`, the tasks left out because their file is not here (each with why).

    A task named on purpose whose file is missing is an error (DataError saying how to get it)."""
    if protocol is not None and eval_file is not None:
        raise DataError("give --protocol or --eval, not both")
    chosen = all_tasks() if names.strip().lower() == "all" else resolve(names)
    if eval_file is not None and len(chosen) != 1:
        raise DataError("--eval names one file: give the one task it belongs to with --tasks")
    sets: list[TaskSet] = []
    skipped: list[str] = []
    for task in chosen:
        try:
            found = evaluation_set(task, roots, protocol, eval_file, eval_format, purpose="score")
        except DataError as error:
            if names.strip().lower() != "all" or not _missing(error):
                raise
            skipped.append(f"{task.name}: {error.summary(limit=1, name_errors=False)}")
            continue
        sets.append(TaskSet(task.name, examples_of(task, found.records), found.source, found.what))
    if not sets:
        raise DataError("no task's set is here: " + "; ".join(skipped))
    return sets, skipped


def _missing(error: DataError) -> bool:
    return any("missing" in p.message or "no such file" in p.message for p in error.problems)
