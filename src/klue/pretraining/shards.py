"""Token shards: a corpus tokenized and packed into masked-LM blocks once, on disk, read by memory map.

    from klue.pretraining.shards import PrepareSettings, prepare, ShardedBlocks
    prepare(PrepareSettings(tokenizer=Path("tok"), corpus=[Path("corpus/")], out=Path("shards"), workers=4))
    blocks = ShardedBlocks(Path("shards"))    # len(blocks), blocks[i] -> Block, without loading the shards

Layout of the output directory:
    manifest.json          what the shards are made of: the corpus files (size, SHA-256), the tokenizer
                           (SHA-256 of its files), block length, masking unit, texts per shard, token dtype
    shard-000000/          one shard: the blocks of texts [i*K, (i+1)*K) of the corpus (K texts per shard)
        tokens.npy         every token of its blocks, concatenated (uint16 when the vocabulary fits, else int32)
        units.npy          the masking unit of each token, numbered from 0 per block (int16; word and
                           morpheme units only: for `none` the unit is the position)
        offsets.npy        int64, block b is tokens[offsets[b]:offsets[b+1]]
        shard.json         its counts (texts, blocks, tokens)
    index.json             written last: every shard's counts; its presence says the shards are complete

Why this shape: numpy `.npy` files open with `np.load(mmap_mode="r")`, so a block is a slice of a mapped
file and the training process holds only the pages it touches (the page cache does the rest); a flat
token array plus offsets is the smallest random-access form of variable-length blocks.

Determinism and parallelism: the corpus is cut into shards by position (every K texts), never by worker,
and a shard's blocks depend only on its texts and the manifest, so any number of workers writes the same
bytes. The main process streams the corpus and hands each shard's texts to a pool of worker processes
(spawn), keeping at most two shards per worker in flight, so memory is flat whatever the corpus size.

Resuming: each shard directory is written beside its place and renamed in (klue.io.atomic), so a shard is
either complete or absent; a rerun (same command) checks that the manifest matches and skips every shard
already there. A block never spans two shards, so shard boundaries add at most one short block per shard
compared with packing the whole corpus at once (with one shard the blocks are exactly `pack_blocks`').
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from klue.errors import DataError
from klue.io.progress import Progress
from klue.pretraining.corpus import CorpusSource, corpus_fingerprint, iter_corpus
from klue.pretraining.packing import WHOLE_WORD, Block, WholeWord, iter_blocks

FORMAT = "klue.token-shards/1"
MANIFEST_FILE = "manifest.json"
INDEX_FILE = "index.json"
SHARD_FILE = "shard.json"
TOKENS_FILE = "tokens.npy"
UNITS_FILE = "units.npy"
OFFSETS_FILE = "offsets.npy"
SHARD_PREFIX = "shard-"
DEFAULT_SHARD_TEXTS = 100_000


def shard_name(index: int) -> str:
    return f"{SHARD_PREFIX}{index:06d}"


def tokenizer_sha256(directory: Path) -> str:
    """One SHA-256 over every file of a tokenizer directory (names and contents, sorted by name)."""
    from klue.io.hashing import sha256_file

    directory = Path(directory)
    files = sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.startswith("."))
    if not files:
        raise DataError("no tokenizer files here", directory)
    digest = hashlib.sha256()
    for file in files:
        digest.update(f"{file.relative_to(directory).as_posix()}\0{sha256_file(file)}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class PrepareSettings:
    tokenizer: Path
    corpus: Sequence[CorpusSource]
    out: Path
    max_len: int = 128
    whole_word: WholeWord = "none"
    shard_texts: int = DEFAULT_SHARD_TEXTS  # texts per shard: fixes the cut, whatever the worker count
    workers: int = 1
    text_field: str = "text"
    progress: bool = True


@dataclass(frozen=True)
class ShardJob:
    """What a worker needs to write one shard (small and picklable: the tokenizer is loaded by path)."""

    index: int
    texts: list[str]
    tokenizer: str  # the Rust tokenizer's JSON, exactly as transformers set it up in the main process
    cls_id: int
    sep_id: int
    max_len: int
    whole_word: WholeWord
    token_dtype: str
    out: str


@dataclass(frozen=True)
class ShardInfo:
    name: str
    texts: int
    blocks: int
    tokens: int


@dataclass(frozen=True)
class PrepareResult:
    out: Path
    shards: int
    shards_written: int  # by this run (the rest were there from an interrupted one)
    texts: int
    blocks: int
    tokens: int
    seconds: float


@dataclass(frozen=True)
class _RustTokenizer:
    """What packing needs of a tokenizer, without transformers (and torch) in every worker: workers start
    in a fraction of the time and hold a fraction of the memory."""

    backend_tokenizer: Any
    cls_token_id: int
    sep_token_id: int


@functools.lru_cache(maxsize=2)
def _tokenizer(state: str, cls_id: int, sep_id: int) -> _RustTokenizer:
    from tokenizers import Tokenizer

    return _RustTokenizer(Tokenizer.from_str(state), cls_id, sep_id)


@functools.lru_cache(maxsize=1)
def _splitter() -> Any:
    from klue.pretraining.morphemes import MorphemeSplitter

    return MorphemeSplitter()


def _save_npy(path: Path, array: np.ndarray) -> None:
    with path.open("wb") as handle:
        np.save(handle, array, allow_pickle=False)


def write_shard(job: ShardJob) -> ShardInfo:
    """Tokenize and pack one shard's texts and write the shard directory atomically (worker or main)."""
    from array import array

    from klue.io.atomic import write_dir_atomic

    tokenizer = _tokenizer(job.tokenizer, job.cls_id, job.sep_id)
    splitter = _splitter() if job.whole_word == "morpheme" else None
    tokens = np.dtype(job.token_dtype)
    # array.array grows compactly (2 or 4 bytes a token), unlike a list of Python ints.
    token_buffer = array("H" if tokens == np.uint16 else "i")
    unit_buffer = array("h")
    offsets = array("q", [0])
    for block in iter_blocks(tokenizer, job.texts, job.max_len, job.whole_word, splitter):
        token_buffer.extend(block.input_ids)
        if job.whole_word != "none":
            unit_buffer.extend(block.word_ids)
        offsets.append(len(token_buffer))
    info = ShardInfo(shard_name(job.index), len(job.texts), len(offsets) - 1, len(token_buffer))

    def fill(tmp: Path) -> None:
        _save_npy(tmp / TOKENS_FILE, np.frombuffer(token_buffer, dtype=tokens) if token_buffer
                  else np.zeros(0, dtype=tokens))
        if job.whole_word != "none":
            _save_npy(tmp / UNITS_FILE, np.frombuffer(unit_buffer, dtype=np.int16) if unit_buffer
                      else np.zeros(0, dtype=np.int16))
        _save_npy(tmp / OFFSETS_FILE, np.frombuffer(offsets, dtype=np.int64))
        (tmp / SHARD_FILE).write_text(json.dumps(asdict(info)) + "\n", encoding="utf-8")

    write_dir_atomic(Path(job.out) / info.name, fill)
    return info


def _worker_init(parent_pid: int) -> None:
    """Runs once in each worker: one core each (the pool is the parallelism), and die with the parent, however
    it dies (kill -9 gives it no chance to stop its pool)."""
    import os

    from klue.io.processes import die_with_parent

    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    die_with_parent(parent_pid)


def _manifest(settings: PrepareSettings, tokenizer: Any) -> dict[str, Any]:
    vocab = len(tokenizer)
    return {"format": FORMAT, "tokenizer": {"path": str(settings.tokenizer),
                                            "sha256": tokenizer_sha256(settings.tokenizer), "vocab_size": vocab},
            "corpus": corpus_fingerprint(settings.corpus), "text_field": settings.text_field,
            "max_len": settings.max_len, "whole_word": settings.whole_word,
            "shard_texts": settings.shard_texts, "token_dtype": "uint16" if vocab <= 1 << 16 else "int32"}


def _same_manifest(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The fields that differ (the tokenizer's path may move; its files may not)."""
    differ = [key for key in new if key != "tokenizer" and old.get(key) != new[key]]
    if old.get("tokenizer", {}).get("sha256") != new["tokenizer"]["sha256"]:
        differ.append("tokenizer")
    return differ


def _chunks(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(texts)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def _clear_leftovers(out: Path) -> None:
    """Remove temporaries of shards a killed run was writing (hidden siblings from klue.io.atomic)."""
    for path in out.iterdir():
        if path.name.startswith(f".{SHARD_PREFIX}") and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _shard_done(out: Path, index: int) -> ShardInfo | None:
    path = out / shard_name(index) / SHARD_FILE
    if not path.is_file():
        return None
    return ShardInfo(**json.loads(path.read_text(encoding="utf-8")))


def prepare(settings: PrepareSettings, on_shard: Callable[[ShardInfo], None] | None = None) -> PrepareResult:
    """Tokenize and pack a corpus into token shards (see the module doc); resumes an interrupted run."""
    from klue.io.atomic import write_json_atomic
    from klue.io.lock import exclusive
    from klue.models.loading import load_tokenizer

    if settings.whole_word not in WHOLE_WORD:
        raise DataError(f"--whole-word {settings.whole_word!r}: one of {', '.join(WHOLE_WORD)}")
    if settings.workers < 1:
        raise DataError(f"--workers {settings.workers}: at least 1")
    if settings.shard_texts < 1:
        raise DataError(f"--shard-texts {settings.shard_texts}: at least 1")
    tokenizer = load_tokenizer(Path(settings.tokenizer))
    if tokenizer.cls_token_id is None or tokenizer.sep_token_id is None or tokenizer.mask_token_id is None:
        raise DataError("a masked-LM tokenizer needs cls, sep and mask tokens", settings.tokenizer)
    out = Path(settings.out)
    started = time.perf_counter()
    with exclusive(out, "klue pretrain prepare"):
        manifest = _manifest(settings, tokenizer)
        manifest_path = out / MANIFEST_FILE
        if manifest_path.is_file():
            old = json.loads(manifest_path.read_text(encoding="utf-8"))
            differ = _same_manifest(old, manifest)
            if differ:
                raise DataError(f"these shards were prepared from another {', '.join(differ)}; use another --out "
                                "(or remove this directory)", out)
        else:
            if any(p.name.startswith(SHARD_PREFIX) for p in out.iterdir()):
                raise DataError("holds shards but no manifest.json: not a directory this command wrote", out)
            write_json_atomic(manifest_path, manifest)
        _clear_leftovers(out)
        (out / INDEX_FILE).unlink(missing_ok=True)
        infos, written = _write_shards(settings, tokenizer, manifest, on_shard)
        index = {"format": FORMAT, "shards": [asdict(i) for i in infos],
                 "texts": sum(i.texts for i in infos), "blocks": sum(i.blocks for i in infos),
                 "tokens": sum(i.tokens for i in infos)}
        write_json_atomic(out / INDEX_FILE, index)
    return PrepareResult(out, len(infos), written, index["texts"], index["blocks"], index["tokens"],
                         time.perf_counter() - started)


def _write_shards(settings: PrepareSettings, tokenizer: Any, manifest: dict[str, Any],
                  on_shard: Callable[[ShardInfo], None] | None) -> tuple[list[ShardInfo], int]:
    out = Path(settings.out)
    infos: dict[int, ShardInfo] = {}
    written = 0
    progress = _Progress(settings.progress)

    def done(index: int, info: ShardInfo, new: bool) -> None:
        nonlocal written
        infos[index] = info
        written += new
        progress.update(info)
        if on_shard is not None and new:
            on_shard(info)

    from tokenizers import Tokenizer

    # As the tokenizer's own call without padding or truncation sets up its Rust tokenizer.
    rust = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    rust.no_truncation()
    rust.no_padding()
    state = rust.to_str()

    def jobs() -> Iterator[ShardJob | tuple[int, ShardInfo]]:
        texts = iter_corpus(settings.corpus, settings.text_field)
        for index, chunk in enumerate(_chunks(texts, settings.shard_texts)):
            finished = _shard_done(out, index)
            if finished is not None:
                yield index, finished
            else:
                yield ShardJob(index, chunk, state, tokenizer.cls_token_id, tokenizer.sep_token_id, settings.max_len,
                               settings.whole_word, manifest["token_dtype"], str(out))

    try:
        if settings.workers == 1:
            for job in jobs():
                if isinstance(job, ShardJob):
                    done(job.index, write_shard(job), True)
                else:
                    done(*job, False)
        else:
            _run_pool(settings.workers, jobs(), done)
    finally:
        progress.close()
    return [infos[i] for i in sorted(infos)], written


def _run_pool(workers: int, jobs: Iterator[ShardJob | tuple[int, ShardInfo]],
              done: Callable[[int, ShardInfo, bool], None]) -> None:
    """Run shard jobs on `workers` spawned processes, at most two per worker in flight (flat memory)."""
    import multiprocessing
    import os

    context = multiprocessing.get_context("spawn")  # no fork after tokenizers / torch threads started
    pending: dict[Future[ShardInfo], int] = {}
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_init,
                             initargs=(os.getpid(),)) as pool:
        try:
            for job in jobs:
                if not isinstance(job, ShardJob):
                    done(*job, False)
                    continue
                while len(pending) >= 2 * workers:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        done(pending.pop(future), future.result(), True)
                pending[pool.submit(write_shard, job)] = job.index
            for future in list(pending):
                done(pending.pop(future), future.result(), True)
        except BaseException:
            for future in pending:
                future.cancel()
            raise


class _Progress:
    """Shards, texts and tokens done, with the token rate (the corpus length is not known ahead)."""

    def __init__(self, enabled: bool) -> None:
        self._texts = self._tokens = self._shards = 0
        self._started = time.perf_counter()
        self._shown = Progress("prepare", None, enabled=enabled, transient=True)

    def update(self, info: ShardInfo) -> None:
        self._shards += 1
        self._texts += info.texts
        self._tokens += info.tokens
        rate = self._tokens / max(time.perf_counter() - self._started, 1e-9)
        self._shown.update(self._shards, f"shards, {self._texts:,} texts, {self._tokens:,} tokens "
                                         f"({rate:,.0f} tokens/s)")

    def close(self) -> None:
        self._shown.close()


# ------------------------------------------------------------------------------------ reading


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of a complete shard directory; DataError when it is not one (or not complete)."""
    directory = Path(directory)
    manifest_path, index_path = directory / MANIFEST_FILE, directory / INDEX_FILE
    if not manifest_path.is_file():
        raise DataError("no manifest.json: not a directory of token shards (`klue pretrain prepare` writes one)",
                        directory)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT:
        raise DataError(f"token shards of format {manifest.get('format')!r}; this klue reads {FORMAT}",
                        directory)
    if not index_path.is_file():
        raise DataError("the shards are incomplete (no index.json): rerun the same `klue pretrain prepare` "
                        "command to finish them", directory)
    return manifest


def shards_sha256(directory: Path) -> str:
    """What identifies a shard directory's content: its manifest and index (each shard's counts)."""
    directory = Path(directory)
    digest = hashlib.sha256()
    for name in (MANIFEST_FILE, INDEX_FILE):
        manifest = json.loads((directory / name).read_text(encoding="utf-8"))
        if name == MANIFEST_FILE:
            manifest["tokenizer"].pop("path", None)
        digest.update(json.dumps(manifest, sort_keys=True).encode())
    return digest.hexdigest()


class ShardedBlocks:
    """The blocks of a shard directory by index, read from memory-mapped `.npy` files.

    A map-style dataset (`len`, `[i]`, what `torch.utils.data.DataLoader` takes); shards are opened on
    first use, so a process (or a DataLoader worker) maps only what it reads."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.manifest = read_manifest(self.directory)
        index = json.loads((self.directory / INDEX_FILE).read_text(encoding="utf-8"))
        self.shards = [ShardInfo(**s) for s in index["shards"]]
        self.whole_word: WholeWord = self.manifest["whole_word"]
        self.max_len: int = self.manifest["max_len"]
        self._ends = np.cumsum([s.blocks for s in self.shards], dtype=np.int64)
        self._open: dict[int, tuple[np.ndarray, np.ndarray | None, np.ndarray]] = {}

    def __len__(self) -> int:
        return int(self._ends[-1]) if len(self._ends) else 0

    @property
    def n_tokens(self) -> int:
        return sum(s.tokens for s in self.shards)

    def _arrays(self, shard: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        if shard not in self._open:
            path = self.directory / self.shards[shard].name
            tokens = np.load(path / TOKENS_FILE, mmap_mode="r")
            units = np.load(path / UNITS_FILE, mmap_mode="r") if self.whole_word != "none" else None
            self._open[shard] = (tokens, units, np.load(path / OFFSETS_FILE))
        return self._open[shard]

    def __getitem__(self, index: int) -> Block:
        if not 0 <= index < len(self):
            raise IndexError(f"block {index} of {len(self)}")
        shard = int(np.searchsorted(self._ends, index, side="right"))
        local = index - (int(self._ends[shard - 1]) if shard else 0)
        tokens, units, offsets = self._arrays(shard)
        start, end = int(offsets[local]), int(offsets[local + 1])
        ids = tokens[start:end].tolist()
        if units is not None:
            return Block(ids, units[start:end].tolist())
        return Block(ids, [-1, *range(end - start - 2), -1])


class BlockRange:
    """Blocks [start, stop) of a block sequence (the held-out and training parts), without copying."""

    def __init__(self, blocks: Any, start: int, stop: int) -> None:
        self._blocks, self._start, self._stop = blocks, start, stop

    def __len__(self) -> int:
        return self._stop - self._start

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._blocks[self._start + index]
