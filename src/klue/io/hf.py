"""Column helpers for the Hugging Face `klue/klue` dataset (v1 content, its own label orders).

Task packages map rows onto their records with these; labels are always exchanged by NAME, never by index,
since the hub copy orders them differently from the official files.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from klue.errors import ProblemLog


def label_names(dataset: Any, column: str) -> list[str] | None:
    """The names of a ClassLabel column, or None when the column holds plain values."""
    feature = getattr(dataset, "features", {}).get(column)
    names = getattr(feature, "names", None)
    return list(names) if names is not None else None


def by_name(value: Any, names: list[str] | None, allowed: Iterable[str], location: str,
             log: ProblemLog) -> str | None:
    """A label given as a ClassLabel index (mapped through its names) or as a name, checked by name."""
    allowed = tuple(allowed)
    if names is not None and isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < len(names):
            log.error(location, f"label index {value} is outside the dataset's {len(names)} label names "
                      "(-1 marks an unlabelled split)")
            return None
        value = names[value]
    if not isinstance(value, str) or value not in allowed:
        log.error(location, f"unknown label {value!r}; labels are {', '.join(allowed)}")
        return None
    return value


def rows(dataset: Any) -> Iterable[tuple[int, dict[str, Any]]]:
    return enumerate(dataset)


def as_rows(value: Any) -> Any:
    """A `datasets.Sequence` of structs comes back as a dict of equal-length lists; turn it into a list of
    dicts (a value already in that shape, or anything else, is returned as it is)."""
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        lengths = {len(v) for v in value.values()}
        if len(lengths) == 1:
            n = lengths.pop()
            return [{key: column[i] for key, column in value.items()} for i in range(n)]
    return value


def as_columns(value: Any, keys: Sequence[str]) -> Any:
    """The inverse of `as_rows`, for a list of struct rows: a dict of lists over `keys`."""
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return {key: [v.get(key) for v in value] for key in keys}
    return value
