"""Shared fixtures: where the real data is (skips with a reason when it is not), and small real slices of
each task's default local protocol for tests that train a baseline in seconds."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.io.locate import roots_from
from klue.protocols import ProtocolData, resolve

REPO_ROOT = Path(__file__).resolve().parents[1]


def _klue_dir() -> Path | None:
    env = os.environ.get("KLUE_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "data" / "klue")
    return next((p for p in candidates if p.is_dir()), None)


def _shared_dir() -> Path | None:
    """`../shared/data`: the official files plus other real Korean sets (see its README)."""
    klue_dir = _klue_dir()
    candidates = [klue_dir.parent] if klue_dir else []
    candidates.append(REPO_ROOT.parent / "shared" / "data")
    return next((p for p in candidates if (p / "korean").is_dir() or (p / "klue-partial").is_dir()), None)


def pytest_itemcollected(item: pytest.Item) -> None:
    """A `longest` test is a `slow` one too, so `-m "not slow"` (`scripts/test.sh --fast`) never runs one;
    added here as each test is collected, before `-m` deselects anything."""
    if item.get_closest_marker("longest") is not None and item.get_closest_marker("slow") is None:
        item.add_marker(pytest.mark.slow)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files that hold a `longest` test first, whole, the costliest first (`longest(seconds=N)`: a file's
    largest N; files without one keep file order after them), and the rest as collected (stable sorts): with
    `--dist worksteal` the first worker starts on the long ones and the other takes the short ones from the
    end of its queue, so both finish within seconds of each other, where a long test left last ran alone
    (the killed fine-tune's 70 s, the end of the suite on 2026-12-07). Whole files, so that a module-scoped
    fixture (a real fine-tune, a server) is built once."""
    cost: dict[Path, float] = {}
    for item in items:
        for marker in item.iter_markers("longest"):
            cost[item.path] = max(cost.get(item.path, 0.0), float(marker.kwargs.get("seconds", 0.0)))
    items.sort(key=lambda item: (item.path not in cost, -cost.get(item.path, 0.0)))


@pytest.fixture(scope="session")
def klue_data_dir() -> Path:
    """The official KLUE v1.1 files (KLUE_DATA_DIR, else ../shared/data/klue)."""
    path = _klue_dir()
    if path is None:
        pytest.skip("real KLUE data absent: set KLUE_DATA_DIR to a directory in the official layout")
    return path


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """../shared/data: klue-partial, klue-derived, korean, scoring-cases."""
    path = _shared_dir()
    if path is None:
        pytest.skip("../shared/data absent: the real Korean sets beside the official files are not here")
    return path


SliceMaker = Callable[..., ProtocolData[Any]]


@pytest.fixture(scope="session")
def protocol_slice(klue_data_dir: Path, shared_data_dir: Path) -> SliceMaker:
    """`protocol_slice(task, n_train, n_eval, protocol=None)`: the first records of each side of a
    protocol (the task's default local one unless named), so a baseline trains in seconds."""
    roots = roots_from(klue_data_dir, shared_data_dir)
    cache: dict[tuple[str, str], ProtocolData[Any]] = {}

    def make(task_name: str, n_train: int, n_eval: int, protocol: str | None = None) -> ProtocolData[Any]:
        task = registry.get(task_name)
        name = protocol or task.default_local_protocol
        if (task_name, name) not in cache:
            cache[(task_name, name)] = resolve(task, name, roots)
        full = cache[(task_name, name)]
        return dataclasses.replace(full, train=full.train[:n_train], eval=full.eval[:n_eval])

    return make


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Any:
    """A directory no process here can write (tests/filesystems.py)."""
    from filesystems import read_only_dir as make

    with make(tmp_path / "read-only") as path:
        yield path


@pytest.fixture
def full_disk(tmp_path: Path) -> Any:
    """A 16 KiB file system (tests/filesystems.py); skipped unless a tmpfs can be mounted."""
    from filesystems import full_disk as make

    with make(tmp_path / "full-disk") as path:
        yield path
