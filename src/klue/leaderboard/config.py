"""The site's configuration file (`leaderboard.yaml`), read with the line of every key so a mistake is
reported as `file:line` (docs/leaderboard.md, "Configuration").

```yaml
title: KLUE course leaderboard
tasks:
  nli: {gold: data/klue-nli-v1.1_dev.json, private_fraction: 0.5}
quota: {per_day: 5}
public_ranking: plain      # or ladder
final_submissions: 2
```

Unknown keys are errors (a misspelt `privat_fraction` would otherwise silently keep the default). No
Django here: `klue leaderboard init` validates the whole file before anything is created.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from klue.errors import DataError, Problem

RANKINGS = ("plain", "ladder")
DEFAULT_UPLOAD_MIB = 64
TOP_KEYS = {"title", "tasks", "quota", "public_ranking", "final_submissions", "seed", "limits", "service", "models",
            "model_quota", "allow_endpoints"}
TASK_KEYS = {"gold", "private_fraction", "format", "train", "train_format"}
QUOTA_KEYS = {"per_day"}
LIMIT_KEYS = {"upload_mib", "decompressed_mib", "cpu_seconds", "memory_mib"}
SERVICE_KEYS = {"heartbeat_s", "lost_after_s", "sqlite_timeout_s"}
MODELS_KEYS = {"families", "executor", "ray_address", "limits", "seed", "shots"}
MODEL_LIMIT_KEYS = {"wall_s", "cpus", "gpus", "memory_gb"}
MODEL_QUOTA_KEYS = {"per_week"}
FAMILIES = ("classic", "encoder", "llm", "embedding")  # the families a site may open to model submissions
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class TaskConfig:
    """One task of the site: its gold file, the reader to read it with, the private share."""

    name: str
    gold: Path
    private_fraction: float = 0.5
    format: str | None = None  # the task reader's name; None: told from the file as `klue score` tells it
    train: Path | None = None  # the training split model submissions train on (and draw LLM shots from)
    train_format: str | None = None


@dataclass(frozen=True)
class Limits:
    """What one submission may cost: the upload, its decompressed size, the scoring process."""

    upload_mib: int = DEFAULT_UPLOAD_MIB
    decompressed_mib: int = 4 * DEFAULT_UPLOAD_MIB
    cpu_seconds: int = 300
    memory_mib: int = 4096


@dataclass(frozen=True)
class Service:
    """The service's timing: a scoring worker beats every `heartbeat_s`; a job whose worker has not beaten for
    `lost_after_s` is requeued (so it must be a few beats); a request waits `sqlite_timeout_s` for SQLite's
    write lock before it answers 503 (docs/leaderboard.md, "Serving")."""

    heartbeat_s: float = 2.0
    lost_after_s: float = 15.0
    sqlite_timeout_s: float = 30.0

    @classmethod
    def of(cls, config: dict[str, Any]) -> Service:
        """The timing recorded in a site's configuration (site.json; sites made before it: the defaults)."""
        return cls(**config.get("service", {}))


@dataclass(frozen=True)
class ModelLimits:
    """What one model-submission job (one benchmark cell) may take: wall time, CPUs (its thread count; Ray's
    `--cpus-per-cell`), GPUs (Ray's `--gpus-per-cell`; 0 hides every GPU from a local job), memory (its
    address space)."""

    wall_s: float = 3600.0
    cpus: int = 1
    gpus: float = 0.0
    memory_gb: float = 16.0


@dataclass(frozen=True)
class ModelsConfig:
    """Model submissions (docs/leaderboard.md, "Model submissions"): the families open to them, the executor
    that runs their cells, each job's limits, the cells' seed."""

    families: tuple[str, ...] = FAMILIES
    executor: str = "local"
    ray_address: str | None = None  # executor ray: an existing cluster; None: a local Ray started per job
    limits: ModelLimits = field(default_factory=ModelLimits)
    seed: int = 1  # every model's cell runs with this seed (klue benchmark's default --seeds)
    shots: int = 5  # an LLM's few-shot examples, drawn from the training split with the seed: the same for all

    def to_json(self) -> dict[str, Any]:
        return {"families": list(self.families), "executor": self.executor, "ray_address": self.ray_address,
                "limits": vars(self.limits).copy(), "seed": self.seed, "shots": self.shots}

    @classmethod
    def of(cls, config: dict[str, Any]) -> ModelsConfig:
        """The model settings recorded in a site's configuration (site.json; older sites: the defaults)."""
        data = config.get("models")
        if data is None:
            return cls()
        return cls(tuple(data["families"]), data["executor"], data["ray_address"], ModelLimits(**data["limits"]),
                   int(data["seed"]), int(data["shots"]))


@dataclass(frozen=True)
class SiteConfig:
    title: str
    tasks: tuple[TaskConfig, ...]
    per_day: int = 5
    public_ranking: str = "plain"
    final_submissions: int = 2
    seed: int = 0  # the public/private split's seed
    limits: Limits = field(default_factory=Limits)
    service: Service = field(default_factory=Service)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    per_week: int | None = None  # model submissions per team per UTC week (model_quota.per_week); None: no cap
    allow_endpoints: bool = False  # openai:/emb:openai: specs on a site with a private part

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "per_day": self.per_day, "public_ranking": self.public_ranking,
                "final_submissions": self.final_submissions, "seed": self.seed,
                "limits": vars(self.limits).copy(), "service": vars(self.service).copy(),
                "models": self.models.to_json(), "model_quota": {"per_week": self.per_week},
                "allow_endpoints": self.allow_endpoints,
                "tasks": {t.name: {"private_fraction": t.private_fraction, "train": t.train is not None}
                          for t in self.tasks}}


class _Reader:
    """Values out of a composed YAML tree, every problem with its line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[Problem] = []

    def error(self, node: yaml.Node, message: str) -> None:
        self.problems.append(Problem(str(self.path), f"line {node.start_mark.line + 1}", message))

    def mapping(self, node: yaml.Node, what: str, allowed: set[str]) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            self.error(node, f"{what} must be a mapping")
            return {}
        out: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            if key not in allowed:
                self.error(key_node, f"unknown key {key!r} in {what}; known: {', '.join(sorted(allowed))}")
            elif key in out:
                self.error(key_node, f"{key!r} given twice in {what}")
            else:
                out[key] = value_node
        return out

    def scalar(self, node: yaml.Node, what: str) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            self.error(node, f"{what} must be a single value")
            return None
        return yaml.safe_load(yaml.serialize(node))

    def seconds(self, node: yaml.Node | None, what: str, default: float, unit: str = "seconds") -> float:
        if node is None:
            return default
        value = self.scalar(node, what)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not (math.isfinite(value) and value > 0):
            self.error(node, f"{what} must be a positive number of {unit}, not {value!r}")
            return default
        return float(value)

    def integer(self, node: yaml.Node | None, what: str, default: int, low: int) -> int:
        if node is None:
            return default
        value = self.scalar(node, what)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            self.error(node, f"{what} must be a whole number of at least {low}, not {value!r}")
            return default
        return value


Canonical = Callable[[str], "str | None"]


def load_config(path: Path, canonical: Canonical | None = None) -> SiteConfig:
    """The configuration in `path`; DataError listing every problem (each with its line) otherwise.
    `canonical`: a task name or alias -> the task's name, None when unknown (the registry's lookup; checked
    here so a typo is a line, not a traceback)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read the configuration: {error}", path) from error
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        raise DataError([Problem(str(path), where, f"not YAML: {getattr(error, 'problem', error)}")]) from error
    if root is None:
        raise DataError("the configuration is empty; it needs at least `title` and `tasks`", path)
    reader = _Reader(path)
    top = reader.mapping(root, "the configuration", TOP_KEYS)
    title = reader.scalar(top["title"], "title") if "title" in top else None
    if "title" not in top or not isinstance(title, str) or not title.strip():
        reader.error(top.get("title", root), "`title` must be a non-empty text")
    tasks = _tasks(reader, top.get("tasks"), root, path.parent, canonical)
    quota = reader.mapping(top["quota"], "quota", QUOTA_KEYS) if "quota" in top else {}
    per_day = reader.integer(quota.get("per_day"), "quota.per_day", 5, 1)
    ranking = "plain"
    if "public_ranking" in top:
        ranking = reader.scalar(top["public_ranking"], "public_ranking")
        if ranking not in RANKINGS:
            reader.error(top["public_ranking"], f"public_ranking must be one of {', '.join(RANKINGS)}, "
                                                f"not {ranking!r}")
    final = reader.integer(top.get("final_submissions"), "final_submissions", 2, 1)
    seed = reader.integer(top.get("seed"), "seed", 0, 0)
    limits = _limits(reader, top.get("limits"))
    service = _service(reader, top.get("service"))
    models = _models(reader, top.get("models"))
    model_quota = reader.mapping(top["model_quota"], "model_quota", MODEL_QUOTA_KEYS) if "model_quota" in top else {}
    per_week = reader.integer(model_quota["per_week"], "model_quota.per_week", 1, 1) if "per_week" in model_quota \
        else None
    allow_endpoints = False
    if "allow_endpoints" in top:
        allow = reader.scalar(top["allow_endpoints"], "allow_endpoints")
        if not isinstance(allow, bool):
            reader.error(top["allow_endpoints"], f"allow_endpoints must be true or false, not {allow!r}")
        allow_endpoints = allow is True
    if reader.problems:
        raise DataError(reader.problems)
    return SiteConfig(str(title).strip(), tasks, per_day, str(ranking), final, seed, limits, service, models,
                      per_week, allow_endpoints)


def _tasks(reader: _Reader, node: yaml.Node | None, root: yaml.Node, base: Path,
           canonical: Canonical | None) -> tuple[TaskConfig, ...]:
    if node is None:
        reader.error(root, "`tasks` is missing: name at least one task with its gold file")
        return ()
    if not isinstance(node, yaml.MappingNode) or not node.value:
        reader.error(node, "`tasks` must map task names to {gold: PATH, private_fraction: F}")
        return ()
    out: list[TaskConfig] = []
    for key_node, value_node in node.value:
        name = str(key_node.value).strip().lower()
        if canonical is not None:
            found = canonical(name)
            if found is None:
                reader.error(key_node, f"unknown task {name!r} (`klue tasks` lists them)")
                continue
            name = found
        entry = reader.mapping(value_node, f"tasks.{name}", TASK_KEYS)
        if "gold" not in entry:
            reader.error(value_node, f"tasks.{name} needs `gold`: the path of the gold file")
            continue
        gold = reader.scalar(entry["gold"], f"tasks.{name}.gold")
        gold_path = (base / str(gold)).expanduser() if gold is not None else base
        fraction = 0.5
        if "private_fraction" in entry:
            value = reader.scalar(entry["private_fraction"], f"tasks.{name}.private_fraction")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not (
                    math.isfinite(value) and 0.0 < value < 1.0):
                reader.error(entry["private_fraction"], f"tasks.{name}.private_fraction must be a number "
                                                        f"between 0 and 1 (both parts need examples), not {value!r}")
            else:
                fraction = float(value)
        fmt = reader.scalar(entry["format"], f"tasks.{name}.format") if "format" in entry else None
        train = reader.scalar(entry["train"], f"tasks.{name}.train") if "train" in entry else None
        if "train" in entry and (not isinstance(train, str) or not train.strip()):
            reader.error(entry["train"], f"tasks.{name}.train must be the path of the training split")
            train = None
        train_fmt = reader.scalar(entry["train_format"], f"tasks.{name}.train_format") \
            if "train_format" in entry else None
        if train_fmt is not None and train is None:
            reader.error(entry["train_format"], f"tasks.{name}.train_format goes with tasks.{name}.train")
        if any(t.name == name for t in out):
            reader.error(key_node, f"task {name!r} is named twice")
        out.append(TaskConfig(name, gold_path, fraction, None if fmt is None else str(fmt),
                              None if train is None else (base / str(train)).expanduser(),
                              None if train_fmt is None else str(train_fmt)))
    return tuple(out)


def _limits(reader: _Reader, node: yaml.Node | None) -> Limits:
    if node is None:
        return Limits()
    entry = reader.mapping(node, "limits", LIMIT_KEYS)
    default = Limits()
    upload = reader.integer(entry.get("upload_mib"), "limits.upload_mib", default.upload_mib, 1)
    return Limits(upload, reader.integer(entry.get("decompressed_mib"), "limits.decompressed_mib",
                                         max(default.decompressed_mib, 4 * upload), 1),
                  reader.integer(entry.get("cpu_seconds"), "limits.cpu_seconds", default.cpu_seconds, 1),
                  reader.integer(entry.get("memory_mib"), "limits.memory_mib", default.memory_mib, 256))


def _service(reader: _Reader, node: yaml.Node | None) -> Service:
    if node is None:
        return Service()
    entry = reader.mapping(node, "service", SERVICE_KEYS)
    default = Service()
    service = Service(reader.seconds(entry.get("heartbeat_s"), "service.heartbeat_s", default.heartbeat_s),
                      reader.seconds(entry.get("lost_after_s"), "service.lost_after_s", default.lost_after_s),
                      reader.seconds(entry.get("sqlite_timeout_s"), "service.sqlite_timeout_s",
                                     default.sqlite_timeout_s))
    if service.lost_after_s < 2 * service.heartbeat_s:
        reader.error(entry.get("lost_after_s", node), "service.lost_after_s must be at least two heartbeats "
                                                      "(2 x service.heartbeat_s): a live worker would be taken for lost")
    return service


def _models(reader: _Reader, node: yaml.Node | None) -> ModelsConfig:
    if node is None:
        return ModelsConfig()
    entry = reader.mapping(node, "models", MODELS_KEYS)
    default = ModelsConfig()
    families = default.families
    if "families" in entry:
        value = reader.scalar(entry["families"], "models.families") if isinstance(
            entry["families"], yaml.ScalarNode) else yaml.safe_load(yaml.serialize(entry["families"]))
        if not isinstance(value, list) or not value or any(f not in FAMILIES for f in value):
            reader.error(entry["families"], f"models.families must list some of {', '.join(FAMILIES)}, not {value!r}")
        else:
            families = tuple(dict.fromkeys(str(f) for f in value))
    executor = default.executor
    if "executor" in entry:
        executor = reader.scalar(entry["executor"], "models.executor")
        if executor not in EXECUTORS:
            reader.error(entry["executor"], f"models.executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
            executor = default.executor
    address = None
    if "ray_address" in entry:
        address = reader.scalar(entry["ray_address"], "models.ray_address")
        if executor != "ray":
            reader.error(entry["ray_address"], "models.ray_address goes with `executor: ray`")
        if not isinstance(address, str) or not address.strip():
            reader.error(entry["ray_address"], "models.ray_address takes auto, HOST:PORT or ray://HOST:PORT")
            address = None
    limits = _model_limits(reader, entry.get("limits"))
    seed = reader.integer(entry.get("seed"), "models.seed", default.seed, 0)
    shots = reader.integer(entry.get("shots"), "models.shots", default.shots, 0)
    return ModelsConfig(families, str(executor), address, limits, seed, shots)


def _model_limits(reader: _Reader, node: yaml.Node | None) -> ModelLimits:
    if node is None:
        return ModelLimits()
    entry = reader.mapping(node, "models.limits", MODEL_LIMIT_KEYS)
    default = ModelLimits()
    gpus = default.gpus
    if "gpus" in entry:
        value = reader.scalar(entry["gpus"], "models.limits.gpus")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not (math.isfinite(value) and value >= 0):
            reader.error(entry["gpus"], f"models.limits.gpus must be 0 or more (fractions allowed), not {value!r}")
        else:
            gpus = float(value)
    return ModelLimits(reader.seconds(entry.get("wall_s"), "models.limits.wall_s", default.wall_s),
                       reader.integer(entry.get("cpus"), "models.limits.cpus", default.cpus, 1), gpus,
                       reader.seconds(entry.get("memory_gb"), "models.limits.memory_gb", default.memory_gb,
                                      "GB"))
