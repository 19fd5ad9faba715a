"""Load an encoder and its tokenizer from a hub name or a local directory; save and load fine-tuned models.

`--model` accepts:
- a hub name or a local directory with weights (`klue/roberta-large`): the pretrained encoder;
- a local directory with `config.json` and tokenizer files but NO weights: the encoder is built from the
  config with fresh (seeded) weights, i.e. trained from scratch (`klue.models.tiny.make_tiny_model_dir`);
- a directory written by `save_finetuned` (it holds `klue_model.json`): its encoder weights, for further
  fine-tuning, or the whole model for `klue predict`.

Loading a model never executes code from it: weights are read only from safetensors (a pickled
`pytorch_model.bin` can run anything when unpickled; torch's `weights_only` guard is not in every torch klue
accepts), and no Python shipped with a model runs (`trust_remote_code=False`). `check_loads_without_code`
and the keyword sets `WEIGHTS_WITHOUT_CODE` / `FILES_WITHOUT_CODE` are the one place every loader (train,
predict, the in-process LLM backend, embedding models) goes through.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from klue.errors import DataError
from klue.io.atomic import follow_umask, write_dir_atomic
from klue.io.text import read_json_file
from klue.models.heads import POOLED_DROPOUT_ONLY, HeadSpec

MODEL_CARD = "klue_model.json"
CARD_FORMAT = "klue.finetuned/1"
WEIGHTS_FILE = "model.safetensors"
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")
# Weights in a pickle (torch.save, joblib): unpickling runs whatever the file says.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".joblib")
# Every from_pretrained of weights, and of configs and tokenizers: nothing a model directory holds is executed.
WEIGHTS_WITHOUT_CODE: dict[str, Any] = {"use_safetensors": True, "trust_remote_code": False}
FILES_WITHOUT_CODE: dict[str, Any] = {"trust_remote_code": False}


@dataclass(frozen=True)
class ModelCard:
    """`klue_model.json` of a fine-tuned model directory: what `klue predict` needs to rebuild and run it."""

    task: str
    task_version: str
    base_model: str  # the --model it was fine-tuned from
    head: HeadSpec
    max_len: int
    window_overlap: int
    seed: int
    recipe: str
    protocol: str
    step: int | None = None  # the optimizer step of these weights
    selection_metric: str | None = None
    selection_score: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"format": CARD_FORMAT, **asdict(self), "head": self.head.to_json()}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> ModelCard:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in obj.items() if k in known}
        return cls(**{**values, "head": HeadSpec.from_json(obj["head"])})

    def at_step(self, step: int, metric: str, score: float) -> ModelCard:
        return replace(self, step=step, selection_metric=metric, selection_score=score)


@dataclass
class LoadedEncoder:
    encoder: nn.Module
    tokenizer: Any  # a fast (Rust-backed) Hugging Face tokenizer
    source: str  # "pretrained", "from scratch (config only)" or "klue fine-tuned"
    # The checkpoint's pooler (dense `weight` and `bias`), for a BERT-type encoder whose checkpoint has one:
    # the sequence head starts from it, as BertForSequenceClassification does (`checkpoint_pooler`).
    pooler: dict[str, torch.Tensor] | None = None

    @property
    def config(self) -> Any:
        return self.encoder.config


def uses_token_type_ids(config: Any) -> bool:
    """RoBERTa-type models (type_vocab_size 1) must never receive token_type_ids."""
    return int(getattr(config, "type_vocab_size", 0) or 0) > 1


def has_weights(path: Path) -> bool:
    return any((path / name).is_file() for name in _WEIGHT_FILES)


def check_loads_without_code(name_or_path: str | Path) -> None:
    """DataError, before anything is read, when a local model directory holds its weights only as pickles (no
    *.safetensors). A hub name is checked by transformers itself under `WEIGHTS_WITHOUT_CODE`, which also
    refuses a model that needs Python of its own (`auto_map` with an architecture transformers lacks)."""
    local = Path(name_or_path).expanduser()
    if not local.is_dir():
        return
    pickles = sorted(p.name for p in local.iterdir() if p.is_file() and p.suffix in PICKLE_SUFFIXES
                     and not p.name.startswith("training_args"))
    if pickles and not any(local.glob("*.safetensors")):
        raise DataError(f"its weights are pickles ({', '.join(pickles)}), which can run code when loaded; klue "
                        "loads only safetensors weights: convert them once where you trust the file (e.g. "
                        "`AutoModel.from_pretrained(DIR).save_pretrained(DIR)` writes model.safetensors)", local)


@contextmanager
def refusing_model_code(name_or_path: str | Path) -> Iterator[None]:
    """transformers' refusal of a model that needs Python of its own (trust_remote_code is off), as one
    DataError line instead of a ValueError traceback."""
    try:
        yield
    except ValueError as error:
        if "trust_remote_code" not in str(error):
            raise
        raise DataError(f"{name_or_path}: cannot be loaded without running code the model ships, which klue never "
                        f"does (trust_remote_code is off): {' '.join(str(error).split())[:300]}") from None


def _without_pooler(config: Any) -> dict[str, Any]:
    """`add_pooling_layer=False` for encoder classes that take it: heads read the first token themselves."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING

    try:
        model_class = MODEL_MAPPING[type(config)]
    except KeyError:
        return {}
    takes = "add_pooling_layer" in inspect.signature(cast(Any, model_class)).parameters
    return {"add_pooling_layer": False} if takes else {}


def load_tokenizer(name_or_path: str | Path) -> Any:
    from transformers import AutoTokenizer

    with refusing_model_code(name_or_path):
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path), **FILES_WITHOUT_CODE)
    if not getattr(tokenizer, "is_fast", False):
        raise DataError(f"{name_or_path}: the tokenizer is not a fast (Rust) tokenizer; klue needs its offset "
                        "mapping to align character labels to sub-words")
    if tokenizer.pad_token_id is None:
        raise DataError(f"{name_or_path}: the tokenizer has no padding token")
    return tokenizer


def read_card(path: Path) -> ModelCard | None:
    card = path / MODEL_CARD
    if not card.is_file():
        return None
    obj = read_json_file(card, "the model card")
    if not isinstance(obj, dict) or obj.get("format") != CARD_FORMAT:
        raise DataError(f"not a klue model card (format {CARD_FORMAT!r} expected)", card)
    try:
        return ModelCard.from_json(obj)
    except (KeyError, TypeError) as error:
        raise DataError(f"the model card lacks a field or has a wrong one: {error}", card) from None


def load_encoder(name_or_path: str | Path) -> LoadedEncoder:
    """The encoder (no pooler) and tokenizer behind `--model`. Seed the RNG first: fresh weights use it."""
    from transformers import AutoConfig, AutoModel

    local = Path(name_or_path).expanduser()
    if local.is_dir() and not (local / "config.json").is_file():
        raise DataError(f"{local}: a model directory needs a config.json (and tokenizer files)", local)
    check_loads_without_code(local)
    tokenizer = load_tokenizer(local if local.is_dir() else name_or_path)
    if local.is_dir() and (read_card(local) is not None or not has_weights(local)):
        with refusing_model_code(local):
            config = AutoConfig.from_pretrained(str(local), **FILES_WITHOUT_CODE)
        encoder = AutoModel.from_config(config, **_without_pooler(config))
        source = "from scratch (config only)"
        if read_card(local) is not None:
            state = _load_weights(local)
            encoder_state = {k.removeprefix("encoder."): v for k, v in state.items() if k.startswith("encoder.")}
            encoder.load_state_dict(encoder_state, strict=True)
            source = "klue fine-tuned"
        return LoadedEncoder(encoder, tokenizer, source)
    with refusing_model_code(name_or_path):
        config = AutoConfig.from_pretrained(str(name_or_path), **FILES_WITHOUT_CODE)
        encoder = AutoModel.from_pretrained(str(name_or_path), **_without_pooler(config), **WEIGHTS_WITHOUT_CODE)
    pooler = checkpoint_pooler(name_or_path) if config.model_type in POOLED_DROPOUT_ONLY else None
    return LoadedEncoder(encoder, tokenizer, "pretrained", pooler)


_POOLER_PREFIXES = ("", "bert.")  # saved from BertModel, or from a model holding one (BertForPreTraining)


def _safetensors_files(name_or_path: str | Path) -> list[Path]:
    """The safetensors files of a local directory, or of a hub model in the local cache (from_pretrained
    fetched them just before)."""
    local = Path(name_or_path).expanduser()
    if local.is_dir():
        return sorted(local.glob("*.safetensors"))
    from transformers.utils import cached_file

    found = []
    for name in ("model.safetensors.index.json", "model.safetensors"):
        file = cached_file(str(name_or_path), name, _raise_exceptions_for_missing_entries=False)
        if file is None:
            continue
        if name.endswith(".json"):
            shards = set(read_json_file(Path(file), "the weights index").get("weight_map", {}).values())
            return sorted(Path(file).parent / shard for shard in shards)
        found.append(Path(file))
    return found


def checkpoint_pooler(name_or_path: str | Path) -> dict[str, torch.Tensor] | None:
    """The pooler's dense layer (`weight`, `bias`) as the checkpoint holds it, or None where it holds none
    (multilingual-e5, checkpoints saved without a pooler). The encoder itself is built without a pooler
    (heads read the first token), so the weights are read from the files."""
    from safetensors import safe_open

    for file in _safetensors_files(name_or_path):
        with safe_open(str(file), "pt") as weights:
            keys = set(weights.keys())
            for prefix in _POOLER_PREFIXES:
                names = {part: f"{prefix}pooler.dense.{part}" for part in ("weight", "bias")}
                if set(names.values()) <= keys:
                    return {part: weights.get_tensor(key) for part, key in names.items()}
    return None


def fit_embeddings(encoder: nn.Module, tokenizer: Any) -> int:
    """Grow the encoder's token embeddings when an adapter added tokens (entity markers); returns how many
    rows were added. New rows are drawn from the current (seeded) RNG."""
    current = encoder.get_input_embeddings().num_embeddings  # type: ignore[operator]  # an nn.Module attribute: torch types it Tensor | Module
    wanted = len(tokenizer)
    if wanted <= current:
        return 0
    # mean_resizing=False: new rows get the model's own initialiser (no covariance fit, no log message)
    encoder.resize_token_embeddings(wanted, mean_resizing=False)  # type: ignore[operator]  # as above (torch stubs)
    return wanted - current


def _load_weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    weights = path / WEIGHTS_FILE
    if not weights.is_file():
        raise DataError(f"{path}: no {WEIGHTS_FILE} beside {MODEL_CARD}", path)
    return load_file(str(weights))


def save_finetuned(path: Path, model: nn.Module, tokenizer: Any, card: ModelCard, *, reuse: bool = False) -> None:
    """A directory `klue predict` (and `load_finetuned`) reads back: weights, config, tokenizer, card.

    Written into a temporary sibling and renamed, so a crash never leaves half a model behind. `reuse`: the
    directory at `path` already holds this model's config and tokenizer (the caller wrote them): they are
    hard-linked into the new directory, not written again; only the weights and the card are new."""
    from safetensors.torch import save_file

    def fill(tmp: Path) -> None:
        state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
        save_file(state, str(tmp / WEIGHTS_FILE), metadata={"format": "pt"})
        follow_umask(tmp / WEIGHTS_FILE)
        if reuse:
            _link_files(path, tmp, skip={WEIGHTS_FILE, MODEL_CARD})
        else:
            cast(Any, model).config.save_pretrained(str(tmp))
            tokenizer.save_pretrained(str(tmp))
        (tmp / MODEL_CARD).write_text(json.dumps(card.to_json(), ensure_ascii=False, indent=2), encoding="utf-8")

    write_dir_atomic(path, fill)


def _link_files(source: Path, target: Path, skip: set[str]) -> None:
    """Hard-link the files of `source` (not its sub-directories: a model directory has none) into `target`."""
    for item in source.iterdir():
        if item.is_file() and item.name not in skip:
            try:
                os.link(item, target / item.name)
            except OSError:  # a file system without hard links: the same bytes, by copying
                shutil.copy2(item, target / item.name)


@dataclass
class FinetunedModel:
    encoder: nn.Module
    tokenizer: Any
    card: ModelCard
    path: Path

    @property
    def head(self) -> HeadSpec:
        return self.card.head

    def load_weights_into(self, model: nn.Module) -> None:
        model.load_state_dict(_load_weights(self.path), strict=True)


def load_finetuned_weights(path: Path, model: nn.Module) -> None:
    """The weights of a `save_finetuned` directory, into `model`, which the caller built for it already (a
    run reloading its best/ into the model it trained). `load_finetuned` would also build a fresh encoder
    and load the tokenizer, which the caller has: for multilingual-e5 (a 250k vocabulary) about 8 CPU-s."""
    if read_card(path) is None:
        raise DataError(f"{path}: not a fine-tuned klue model (no {MODEL_CARD})", path)
    model.load_state_dict(_load_weights(path), strict=True)


def load_finetuned(path: Path) -> FinetunedModel:
    """A `save_finetuned` directory: encoder skeleton (its weights left uninitialised) + tokenizer + card; the
    caller builds the head (its adapter knows how) and then calls `load_weights_into`."""
    from transformers import AutoConfig, AutoModel
    from transformers.initialization import no_init_weights

    card = read_card(path)
    if card is None:
        raise DataError(f"{path}: not a fine-tuned klue model (no {MODEL_CARD}); train one with `klue train`",
                        path)
    check_loads_without_code(path)
    with refusing_model_code(path):
        config = AutoConfig.from_pretrained(str(path), **FILES_WITHOUT_CODE)
    # No random initialisation: `load_weights_into` replaces every weight (strict), and drawing them took
    # multilingual-e5 1.3-3.3 CPU-s (measured); the buffers (position ids) are built as usual.
    with no_init_weights():
        encoder = AutoModel.from_config(config, **_without_pooler(config))
    return FinetunedModel(encoder, load_tokenizer(path), card, path)
