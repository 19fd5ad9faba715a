"""name -> Task. Tasks are discovered from the modules of `klue.tasks`; this is the only task list.

Each module under `klue/tasks/` (other than `base`) declares one `TASK` and calls `register(TASK)`
when imported. Adding a ninth task means adding one module.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from typing import Any

from klue.tasks.base import Task

_TASKS: dict[str, Task[Any, Any]] = {}
_loaded = False


class UnknownTaskError(KeyError):
    def __init__(self, name: str, known: list[str]) -> None:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        self.message = f"unknown task {name!r}; known tasks: {', '.join(known)}.{hint}"
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


def register(task: Task[Any, Any]) -> Task[Any, Any]:
    for key in (task.name, *task.aliases):
        if key in _TASKS and _TASKS[key] is not task:
            raise ValueError(f"task name {key!r} is registered twice")
        _TASKS[key] = task
    return task


def _load_all() -> None:
    global _loaded
    if _loaded:
        return
    import klue.tasks as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name != "base" and not module.name.startswith("_"):
            importlib.import_module(f"klue.tasks.{module.name}")
    _loaded = True


def get(name: str) -> Task[Any, Any]:
    """The task called `name` (short name or alias, case-insensitive)."""
    _load_all()
    key = name.strip().lower()
    if key not in _TASKS:
        raise UnknownTaskError(name, [t.name for t in all_tasks()])
    return _TASKS[key]


def all_tasks() -> list[Task[Any, Any]]:
    """Every registered task once, in the paper's order."""
    _load_all()
    unique = {id(t): t for t in _TASKS.values()}
    return sorted(unique.values(), key=lambda t: t.order)


def resolve(names: str) -> list[Task[Any, Any]]:
    """`"all"` or a comma-separated list of task names, in the order given."""
    if names.strip().lower() == "all":
        return all_tasks()
    return [get(n) for n in names.split(",") if n.strip()]
