"""name -> Task. The task packages under `klue.tasks` are found on disk; this is the only task list.

Each package `klue/tasks/<name>/` (whose name does not start with `_`) declares one `TASK`; the registry
imports the packages on first use and indexes their names and aliases. Nothing in a task imports the
registry, so a ninth task is one new package and nothing else.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import pkgutil
from typing import Any

import klue.tasks as task_packages
from klue.errors import DataError
from klue.tasks.base import Task


class UnknownTaskError(DataError, KeyError):
    """A task name the registry does not know: a bad option (exit 2 in the CLI) and a failed lookup."""

    def __init__(self, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        self.message = f"unknown task {name!r}; known tasks: {', '.join(known)}.{hint}"
        DataError.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message


@functools.cache
def _index() -> tuple[tuple[Task[Any, Any], ...], dict[str, Task[Any, Any]]]:
    """(every task in the paper's order, name or alias -> task); a name given twice is an error."""
    tasks = []
    for module in pkgutil.iter_modules(task_packages.__path__):
        if not module.ispkg or module.name.startswith("_"):
            continue
        task = getattr(importlib.import_module(f"{task_packages.__name__}.{module.name}"), "TASK", None)
        if not isinstance(task, Task):
            raise TypeError(f"klue.tasks.{module.name} defines no TASK (a klue.tasks.base.Task)")
        tasks.append(task)
    by_key: dict[str, Task[Any, Any]] = {}
    for task in tasks:
        for key in (task.name, *task.aliases):
            key = key.lower()
            if key in by_key:
                raise ValueError(f"task name {key!r} is declared by both {by_key[key].package} and {task.package}")
            by_key[key] = task
    return tuple(sorted(tasks, key=lambda t: (t.order, t.name))), by_key


def get(name: str) -> Task[Any, Any]:
    """The task called `name` (short name or alias, case-insensitive)."""
    key = name.strip().lower()
    tasks, by_key = _index()
    if key not in by_key:
        raise UnknownTaskError(name, [t.name for t in tasks])
    return by_key[key]


def all_tasks() -> list[Task[Any, Any]]:
    """Every registered task once, in the paper's order."""
    return list(_index()[0])


def resolve(names: str) -> list[Task[Any, Any]]:
    """`"all"` or a comma-separated list of task names, in the order given."""
    if names.strip().lower() == "all":
        return all_tasks()
    return [get(n) for n in names.split(",") if n.strip()]
