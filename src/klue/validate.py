"""The logic of `klue data validate`: read data files with their task's reader and report every problem.

A file's task comes from `--task`, else from its name: an official file name (`klue-nli-v1.1_dev.json`),
an extension or name part that names one of a task's other readers (`.conllu`, `kornli/`), or a task
name or alias among the parts of the name (`klue-ner-v1.1_train.first5000.tsv`). Its format is told by
the rule every command uses (`klue.tasks.reading.infer_format`), so a parquet file or a `datasets`
save_to_disk directory (`DIR` or `DIR:split`) is read as the Hugging Face copy it is. Official resource
files (`relation_list.json`, `ontology.json`) are checked by their task's resource reader. Any other
directory is searched for files whose task can be told.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from klue import registry
from klue.errors import DataError, HasProblems, Problem, ProblemLog
from klue.io import formats
from klue.io.hashing import git_blob_sha1
from klue.io.release import OfficialFile
from klue.tasks.base import OFFICIAL_READER, Task
from klue.tasks.reading import infer_format, read

DATA_SUFFIXES = (".json", ".tsv", ".conllu")
RESOURCE_READER = "resource"


@dataclass(frozen=True)
class Detected:
    task: Task[Any, Any]
    reader: str  # "official", "resource", a key of task.other_readers, "datasets" or "parquet"
    official: OfficialFile | None  # the official file this path is named after, if any


@dataclass
class FileReport(HasProblems):
    path: Path
    task: str | None
    reader: str | None
    n_records: int = 0
    problems: list[Problem] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path), "task": self.task, "reader": self.reader, "records": self.n_records,
            "errors": len(self.errors), "warnings": len(self.warnings),
            "problems": [{"location": p.location, "severity": p.severity, "message": p.message}
                         for p in self.problems],
        }


def _official_by_name(name: str) -> list[tuple[Task[Any, Any], OfficialFile]]:
    return [(task, entry) for task in registry.all_tasks() for entry in task.files
            if Path(entry.path).name == name]


def detect(path: Path, task_name: str | None = None) -> Detected:
    """Which task (and which of its readers) a file belongs to; DataError when it cannot be told."""
    official = _official_by_name(path.name)
    if task_name is not None:
        task = registry.get(task_name)
        entry = next((e for t, e in official if t is task), None)
        reader = RESOURCE_READER if entry is not None and entry.role == "resource" else infer_format(task, path)
        return Detected(task, reader, entry)
    if len(official) == 1:
        task, entry = official[0]
        return Detected(task, RESOURCE_READER if entry.role == "resource" else OFFICIAL_READER, entry)
    by_reader = {task.name: key for task in registry.all_tasks() for key in task.other_readers
                 if formats.mentions(key, path)}
    if len(by_reader) == 1:
        name, key = next(iter(by_reader.items()))
        return Detected(registry.get(name), key, None)
    named = [task for task in registry.all_tasks()
             if any(formats.mentions(key, path) for key in (task.name, *task.aliases))]
    if len(named) == 1:
        return Detected(named[0], infer_format(named[0], path), None)
    known = ", ".join(t.name for t in registry.all_tasks())
    which = f"it could be {', '.join(t.name for t in named)}" if named else "its name names no task"
    raise DataError(f"cannot tell which task this file is for ({which}); pass --task ({known})", path)


def _check_resource(task: Task[Any, Any], path: Path, issues: ProblemLog) -> int:
    """A resource file through its task's own reader (RE: the relation list; WoS: the ontology)."""
    if task.read_resource is None:
        issues.error("", f"task {task.name!r} declares no reader for its resource file")
        return 0
    resource = task.read_resource(path, issues)
    return len(resource) if resource is not None else 0


def validate_file(path: Path, task_name: str | None = None) -> FileReport:
    """Read one file with its task's reader; the report holds every problem found."""
    try:
        found = detect(path, task_name)
    except DataError as error:
        return FileReport(path, None, None, 0, list(error.problems))
    task = found.task
    issues = ProblemLog(str(path))
    if found.reader == RESOURCE_READER:
        if not path.is_file():
            issues.error("", "no such file")
            return FileReport(path, task.name, found.reader, 0, issues.problems)
        n = _check_resource(task, path, issues)
    else:
        reading = read(task, path, found.reader, purpose="validate")
        issues.problems.extend(reading.problems)
        n = len(reading.records)
    if found.official is not None and not issues.errors:
        _compare_with_official(task, found.official, path, n, issues)
    return FileReport(path, task.name, found.reader, n, sorted(issues.problems, key=_line_order))


def _line_order(problem: Problem) -> int:
    """Problems in file order: by the line number their location starts with (file-level ones first)."""
    match = re.match(r"line (\d+)", problem.location)
    return int(match.group(1)) if match else 0


def _compare_with_official(task: Task[Any, Any], entry: OfficialFile, path: Path, n: int,
                           issues: ProblemLog) -> None:
    blob = git_blob_sha1(path)
    if blob != entry.git_blob:
        issues.warning("", f"named like the official {entry.path} but its content differs (git blob {blob}, "
                    f"official {entry.git_blob})")
    expected = task.sizes.get(entry.role)
    if entry.role != "resource" and expected is not None and n != expected:
        issues.warning("", f"{n:,} records; the official {entry.role} file has {expected:,}")


def expand(paths: list[Path], task_name: str | None = None) -> list[Path]:
    """Files to validate: files as given (a `datasets` save_to_disk directory is one), other directories
    searched for data files whose task can be told."""
    files: list[Path] = []
    for path in paths:
        if not path.is_dir() or formats.is_saved_dir(path):
            files.append(path)
            continue
        for candidate in sorted(path.rglob("*")):
            if not candidate.is_file() or candidate.suffix.lower() not in DATA_SUFFIXES:
                continue
            try:
                detect(candidate, task_name)
            except DataError:
                continue
            files.append(candidate)
    return files


def validate_paths(paths: list[Path], task_name: str | None = None) -> list[FileReport]:
    if task_name is not None:
        registry.get(task_name)  # an unknown --task fails once, with the known names
    return [validate_file(path, task_name) for path in expand(paths, task_name)]
