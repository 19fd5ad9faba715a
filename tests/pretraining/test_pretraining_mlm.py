"""Masked-LM pretraining: masking rules, loss falls, resume is exact, the output loads and fine-tunes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from klue.pretraining.mlm import MaskingCollator, MlmSettings, batch_indices, pack_blocks, pretrain
from klue.pretraining.tokenizer import TokenizerSpec, save_tokenizer, train_tokenizer

TEXTS = [
    "그는 서울에서 학교를 다녔다.", "그녀는 부산에서 회사를 다녔다.", "우리는 매일 아침 공원을 걸었다.",
    "아이들이 운동장에서 공을 차고 있다.", "한 남자가 기타를 치면서 노래를 부른다.", "고양이가 창가에서 잠을 잔다.",
    "오늘은 비가 와서 집에 있었다.", "학생들은 도서관에서 책을 읽었다.",
]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = TokenizerSpec("wordpiece", "morpheme", vocab_size=300, min_frequency=1)
    return save_tokenizer(train_tokenizer(TEXTS * 4, spec), spec, tmp_path_factory.mktemp("mlm") / "tok")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(TEXTS * 8) + "\n", encoding="utf-8")
    return path


def _settings(tokenizer_dir: Path, corpus: Path, out: Path, **kw: object) -> MlmSettings:
    base: dict[str, object] = {"tokenizer": tokenizer_dir, "model_config": "tiny", "corpus": [corpus], "out": out,
                                   "max_len": 32, "batch_size": 8, "learning_rate": 2e-3, "max_steps": 50, "save_every": 0,
                                   "log_every": 10, "seed": 3, "progress": False, "cpu": True}
    base.update(kw)
    return MlmSettings(**base)  # type: ignore[arg-type]


class Stop(Exception):
    """A run interrupted from its `on_step` hook, as a kill would."""


def stop_at(step: int) -> Callable[[int], None]:
    def hook(done: int) -> None:
        if done == step:
            raise Stop

    return hook


@pytest.mark.slow
def test_whole_word_masking_masks_words_as_units(tokenizer_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    blocks = pack_blocks(tok, TEXTS * 4, 32, "word")
    assert all(len(b.input_ids) <= 32 and b.input_ids[0] == tok.cls_token_id for b in blocks)
    collator = MaskingCollator(tok.pad_token_id, tok.mask_token_id, len(tok), frozenset(tok.all_special_ids), 0.3)
    generator = torch.Generator().manual_seed(0)
    batch = collator(blocks, generator)
    for row, block in enumerate(blocks):
        chosen = batch["labels"][row, :len(block.input_ids)] != -100
        assert chosen.any()
        for word in set(block.word_ids) - {-1}:
            positions = [i for i, w in enumerate(block.word_ids) if w == word]
            assert len({bool(chosen[i]) for i in positions}) == 1  # all sub-words of a word, or none
        assert not chosen[0] and not chosen[len(block.input_ids) - 1]  # never the special tokens
    # dynamic: another step masks other positions
    other = collator(blocks, torch.Generator().manual_seed(1))
    assert not torch.equal(batch["labels"], other["labels"])


def test_batches_are_seeded_permutations() -> None:
    first_epoch = [i for step in range(4) for i in batch_indices(32, 8, seed=1, step=step)]
    assert sorted(first_epoch) == list(range(32))
    assert batch_indices(32, 8, 1, 5) == batch_indices(32, 8, 1, 5) != batch_indices(32, 8, 2, 5)


def test_loss_falls_and_output_loads(tokenizer_dir: Path, corpus: Path, tmp_path: Path) -> None:
    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer

    torch.set_num_threads(1)
    out = tmp_path / "model"
    result = pretrain(_settings(tokenizer_dir, corpus, out, whole_word="morpheme"))
    assert result.steps == 50 and result.first_loss is not None and result.last_loss is not None
    assert result.last_loss < result.first_loss - 1.0, result.losses
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [10, 20, 30, 40, 50] and all(r["tokens_per_s"] > 0 for r in log)
    assert not (out / "checkpoints").exists()  # finished: nothing to resume
    encoder = AutoModel.from_pretrained(str(out))
    assert encoder.config.hidden_size == 64
    mlm = AutoModelForMaskedLM.from_pretrained(str(out))
    tok = AutoTokenizer.from_pretrained(str(out))
    with torch.no_grad():
        assert mlm(**tok(TEXTS[0], return_tensors="pt")).logits.shape[-1] == len(tok)


def test_interrupted_run_resumes_exactly(tokenizer_dir: Path, corpus: Path, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    whole = pretrain(_settings(tokenizer_dir, corpus, tmp_path / "whole", max_steps=12, save_every=4))
    cut = tmp_path / "cut"
    with pytest.raises(Stop):
        pretrain(_settings(tokenizer_dir, corpus, cut, max_steps=12, save_every=4), on_step=stop_at(9))
    resumed = pretrain(_settings(tokenizer_dir, corpus, cut, max_steps=12, save_every=4))
    assert resumed.resumed_from == 8
    from safetensors.torch import load_file

    a, b = load_file(str(tmp_path / "whole" / "model.safetensors")), load_file(str(cut / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    assert whole.steps == resumed.steps == 12


def test_roberta_arch_from_tokenizer(tmp_path: Path, corpus: Path) -> None:
    from transformers import AutoConfig

    spec = TokenizerSpec("bpe", "whitespace", vocab_size=300, style="roberta", min_frequency=1)
    tok_dir = save_tokenizer(train_tokenizer(TEXTS * 4, spec), spec, tmp_path / "tok")
    out = tmp_path / "roberta"
    pretrain(_settings(tok_dir, corpus, out, max_steps=3, log_every=1))
    config = AutoConfig.from_pretrained(str(out))
    assert config.model_type == "roberta" and config.type_vocab_size == 1
    assert config.max_position_embeddings == 34


def test_a_time_budget_stop_saves_a_checkpoint_the_rerun_resumes_exactly(tokenizer_dir: Path, corpus: Path,
                                                                         tmp_path: Path) -> None:
    """Stopped by --max-minutes (here 0: before its first step, once resumed at step 4), a run saves where it
    stands; the run after it ends with the weights and logged losses of an uninterrupted one."""
    from safetensors.torch import load_file

    from klue.training import checkpoint

    torch.set_num_threads(1)
    settings = {"max_steps": 8, "save_every": 4, "log_every": 3}
    whole = pretrain(_settings(tokenizer_dir, corpus, tmp_path / "whole", **settings))
    cut = tmp_path / "cut"
    with pytest.raises(Stop):
        pretrain(_settings(tokenizer_dir, corpus, cut, **settings), on_step=stop_at(6))
    budget = pretrain(_settings(tokenizer_dir, corpus, cut, max_minutes=0.0, **settings))
    assert budget.steps == 4 and budget.resumed_from == 4
    assert json.loads((cut / "pretrain_summary.json").read_text())["finished"] is False
    latest = checkpoint.latest_checkpoint(cut)
    assert latest is not None and checkpoint.read_state(latest).step == 4
    resumed = pretrain(_settings(tokenizer_dir, corpus, cut, **settings))
    assert resumed.resumed_from == 4 and resumed.steps == 8 and not (cut / "checkpoints").exists()
    assert resumed.losses == whole.losses  # step 3's loss, logged before the cut, and step 6's, logged over it
    a, b = load_file(str(tmp_path / "whole" / "model.safetensors")), load_file(str(cut / "model.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_checkpoint_of_the_old_layout_is_refused_not_ignored(tokenizer_dir: Path, corpus: Path,
                                                               tmp_path: Path) -> None:
    from klue.errors import DataError

    (tmp_path / "m" / "checkpoints" / "last").mkdir(parents=True)
    with pytest.raises(DataError, match="older klue"):
        pretrain(_settings(tokenizer_dir, corpus, tmp_path / "m", max_steps=2))


def test_pretraining_after_a_bf16_run_in_the_same_process(tokenizer_dir: Path, corpus: Path, tmp_path: Path) -> None:
    # accelerate's state is process-wide: a fine-tune with mixed_precision=auto on a CPU with bf16 units
    # leaves bf16 in it, and a later Accelerator asking for fp32 was refused ("already been initialized").
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state()  # as in a fresh process, whatever tests ran before in this one
    assert Accelerator(cpu=True, mixed_precision="bf16").mixed_precision == "bf16"
    pretrain(_settings(tokenizer_dir, corpus, tmp_path / "m", max_steps=2, mixed_precision="no"))
    assert json.loads((tmp_path / "m" / "pretrain_summary.json").read_text())["mixed_precision"] == "no"
