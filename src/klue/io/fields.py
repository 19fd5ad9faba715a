"""Typed reads of JSON objects that log every problem at its JSON path (`$[12].labels.real-label`).

Readers of JSON formats build records only from clean objects and keep going, so one pass reports every
problem of a file. Prediction lines use the same reads with `paths=False` (problems at the line).
"""

from __future__ import annotations

import builtins  # the methods str/bool/list shadow the builtins inside the class
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from klue.errors import ProblemLog
from klue.io.text import check_unique_guids, load_json

RecordT = TypeVar("RecordT")


def describe(value: Any) -> str:
    """A JSON value's kind for messages: "a string ('x')", "null", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def item_path(base: str, index: int) -> str:
    return f"{base}[{index}]"


class Fields:
    """Typed reads of one JSON object's fields.

    Every problem is logged at the field's JSON path (``$[12].labels.real-label``) and marks the object
    (and the objects it sits in) as bad, so a reader builds a record only from a clean object and keeps
    going. With `paths=False` (prediction lines) problems are logged at `location` itself and the
    message names the field.
    """

    def __init__(self, value: Any, location: str, log: ProblemLog, *, paths: bool = True,
                 parent: Fields | None = None, prefix: str = "") -> None:
        self.location = location
        self.log = log
        self.paths = paths
        self.parent = parent
        self.prefix = prefix  # message prefix, e.g. "guid-1: "
        self.ok = True
        self.is_object = isinstance(value, dict)
        if isinstance(value, dict):
            self.data: dict[str, Any] = value
        else:
            self.data = {}
            self.fail(location, f"expected a JSON object, found {describe(value)}")

    def at(self, key: str) -> str:
        return f"{self.location}.{key}" if self.paths else self.location

    def build(self, make: Callable[..., RecordT], *args: Any, **kwargs: Any) -> RecordT | None:
        """`make(*args, **kwargs)` when the object read clean, else None. The reads return None only where they
        failed (and marked the object), so a clean object's required values are all present: this is where a
        reader's `str | None` values become a record's `str` (the types are not checked through `make`)."""
        return make(*args, **kwargs) if self.ok else None

    def fail(self, location: str, message: str) -> None:
        self.log.error(location, self.prefix + message)
        node: Fields | None = self
        while node is not None:
            node.ok = False
            node = node.parent

    def has(self, key: str) -> bool:
        return key in self.data

    def _get(self, key: str, optional: bool) -> tuple[bool, Any]:
        if key not in self.data:
            if not optional and self.is_object:  # a non-object was reported once already
                self.fail(self.at(key), f"missing field `{key}`")
            return False, None
        return True, self.data[key]

    def _wrong(self, key: str, wanted: str, value: Any) -> None:
        self.fail(self.at(key), f"`{key}` must be {wanted}, found {describe(value)}")

    def str(self, key: str, *, optional: bool = False, nonempty: bool = False) -> str | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        if not isinstance(value, str):
            self._wrong(key, "a string", value)
            return None
        if nonempty and not value.strip():
            self.fail(self.at(key), f"`{key}` is empty")
            return None
        return value

    def int(self, key: builtins.str, *, optional: builtins.bool = False) -> int | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self._wrong(key, "an integer", value)
            return None
        return value

    def number(self, key: builtins.str, *, optional: builtins.bool = False) -> float | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            self._wrong(key, "a finite number", value)
            return None
        return float(value)

    def bool(self, key: builtins.str, *, optional: builtins.bool = False) -> builtins.bool | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        if not isinstance(value, bool):
            self._wrong(key, "true or false", value)
            return None
        return value

    def list(self, key: builtins.str, *, optional: builtins.bool = False) -> builtins.list[Any] | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        if not isinstance(value, list):
            self._wrong(key, "a list", value)
            return None
        return value

    def str_list(self, key: builtins.str, *, optional: builtins.bool = False) -> tuple[builtins.str, ...] | None:
        values = self.list(key, optional=optional)
        if values is None:
            return None
        bad = [i for i, v in enumerate(values) if not isinstance(v, str)]
        for i in bad:
            where = f"{self.at(key)}[{i}]" if self.paths else self.location
            self.fail(where, f"`{key}` must hold strings only, found {describe(values[i])}")
        return None if bad else tuple(values)

    def obj(self, key: builtins.str, *, optional: builtins.bool = False) -> Fields | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        return Fields(value, self.at(key), self.log, paths=self.paths, parent=self, prefix=self.prefix)

    def items(self, key: builtins.str, *, optional: builtins.bool = False,
              linked: builtins.bool = True) -> builtins.list[Fields] | None:
        """The objects of a list field, each with its own path (``$[3].answers[1]``). `linked`: a
        problem in an item marks this object bad too (off where each item is a record of its own)."""
        values = self.list(key, optional=optional)
        if values is None:
            return None
        parent = self if linked else None
        return [Fields(v, item_path(self.at(key), i), self.log, paths=self.paths, parent=parent, prefix=self.prefix)
                for i, v in enumerate(values)]

    def warn(self, message: builtins.str) -> None:
        """A warning at this object's place (prefixed like its errors)."""
        self.log.warning(self.location, self.prefix + message)

    def warn_unknown(self, known: frozenset[builtins.str] | set[builtins.str]) -> None:
        """Fields the official format does not have are not kept: say so once per object."""
        extra = sorted(k for k in self.data if k not in known)
        if extra:
            self.warn(f"unknown fields ignored: {', '.join(extra)}")


def load_json_list(path: Path, log: ProblemLog, what: str) -> list[Any] | None:
    """A JSON file whose top level is a non-empty list (of `what`), or None after logging why not."""
    data = load_json(path, log)
    if data is None:
        return None
    if not isinstance(data, list):
        log.error(location="$", message=f"expected a JSON list of {what}, found {describe(data)}")
        return None
    if not data:
        log.error(location="$", message=f"the file holds no {what} (an empty list)")
        return None
    return data


def read_json_objects(path: Path, log: ProblemLog, what: str,
                      build: Callable[[Fields], RecordT | None]) -> list[RecordT]:
    """The records of a JSON file holding a non-empty list of objects (of `what`): `build` makes one from
    each object's `Fields` at `$[i]`, or None for a bad object (its problems logged); guids are unique."""
    items = load_json_list(path, log, what)
    if items is None:
        return []
    records = []
    for index, item in enumerate(items):
        record = build(Fields(item, item_path("$", index), log))
        if record is not None:
            records.append(record)
    check_unique_guids(guid_locations(items), log)
    return records


def guid_locations(items: Sequence[Any], key: str = "guid") -> list[tuple[str, str]]:
    """(guid, JSON path) of every list item that has a string guid, for `check_unique_guids`."""
    return [(item[key], f"$[{index}].{key}") for index, item in enumerate(items)
            if isinstance(item, dict) and isinstance(item.get(key), str)]


def prediction_fields(obj: Mapping[str, Any], log: ProblemLog, location: str) -> Fields | None:
    """The fields of one prediction object, with its guid checked and used as message prefix."""
    if not isinstance(obj, Mapping):
        log.error(location, f"a prediction must be a JSON object, found {describe(obj)}")
        return None
    guid = obj.get("guid")
    if not isinstance(guid, str) or not guid:
        log.error(location, f"`guid` must be a non-empty string, found {describe(guid)}")
        return None
    return Fields(dict(obj), location, log, paths=False, prefix=f"{guid}: ")
