"""Small real slices of each task's default local protocol, for baseline tests that run in seconds."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.data.protocols import resolve, roots_from
from klue.tasks.base import ProtocolData

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
