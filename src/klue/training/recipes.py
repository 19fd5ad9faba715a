"""Recipes: named sets of hyper-parameters by task and model size, plus `key=value` overrides.

A recipe holds `defaults` and, per task name, a `base` and a `large` block (`large` applies on top of
`base`). The packaged `paper` recipe is `recipes/paper.yaml` (its defaults) plus the `recipe` every task
declares in its task.yaml; a recipe YAML file of a user's holds its own `tasks` blocks. Resolution order:
dataclass defaults < recipe defaults < task base < task large (for large models) < overrides. Unknown
keys are errors, with the closest known key suggested.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from klue.errors import DataError

SIZES = ("base", "large")
ADAMW_IMPLS = ("auto", "fused", "foreach", "for_loop")
LARGE_HIDDEN_SIZE = 1024  # roberta-large / bert-large; base models have 768 or less


@dataclass(frozen=True)
class Hyperparameters:
    learning_rate: float = 5e-5
    epochs: float = 4.0
    max_steps: int | None = None  # stop after this many optimizer steps (the schedule spans them)
    batch_size: int = 32  # examples per optimizer step, over all processes and accumulation steps
    eval_batch_size: int = 64  # per process
    gradient_accumulation_steps: int = 1
    warmup_ratio: float = 0.0
    warmup_steps: int | None = None  # overrides warmup_ratio
    weight_decay: float = 0.0  # not applied to biases and LayerNorm weights
    adam_epsilon: float = 1e-8
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    max_grad_norm: float | None = 1.0  # None or 0: no clipping
    max_len: int = 128  # tokens per feature, special tokens included
    window_overlap: int | None = None  # tokens shared by consecutive windows of long inputs; None: max_len // 4
    evals_per_epoch: int = 4  # the last one at the epoch end; 0: only after the last step
    eval_steps: int | None = None  # evaluate every N optimizer steps instead (and after the last)
    logging_steps: int = 20  # loss is read back from the device only this often
    selection_metric: str | None = None  # None: the task's key metric
    # Batches of similar lengths (less padding: 1.7x fewer tokens on NLI); false: the official baseline's
    # uniformly shuffled order (sampling.py). Changes the data order, not the data.
    group_by_length: bool = True
    adamw_impl: str = "auto"  # auto (fused where torch has the kernel: CPU, CUDA), fused, foreach, for_loop
    mixed_precision: str = "auto"  # auto (bf16 / fp16 on a GPU that has it, bf16 on a CPU with bf16 units
    # (amx_bf16 or avx512_bf16), else none), no, fp16, bf16
    cpu: bool = False  # force CPU even when a GPU is present
    pad_to_multiple_of: int | None = None  # e.g. 8 for tensor cores
    dropout: float | None = None  # head dropout; None: the encoder config's
    # Resumable checkpoints (docs/training.md, "Checkpoints and resume"): the resume state (model, optimizer,
    # RNG) is written when `checkpoint_minutes` have passed since the last write, every `checkpoint_steps`
    # steps when set, and at each epoch end; a finished run leaves a small record (the final model is best/).
    save_checkpoints: bool = True
    checkpoint_minutes: float | None = 10.0  # None: no time budget
    checkpoint_steps: int | None = None
    keep_checkpoints: bool = False  # write the full resume state after the last step too, and keep it
    resume: bool = True  # continue from the output directory's checkpoint when there is one
    deterministic: bool = False  # torch.use_deterministic_algorithms (slower on GPU)
    size: str | None = None  # "base" / "large" recipe block; None: from the model config
    progress: bool = True  # rich progress bar on stderr (main process only)
    report_to: str | None = None  # learning curves also to trackers: tensorboard, mlflow, wandb (comma list)
    # Task-specific head settings, given as `head.<name>=value`; the task's adapter documents and checks them
    # (an unknown one is refused with the list of known ones).
    head_options: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def overlap(self) -> int:
        return self.window_overlap if self.window_overlap is not None else self.max_len // 4


# Settings of how a run is carried out, not of what it computes: a run resumes under other values of these.
HOW_TO_RUN = frozenset({"resume", "progress", "report_to", "save_checkpoints", "checkpoint_minutes",
                        "checkpoint_steps", "keep_checkpoints"})

_FIELDS = {f.name: f for f in fields(Hyperparameters) if f.name != "head_options"}
HEAD_OPTION_PREFIX = "head."


def _coerce(key: str, value: Any, where: str) -> Any:
    if key not in _FIELDS:
        close = difflib.get_close_matches(key, list(_FIELDS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise DataError(f"{where}: unknown hyper-parameter {key!r}{hint} (known: {', '.join(_FIELDS)})")
    kind = str(_FIELDS[key].type)
    if value is None:
        if "None" not in kind:
            raise DataError(f"{where}: {key} cannot be null")
        return None
    try:
        if kind.startswith("bool"):
            if isinstance(value, str):
                if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(value)
                return value.lower() in ("true", "1", "yes")
            return bool(value)
        if kind.startswith("int"):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if kind.startswith("float"):
            return float(value)
        return str(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: {key}={value!r} is not a valid {kind}") from None


PAPER = "paper"  # the packaged recipe whose task blocks are the tasks' declared recipes


def load_recipe(name_or_path: str) -> dict[str, Any]:
    """A packaged recipe by name (`paper`) or a YAML file path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        text = path.read_text(encoding="utf-8")
    else:
        packaged = resources.files("klue.training") / "recipes" / f"{name_or_path}.yaml"
        if not packaged.is_file():
            known = sorted(p.name.removesuffix(".yaml") for p in (resources.files("klue.training") / "recipes")
                           .iterdir() if p.name.endswith(".yaml"))
            raise DataError(f"unknown recipe {name_or_path!r}; packaged recipes: {', '.join(known)} "
                            "(or give a .yaml file)")
        text = packaged.read_text(encoding="utf-8")
    try:
        recipe = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DataError(f"recipe {name_or_path}: invalid YAML: {error}") from None
    if isinstance(recipe, dict) and name_or_path == PAPER and "tasks" not in recipe:
        from klue import registry

        recipe["tasks"] = {t.name: {"base": dict(t.recipe.base), "large": dict(t.recipe.large)}
                           for t in registry.all_tasks()}
    if not isinstance(recipe, dict) or not isinstance(recipe.get("tasks"), dict):
        raise DataError(f"recipe {name_or_path}: expected a mapping with `tasks`")
    recipe.setdefault("name", path.stem if path.suffix else name_or_path)
    return recipe


def model_size(config: Any) -> str:
    return "large" if int(getattr(config, "hidden_size", 0) or 0) >= LARGE_HIDDEN_SIZE else "base"


@dataclass(frozen=True)
class ResolvedRecipe:
    name: str  # e.g. "paper/large"
    hyperparameters: Hyperparameters
    overrides: dict[str, Any]


def resolve(recipe_name: str, task_name: str, model_config: Any, overrides: dict[str, Any]) -> ResolvedRecipe:
    recipe = load_recipe(recipe_name)
    task_block = recipe["tasks"].get(task_name)
    if not isinstance(task_block, dict):
        raise DataError(f"recipe {recipe['name']!r} has no entry for task {task_name!r}")
    size = overrides.get("size") or model_size(model_config)
    if size not in SIZES:
        raise DataError(f"size={size!r}: expected one of {', '.join(SIZES)}")
    values: dict[str, Any] = {}
    layers = [("defaults", recipe.get("defaults") or {}), (f"tasks.{task_name}.base", task_block.get("base") or {})]
    if size == "large":
        layers.append((f"tasks.{task_name}.large", task_block.get("large") or {}))
    head_options: dict[str, Any] = {}
    for where, layer in [*((f"recipe {recipe['name']} {w}", v) for w, v in layers), ("override", overrides)]:
        for key, value in layer.items():
            if key.startswith(HEAD_OPTION_PREFIX) and len(key) > len(HEAD_OPTION_PREFIX):
                head_options[key.removeprefix(HEAD_OPTION_PREFIX)] = value
            else:
                values[key] = _coerce(key, value, where)
    values["size"] = size
    values["head_options"] = head_options
    hp = Hyperparameters(**values)
    check(hp)
    return ResolvedRecipe(f"{recipe['name']}/{size}", hp, dict(overrides))


def check(hp: Hyperparameters) -> None:
    problems = []
    if hp.batch_size < 1 or hp.eval_batch_size < 1 or hp.gradient_accumulation_steps < 1:
        problems.append("batch sizes and gradient_accumulation_steps must be >= 1")
    if hp.learning_rate <= 0:
        problems.append("learning_rate must be > 0")
    if hp.epochs <= 0 and not hp.max_steps:
        problems.append("epochs must be > 0 (or give max_steps)")
    if not 0 <= hp.warmup_ratio < 1:
        problems.append("warmup_ratio must be in [0, 1)")
    if hp.max_len < 8:
        problems.append("max_len must be >= 8")
    if hp.window_overlap is not None and not 0 <= hp.window_overlap <= hp.max_len // 2:
        problems.append("window_overlap must be in [0, max_len / 2]")
    if hp.adamw_impl not in ADAMW_IMPLS:
        problems.append(f"adamw_impl {hp.adamw_impl!r}: {', '.join(ADAMW_IMPLS)}")
    if hp.checkpoint_minutes is not None and hp.checkpoint_minutes <= 0:
        problems.append("checkpoint_minutes must be > 0 (or null: no time budget)")
    if hp.checkpoint_steps is not None and hp.checkpoint_steps < 1:
        problems.append("checkpoint_steps must be >= 1 (or null)")
    if hp.mixed_precision not in ("auto", "no", "fp16", "bf16"):
        problems.append(f"mixed_precision {hp.mixed_precision!r}: auto, no, fp16 or bf16")
    if problems:
        raise DataError("hyper-parameters: " + "; ".join(problems))
