"""The declaration every KLUE task makes once, in its own package under `klue.tasks`.

A task package holds two halves of one declaration (docs/architecture.md, "How to add a task"):

- `task.yaml`, the facts: name, aliases, title, order, version, the official files and their hashes, the
  official sizes, the official metric names, the paper's reference scores, the fine-tuning recipe per model
  size, its named local protocols, license and citation. `declare` reads and checks it.
- `__init__.py`, the code: `TASK = declare(__name__, ...)` with the record and prediction types, the
  readers, the prediction glue, the official metric binding (`score`), and lazy references to the heavy
  parts (`adapter=".adapter:make_adapter"`, `baseline=".baseline:make_baseline"`), resolved against the
  package only when used, so `klue score` imports neither torch nor sklearn.

The registry (`klue.registry`) finds the packages and reads their `TASK`; nothing here imports it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from operator import attrgetter
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import yaml

from klue.errors import DataError, Problem, ProblemLog
from klue.io.formats import ReadPurpose
from klue.io.locate import FileRef, RootKind
from klue.io.release import ArchiveFile, FileRole, OfficialFile
from klue.metrics.report import MetricMode, MetricReport, MetricSpec
from klue.metrics.statistics import ExampleStatistics

RecordT = TypeVar("RecordT")
PredictionT = TypeVar("PredictionT")

OFFICIAL_READER = "official"  # the name under which protocols and `--gold-format` refer to `Task.read`
DECLARATION_FILE = "task.yaml"
DEFAULT_LOCAL_PROTOCOL = "local:dev-80-20"
# The paper's reference rows (`reference_scores` in task.yaml), by model: where the numbers come from.
REFERENCE_SOURCES: Mapping[str, str] = {
    "KLUE-RoBERTa-large": "KLUE paper (Park et al., arXiv:2105.09680), appendix A, dev sets",
}


class Reader(Protocol[RecordT]):
    """A task's reader of one format: every problem of the file goes to `log` with its line or JSON path,
    and the records it could build come back. `purpose` says why the file is read: "validate" (the
    default), "train" and "export" hold it to every rule of its format, "score" may let what the metric
    never reads pass as a warning, "predict" accepts examples without their gold fields."""

    def __call__(self, path: Path, log: ProblemLog, purpose: ReadPurpose = "validate", /) -> list[RecordT]: ...


class Baseline(Protocol):
    """A CPU baseline (`klue/tasks/<name>/baseline.py`): trains from scratch on a task's records and
    predicts in the task's prediction type. Deterministic for its seed, CPU only, at most 2 threads, no
    pretrained model, no download. May also define `attach_data(roots)`, called before `fit`, to read a
    task resource (the WoS ontology) from the data roots."""

    name: str  # short and stable, e.g. "char-crf": the results file's `recipe`
    hyperparameters: dict[str, Any]  # JSON-serialisable, copied into results.json

    def fit(self, train: list[Any], selection: list[Any] | None) -> None: ...

    def predict(self, records: list[Any]) -> list[Any]: ...


# ------------------------------------------------------------------------------------------ protocols


@dataclass(frozen=True)
class ExtraTrain:
    """A whole file added to the training side of a hash-split protocol (e.g. KorNLI beside KLUE dev)."""

    file: FileRef
    reader: str  # "official" or a key of the task's `other_readers`
    what: str  # "KorNLI's XNLI dev set"
    note: str = ""  # "machine-translated, not KLUE"


@dataclass(frozen=True)
class FileProtocol:
    """A local protocol of whole files: train on one, evaluate on another (checkpoints selected on eval,
    as the official recipe selects on dev). Never official. `klue.protocols` builds it."""

    name: str
    train: FileRef
    eval: FileRef
    reader: str
    description: str  # one sentence: what is trained and evaluated on, and that it is not official

    def refs(self) -> list[FileRef]:
        """The files it reads, each once (train and eval may be the same file)."""
        return list(dict.fromkeys([self.train, self.eval]))


@dataclass(frozen=True)
class HashSplitProtocol:
    """A local protocol: one file split by a stable hash of the task's group key (`train_fraction` to
    train, the rest to evaluate), optionally with whole extra files added to train. Never official."""

    name: str
    split: FileRef
    reader: str
    group: str  # what the group key is, for the description: "premise", "context", "guid"
    what: str  # the split file, for the description: "the official KLUE NLI v1.1 dev file"
    unit: str  # "pairs", "questions", ...
    train_fraction: float = 0.8
    extra_train: tuple[ExtraTrain, ...] = ()

    def refs(self) -> list[FileRef]:
        return [self.split, *(extra.file for extra in self.extra_train)]


ProtocolSpec = FileProtocol | HashSplitProtocol


@dataclass(frozen=True)
class Recipe:
    """A task's fine-tuning hyper-parameters (klue.training.recipes.Hyperparameters fields and
    `head.<name>` options): `base` for base-size models, `large` applied on top for large ones."""

    base: Mapping[str, Any] = field(default_factory=dict)
    large: Mapping[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------------- contamination


@dataclass(frozen=True)
class ExampleText:
    """An example's text as an overlap check reads it (docs/contamination.md): its input parts (what a model
    is shown) and its answer parts (what it must produce), each a separate text, since a corpus need not
    hold them side by side in the order the task's file does."""

    input: tuple[str, ...]
    answer: tuple[str, ...]


@dataclass(frozen=True)
class TextFields(Generic[RecordT]):
    """Which fields of a task's record are input and which are answer, for `klue contamination`: the names
    (as the task's files call them, for reports) and the function that gives a record's texts in that order."""

    input: tuple[str, ...]  # ("premise", "hypothesis")
    answer: tuple[str, ...]  # ("gold_label",)
    text: Callable[[RecordT], ExampleText]


# ------------------------------------------------------------------------------------------------ task


def prediction_json(prediction: Any) -> dict[str, Any]:
    """A prediction dataclass as its prediction-file object: every field in order, tuples as lists."""
    return {f.name: _plain(getattr(prediction, f.name)) for f in dataclasses.fields(prediction)}


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple | list) else value


def resolve_ref(package: str, ref: str) -> Any:
    """`".adapter:make_adapter"` (relative to `package`) or `"klue.x.y:name"` -> the object."""
    module_name, _, attr = ref.partition(":")
    if not attr:
        raise ValueError(f"a lazy reference is 'module:attribute', not {ref!r}")
    module = importlib.import_module(module_name, package if module_name.startswith(".") else None)
    return getattr(module, attr)


@dataclass(frozen=True)
class Task(Generic[RecordT, PredictionT]):
    """Everything the CLI, the scorer, the runner and the report need to know about one task.

    Readers (`Reader`) take a path, a `ProblemLog` and the purpose of the read; they record every problem
    they find (with line or JSON path) and return the records they could build. Commands read through
    `klue.tasks.reading.read`, which picks the reader and raises the problems.
    """

    # -- facts (task.yaml)
    name: str  # short name used everywhere: "nli"
    aliases: tuple[str, ...]  # other accepted spellings: ("klue-nli",)
    title: str  # "Natural Language Inference"
    label: str  # how tables write it: "NLI", "WoS"
    order: int  # position in the paper's task order (YNAT=1 ... WoS=8)
    version: str  # bump when the task's reading or scoring behaviour changes
    files: tuple[OfficialFile, ...]
    sizes: Mapping[str, int]  # official example counts per split (docs/tasks.md)
    metrics: tuple[str, ...]  # official metric names (docs/metrics.md); metrics[0] is the key metric
    main_metrics: tuple[str, ...]  # the ones averaged into the overall KLUE score
    reference_scores: Mapping[str, Mapping[str, float]]  # model -> metric -> published dev score
    recipe: Recipe
    protocols: Mapping[str, ProtocolSpec]  # task-specific named protocols; generic ones: klue.protocols
    default_local_protocol: str  # used by the benchmark when no train set is present
    license: str
    citation: str
    v1_archive: ArchiveFile | None
    hub_task: str  # the Hugging Face hub's task type of the task's `klue/klue` configuration (model cards)
    # -- code (__init__.py)
    package: str  # the task's package, against which the lazy references resolve
    labels: tuple[str, ...]  # label set in official order (empty where the task has none)
    metric_specs: Mapping[str, MetricSpec]  # every score the binding reports, official and extra
    record_type: type[RecordT]
    prediction_type: type[PredictionT]
    read: Reader[RecordT]  # official v1.1 format
    gold_prediction: Callable[[RecordT], PredictionT]  # the perfect prediction for a record
    parse_prediction: Callable[[Mapping[str, Any], ProblemLog, str], PredictionT | None]
    score: Callable[[Sequence[RecordT], Sequence[PredictionT], MetricMode], MetricReport]  # metric binding
    prediction_to_json: Callable[[PredictionT], dict[str, Any]] = prediction_json
    # per-example statistics of `score`'s metrics (docs/statistics.md), aligned like `score`'s arguments
    statistics: Callable[[Sequence[RecordT], Sequence[PredictionT], MetricMode], ExampleStatistics] | None = None
    guid: Callable[[RecordT], str] = attrgetter("guid")  # the guid a prediction must carry
    group_key: Callable[[RecordT], str] = attrgetter("guid")  # records sharing a key stay on one side
    other_readers: Mapping[str, Reader[RecordT]] = field(default_factory=dict)
    # The file extensions each of `other_readers` reads (the official reader's are its files'): a file's
    # extension chooses among the readers of that extension (`klue.tasks.reading.infer_format`).
    reader_suffixes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    read_resource: Callable[[Path, ProblemLog], Any] | None = None  # checks the "resource" file
    # lazy: the task's `klue.io.hf.HfLayout` (the columns of its Hugging Face copy, both directions), by
    # convention `HF_LAYOUT` in its records module; a task without one has no export (`hf_layout()` None)
    hf: str | None = ".records:HF_LAYOUT"
    adapter: str | None = None  # lazy: "module:factory" of the fine-tuning adapter (torch)
    baseline: str | None = None  # lazy: "module:factory(seed)" of the CPU baseline (sklearn, crfsuite)
    # lazy: "module:factory" of the task's prompts for LLMs (klue.tasks.prompting.TaskPrompts)
    prompts: str | None = ".prompts:make_prompts"
    # lazy: "module:attribute" of how sentence-embedding models meet the task (klue.tasks.embedding); a task
    # without one says why in `no_embedding` (one sentence: `klue embed` refuses it and the report shows it)
    embedding: str | None = None
    no_embedding: str | None = None
    # which fields are the input and which the answer, for overlap checks (klue.contamination)
    text_fields: TextFields[RecordT] | None = None

    def example_text(self, record: RecordT) -> ExampleText:
        """The input and answer texts of `record` (its `text_fields`); DataError when the task declares none."""
        if self.text_fields is None:
            raise DataError(f"task {self.name!r} declares no input and answer fields (text_fields)")
        return self.text_fields.text(record)

    def file(self, role: FileRole) -> OfficialFile | None:
        return next((f for f in self.files if f.role == role), None)

    @property
    def key_metric(self) -> str:
        return self.metrics[0]

    def metric_spec(self, name: str) -> MetricSpec:
        if name not in self.metric_specs:
            raise DataError(f"{self.name} reports no metric {name!r}; its metrics: {', '.join(self.metric_specs)}")
        return self.metric_specs[name]

    def reader(self, name: str | None, what: str = "format") -> Reader[RecordT]:
        """The official reader (`None` or "official") or one of `other_readers`; DataError naming them
        (`what` says which option named it: "gold format", ...)."""
        if name is None or name == OFFICIAL_READER:
            return self.read
        if name not in self.other_readers:
            known = ", ".join([OFFICIAL_READER, *self.other_readers])
            raise DataError(f"unknown {what} {name!r} for {self.name}; formats: {known}")
        return self.other_readers[name]

    def evaluate(self, golds: Sequence[RecordT], preds: Sequence[PredictionT], mode: MetricMode) -> MetricReport:
        """The official metrics of predictions aligned with `golds` (same order, same guids)."""
        check_aligned(self.name, [self.guid(g) for g in golds], [getattr(p, "guid", None) for p in preds])
        return self.score(golds, preds, mode)

    def example_statistics(self, golds: Sequence[RecordT], preds: Sequence[PredictionT], mode: MetricMode) -> (
            ExampleStatistics):
        """Per-example statistics of the metrics of `evaluate` (one row per gold record, in order), from
        which each metric of any resample of the examples is a sum away; DataError when the task has none."""
        if self.statistics is None:
            raise DataError(f"task {self.name!r} declares no per-example statistics")
        check_aligned(self.name, [self.guid(g) for g in golds], [getattr(p, "guid", None) for p in preds])
        return self.statistics(golds, preds, mode)

    def hf_layout(self) -> Any:
        """The task's `klue.io.hf.HfLayout`, or None when its package declares none."""
        if self.hf is None:
            return None
        module_name, _, attr = self.hf.partition(":")
        module = importlib.import_module(module_name, self.package if module_name.startswith(".") else None)
        return getattr(module, attr, None)

    def make_adapter(self) -> Any:
        """The fine-tuning adapter (imports torch); DataError when the task has none."""
        if self.adapter is None:
            raise DataError(f"task {self.name!r} has no fine-tuning adapter")
        return resolve_ref(self.package, self.adapter)(self)

    def make_prompts(self, roots: Any = None) -> Any:
        """The task's `klue.tasks.prompting.TaskPrompts`, made by `make_prompts(roots)` (the data roots, for
        a task whose prompts need a resource file: the WoS ontology); DataError when the task has none."""
        if self.prompts is None:
            raise DataError(f"task {self.name!r} has no LLM prompts")
        try:
            return resolve_ref(self.package, self.prompts)(roots)
        except ModuleNotFoundError as error:
            if error.name and error.name.endswith(".prompts"):
                raise DataError(f"task {self.name!r} has no LLM prompts yet ({self.package}.prompts)") from None
            raise

    def make_embedding(self) -> Any:
        """The task's `klue.tasks.embedding.EmbeddingUse`; DataError with the task's reason when it has none."""
        if self.embedding is None:
            why = self.no_embedding or "its declaration names no `embedding`"
            raise DataError(f"task {self.name!r} does not apply to sentence-embedding models: {why}")
        return resolve_ref(self.package, self.embedding)

    def make_baseline(self, seed: int) -> Baseline:
        """The CPU baseline for `seed`; DataError when the task has none."""
        if self.baseline is None:
            raise DataError(f"task {self.name!r} has no CPU baseline")
        return resolve_ref(self.package, self.baseline)(seed)


def check_aligned(task: str, gold_guids: Sequence[str], pred_guids: Sequence[str | None]) -> None:
    """Predictions must come in gold order, one per gold example; DataError listing each mismatch."""
    if len(gold_guids) != len(pred_guids):
        raise DataError(f"{task}: {len(gold_guids)} gold examples but {len(pred_guids)} predictions")
    problems = [Problem("predictions", f"position {i}", f"expected guid {g!r}, found {p!r}")
                for i, (g, p) in enumerate(zip(gold_guids, pred_guids)) if g != p]
    if problems:
        raise DataError(problems)


# ------------------------------------------------------------------------------------------ task.yaml

_REQUIRED = ("name", "aliases", "title", "order", "version", "files", "sizes", "metrics", "main_metrics")
_OPTIONAL = ("label", "reference_scores", "recipe", "protocols", "default_local_protocol", "license",
             "citation", "v1_archive", "hub_task")
_DEFAULTS: Mapping[str, Any] = {
    "license": "CC BY-SA 4.0",
    "citation": "Park et al., KLUE: Korean Language Understanding Evaluation, arXiv:2105.09680",
    "default_local_protocol": DEFAULT_LOCAL_PROTOCOL,
    "hub_task": "other",  # the hub's own word for a task type it does not name
}


def declare(package: str, **code: Any) -> Task[Any, Any]:
    """The task of `package`: the facts of its `task.yaml` (checked) and the code given here."""
    return Task(**declaration(package), package=package, **code)


def declaration(package: str) -> dict[str, Any]:
    """The Task fields the `task.yaml` of `package` declares (checked), for `declare` and for a task kind
    whose code needs a fact (the task's name in its metric reports)."""
    path = resources.files(package) / DECLARATION_FILE
    return read_declaration(path.read_text(encoding="utf-8"), f"{package}/{DECLARATION_FILE}")


def read_declaration(text: str, where: str) -> dict[str, Any]:
    """The Task fields a task.yaml declares; DataError naming the file and field for anything wrong."""
    try:
        raw = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        raise DataError(f"invalid YAML: {error}", where) from None
    if not isinstance(raw, dict):
        raise DataError("a task declaration is a YAML mapping", where)
    missing = [k for k in _REQUIRED if k not in raw]
    unknown = sorted(set(raw) - set(_REQUIRED) - set(_OPTIONAL))
    if missing or unknown:
        raise DataError(f"task declaration: missing {missing}, unknown {unknown}", where)
    try:
        return _fields(raw)
    except (KeyError, TypeError, ValueError) as error:
        raise DataError(f"task declaration {raw.get('name')!r}: {error}", where) from None


_FILE_KEYS = ({"role", "path", "git_blob"}, {"size"})  # (required, optional)
_ARCHIVE_KEYS: tuple[set[str], set[str]] = ({"url", "sha256", "size"}, set())
_FILE_PROTOCOL_KEYS = ({"name", "train", "eval", "description"}, {"reader"})
_SPLIT_PROTOCOL_KEYS = ({"name", "split", "group", "what", "unit"}, {"reader", "train_fraction", "extra_train"})
_EXTRA_TRAIN_KEYS = ({"file", "what"}, {"reader", "note"})
_ROLES = ("train", "dev", "resource")


def _check_keys(entry: Any, keys: tuple[set[str], set[str]], what: str) -> None:
    if not isinstance(entry, dict):
        raise TypeError(f"{what} must be a mapping, not {entry!r}")
    required, optional = keys
    missing, unknown = sorted(required - set(entry)), sorted(set(entry) - required - optional)
    if missing or unknown:
        raise ValueError(f"{what}: missing {missing}, unknown {unknown}")


def _check_nested(raw: dict[str, Any]) -> None:
    """The entries inside the top-level keys: files, the v1 archive, protocols and their extra files."""
    for i, entry in enumerate(raw["files"]):
        _check_keys(entry, _FILE_KEYS, f"files[{i}]")
        if entry["role"] not in _ROLES:
            raise ValueError(f"files[{i}].role {entry['role']!r} is not one of {', '.join(_ROLES)}")
    if raw.get("v1_archive"):
        _check_keys(raw["v1_archive"], _ARCHIVE_KEYS, "v1_archive")
    for i, entry in enumerate(raw.get("protocols") or ()):
        split = isinstance(entry, dict) and "split" in entry
        _check_keys(entry, _SPLIT_PROTOCOL_KEYS if split else _FILE_PROTOCOL_KEYS, f"protocols[{i}]")
        for j, extra in enumerate(entry.get("extra_train") or ()):
            _check_keys(extra, _EXTRA_TRAIN_KEYS, f"protocols[{i}].extra_train[{j}]")
    for model, scores in (raw.get("reference_scores") or {}).items():
        if not isinstance(scores, dict):
            raise TypeError(f"reference_scores.{model} must map metric names to scores")


def _fields(raw: dict[str, Any]) -> dict[str, Any]:
    _check_nested(raw)
    values = {**_DEFAULTS, **raw}
    protocols = tuple(_protocol(p) for p in raw.get("protocols") or ())
    archive = raw.get("v1_archive")
    recipe = raw.get("recipe") or {}
    if set(recipe) - {"base", "large"}:
        raise ValueError(f"recipe takes `base` and `large`, not {sorted(set(recipe) - {'base', 'large'})}")
    return {
        "name": str(values["name"]),
        "aliases": tuple(str(a) for a in values["aliases"]),
        "title": str(values["title"]),
        "label": str(values.get("label") or str(values["name"]).upper()),
        "order": int(values["order"]),
        "version": str(values["version"]),
        "files": tuple(OfficialFile(f["role"], f["path"], f["git_blob"], f.get("size")) for f in values["files"]),
        "sizes": {str(k): int(v) for k, v in values["sizes"].items()},
        "metrics": tuple(values["metrics"]),
        "main_metrics": tuple(values["main_metrics"]),
        "reference_scores": {str(m): {str(k): float(v) for k, v in s.items()}
                             for m, s in (values.get("reference_scores") or {}).items()},
        "recipe": Recipe(dict(recipe.get("base") or {}), dict(recipe.get("large") or {})),
        "protocols": {p.name: p for p in protocols},
        "default_local_protocol": str(values["default_local_protocol"]),
        "license": str(values["license"]),
        "citation": str(values["citation"]),
        "v1_archive": ArchiveFile(archive["url"], archive["sha256"], int(archive["size"])) if archive else None,
        "hub_task": str(values["hub_task"]),
    }


def _ref(text: str) -> FileRef:
    """`klue:<path under the official root>` or `extra:<path under the extra data directory>`."""
    root, sep, path = str(text).partition(":")
    if not sep or root not in ("klue", "extra") or not path:
        raise ValueError(f"a data file is 'klue:<path>' or 'extra:<path>', not {text!r}")
    kind: RootKind = "klue" if root == "klue" else "extra"
    return FileRef(kind, path)


def _protocol(raw: Mapping[str, Any]) -> ProtocolSpec:
    reader = str(raw.get("reader", OFFICIAL_READER))
    if "split" in raw:
        extras = tuple(ExtraTrain(_ref(e["file"]), str(e.get("reader", OFFICIAL_READER)), str(e["what"]),
                                  str(e.get("note", ""))) for e in raw.get("extra_train") or ())
        return HashSplitProtocol(str(raw["name"]), _ref(raw["split"]), reader, str(raw["group"]), str(raw["what"]),
                                 str(raw["unit"]), float(raw.get("train_fraction", 0.8)), extras)
    return FileProtocol(str(raw["name"]), _ref(raw["train"]), _ref(raw["eval"]), reader, str(raw["description"]))
