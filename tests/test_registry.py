"""The registry: every task declared once in its own package, found by name or alias, helpful errors;
the generic checks on every task; and a ninth task that is nothing but a copied package."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import klue.tasks
from generic_checks import check_declaration, check_gold_scores_the_maximum, slice_of
from klue import protocols, registry
from klue.io.locate import DataRoots
from klue.scoring import RunRequest
from klue.tasks.base import Task

TASKS = registry.all_tasks()


def test_tasks_are_unique_and_ordered() -> None:
    assert TASKS, "no task registered"
    assert [t.order for t in TASKS] == sorted(t.order for t in TASKS)
    assert len({t.name for t in TASKS}) == len(TASKS)
    assert all(isinstance(t, Task) for t in TASKS)
    assert all(t.package == f"klue.tasks.{t.package.rsplit('.', 1)[-1]}" for t in TASKS)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_lookup_by_name_and_alias(task: Task) -> None:
    assert registry.get(task.name) is task
    assert all(registry.get(alias) is task for alias in task.aliases)
    assert registry.get(f" {task.name.upper()} ") is task
    assert registry.resolve(f"{task.name},{task.name}") == [task, task]


def test_unknown_name_suggests() -> None:
    name = TASKS[0].name
    with pytest.raises(registry.UnknownTaskError, match=f"Did you mean '{name}'"):
        registry.get(name + "x")


def test_resolve_all() -> None:
    assert registry.resolve("all") == registry.all_tasks()


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_declaration_is_consistent(task: Task) -> None:
    check_declaration(task)


@pytest.mark.realdata
@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_gold_scores_the_maximum_on_real_data(task: Task, klue_data_dir: Path, shared_data_dir: Path,
                                              tmp_path: Path) -> None:
    check_gold_scores_the_maximum(task, DataRoots(klue_data_dir, shared_data_dir), tmp_path)


# ------------------------------------------------------------------------------------------ ninth task

COPIED = TASKS[0].name
# A new name: the first of <copied>9, <copied>10, ... that no package declares yet (a copy may exist).
NINTH = next(f"{COPIED}{n}" for n in range(9, 100) if f"{COPIED}{n}" not in {t.name for t in TASKS})


@pytest.fixture()
def ninth_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Task]:
    """A copy of one task package under a new name, order and aliases (nothing else edited), in a
    temporary directory added to `klue.tasks`' search path."""
    source = Path(klue.tasks.__file__).parent / COPIED
    target = tmp_path / "tasks" / NINTH
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    declaration = target / "task.yaml"
    text = declaration.read_text(encoding="utf-8")
    lines = [f"name: {NINTH}" if line.startswith("name:") else
             f"aliases: [klue-{NINTH}]" if line.startswith("aliases:") else
             f"order: {max(t.order for t in TASKS) + 1}" if line.startswith("order:") else line
             for line in text.splitlines()]
    declaration.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(klue.tasks, "__path__", [*klue.tasks.__path__, str(target.parent)])
    registry._index.cache_clear()
    try:
        yield registry.get(NINTH)
    finally:
        registry._index.cache_clear()
        for name in [m for m in sys.modules if m == f"klue.tasks.{NINTH}" or m.startswith(f"klue.tasks.{NINTH}.")]:
            del sys.modules[name]


@pytest.mark.realdata
def test_a_ninth_task_is_one_new_package(ninth_task: Task, klue_data_dir: Path, shared_data_dir: Path,
                                        tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from klue.baselines import run
    from klue.cli import app
    from klue.reporting.aggregate import load_aggregate
    from klue.reporting.leaderboard import build_leaderboard, to_markdown

    assert registry.all_tasks()[-1] is ninth_task and len(registry.all_tasks()) == len(TASKS) + 1
    assert registry.get(f"klue-{NINTH}") is ninth_task and ninth_task.package == f"klue.tasks.{NINTH}"
    check_declaration(ninth_task)
    roots = DataRoots(klue_data_dir, shared_data_dir)
    check_gold_scores_the_maximum(ninth_task, roots, tmp_path)

    listed = CliRunner().invoke(app, ["tasks", "--json"])
    assert listed.exit_code == 0 and NINTH in [t["name"] for t in json.loads(listed.output)]

    data = protocols.resolve(ninth_task, ninth_task.default_local_protocol, roots)
    results = run(RunRequest(ninth_task, "classic", slice_of(data, 600, 200), 1, tmp_path / "bench" / NINTH / "classic" / "seed1"))
    assert results.task == NINTH and results.scores[ninth_task.key_metric] > 0
    assert set(results.metric_versions) == set(results.scores)
    board = to_markdown(build_leaderboard(load_aggregate(tmp_path / "bench")))
    assert NINTH.upper() in board and "partial 1/" in board


@pytest.mark.parametrize("change, message", [
    (("order: 5\n", ""), r"missing \['order'\]"),
    (("order: 5\n", "order: 5\nsurprise: 1\n"), r"unknown \['surprise'\]"),
    (("role: resource", "role: extra"), r"files\[2\]\.role 'extra'"),
    (("size: 870}", "sise: 870}"), r"files\[2\]: missing \[\], unknown \['sise'\]"),
    (("    group: guid", "    groups: guid"), r"protocols\[0\]: missing \['group'\], unknown \['groups'\]"),
    (("name: re\n", "name: [re\n"), "invalid YAML"),
])
def test_a_wrong_declaration_is_refused_by_name(change: tuple[str, str], message: str) -> None:
    from importlib import resources

    from klue.errors import DataError
    from klue.tasks.base import read_declaration

    text = (resources.files("klue.tasks.re") / "task.yaml").read_text(encoding="utf-8")
    assert change[0] in text
    with pytest.raises(DataError, match=message):
        read_declaration(text.replace(change[0], change[1]), "re/task.yaml")
