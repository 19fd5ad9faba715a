"""Hugging Face `datasets` plumbing: the `klue/klue` hub copy, local copies, and the column helpers the
task packages map rows with.

The hub copy (`HF_DATASET` at `HF_REVISION`, v1 content) orders labels differently from the official
files, so labels are always exchanged by NAME, never by index: readers map a ClassLabel index through the
dataset's own label names. A task declares its layout (`HfLayout`: the columns it writes, in the
klue/klue shape plus the official fields the hub copy lacks, and the functions between rows and records)
in its records module; the feature spec here is plain Python so that module need not import `datasets`.

`datasets` is an optional extra (`klue[hf]`); everything that needs it imports it lazily and says in
one sentence how to install it when it is absent.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, Protocol, TypeVar

from klue.errors import DataError, ProblemLog
from klue.io.atomic import write_dir_atomic
from klue.io.fields import Fields, item_path
from klue.io.formats import ReadPurpose, SavedPath, is_saved_dir
from klue.io.release import FileRole
from klue.io.text import check_unique_guids

HF_DATASET = "klue/klue"
# The hub revision every `from_hf` reader was written against ("Convert dataset to Parquet (#2)",
# docs/tasks.md); pinned so a later push to the hub cannot change what a run reads.
HF_REVISION = "349481ec73fff722f88e0453ca05c77a447d967c"
INSTALL_HINT = "pip install 'klue[hf]'"
# Official file role -> the split name the hub copy (and an export) uses for it.
SPLIT_OF_ROLE: Mapping[FileRole, str] = {"train": "train", "dev": "validation"}
VALUE_TYPES = frozenset({"string", "int32", "int64", "float64", "bool"})

RecordT = TypeVar("RecordT")


# ------------------------------------------------------------------------------------ layouts


class RowReader(Protocol[RecordT]):
    """A task's reader of `datasets` rows: as a file's reader (`klue.tasks.base.Reader`), every problem to
    `log` at its row (`$[12].label`), the records it could build back, and why the rows are read."""

    def __call__(self, dataset: Any, log: ProblemLog, purpose: ReadPurpose = "validate", /) -> list[RecordT]: ...


@dataclass(frozen=True)
class Labels:
    """A ClassLabel column in a feature spec: `names` in the order the written copy stores them."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class HfLayout(Generic[RecordT]):
    """How a task's records are written as, and read back from, `datasets` rows.

    `features` maps each column to a spec: a `datasets.Value` dtype name ("string", "int32", ...), a
    `Labels`, a one-item list (a list of that spec) or a dict (a struct). `to_rows` turns records into
    rows in that layout; `from_rows(dataset, log, purpose)` reads rows back, the hub copy's as well (whose
    extra columns are absent), logging every problem at its row (`$[12].label`).
    """

    features: Mapping[str, Any]
    to_rows: Callable[[Sequence[RecordT]], list[dict[str, Any]]]
    from_rows: RowReader[RecordT]


def require_datasets() -> ModuleType:
    """The `datasets` module, or a DataError saying how to install it."""
    try:
        return importlib.import_module("datasets")
    except ImportError:
        raise DataError(f"reading or writing Hugging Face copies needs the optional `datasets` package: "
                        f"{INSTALL_HINT}") from None


def features(spec: Mapping[str, Any]) -> Any:
    """The `datasets.Features` of a layout's feature spec."""
    datasets = require_datasets()

    def build(item: Any) -> Any:
        if isinstance(item, Labels):
            return datasets.ClassLabel(names=list(item.names))
        if isinstance(item, str):
            if item not in VALUE_TYPES:
                raise ValueError(f"unknown value type {item!r} in a feature spec ({', '.join(sorted(VALUE_TYPES))})")
            return datasets.Value(item)
        if isinstance(item, list) and len(item) == 1:
            return datasets.List(build(item[0]))
        if isinstance(item, Mapping):
            return {key: build(value) for key, value in item.items()}
        raise ValueError(f"a feature spec is a type name, Labels, [spec] or a mapping, not {item!r}")

    return datasets.Features({column: build(item) for column, item in spec.items()})


def dataset_from_rows(rows: list[dict[str, Any]], spec: Mapping[str, Any], description: str = "") -> Any:
    """A `datasets.Dataset` of `rows` with the layout's features (label names encoded as indices)."""
    datasets = require_datasets()
    typed = features(spec)
    info = datasets.DatasetInfo(description=description, features=typed)
    return datasets.Dataset.from_list(rows, features=typed, info=info)


@contextlib.contextmanager
def quiet(datasets: ModuleType) -> Iterator[None]:
    """No progress bars or retry chatter from `datasets` and the hub client while the block runs (the CLI
    reports what matters in its own words); the previous settings come back afterwards."""
    logging = datasets.utils.logging
    verbosity = logging.get_verbosity()
    bars = datasets.utils.are_progress_bars_disabled()
    hub_logging = None
    with contextlib.suppress(ImportError):
        hub_logging = importlib.import_module("huggingface_hub.utils.logging")
    hub_verbosity = hub_logging.get_verbosity() if hub_logging is not None else None
    logging.set_verbosity_error()
    datasets.disable_progress_bars()
    if hub_logging is not None:
        hub_logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)
        if not bars:
            datasets.enable_progress_bars()
        if hub_logging is not None and hub_verbosity is not None:
            hub_logging.set_verbosity(hub_verbosity)


# ------------------------------------------------------------------------------------ loading


def _unreachable(error: BaseException) -> bool:
    """Whether a load failed for want of the hub and of a cached copy (not, say, a bad config name)."""
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & {"ConnectionError", "OfflineModeIsEnabled", "LocalEntryNotFoundError",
                         "DatasetNotFoundError", "HfHubHTTPError", "Timeout"})


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def load_hub(config: str, revision: str = HF_REVISION, repo: str = HF_DATASET,
             cache_dir: Path | None = None) -> Any:
    """The `DatasetDict` of one `klue/klue` configuration at `revision`, through `datasets.load_dataset`
    (so its cache and HF_DATASETS_OFFLINE=1 work); a one-sentence DataError when it cannot be had.

    `repo` may also be a local directory holding a copy of the hub repository.
    """
    datasets = require_datasets()
    where = f"{repo} ({config}, revision {revision[:12]})"
    try:
        with quiet(datasets):
            return datasets.load_dataset(repo, config, revision=revision,
                                         cache_dir=str(cache_dir) if cache_dir is not None else None)
    except Exception as error:  # noqa: BLE001 - datasets and the hub client raise many kinds; one line is told
        if _unreachable(error):
            raise DataError(f"cannot load {where}: the Hugging Face hub cannot be reached and no cached copy "
                            f"of this revision was found ({_first_line(error)}); connect once, or pass local "
                            "files with --train/--eval") from None
        raise DataError(f"cannot load {where}: {_first_line(error)}") from None


def hub_split(dataset_dict: Any, split: str, where: str) -> Any:
    """One split of a loaded DatasetDict, or a DataError naming the splits it has."""
    if split not in dataset_dict:
        raise DataError(f"{where} has no {split!r} split; its splits: {', '.join(dataset_dict)}")
    return dataset_dict[split]


def load_saved(saved: SavedPath) -> Any:
    """The Dataset a `save_to_disk` directory holds (`DIR:split` for one split of a DatasetDict)."""
    datasets = require_datasets()
    directory = saved.directory
    if not is_saved_dir(directory):
        raise DataError("not a `datasets` save_to_disk directory (no dataset_dict.json, state.json or "
                        "dataset_info.json in it)", directory)
    try:
        with quiet(datasets):
            loaded = datasets.load_from_disk(str(directory))
    except (OSError, ValueError, KeyError, TypeError) as error:  # damaged or foreign: what `datasets` said
        raise DataError(f"cannot read this `datasets` directory: {_first_line(error)}", directory) from None
    if isinstance(loaded, datasets.DatasetDict):
        splits = list(loaded)
        if saved.split is None:
            raise DataError(f"this directory holds a DatasetDict with the splits {', '.join(splits)}: name one, "
                            f"e.g. {directory}:{splits[0]}", directory)
        if saved.split not in loaded:
            raise DataError(f"no split {saved.split!r} here; the splits are {', '.join(splits)}", directory)
        return with_split(loaded[saved.split], saved.split)
    if saved.split is not None:
        raise DataError(f"this directory holds a single Dataset, not a DatasetDict with a {saved.split!r} "
                        f"split: pass {directory} without `:{saved.split}`", directory)
    return loaded


def load_parquet(path: Path) -> Any:
    """A parquet file as a Dataset; the features (ClassLabel names) come from the file's `datasets`
    metadata when it has some, else from its Arrow types."""
    datasets = require_datasets()
    parquet = importlib.import_module("pyarrow.parquet")
    if not path.is_file():
        raise DataError("no such file" if not path.exists() else "is not a file (the parquet format reads one "
                        "parquet file)", path)
    try:
        table = parquet.read_table(str(path))
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError: not a parquet file
        raise DataError(f"cannot read this parquet file: {_first_line(error)}", path) from None
    return datasets.Dataset(table)


def with_split(dataset: Any, split: str) -> Any:
    """The same rows with their split's name attached (a reader names rows without a guid by it)."""
    datasets = require_datasets()
    return datasets.Dataset(dataset.data, info=dataset.info, split=datasets.NamedSplit(split))


def write_dataset_dict(out: Path, splits: Mapping[str, Any]) -> None:
    """`DatasetDict(splits).save_to_disk(out)`, atomically: a reader sees the old directory or the new one.

    An existing `out` is replaced only when it is an earlier `datasets` directory or empty, never a
    directory of other files.
    """
    datasets = require_datasets()
    if out.exists() and not (is_saved_dir(out) or (out.is_dir() and not any(out.iterdir()))):
        raise DataError("exists and is not a `datasets` directory; choose a new --out (nothing was written)", out)

    def fill(tmp: Path) -> None:
        with quiet(datasets):
            datasets.DatasetDict(dict(splits)).save_to_disk(str(tmp))

    write_dir_atomic(out, fill)


# ------------------------------------------------------------------------------------ rows


def _feature(dataset: Any, column: str) -> Any:
    """The feature of a column, `a.b` for a field of a struct column."""
    feature: Any = getattr(dataset, "features", None) or {}
    for part in column.split("."):
        if not isinstance(feature, Mapping) or part not in feature:
            return None
        feature = feature[part]
    return feature


def label_names(dataset: Any, column: str) -> list[str] | None:
    """The names of a ClassLabel column (or of the ClassLabel inside a list column, or of a struct's field
    `a.b`), or None when the column holds plain values."""
    feature = _feature(dataset, column)
    feature = getattr(feature, "feature", feature)  # List(ClassLabel) / Sequence(ClassLabel)
    names = getattr(feature, "names", None)
    return list(names) if names is not None else None


def by_name(value: Any, names: list[str] | None, allowed: Iterable[str], location: str,
            log: ProblemLog) -> str | None:
    """A label given as a ClassLabel index (mapped through its names) or as a name, checked by name."""
    allowed = tuple(allowed)
    if isinstance(value, int) and not isinstance(value, bool):
        if names is None:
            log.error(location, f"label {value} is an index but the data carries no label names; copies order "
                      "labels differently, so store names (or a ClassLabel column) instead")
            return None
        if not 0 <= value < len(names):
            log.error(location, f"label index {value} is outside the dataset's {len(names)} label names "
                      "(-1 marks an unlabelled split)")
            return None
        value = names[value]
    if not isinstance(value, str) or value not in allowed:
        log.error(location, f"unknown label {value!r}; labels are {', '.join(allowed)}")
        return None
    return value


def nullable_str(fields: Fields, key: str) -> str | None:
    """An optional text column: None when absent or null (Arrow stores a missing value as null), else
    checked as a string."""
    return None if fields.data.get(key) is None else fields.str(key)


def rows(dataset: Any) -> Iterable[tuple[int, dict[str, Any]]]:
    """(index, row) of a Dataset (converted in one go through Arrow) or of any iterable of rows."""
    to_list = getattr(dataset, "to_list", None)
    return enumerate(to_list() if callable(to_list) else dataset)


def columns(dataset: Any) -> set[str]:
    """The column names of a Dataset (or of the first row of a list of rows)."""
    names = getattr(dataset, "column_names", None)
    if names is not None:
        return set(names)
    first = next(iter(dataset), None)
    return set(first) if isinstance(first, dict) else set()


def row_guid(dataset: Any, index: int, prefix: str) -> str:
    """A stable guid for a row of a copy that has none (the hub's NER and DP rows):
    `<prefix>_<split>_<index>`, e.g. `klue-ner-v1_validation_00012`."""
    split = getattr(dataset, "split", None)
    return f"{prefix}_{split if split is not None else 'rows'}_{index:05d}"


def records_from_named_rows(dataset: Any, log: ProblemLog, prefix: str,
                            build: Callable[[str | None, Fields], RecordT | None]) -> list[RecordT]:
    """The records of a copy whose rows may carry no guid (the hub's NER and DP rows), as
    `klue.io.fields.read_json_objects` makes them from a JSON list: `build` makes one from each row's
    guid and its `Fields` at `$[i]`, or None for a bad row (its problems logged). The guid is an export's
    `guid` column (checked), else `row_guid(dataset, index, prefix)`; the records' guids are unique."""
    records: list[RecordT] = []
    guids: list[tuple[str, str]] = []
    for index, row in rows(dataset):
        fields = Fields(row, item_path("$", index), log)
        has_guid = fields.data.get("guid") is not None
        guid = fields.str("guid", nonempty=True) if has_guid else row_guid(dataset, index, prefix)
        record = build(guid, fields)
        if record is not None and guid is not None:
            records.append(record)
            guids.append((guid, fields.at("guid")))
    check_unique_guids(guids, log)
    return records


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
