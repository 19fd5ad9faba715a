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
    from klue.scoring import RunRequest


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

    def run(self, request: RunRequest, options: ClassicOptions) -> Results:
        return _baselines().run(request)


def _baselines() -> ModuleType:
    try:
        from klue import baselines
    except ImportError as error:
        raise ModelFamilyUnavailable(f"the classic baselines cannot be imported ({error})") from None
    return baselines


FAMILY = ClassicFamily()
