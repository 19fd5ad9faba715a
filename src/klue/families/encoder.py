"""The encoder family: any Hugging Face encoder fine-tuned on the task (klue.training). It is the fallback:
a spec no other family claims is a hub name (klue/roberta-base) or a local directory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from klue.families.base import ModelFamily, ModelFamilyUnavailable
from klue.results import ENCODER, Results

if TYPE_CHECKING:
    from klue.scoring import RunRequest


@dataclass(frozen=True)
class EncoderOptions:
    """Training overrides: klue.training.recipes.Hyperparameters fields, `recipe` (a name or a YAML file) and
    `report_to` (trackers); the recipe checks them when the run starts."""

    overrides: Mapping[str, Any] = field(default_factory=dict)


class EncoderFamily(ModelFamily[EncoderOptions]):
    name = ENCODER
    command = "train"

    def recognises(self, model: str) -> bool:
        return True  # the fallback (klue.families.FALLBACK): asked after every other family

    def uses_gpu(self, model: str) -> bool:
        return True

    def options(self, values: Mapping[str, Any]) -> EncoderOptions:
        return EncoderOptions(dict(values))

    def run(self, request: RunRequest, options: EncoderOptions) -> Results:
        try:
            from klue.training import run
        except ImportError as error:
            raise ModelFamilyUnavailable(f"fine-tuning is not available ({error}); install klue[train]") from None
        return run(request, dict(options.overrides))


FAMILY = EncoderFamily()
