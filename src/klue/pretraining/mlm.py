"""Masked-LM pretraining (BERT / RoBERTa) on accelerate, with dynamic and whole-word masking.

    from klue.pretraining.mlm import MlmSettings, pretrain
    pretrain(MlmSettings(tokenizer=Path("tok"), model_config="tiny", corpus=[Path("a.txt")], out=Path("m")))

The output directory is a Hugging Face model directory (`AutoModel.from_pretrained(out)` loads the encoder,
`AutoModelForMaskedLM` the whole model) with the tokenizer beside it, so `klue train --model out` fine-tunes
it. While running, `out/checkpoints/last/` holds the resumable state (model, optimizer, scheduler, RNG in
safetensors and JSON, never a pickle: klue.training.state_files, plus the step); running the same command
again resumes from it. `out/train_log.jsonl`
gets one line per logging step (loss, learning rate, tokens/s), `out/pretrain_summary.json` the final figures.

Masking is dynamic: the positions are drawn when a batch is built, from a generator seeded by (seed, step),
so every epoch masks differently and a resumed run masks exactly as an uninterrupted one. With whole-word
masking a word (whitespace word, or Kiwi morpheme) is chosen as a unit: all its sub-words or none. Chosen
tokens are replaced 80% by the mask token, 10% by a random token, 10% kept (BERT).
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from klue.errors import DataError
from klue.pretraining.corpus import read_corpus
from klue.pretraining.morphemes import MorphemeSplitter
from klue.pretraining.tokenizer import SPEC_FILE as TOKENIZER_CARD

WholeWord = Literal["none", "word", "morpheme"]
Arch = Literal["bert", "roberta"]
PRESETS: dict[str, dict[str, int]] = {
    "tiny": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128},
    "small": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024},
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "large": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096},
}
CHECKPOINT_DIR = "checkpoints"
LOG_FILE = "train_log.jsonl"
SUMMARY_FILE = "pretrain_summary.json"
_STATE_FILE = "klue_mlm_state.json"


@dataclass(frozen=True)
class MlmSettings:
    tokenizer: Path
    model_config: str  # a preset name (PRESETS) or a JSON / YAML file of config fields
    corpus: Sequence[Path]
    out: Path
    arch: Arch | None = None  # None: from the tokenizer's special tokens (<s> -> roberta)
    max_len: int = 128
    batch_size: int = 32
    learning_rate: float = 5e-4
    weight_decay: float = 0.01
    warmup_ratio: float = 0.06
    max_steps: int = 1000
    max_minutes: float | None = None  # stop (and save) after this much training time
    mask_prob: float = 0.15
    whole_word: WholeWord = "none"
    eval_fraction: float = 0.0  # held-out share of the packed blocks for a final masked-LM loss
    save_every: int = 200
    log_every: int = 20
    seed: int = 0
    resume: bool = True
    cpu: bool = False
    mixed_precision: str = "no"
    dropout: float = 0.1
    progress: bool = True

    def fingerprint(self) -> dict[str, Any]:
        """What must match for a checkpoint to be resumed (not the stop conditions or logging)."""
        keep = ("model_config", "arch", "max_len", "batch_size", "learning_rate", "weight_decay",
                "warmup_ratio", "max_steps", "mask_prob", "whole_word", "seed", "eval_fraction")
        obj = asdict(self)
        return {k: obj[k] for k in keep} | {"corpus": [str(p) for p in self.corpus]}


@dataclass
class Block:
    """One packed training sequence (special tokens included) and the word id of each position
    (-1 for special tokens), for whole-word masking."""

    input_ids: list[int]
    word_ids: list[int]


def load_model_config(spec: str) -> dict[str, Any]:
    if spec in PRESETS:
        return dict(PRESETS[spec])
    path = Path(spec)
    if not path.is_file():
        raise DataError(f"--config {spec!r}: neither a preset ({', '.join(PRESETS)}) nor a file")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            obj = yaml.safe_load(text)
        else:
            obj = json.loads(text)
    except Exception as error:  # noqa: BLE001 - any parse error is bad input
        raise DataError(f"cannot parse the model config: {error}", path) from None
    if not isinstance(obj, dict):
        raise DataError("a model config file holds one mapping of config fields", path)
    return obj


def infer_arch(tokenizer: Any) -> Arch:
    return "roberta" if tokenizer.cls_token == "<s>" else "bert"


def build_config(tokenizer: Any, fields: dict[str, Any], arch: Arch, max_len: int, dropout: float) -> Any:
    from transformers import AutoConfig

    fields = {"hidden_dropout_prob": dropout, "attention_probs_dropout_prob": dropout, **fields}
    fields.pop("model_type", None)
    common = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, **fields)
    if arch == "roberta":
        # RoBERTa positions start after the padding index, hence +2; one token type only.
        common.setdefault("max_position_embeddings", max_len + 2)
        return AutoConfig.for_model("roberta", type_vocab_size=1, bos_token_id=tokenizer.cls_token_id,
                                    eos_token_id=tokenizer.sep_token_id, **common)
    common.setdefault("max_position_embeddings", max_len)
    return AutoConfig.for_model("bert", type_vocab_size=2, **common)


def _word_index(text: str, offsets: Sequence[tuple[int, int]], whole_word: WholeWord,
                splitter: MorphemeSplitter | None) -> list[int]:
    """The unit each token belongs to: its own position, its whitespace word, or its Kiwi morpheme."""
    if whole_word == "none":
        return list(range(len(offsets)))
    if whole_word == "word":
        starts = [i for i, ch in enumerate(text) if not ch.isspace() and (i == 0 or text[i - 1].isspace())]
    else:
        assert splitter is not None
        starts = [s for s, _ in splitter.segments(text)]
    import bisect

    return [max(0, bisect.bisect_right(starts, start) - 1) for start, _ in offsets]


def pack_blocks(tokenizer: Any, texts: Iterable[str], max_len: int, whole_word: WholeWord = "none",
                splitter: MorphemeSplitter | None = None) -> list[Block]:
    """Tokenize texts and pack consecutive ones into blocks of at most `max_len` tokens ([CLS] ... [SEP]),
    a text longer than a block being cut into several; word ids never cross texts."""
    if whole_word == "morpheme" and splitter is None:
        splitter = MorphemeSplitter()
    room = max_len - 2
    if room < 8:
        raise DataError(f"max_len {max_len} is too short for masked-LM blocks")
    blocks: list[Block] = []
    ids: list[int] = []
    words: list[int] = []
    next_word = 0

    def flush() -> None:
        nonlocal ids, words
        if ids:
            blocks.append(Block([tokenizer.cls_token_id, *ids, tokenizer.sep_token_id], [-1, *words, -1]))
        ids, words = [], []

    for text in texts:
        encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        token_ids, offsets = encoding["input_ids"], encoding["offset_mapping"]
        if not token_ids:
            continue
        local = _word_index(text, offsets, whole_word, splitter)
        global_words = [next_word + w for w in local]
        next_word += (max(local) + 1) if local else 0
        position = 0
        while position < len(token_ids):
            if len(ids) == room:
                flush()
            take = min(room - len(ids), len(token_ids) - position)
            ids.extend(token_ids[position:position + take])
            words.extend(global_words[position:position + take])
            position += take
        if len(ids) >= room:
            flush()
    flush()
    return blocks


@dataclass
class MaskingCollator:
    """Pads a batch of blocks and masks it; the generator is seeded per step by the caller."""

    pad_id: int
    mask_id: int
    vocab_size: int
    special_ids: frozenset[int]
    mask_prob: float = 0.15

    def __call__(self, blocks: Sequence[Block], generator: Any) -> dict[str, Any]:
        import torch

        length = max(len(b.input_ids) for b in blocks)
        input_ids = torch.full((len(blocks), length), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(blocks), length), dtype=torch.long)
        labels = torch.full((len(blocks), length), -100, dtype=torch.long)
        for row, block in enumerate(blocks):
            n = len(block.input_ids)
            ids = torch.tensor(block.input_ids, dtype=torch.long)
            word_ids = torch.tensor(block.word_ids, dtype=torch.long)
            unique = torch.unique(word_ids[word_ids >= 0])
            chosen_words = unique[torch.rand(len(unique), generator=generator) < self.mask_prob]
            if len(chosen_words) == 0 and len(unique) > 0:  # every block teaches something
                chosen_words = unique[torch.randint(len(unique), (1,), generator=generator)]
            chosen = torch.isin(word_ids, chosen_words) & (word_ids >= 0)
            labels[row, :n] = torch.where(chosen, ids, torch.full_like(ids, -100))
            draw = torch.rand(n, generator=generator)
            masked = ids.clone()
            masked[chosen & (draw < 0.8)] = self.mask_id
            random_positions = chosen & (draw >= 0.8) & (draw < 0.9)
            masked[random_positions] = torch.randint(self.vocab_size, (int(random_positions.sum()),),
                                                     generator=generator)
            input_ids[row, :n] = masked
            attention[row, :n] = 1
        return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}


def batch_indices(n_blocks: int, batch_size: int, seed: int, step: int) -> list[int]:
    """Block indices of optimizer step `step`: epochs are seeded permutations, so a resumed run sees the
    same batches as an uninterrupted one."""
    import numpy as np

    per_epoch = max(1, n_blocks // batch_size)
    epoch, position = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(n_blocks)
    return [int(i) for i in order[position * batch_size:(position + 1) * batch_size]]


def _generator(seed: int, step: int) -> Any:
    import torch

    generator = torch.Generator()
    generator.manual_seed(seed * 1_000_003 + step)
    return generator


@dataclass
class PretrainResult:
    out: Path
    steps: int
    resumed_from: int | None
    first_loss: float | None
    last_loss: float | None
    eval_loss: float | None
    n_blocks: int
    n_tokens: int
    train_time_s: float
    tokens_per_s: float
    losses: list[tuple[int, float]] = field(default_factory=list)


def _append_log(path: Path, record: dict[str, Any]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def pretrain(settings: MlmSettings, on_step: Callable[[int], None] | None = None) -> PretrainResult:
    """Run (or resume) masked-LM pretraining; see the module docstring. `on_step(step)` runs after each
    optimizer step (tests interrupt a run with it). One writer per output directory (klue.io.lock); under
    `accelerate launch` the main process holds it."""
    import os
    from contextlib import nullcontext

    from klue.io.lock import exclusive

    main = os.environ.get("RANK", "0") == "0"
    with exclusive(Path(settings.out), "klue pretrain mlm") if main else nullcontext():
        return _pretrain(settings, on_step)


def _pretrain(settings: MlmSettings, on_step: Callable[[int], None] | None) -> PretrainResult:
    import torch
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from transformers import AutoModelForMaskedLM, get_linear_schedule_with_warmup

    from klue.io.atomic import write_json_atomic
    from klue.models.loading import load_tokenizer
    from klue.training import state_files
    from klue.training.engine import optimizer_groups

    out = Path(settings.out)
    tokenizer = load_tokenizer(settings.tokenizer)
    if tokenizer.mask_token_id is None or tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise DataError(f"{settings.tokenizer}: a masked-LM tokenizer needs mask, cls and sep tokens")
    arch: Arch = settings.arch or infer_arch(tokenizer)
    set_seed(settings.seed)
    texts = read_corpus(settings.corpus)
    splitter = MorphemeSplitter() if settings.whole_word == "morpheme" else None
    blocks = pack_blocks(tokenizer, texts, settings.max_len, settings.whole_word, splitter)
    n_eval = int(len(blocks) * settings.eval_fraction)
    eval_blocks, train_blocks = blocks[:n_eval], blocks[n_eval:]
    if len(train_blocks) < 1:
        raise DataError("the corpus is too small: no training block")

    config = build_config(tokenizer, load_model_config(settings.model_config), arch, settings.max_len,
                          settings.dropout)
    model = AutoModelForMaskedLM.from_config(config)
    accelerator = Accelerator(cpu=settings.cpu, mixed_precision=settings.mixed_precision)
    optimizer = torch.optim.AdamW(optimizer_groups(model, settings.weight_decay), lr=settings.learning_rate)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup_ratio * settings.max_steps),
                                                settings.max_steps)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    collator = MaskingCollator(tokenizer.pad_token_id, tokenizer.mask_token_id, len(tokenizer),
                               frozenset(tokenizer.all_special_ids), settings.mask_prob)

    out.mkdir(parents=True, exist_ok=True)
    parts = state_files.TrainingParts(model, optimizer, scheduler, getattr(accelerator, "scaler", None))
    checkpoint = out / CHECKPOINT_DIR / "last"
    step = 0
    resumed_from: int | None = None
    fingerprint = settings.fingerprint()
    if settings.resume and (checkpoint / _STATE_FILE).is_file():
        state = json.loads((checkpoint / _STATE_FILE).read_text(encoding="utf-8"))
        if state.get("fingerprint") != fingerprint:
            raise DataError(f"{checkpoint}: the checkpoint was made with other settings; use another --out "
                            "or --no-resume")
        state_files.load(checkpoint, parts, accelerator.process_index, accelerator.device)
        step = resumed_from = int(state["step"])
    elif (out / LOG_FILE).exists():
        (out / LOG_FILE).unlink()

    def save_checkpoint() -> None:
        # Every process writes its part of the state into one shared directory, so this stays a fixed
        # temporary name, not io.atomic's per-caller one.
        tmp = checkpoint.with_name("last.tmp")
        if accelerator.is_main_process:
            shutil.rmtree(tmp, ignore_errors=True)
        accelerator.wait_for_everyone()
        state_files.save(tmp, parts, accelerator.process_index, accelerator.is_main_process)
        accelerator.wait_for_everyone()
        if accelerator.is_main_process:
            write_json_atomic(tmp / _STATE_FILE, {"step": step, "fingerprint": fingerprint})
            shutil.rmtree(checkpoint, ignore_errors=True)
            tmp.rename(checkpoint)
        accelerator.wait_for_everyone()

    progress = _Progress(settings.progress and accelerator.is_main_process, settings.max_steps, step)
    model.train()
    losses: list[tuple[int, float]] = []
    tokens_seen = 0
    started = time.perf_counter()
    window_tokens, window_start = 0, started
    running = 0.0
    while step < settings.max_steps:
        if settings.max_minutes is not None and time.perf_counter() - started > 60 * settings.max_minutes:
            break
        batch_blocks = [train_blocks[i] for i in batch_indices(len(train_blocks), settings.batch_size,
                                                               settings.seed, step)]
        batch = collator(batch_blocks, _generator(settings.seed, step))
        batch = {k: v.to(accelerator.device) for k, v in batch.items()}
        loss = model(**batch).loss
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        step += 1
        n_tokens = int(batch["attention_mask"].sum())
        tokens_seen += n_tokens
        window_tokens += n_tokens
        running += float(loss.detach())
        if step % settings.log_every == 0 or step == settings.max_steps:
            span = settings.log_every if step % settings.log_every == 0 else step % settings.log_every
            mean = running / span
            running = 0.0
            now = time.perf_counter()
            speed = window_tokens / max(now - window_start, 1e-9)
            window_tokens, window_start = 0, now
            losses.append((step, mean))
            if accelerator.is_main_process:
                _append_log(out / LOG_FILE, {"step": step, "loss": mean, "lr": scheduler.get_last_lr()[0],
                                             "tokens_per_s": speed, "elapsed_s": now - started})
            progress.update(step, mean, speed)
        else:
            progress.update(step)
        if settings.save_every and step % settings.save_every == 0 and step < settings.max_steps:
            save_checkpoint()
        if on_step is not None:
            on_step(step)
    train_time = time.perf_counter() - started
    progress.close()

    eval_loss = evaluate_mlm(accelerator.unwrap_model(model), collator, eval_blocks, settings.batch_size,
                             settings.seed, accelerator.device) if eval_blocks else None
    finished = step >= settings.max_steps
    result = PretrainResult(out, step, resumed_from, losses[0][1] if losses else None,
                            losses[-1][1] if losses else None, eval_loss, len(blocks),
                            sum(len(b.input_ids) for b in blocks), train_time,
                            tokens_seen / train_time if train_time > 0 else 0.0, losses)
    if accelerator.is_main_process:
        unwrapped = accelerator.unwrap_model(model)
        unwrapped.save_pretrained(str(out), safe_serialization=True)
        tokenizer.save_pretrained(str(out))
        card = Path(settings.tokenizer) / TOKENIZER_CARD
        if card.is_file():
            shutil.copyfile(card, out / card.name)
        write_json_atomic(out / SUMMARY_FILE, {
            "format": "klue.mlm-summary/1", "settings": {k: str(v) if isinstance(v, Path) else v
                                                         for k, v in asdict(settings).items()
                                                         if k != "corpus"},
            "corpus": [str(p) for p in settings.corpus], "arch": arch, "finished": finished,
            "steps": step, "resumed_from": resumed_from, "n_blocks": len(blocks), "n_eval_blocks": n_eval,
            "first_loss": result.first_loss, "last_loss": result.last_loss, "eval_loss": eval_loss,
            "train_time_s": train_time, "tokens_per_s": result.tokens_per_s,
            "num_parameters": sum(p.numel() for p in unwrapped.parameters())})
    if finished:
        shutil.rmtree(out / CHECKPOINT_DIR, ignore_errors=True)
    else:
        save_checkpoint()  # stopped by the time budget: resumable
    accelerator.wait_for_everyone()
    return result


def evaluate_mlm(model: Any, collator: MaskingCollator, blocks: Sequence[Block], batch_size: int, seed: int,
                 device: Any) -> float:
    """Mean masked-LM loss per masked token over `blocks`, with masks fixed by `seed` (comparable runs)."""
    import torch

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(blocks), batch_size):
            batch = collator(blocks[start:start + batch_size], _generator(seed + 7919, start))
            batch = {k: v.to(device) for k, v in batch.items()}
            n = int((batch["labels"] != -100).sum())
            total += float(model(**batch).loss) * n
            count += n
    model.train()
    return total / count if count else math.nan


class _Progress:
    def __init__(self, enabled: bool, total: int, done: int) -> None:
        self._bar = None
        if enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("mlm"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                                 TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("mlm", total=total, completed=done, info="")

    def update(self, step: int, loss: float | None = None, speed: float | None = None) -> None:
        if self._bar is not None:
            info = f"loss {loss:.3f} {speed:.0f} tok/s" if loss is not None and speed is not None else None
            self._bar.update(self._task, completed=step, **({"info": info} if info else {}))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
