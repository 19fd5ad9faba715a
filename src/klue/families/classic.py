"""The classic family: `classic`, each task's CPU baseline (klue.baselines; sklearn, crfsuite, Kiwi)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from klue.errors import DataError
from klue.families.base import ModelFamily, ModelFamilyUnavailable
from klue.results import CLASSIC, Results

if TYPE_CHECKING:
    from pathlib import Path

    from klue.protocols import ProtocolData
    from klue.tasks.base import Task


@dataclass(frozen=True)
class ClassicOptions:
    """None: each task's baseline keeps its settings in its own code (tasks/<name>/baseline.py)."""


class ClassicFamily(ModelFamily[ClassicOptions]):
    name = CLASSIC
    command = "train"
    takes_options = False  # a benchmark's training overrides are for the fine-tuned encoders

    def recognises(self, model: str) -> bool:
        return model == CLASSIC

    def uses_gpu(self, model: str) -> bool:
        return False

    def options(self, values: Mapping[str, Any]) -> ClassicOptions:
        if values:
            raise DataError("the classic baselines (each task's CPU baseline) take no hyper-parameter overrides, "
                            f"recipe or trackers; got {', '.join(sorted(values))}")
        return ClassicOptions()

    def run(self, task: Task[Any, Any], model: str, protocol_data: ProtocolData[Any], seed: int, out_dir: Path,
            mode: str, options: ClassicOptions) -> Results:
        return _baselines().run(task, protocol_data, seed, out_dir, mode=mode)

    def run_alone(self, task: Task[Any, Any], model: str, protocol_data: ProtocolData[Any], seed: int,
                  out_dir: Path, mode: str, options: ClassicOptions) -> Results:
        return _baselines().run_locked(task, protocol_data, seed, out_dir, mode)


def _baselines() -> ModuleType:
    try:
        from klue import baselines
    except ImportError as error:
        raise ModelFamilyUnavailable(f"the classic baselines cannot be imported ({error})") from None
    return baselines


FAMILY = ClassicFamily()
