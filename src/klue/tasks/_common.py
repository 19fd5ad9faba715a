"""Pieces the JSON task modules share: typed field access that logs JSON paths, prediction alignment,
and local protocols that split one file by a stable group hash.

Private to `klue.tasks` (the registry skips modules whose name starts with `_`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from klue.data.formats import load_json
from klue.errors import DataError, Problem, ProblemLog
from klue.tasks.base import DataRoots, DataSource, ProtocolData

Reader = Callable[[Path, ProblemLog], list[Any]]


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

    def int(self, key: str, *, optional: bool = False) -> int | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self._wrong(key, "an integer", value)
            return None
        return value

    def number(self, key: str, *, optional: bool = False) -> float | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            self._wrong(key, "a finite number", value)
            return None
        return float(value)

    def bool(self, key: str, *, optional: bool = False) -> bool | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        if not isinstance(value, bool):
            self._wrong(key, "true or false", value)
            return None
        return value

    def list(self, key: str, *, optional: bool = False) -> list[Any] | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        if not isinstance(value, list):
            self._wrong(key, "a list", value)
            return None
        return value

    def str_list(self, key: str, *, optional: bool = False) -> tuple[str, ...] | None:
        values = self.list(key, optional=optional)
        if values is None:
            return None
        bad = [i for i, v in enumerate(values) if not isinstance(v, str)]
        for i in bad:
            where = f"{self.at(key)}[{i}]" if self.paths else self.location
            self.fail(where, f"`{key}` must hold strings only, found {describe(values[i])}")
        return None if bad else tuple(values)

    def obj(self, key: str, *, optional: bool = False) -> Fields | None:
        present, value = self._get(key, optional)
        if not present:
            return None
        return Fields(value, self.at(key), self.log, paths=self.paths, parent=self, prefix=self.prefix)

    def items(self, key: str, *, optional: bool = False, linked: bool = True) -> list[Fields] | None:
        """The objects of a list field, each with its own path (``$[3].answers[1]``). `linked`: a
        problem in an item marks this object bad too (off where each item is a record of its own)."""
        values = self.list(key, optional=optional)
        if values is None:
            return None
        parent = self if linked else None
        return [Fields(v, item_path(self.at(key), i), self.log, paths=self.paths, parent=parent, prefix=self.prefix)
                for i, v in enumerate(values)]

    def warn_unknown(self, known: frozenset[str] | set[str]) -> None:
        """Fields the official format does not have are not kept: say so once per object."""
        extra = sorted(k for k in self.data if k not in known)
        if extra:
            self.log.warning(self.location, self.prefix + f"unknown fields ignored: {', '.join(extra)}")


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


def check_aligned(task: str, gold_guids: Sequence[str], pred_guids: Sequence[str]) -> None:
    """Predictions must come in gold order, one per gold example; DataError listing each mismatch."""
    if len(gold_guids) != len(pred_guids):
        raise DataError(f"{task}: {len(gold_guids)} gold examples but {len(pred_guids)} predictions")
    problems = [Problem("predictions", f"position {i}", f"expected guid {g!r}, found {p!r}")
                for i, (g, p) in enumerate(zip(gold_guids, pred_guids)) if g != p]
    if problems:
        raise DataError(problems)


def read_relative(path: Path, name: str) -> Path | None:
    """A resource file that sits next to a data file (`relation_list.json`, `ontology.json`), if any."""
    candidate = path.parent / name
    return candidate if candidate.is_file() else None


@dataclass(frozen=True)
class ExtraTrain:
    """A whole file added to the training side of a hash-split protocol (e.g. KorNLI beside KLUE dev)."""

    ref: Any  # klue.data.protocols.FileRef
    reader: Reader
    what: str  # "KorNLI's XNLI dev set"
    note: str = ""  # "machine-translated, not KLUE"


@dataclass(frozen=True)
class HashSplitProtocol:
    """A local protocol: one file split by a stable hash of the group key (`train_fraction` to train,
    the rest to evaluate), optionally with whole extra files added to train. Checkpoints are selected on
    `eval` (selection None). Never official."""

    name: str
    split: Any  # klue.data.protocols.FileRef of the file to split
    reader: Reader
    group_key: Callable[[Any], str]
    group: str  # what the group key is, for the description: "premise", "context", "guid"
    what: str  # the split file, for the description: "the official KLUE NLI v1.1 dev file"
    unit: str  # "pairs", "questions", ...
    train_fraction: float = 0.8
    extra_train: tuple[ExtraTrain, ...] = ()

    def refs(self) -> list[Any]:
        return [self.split, *(extra.ref for extra in self.extra_train)]

    def missing(self, roots: DataRoots) -> list[Any]:
        return [ref for ref in self.refs() if not ref.exists(roots)]

    def __call__(self, roots: DataRoots) -> ProtocolData[Any]:
        from klue.data import protocols
        from klue.data.splits import split_by_key

        absent = self.missing(roots)
        if absent:
            hints = [f"{ref.where(roots)} is missing (" + (protocols.how_to_get_extra() if ref.root == "extra" else
                     "run `klue data download`, or point --data-dir / KLUE_DATA_DIR at the official layout") + ")"
                     for ref in absent]
            raise DataError(f"protocol {self.name!r} cannot run here: " + "; ".join(hints), absent[0].where(roots))
        split_path = self.split.locate(roots)
        records = protocols.read_checked(self.reader, split_path)
        train, evaluation = split_by_key(records, self.group_key, self.train_fraction)
        pct = round(self.train_fraction * 100)
        root = _root_path(self.split, roots)
        sources: list[DataSource] = [
            protocols.source(split_path, len(train), f"train ({pct}% by {self.group} hash)", root),
            protocols.source(split_path, len(evaluation), f"eval ({100 - pct}% by {self.group} hash)", root),
        ]
        added = []
        for extra in self.extra_train:
            extra_path = extra.ref.locate(roots)
            extra_records = protocols.read_checked(extra.reader, extra_path)
            train.extend(extra_records)
            sources.append(protocols.source(extra_path, len(extra_records), "train (whole file)",
                                            _root_path(extra.ref, roots)))
            note = f"; {extra.note}" if extra.note else ""
            added.append(f"{extra.what} ({len(extra_records):,} {self.unit}{note})")
        plus = f" plus {' and '.join(added)}" if added else ""
        description = (f"local protocol, not official: trained on {pct}% of {self.what} "
                       f"({len(train) - sum(s.n_examples for s in sources[2:]):,} {self.unit}, split by a "
                       f"stable hash of the {self.group}){plus} and evaluated on the other {100 - pct}% "
                       f"({len(evaluation):,} {self.unit}); no {self.group} straddles the split")
        return ProtocolData(self.name, False, description, train, evaluation, None, tuple(sources))


def _root_path(ref: Any, roots: DataRoots) -> Path | None:
    return roots.klue if ref.root == "klue" else roots.extra
