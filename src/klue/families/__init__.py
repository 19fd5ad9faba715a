"""Model families, one module each (klue.families.base says what a family declares): the registry that
`klue train`, `klue llm`, `klue benchmark` and the benchmark's cells ask which family a model spec is.

Adding a family is its module (a `ModelFamily` subclass and its options dataclass, `FAMILY = ...`) and one
line in `FAMILIES`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from klue.families import classic, embedding, encoder, llm
from klue.families.base import ModelFamily, ModelFamilyUnavailable

if TYPE_CHECKING:
    from klue.tasks.base import Task

# Asked in this order; each recognises its own specs (`classic`; a backend prefix such as `hf:`; `emb:`).
FAMILIES: tuple[ModelFamily[Any], ...] = (classic.FAMILY, embedding.FAMILY, llm.FAMILY)
# A spec no family above claims is an encoder's: a hub name or a local directory.
FALLBACK: ModelFamily[Any] = encoder.FAMILY

__all__ = ["FALLBACK", "FAMILIES", "ModelFamily", "ModelFamilyUnavailable", "check_specs", "family_of",
           "not_applicable", "uses_gpu"]


def family_of(model: str) -> ModelFamily[Any]:
    """The family whose spec `model` is (the fallback when none claims it)."""
    return next((family for family in FAMILIES if family.recognises(model)), FALLBACK)


def check_specs(models: Iterable[str]) -> None:
    """Each model's family checks its spec (`ModelFamily.check`): a DataError before any cell runs."""
    for model in models:
        family_of(model).check(model)


def uses_gpu(model: str) -> bool:
    return family_of(model).uses_gpu(model)


def not_applicable(task: Task[Any, Any], model: str) -> str | None:
    """Why `model`'s family does not apply to `task` (no cell is planned), or None when it does."""
    return family_of(model).not_applicable(task)
