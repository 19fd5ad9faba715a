"""Token shards: the same bytes for 1 and 2 workers, the same blocks and losses as the in-memory path,
resuming after kill -9 (prepare and mlm) gives the results of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from klue.errors import DataError
from klue.pretraining.mlm import MlmSettings, pack_blocks, pretrain
from klue.pretraining.shards import INDEX_FILE, PrepareSettings, ShardedBlocks, prepare
from klue.pretraining.tokenizer import TokenizerSpec, save_tokenizer, train_tokenizer
from klue.training import checkpoint

KLUE = [sys.executable, "-c", "from klue.cli import main; main()"]
WORDS = ["그는", "서울에서", "학교를", "다녔다", "그녀는", "부산에서", "회사를", "우리는", "매일", "아침", "공원을",
         "걸었다", "아이들이", "운동장에서", "공을", "차고", "있다", "고양이가", "창가에서", "잠을", "잔다"]


def synthetic_texts(n: int, seed: int = 0) -> list[str]:
    """`n` Korean sentences of 3 to 14 words (some longer than a 32-token block), seeded."""
    import random

    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))) + "." for _ in range(n)]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = TokenizerSpec("wordpiece", "whitespace", vocab_size=200, min_frequency=1)
    return save_tokenizer(train_tokenizer(synthetic_texts(200), spec), spec, tmp_path_factory.mktemp("tok") / "tok")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(synthetic_texts(400)) + "\n", encoding="utf-8")
    return path


def files_of(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def _prepare(tokenizer_dir: Path, corpus: Path, out: Path, **kw: object) -> object:
    base: dict[str, object] = {"tokenizer": tokenizer_dir, "corpus": [corpus], "out": out, "max_len": 32,
                               "whole_word": "word", "shard_texts": 70, "progress": False}
    base.update(kw)
    return prepare(PrepareSettings(**base))  # type: ignore[arg-type]


def test_shards_are_the_same_bytes_for_one_and_two_workers(tokenizer_dir: Path, corpus: Path,
                                                           tmp_path: Path) -> None:
    one = _prepare(tokenizer_dir, corpus, tmp_path / "one")
    two = _prepare(tokenizer_dir, corpus, tmp_path / "two", workers=2)
    a, b = files_of(tmp_path / "one"), files_of(tmp_path / "two")
    assert len([n for n in a if n.endswith("tokens.npy")]) == 6  # 400 texts, 70 a shard
    assert a == b
    assert one.tokens == two.tokens > 0  # type: ignore[attr-defined]


def test_one_shard_holds_exactly_the_in_memory_blocks(tokenizer_dir: Path, corpus: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    texts = corpus.read_text(encoding="utf-8").splitlines()
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    for whole_word in ("none", "word"):
        out = tmp_path / whole_word
        _prepare(tokenizer_dir, corpus, out, whole_word=whole_word, shard_texts=10_000)
        shards = ShardedBlocks(out)
        expected = pack_blocks(tokenizer, texts, 32, whole_word)  # type: ignore[arg-type]
        assert len(shards) == len(expected) > 50
        assert [shards[i] for i in range(len(shards))] == expected
        assert json.loads((out / "manifest.json").read_text())["whole_word"] == whole_word


def test_a_rerun_checks_the_manifest_and_skips_finished_shards(tokenizer_dir: Path, corpus: Path,
                                                               tmp_path: Path) -> None:
    out = tmp_path / "s"
    first = _prepare(tokenizer_dir, corpus, out)
    again = _prepare(tokenizer_dir, corpus, out)
    assert first.shards_written == 6 and again.shards_written == 0  # type: ignore[attr-defined]
    with pytest.raises(DataError, match="prepared from another max_len"):
        _prepare(tokenizer_dir, corpus, out, max_len=64)
    other = corpus.with_name("other.txt")
    other.write_text("\n".join(synthetic_texts(50, seed=1)) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="another corpus"):
        _prepare(tokenizer_dir, other, out)


def _mlm(tokenizer_dir: Path, out: Path, **kw: object) -> MlmSettings:
    base: dict[str, object] = {"tokenizer": tokenizer_dir, "model_config": "tiny", "corpus": [], "out": out,
                               "max_len": 32, "batch_size": 8, "learning_rate": 2e-3, "max_steps": 6, "save_every": 0,
                               "log_every": 1, "seed": 5, "progress": False, "cpu": True, "whole_word": "word"}
    base.update(kw)
    return MlmSettings(**base)  # type: ignore[arg-type]


def test_mlm_from_shards_has_the_in_memory_losses_step_by_step(tokenizer_dir: Path, corpus: Path,
                                                                tmp_path: Path) -> None:
    torch.set_num_threads(1)
    _prepare(tokenizer_dir, corpus, tmp_path / "shards", shard_texts=10_000)
    from_shards = pretrain(_mlm(tokenizer_dir, tmp_path / "a", data=tmp_path / "shards", eval_fraction=0.1))
    in_memory = pretrain(_mlm(tokenizer_dir, tmp_path / "b", corpus=[corpus], eval_fraction=0.1))
    assert len(from_shards.losses) == 6
    assert from_shards.losses == in_memory.losses
    assert from_shards.eval_loss == in_memory.eval_loss
    with pytest.raises(DataError, match="packed with max_len 32, not 64"):
        pretrain(_mlm(tokenizer_dir, tmp_path / "c", data=tmp_path / "shards", max_len=64))


def children_of(pid: int) -> list[int]:
    """Process ids whose parent is `pid` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _kill_when(process: subprocess.Popen[bytes], ready: object, limit_s: float = 90.0) -> None:
    """SIGKILL `process` as soon as `ready()` holds; fail when it ends first."""
    deadline = time.monotonic() + limit_s
    while not ready():  # type: ignore[operator]
        assert process.poll() is None, f"ended before it could be killed: {process.stderr.read()!r}"  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


@pytest.mark.slow
def test_prepare_killed_then_rerun_gives_the_uninterrupted_shards(tokenizer_dir: Path, corpus: Path,
                                                                  tmp_path: Path) -> None:
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    _prepare(tokenizer_dir, corpus, whole, shard_texts=5)
    args = ["pretrain", "prepare", "--tokenizer", str(tokenizer_dir), "-c", str(corpus), "-o", str(cut),
            "--max-len", "32", "--whole-word", "word", "--shard-texts", "5", "--workers", "2"]
    process = subprocess.Popen([*KLUE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    workers: list[int] = []

    def ready() -> bool:
        if not cut.is_dir() or len(list(cut.glob("shard-*"))) < 3:
            return False
        # The workers, read once they are writing shards: a scan of /proc at every 5 ms poll was most of
        # this test's CPU.
        workers[:] = children_of(process.pid)
        return True

    _kill_when(process, ready)
    assert not (cut / INDEX_FILE).exists() and len(list(cut.glob("shard-*"))) < 80  # killed half-way
    assert len(workers) >= 2
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]  # the workers died with it
    rerun = _prepare(tokenizer_dir, corpus, cut, shard_texts=5)  # the same settings as the command's
    assert 0 < rerun.shards_written < rerun.shards == 80  # type: ignore[attr-defined]
    assert files_of(cut) == files_of(whole)


@pytest.mark.slow
def test_mlm_killed_then_rerun_resumes_at_the_exact_block(tokenizer_dir: Path, corpus: Path, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    shards = tmp_path / "shards"
    _prepare(tokenizer_dir, corpus, shards)
    steps = 24  # the first checkpoint (step 4) leaves 20 steps in which to kill it
    whole = pretrain(_mlm(tokenizer_dir, tmp_path / "whole", data=shards, max_steps=steps, save_every=4,
                          log_every=4))
    cut = tmp_path / "cut"
    args = ["pretrain", "mlm", "--data", str(shards), "-o", str(cut), "--config", "tiny", "--max-steps", str(steps),
            "--batch-size", "8", "--learning-rate", "2e-3", "--save-every", "4", "--log-every", "4", "--seed", "5",
            "--cpu", "--mixed-precision", "no"]  # fp32 as the in-process run (the CLI's auto is bf16 on some CPUs)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen([*KLUE, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _kill_when(process, (cut / checkpoint.CHECKPOINTS / checkpoint.LATEST).is_file)
    latest = checkpoint.latest_checkpoint(cut)
    assert latest is not None
    resumed_at = checkpoint.read_state(latest).step
    assert 0 < resumed_at < steps
    rerun = pretrain(_mlm(tokenizer_dir, cut, data=shards, max_steps=steps, save_every=4, log_every=4))
    assert rerun.resumed_from is not None and rerun.resumed_from >= resumed_at and rerun.steps == steps
    from safetensors.torch import load_file

    a, b = load_file(str(tmp_path / "whole" / "model.safetensors")), load_file(str(cut / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    logged = [json.loads(line) for line in (cut / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged] == list(range(4, steps + 1, 4))  # no step logged twice
    assert [round(r["loss"], 5) for r in logged] == [round(loss, 5) for _, loss in whole.losses]


@pytest.mark.slow
def test_two_ddp_processes_train_as_one(tokenizer_dir: Path, corpus: Path, tmp_path: Path) -> None:
    """`klue pretrain mlm --data` in two CPU processes (torchrun, gloo): the losses and weights of one.
    Without dropout: its draws come from each process's own generator, the one thing N processes cannot
    share with one."""
    from klue.pretraining.mlm import PRESETS

    torch.set_num_threads(1)
    shards = tmp_path / "shards"
    _prepare(tokenizer_dir, corpus, shards)
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps({**PRESETS["tiny"], "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}))
    one = pretrain(_mlm(tokenizer_dir, tmp_path / "one", data=shards, max_steps=5, model_config=str(config)))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "ACCELERATE_USE_CPU": "true"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               str(Path(sys.executable).with_name("klue")), "pretrain", "mlm", "--data", str(shards), "-o", str(tmp_path / "two"),
               "--config", str(config), "--max-steps", "5", "--batch-size", "8", "--learning-rate", "2e-3",
               "--log-every", "1", "--seed", "5", "--save-every", "0", "--cpu", "--mixed-precision", "no"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads((tmp_path / "two" / "pretrain_summary.json").read_text())
    assert summary["num_processes"] == 2
    logged = [json.loads(line) for line in (tmp_path / "two" / "train_log.jsonl").read_text().splitlines()]
    assert [r["loss"] for r in logged] == pytest.approx([loss for _, loss in one.losses], rel=1e-4)
    assert [r["lr"] for r in logged] == pytest.approx(
        [json.loads(line)["lr"] for line in (tmp_path / "one" / "train_log.jsonl").read_text().splitlines()])
    from safetensors.torch import load_file

    a, b = load_file(str(tmp_path / "one" / "model.safetensors")), load_file(str(tmp_path / "two" / "model.safetensors"))
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-4, atol=1e-5)
