"""Gold files of a site: read with the task's reader (through the registry), and split into a public and a
private part.

The split is seeded and group-aware: a record goes to the private part when the stable hash of
`"<seed>:<group key>"` falls below the private fraction (`klue.io.splits`, as the local protocols split),
so the records of one group (a premise's pairs, a context's questions, a dialogue's turns) stay on one side, and the
same seed gives the same split on every machine. No Django here: the scoring subprocess uses it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue import registry
from klue.io.splits import split_by_key
from klue.tasks.base import Task
from klue.tasks.reading import read


@dataclass(frozen=True)
class Gold:
    """One task's gold records, split."""

    task: Task[Any, Any]
    format: str
    public: list[Any]
    private: list[Any]
    records: list[Any]  # all of them, in file order: messages about a file never tell the two parts apart


def read_gold(task_name: str, path: Path, fmt: str | None) -> tuple[Task[Any, Any], list[Any], str]:
    """The task, its gold records (read as `klue score` reads gold: DataError with file:line) and the format."""
    task = registry.get(task_name)
    reading = read(task, path, fmt, purpose="score", option=f"tasks.{task.name}.format")
    return task, reading.records, reading.format


def split(task: Task[Any, Any], records: Sequence[Any], seed: int, private_fraction: float) -> (
        tuple[list[Any], list[Any]]):
    """(public, private) records, each in file order; a group never straddles the two."""
    private, public = split_by_key(records, lambda r: f"{seed}:{task.group_key(r)}", private_fraction)
    return public, private


def load(task_name: str, path: Path, fmt: str | None, seed: int, private_fraction: float) -> Gold:
    task, records, found = read_gold(task_name, path, fmt)
    public, private = split(task, records, seed, private_fraction)
    return Gold(task, found, public, private, records)
