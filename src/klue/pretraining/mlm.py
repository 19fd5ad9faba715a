"""Masked-LM pretraining (BERT / RoBERTa) on accelerate, with dynamic and whole-word masking.

    from klue.pretraining.mlm import MlmSettings, pretrain
    pretrain(MlmSettings(tokenizer=Path("tok"), model_config="tiny", corpus=[Path("a.txt")], out=Path("m")))

The output directory is a Hugging Face model directory (`AutoModel.from_pretrained(out)` loads the encoder,
`AutoModelForMaskedLM` the whole model) with the tokenizer beside it, so `klue train --model out` fine-tunes
it. The steps are the training loop fine-tuning uses (klue.training.loop): while running, `out/checkpoints/`
holds the resumable state (model, optimizer, scheduler, RNG in safetensors and JSON, never a pickle:
klue.training.checkpoint), and running the same command again resumes from it. `out/train_log.jsonl` gets
one line per logging step (the mean loss per masked token since the last line, learning rate, tokens/s),
`out/pretrain_summary.json` the final figures.

Masking is dynamic: the positions are drawn when a batch is built, each block's from a generator seeded by
(seed, step, its row in the batch), so every epoch masks differently, a resumed run masks exactly as an
uninterrupted one, and N processes (each taking every N-th row; the loss normalised over the global batch)
train as one does. The blocks come from the corpus (packed in memory) or from token shards
(`klue pretrain prepare`, read by memory map: klue.pretraining.shards). With whole-word
masking a word (whitespace word, or Kiwi morpheme) is chosen as a unit: all its sub-words or none. Chosen
tokens are replaced 80% by the mask token, 10% by a random token, 10% kept (BERT).
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from klue.errors import DataError
from klue.pretraining.corpus import iter_corpus
from klue.pretraining.morphemes import MorphemeSplitter
from klue.pretraining.packing import Block, WholeWord, pack_blocks
from klue.pretraining.tokenizer import SPEC_FILE as TOKENIZER_CARD

if TYPE_CHECKING:
    from klue.pretraining.shards import BlockRange

Arch = Literal["bert", "roberta"]
ARCHS: tuple[Arch, ...] = ("bert", "roberta")
PRESETS: dict[str, dict[str, int]] = {
    "tiny": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128},
    "small": {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024},
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "large": {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096},
}
OLD_CHECKPOINT = Path("checkpoints") / "last"  # where klue before the shared loop kept its one checkpoint
LOG_FILE = "train_log.jsonl"
SUMMARY_FILE = "pretrain_summary.json"


@dataclass(frozen=True)
class MlmSettings:
    tokenizer: Path
    model_config: str  # a preset name (PRESETS) or a JSON / YAML file of config fields
    corpus: Sequence[Path]  # read and packed in memory; empty when `data` (token shards) is given
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
    # auto (`klue pretrain mlm`'s default too, as `klue train`'s): bf16 where the GPU has it, fp16 on other GPUs,
    # bf16 on a CPU with bf16 units, else none (`mixed_precision_for`); or no, fp16, bf16
    mixed_precision: str = "auto"
    dropout: float = 0.1
    progress: bool = True
    data: Path | None = None  # a `klue pretrain prepare` directory: blocks read by memory map


    def fingerprint(self) -> dict[str, Any]:
        """What must match for a checkpoint to be resumed (not the stop conditions or logging)."""
        keep = ("model_config", "arch", "max_len", "batch_size", "learning_rate", "weight_decay",
                "warmup_ratio", "max_steps", "mask_prob", "whole_word", "seed", "eval_fraction")
        obj = asdict(self)
        found = {k: obj[k] for k in keep} | {"corpus": [str(p) for p in self.corpus]}
        if self.data is not None:
            from klue.pretraining.shards import shards_sha256

            found["data"] = shards_sha256(self.data)  # the shards' content, wherever they are
        return found


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


@dataclass
class MaskingCollator:
    """Pads a batch of blocks and masks it; the generator is seeded per step by the caller."""

    pad_id: int
    mask_id: int
    vocab_size: int
    special_ids: frozenset[int]
    mask_prob: float = 0.15

    def __call__(self, blocks: Sequence[Block], generator: Any) -> dict[str, Any]:
        """`generator`: one torch.Generator for the batch, or a list of one per block (training: a block's
        masks then do not depend on which process, or which batch row, it lands in)."""
        import torch

        generators = generator if isinstance(generator, list) else [generator] * len(blocks)

        length = max(len(b.input_ids) for b in blocks)
        input_ids = torch.full((len(blocks), length), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(blocks), length), dtype=torch.long)
        labels = torch.full((len(blocks), length), -100, dtype=torch.long)
        for row, block in enumerate(blocks):
            generator = generators[row]
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


def _generator(seed: int, step: int, row: int = 0) -> Any:
    """The masking generator of one block of a step's batch (by its row in the global batch)."""
    import torch

    generator = torch.Generator()
    generator.manual_seed(seed * 1_000_003 + step + row * (1 << 40))
    return generator


def masked_lm_loss_sum(model: Any, batch: dict[str, Any]) -> Any:
    """The masked-LM loss summed over the batch's masked tokens (the training loop divides it by the masked
    tokens of the whole global batch)."""
    import torch

    labels = batch["labels"]
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    return torch.nn.functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1),
                                             ignore_index=-100, reduction="sum")


@dataclass
class MaskedLmSteps:
    """The training loop's objective (klue.training.loop): step `step`'s global batch of blocks, each of N
    processes taking every N-th row, masked row by row; its loss items are the masked tokens of the whole
    global batch, its throughput the tokens."""

    model: Any
    collator: MaskingCollator
    blocks: BlockRange
    batch_size: int
    seed: int
    accelerator: Any

    def plan(self, step: int) -> Any:
        import torch

        from klue.training.loop import StepPlan

        acc = self.accelerator
        world = acc.num_processes
        indices = batch_indices(len(self.blocks), self.batch_size, self.seed, step)
        rows = range(acc.process_index, len(indices), world)
        batch = self.collator([self.blocks[indices[r]] for r in rows], [_generator(self.seed, step, r) for r in rows])
        batch = {k: v.to(acc.device) for k, v in batch.items()}
        counts = torch.stack([(batch["labels"] != -100).sum(), batch["attention_mask"].sum()])
        if world > 1:
            counts = acc.reduce(counts, reduction="sum")
        return StepPlan([(batch, 1.0)], items=int(counts[0]), examples=int(counts[1]))

    def loss_sum(self, micro_batch: dict[str, Any]) -> Any:
        return masked_lm_loss_sum(self.model, micro_batch)


def _training_blocks(settings: MlmSettings, tokenizer: Any) -> Any:
    """Every block, in memory (`corpus`) or memory-mapped from token shards (`data`)."""
    if settings.data is None:
        if not settings.corpus:
            raise DataError("give a corpus (--corpus) or prepared token shards (--data)")
        splitter = MorphemeSplitter() if settings.whole_word == "morpheme" else None
        return pack_blocks(tokenizer, iter_corpus(settings.corpus), settings.max_len, settings.whole_word,
                           splitter)
    from klue.pretraining.shards import ShardedBlocks, tokenizer_sha256

    blocks = ShardedBlocks(settings.data)
    manifest = blocks.manifest
    if manifest["tokenizer"]["sha256"] != tokenizer_sha256(settings.tokenizer):
        raise DataError(f"the shards were made with another tokenizer ({manifest['tokenizer']['path']}) than "
                        f"{settings.tokenizer}", settings.data)
    for name, mine in (("max_len", settings.max_len), ("whole_word", settings.whole_word)):
        if manifest[name] != mine:
            raise DataError(f"the shards were packed with {name} {manifest[name]!r}, not {mine!r}: pass the same "
                            "value (or prepare the shards again)", settings.data)
    return blocks


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


def _truncate_log(path: Path, step: int) -> None:
    """Keep the log lines up to `step`: a run killed after its last checkpoint logged steps it redoes."""
    if not path.is_file():
        return
    from klue.io.atomic import write_text_atomic

    kept = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line).get("step", 0) <= step]
    write_text_atomic(path, "".join(line + "\n" for line in kept))


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
    from accelerate.utils import set_seed
    from transformers import AutoModelForMaskedLM, get_linear_schedule_with_warmup

    from klue.io.atomic import write_json_atomic
    from klue.models.loading import load_tokenizer
    from klue.pretraining.shards import BlockRange, ShardedBlocks
    from klue.training import checkpoint, state_files
    from klue.training.engine import fresh_accelerator, mixed_precision_for, optimizer_groups
    from klue.training.loop import CheckpointPolicy, LoopSettings, train_steps

    out = Path(settings.out)
    tokenizer = load_tokenizer(settings.tokenizer)
    if tokenizer.mask_token_id is None or tokenizer.cls_token_id is None or tokenizer.sep_token_id is None:
        raise DataError(f"{settings.tokenizer}: a masked-LM tokenizer needs mask, cls and sep tokens")
    arch: Arch = settings.arch or infer_arch(tokenizer)
    set_seed(settings.seed)
    blocks = _training_blocks(settings, tokenizer)
    n_eval = int(len(blocks) * settings.eval_fraction)
    eval_blocks, train_blocks = BlockRange(blocks, 0, n_eval), BlockRange(blocks, n_eval, len(blocks))
    if len(train_blocks) < 1:
        raise DataError("the corpus is too small: no training block")
    n_tokens = blocks.n_tokens if isinstance(blocks, ShardedBlocks) else sum(len(b.input_ids) for b in blocks)

    config = build_config(tokenizer, load_model_config(settings.model_config), arch, settings.max_len,
                          settings.dropout)
    model = AutoModelForMaskedLM.from_config(config)
    accelerator = fresh_accelerator(cpu=settings.cpu,
                                    mixed_precision=mixed_precision_for(settings.mixed_precision, settings.cpu))
    world = accelerator.num_processes
    if settings.batch_size % world:
        raise DataError(f"--batch-size {settings.batch_size} (the global batch) does not split evenly over "
                        f"{world} processes")
    optimizer = torch.optim.AdamW(optimizer_groups(model, settings.weight_decay), lr=settings.learning_rate)
    scheduler = get_linear_schedule_with_warmup(optimizer, int(settings.warmup_ratio * settings.max_steps),
                                                settings.max_steps)
    # The scheduler is not `prepare`d: accelerate would step it once per process per step.
    model, optimizer = accelerator.prepare(model, optimizer)
    collator = MaskingCollator(tokenizer.pad_token_id, tokenizer.mask_token_id, len(tokenizer),
                               frozenset(tokenizer.all_special_ids), settings.mask_prob)

    out.mkdir(parents=True, exist_ok=True)
    if settings.resume and (out / OLD_CHECKPOINT).is_dir():
        raise DataError(f"{out / OLD_CHECKPOINT} is a checkpoint of an older klue, which this one does not "
                        f"resume; delete {out / OLD_CHECKPOINT.parent} to start over", out)
    parts = state_files.TrainingParts(model, optimizer, scheduler, getattr(accelerator, "scaler", None))
    state = checkpoint.resume_or_start(accelerator, out, checkpoint.fingerprint(settings.fingerprint()), parts,
                                       settings.resume, start_over="another --out, or --no-resume")
    resumed_from = state.step if state.resumed_from else None
    if accelerator.is_main_process:
        if resumed_from is not None:
            _truncate_log(out / LOG_FILE, resumed_from)
        else:
            (out / LOG_FILE).unlink(missing_ok=True)
    started = time.perf_counter()

    def log(point: Any) -> None:
        if accelerator.is_main_process:
            _append_log(out / LOG_FILE, {"step": point.step, "loss": point.loss, "lr": point.learning_rate,
                                         "tokens_per_s": point.examples_per_s,
                                         "elapsed_s": time.perf_counter() - started})

    per_epoch = max(1, len(train_blocks) // settings.batch_size)
    # Every `save_every` steps and on the time budget, not after the last step: the model is saved then.
    saves = CheckpointPolicy(every_steps=settings.save_every or None, at_end="none")
    loop = LoopSettings(settings.max_steps, per_epoch, settings.log_every, 1.0, frozenset(), saves,
                        max_seconds=60 * settings.max_minutes if settings.max_minutes is not None else None,
                        progress=settings.progress, label="mlm", unit="tok/s")
    steps = MaskedLmSteps(model, collator, train_blocks, settings.batch_size, settings.seed, accelerator)
    train_steps(accelerator, parts, steps, loop, state, out, on_log=log, on_step=on_step)

    eval_loss = evaluate_mlm(accelerator.unwrap_model(model), collator, eval_blocks, settings.batch_size,
                             settings.seed, accelerator.device) if eval_blocks else None
    finished = state.step >= settings.max_steps
    losses = [(p.step, p.loss) for p in state.learning_curve if p.loss is not None]
    result = PretrainResult(out, state.step, resumed_from, losses[0][1] if losses else None,
                            losses[-1][1] if losses else None, eval_loss, len(blocks), n_tokens, state.train_time_s,
                            state.examples_seen / state.train_time_s if state.train_time_s > 0 else 0.0, losses)
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
            "corpus": [str(p) for p in settings.corpus],
            "data": str(settings.data) if settings.data is not None else None, "arch": arch, "finished": finished,
            "steps": state.step, "resumed_from": resumed_from, "n_blocks": len(blocks), "n_eval_blocks": n_eval,
            "first_loss": result.first_loss, "last_loss": result.last_loss, "eval_loss": eval_loss,
            "train_time_s": result.train_time_s, "tokens_per_s": result.tokens_per_s,
            "mixed_precision": accelerator.mixed_precision, "num_processes": world,
            "num_parameters": sum(p.numel() for p in unwrapped.parameters())})
    if finished:
        checkpoint.remove_all(accelerator, out)  # else stopped by the time budget: the loop saved a checkpoint
    accelerator.wait_for_everyone()
    return result


def evaluate_mlm(model: Any, collator: MaskingCollator, blocks: Sequence[Block] | BlockRange, batch_size: int,
                 seed: int, device: Any) -> float:
    """Mean masked-LM loss per masked token over `blocks`, with masks fixed by `seed` (comparable runs)."""
    import torch

    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(blocks), batch_size):
            chunk = [blocks[i] for i in range(start, min(start + batch_size, len(blocks)))]
            batch = collator(chunk, _generator(seed + 7919, start))
            batch = {k: v.to(device) for k, v in batch.items()}
            n = int((batch["labels"] != -100).sum())
            total += float(model(**batch).loss) * n
            count += n
    model.train()
    return total / count if count else math.nan
