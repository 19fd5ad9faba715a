"""Pseudonymise a corpus on several cores or a Ray cluster: streamed, in order, the same bytes whatever the split.

Each input file is read as a stream of documents (lines, or the objects of a `.jsonl` file), cut by position
into chunks of `chunk_size` documents, and each chunk is pseudonymised by a worker: the calling process
(one worker), spawned processes of a `ProcessPoolExecutor` (`executor="local"`), or Ray tasks
(`executor="ray"`, on a local Ray or a cluster's address). Results are written in input order as they
complete, and at most `max_in_flight` chunks are submitted and not yet written (running, or done and
waiting for an earlier one), so memory stays flat however large the corpus.

Why the output does not depend on the worker count or the executor: a document's pseudonyms are drawn from
`document_rng(seed, file_index, document_index)` (pii.py), which depends on the run seed and the document's
position only, and the table that keeps one original's pseudonym consistent is per document; nothing is
carried from one document to the next. A chunk's output is therefore a function of (seed, file index,
index of its first document, its documents), whoever computes it, and the one-worker path writes exactly
what `pseudonymise_files` wrote before it was parallel.

Workers build their detector once from a `DetectorRecipe` (Kiwi loads in about 3 s; a loaded Kiwi cannot be
sent between processes) and keep it for every later chunk (Ray reuses its worker processes too).
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import shutil
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Generic, Literal, TypeVar

from klue.errors import DataError, ProblemLog
from klue.io.processes import die_with_parent, import_ray
from klue.io.progress import ProgressBar
from klue.pretraining.pii import PII_KINDS, PiiDetector, document_rng, pseudonymise

Executor = Literal["local", "ray"]
EXECUTORS: tuple[Executor, ...] = ("local", "ray")
# A file whose bytes fail the streamed checks is read whole once more for the corpus reader's exact message
# (line, byte offset, likely encoding) when it is at most this big; a larger one gets a shorter message.
_WHOLE_FILE_MESSAGE_LIMIT = 256 * 1024 * 1024

REPORT_FILE = "pii_report.json"

C = TypeVar("C")
R = TypeVar("R")


@dataclass(frozen=True)
class FileReport:
    path: str
    output: str
    documents: int
    documents_changed: int
    counts: dict[str, int]


@dataclass(frozen=True)
class ParallelSettings:
    """How the chunks are spread. `workers`: None is one local worker (the calling process) or, with Ray,
    every CPU of the Ray; 0 is every core (locally) or every CPU of the Ray."""

    workers: int | None = None
    executor: Executor = "local"
    ray_address: str | None = None
    chunk_size: int | None = None  # documents per chunk; default: `default_chunk_size(detector)`
    max_in_flight: int | None = None  # default: twice the workers (one running and one queued each)

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise DataError(f"--executor {self.executor!r}: local or ray")
        if self.workers is not None and self.workers < 0:
            raise DataError(f"--workers {self.workers}: a number of workers, or 0 for every core")
        if (self.chunk_size is not None and self.chunk_size < 1) or (
                self.max_in_flight is not None and self.max_in_flight < 1):
            raise DataError("chunk_size and max_in_flight must be at least 1")
        if self.ray_address is not None and self.executor != "ray":
            raise DataError("--ray-address goes with --executor ray")


@dataclass(frozen=True)
class DetectorRecipe:
    """What a worker needs to build the same `PiiDetector` (a loaded Kiwi or NER model cannot be pickled)."""

    kinds: tuple[str, ...] = PII_KINDS
    kiwi_names: bool = True
    ner_model: str | None = None
    ner_cpu: bool = False

    @classmethod
    def of(cls, detector: PiiDetector) -> DetectorRecipe:
        from klue.pretraining.ner_names import NerNameFinder

        finder = detector.name_finder
        if finder is not None and not isinstance(finder, NerNameFinder):
            raise ValueError("only the NER-model name finder can be rebuilt in worker processes; "
                             "pseudonymise with one local worker to use another one")
        return cls(tuple(detector.kinds), detector.splitter is not None,
                   str(finder.model_dir) if finder is not None else None, bool(finder and finder.cpu))

    def build(self) -> PiiDetector:
        from klue.pretraining.morphemes import MorphemeSplitter
        from klue.pretraining.ner_names import NerNameFinder

        finder = NerNameFinder(Path(self.ner_model), self.ner_cpu) if self.ner_model is not None else None
        return PiiDetector(splitter=MorphemeSplitter() if self.kiwi_names else None, name_finder=finder,
                           kinds=self.kinds)


def default_chunk_size(detector: PiiDetector) -> int:
    """256 documents (~0.15 s of work at ~1,600 sentences/s, so sending a chunk costs nothing by
    comparison), or 4,096 when names come from an NER model: its finder loads the model once per chunk."""
    return 4096 if getattr(detector.name_finder, "prefetch", None) is not None else 256


# One detector per recipe per worker process: a cache, because building one loads Kiwi (seconds).
@functools.lru_cache(maxsize=2)
def _detector_for(recipe: DetectorRecipe) -> PiiDetector:
    return recipe.build()


Document = str | dict[str, Any]


@dataclass(frozen=True)
class Chunk:
    """`documents` of file `file_index`, the first being its document number `first` (0-based)."""

    file_index: int
    first: int
    documents: list[Document]
    source_bytes: int


@dataclass(frozen=True)
class ChunkResult:
    file_index: int
    first: int
    text: str  # the output lines, each ending with "\n"
    documents: int
    changed: int
    counts: Counter[str]
    source_bytes: int
    cpu_seconds: float  # the worker's CPU time on this chunk (for throughput figures under a shared load)


def pseudonymise_chunk(chunk: Chunk, detector: PiiDetector | DetectorRecipe, seed: int,
                       text_field: str) -> ChunkResult:
    """Pseudonymise one chunk; the same result in any process (see the module doc)."""
    if isinstance(detector, DetectorRecipe):
        detector = _detector_for(detector)
    if detector.splitter is not None and detector.name_finder is None and "name" in detector.kinds:
        detector.splitter.kiwi  # noqa: B018 (loads Kiwi once, before the clock: cpu_seconds is the work)
    cpu_started = time.process_time()
    texts = [d[text_field] if isinstance(d, dict) else d for d in chunk.documents]
    prefetch = getattr(detector.name_finder, "prefetch", None)
    if prefetch is not None:
        prefetch(texts)
    lines: list[str] = []
    counts: Counter[str] = Counter()
    changed = 0
    for offset, (document, text) in enumerate(zip(chunk.documents, texts, strict=True)):
        result = pseudonymise(text, detector, document_rng(seed, chunk.file_index, chunk.first + offset))
        counts.update(result.counts)
        changed += bool(result.counts)
        lines.append(json.dumps({**document, text_field: result.text}, ensure_ascii=False)
                     if isinstance(document, dict) else result.text)
        lines.append("\n")
    return ChunkResult(chunk.file_index, chunk.first, "".join(lines), len(chunk.documents), changed, counts,
                       chunk.source_bytes, time.process_time() - cpu_started)


# ---------------------------------------------------------------- reading
class _BadBytes(Exception):
    def __init__(self, line: int, what: str) -> None:
        super().__init__(what)
        self.line, self.what = line, what


def stream_lines(path: Path) -> Iterator[tuple[str, int]]:
    """(line, its size in bytes) of a UTF-8 text file, read as a stream, split exactly as `str.splitlines`
    splits the whole text (the corpus reader's lines), a leading BOM dropped. A missing file, a directory,
    bytes that are not UTF-8 or a NUL are a DataError naming the file and line, worded as the corpus
    reader words them (`corpus.read_corpus_text`, which is asked for the message)."""
    from klue.pretraining.corpus import read_corpus_text

    if not path.is_file():
        read_corpus_text(path)  # raises the reader's DataError (missing, a directory)
        raise DataError(f"{path}: not a file")
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise _BadBytes(number, f"bytes that are not UTF-8 at byte offset {error.start} of the "
                                            "line") from None
                if "\0" in text:
                    raise _BadBytes(number, "a NUL byte: a text corpus holds none (is this a binary file?)")
                if number == 1:
                    text = text.removeprefix("\ufeff")
                # Each physical line ends at b"\n"; splitlines cuts what else str.splitlines would (\r, \x0b,
                # \x1c, \u2028, ...), so the lines are those of read_corpus_text(path).splitlines().
                pieces = text.splitlines()
                for index, piece in enumerate(pieces):
                    yield piece, len(raw) if index == 0 else 0
    except _BadBytes as bad:
        if path.stat().st_size <= _WHOLE_FILE_MESSAGE_LIMIT:
            read_corpus_text(path)  # raises with the line, byte offset and likely encoding
        raise DataError(f"{path}:line {bad.line}: {bad.what}") from None


def stream_documents(path: Path, text_field: str, log: ProblemLog) -> Iterator[tuple[Document, int]]:
    """(document, bytes read for it) of one input: its lines, or the objects of a `.jsonl` file (blank
    lines skipped; a bad line is logged in `log` and skipped, so all of a file's problems are told)."""
    from klue.io.text import jsonl_objects

    if path.suffix != ".jsonl":
        yield from stream_lines(path)
        return
    sizes: deque[int] = deque()

    def lines() -> Iterator[str]:
        for line, size in stream_lines(path):
            sizes.append(size)
            yield line

    for _, obj in jsonl_objects(lines(), log, text_field):
        # jsonl_objects reads up to the object's line; the bytes of skipped lines go with the next object.
        yield obj, sum(sizes)
        sizes.clear()


def corpus_chunks(paths: Sequence[Path], text_field: str, chunk_size: int,
                  logs: Sequence[ProblemLog]) -> Iterator[Chunk]:
    """The chunks of every input in order, read lazily (one chunk of documents in memory at a time)."""
    for file_index, path in enumerate(paths):
        documents: list[Document] = []
        size = first = 0
        for document, nbytes in stream_documents(path, text_field, logs[file_index]):
            documents.append(document)
            size += nbytes
            if len(documents) == chunk_size:
                yield Chunk(file_index, first, documents, size)
                first += len(documents)
                documents, size = [], 0
        if documents:
            yield Chunk(file_index, first, documents, size)


# ---------------------------------------------------------------- ordered, bounded execution
def ordered_results(items: Iterable[C], submit: Callable[[C], Future[R]], max_in_flight: int) -> Iterator[R]:
    """The results of `submit(item)` in the order of `items`, each as soon as it and all before it are done.

    At most `max_in_flight` items are submitted and not yet yielded, and `items` is read no further ahead
    than that, so memory is bounded by the in-flight chunks whatever the number of items. Pending work is
    cancelled when the consumer stops early or raises."""
    if max_in_flight < 1:
        raise ValueError("max_in_flight must be at least 1")
    source = iter(items)
    pending: deque[Future[R]] = deque()
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) < max_in_flight:
                try:
                    item = next(source)
                except StopIteration:
                    exhausted = True
                else:
                    pending.append(submit(item))
            if not pending:
                return
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()



def _completed(function: Callable[..., R], *args: Any) -> Future[R]:
    """Run now, in this process; a done Future (the one-worker path shares the ordered writer)."""
    future: Future[R] = Future()
    try:
        future.set_result(function(*args))
    except Exception as error:  # noqa: BLE001 (handed to the consumer through the Future, as a pool does)
        future.set_exception(error)
    return future


@dataclass
class _Plan:
    submit: Callable[[Chunk], Future[ChunkResult]]
    workers: int
    max_in_flight: int


@contextmanager
def _executor(detector: PiiDetector, seed: int, text_field: str, settings: ParallelSettings) -> Iterator[_Plan]:
    in_flight = settings.max_in_flight
    if settings.executor == "local" and settings.workers in (None, 1):
        yield _Plan(lambda c: _completed(pseudonymise_chunk, c, detector, seed, text_field), 1, in_flight or 1)
        return
    recipe = DetectorRecipe.of(detector)
    if settings.executor == "local":
        workers = settings.workers or len(os.sched_getaffinity(0))
        # spawn: a fork of a process that holds Kiwi, torch or Ray threads is unsafe; workers import klue anew.
        pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=die_with_parent, initargs=(os.getpid(),))
        try:
            yield _Plan(lambda c: pool.submit(pseudonymise_chunk, c, recipe, seed, text_field), workers,
                        in_flight or 2 * workers)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return
    with _ray_session(settings) as ray:
        workers = settings.workers or int(ray.cluster_resources().get("CPU", 1))
        task = ray.remote(num_cpus=1)(pseudonymise_chunk)  # a retried chunk gives the same bytes
        recipe_ref = ray.put(recipe)
        yield _Plan(lambda c: task.remote(c, recipe_ref, seed, text_field).future(), workers,
                    in_flight or 2 * workers)


@contextmanager
def _ray_session(settings: ParallelSettings) -> Iterator[Any]:
    """Ray, initialised here unless the caller already did (then left running): a local Ray with
    `workers` CPUs (None or 0: every core), or the cluster at `ray_address`."""
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        if settings.ray_address is not None:
            ray.init(address=settings.ray_address, log_to_driver=False)
        else:
            ray.init(num_cpus=settings.workers or None, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        if started:
            ray.shutdown()


# ---------------------------------------------------------------- progress and the files
@dataclass(frozen=True)
class ProgressTick:
    """Totals so far, after each written chunk."""

    documents: int
    bytes_done: int
    bytes_total: int
    seconds: float
    worker_cpu_seconds: float  # summed over the written chunks (Kiwi loading not included)


class _Peekable(Generic[R]):
    def __init__(self, items: Iterator[R]) -> None:
        self._items = items
        self._head: R | None = None
        self._has_head = False

    def peek(self) -> R | None:
        if not self._has_head:
            self._head, self._has_head = next(self._items, None), True
        return self._head

    def take(self) -> R | None:
        head = self.peek()
        self._has_head = False
        return head


@dataclass
class _FileTally:
    documents: int = 0
    changed: int = 0
    counts: Counter[str] = field(default_factory=Counter)


def pseudonymise_corpus(inputs: Sequence[str | Path], output_dir: str | Path, detector: PiiDetector, seed: int,
                        text_field: str = "text", settings: ParallelSettings | None = None,
                        progress: bool = False,
                        on_progress: Callable[[ProgressTick], None] | None = None) -> dict[str, object]:
    """Pseudonymise each input into `output_dir/<same name>` (written atomically, streamed) and write and
    return the count report (counts by kind, per file and in total; never an original or a pseudonym).

    The output is byte-identical for every `settings` (see the module doc); `progress` shows a bar with
    the ETA on stderr; `on_progress` gets the totals after each written chunk."""
    from klue.io.atomic import write_atomic, write_json_atomic
    from klue.pretraining.corpus import read_corpus_text

    settings = settings or ParallelSettings()
    out = Path(output_dir)
    paths = [Path(p) for p in inputs]
    names = [p.name for p in paths]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise DataError(f"two inputs share the file name {duplicates[0]!r}; the outputs would collide")
    for path in paths:  # before any work: a missing input is the corpus reader's one-line error
        if not path.is_file():
            read_corpus_text(path)
    logs = [ProblemLog(str(p)) for p in paths]
    total_bytes = sum(p.stat().st_size for p in paths)
    files: list[FileReport] = []
    total: Counter[str] = Counter()
    started = time.perf_counter()
    done_documents = done_bytes = 0
    done_cpu = 0.0
    created_out = not out.exists()
    try:
        with _executor(detector, seed, text_field, settings) as plan:
            workers = f"{plan.workers} {settings.executor} worker{'s' if plan.workers != 1 else ''}"
            # No bar where stderr is a file: a log keeps only the messages.
            bar = ProgressBar(f"pii ({workers})", total_bytes or None, enabled=progress, in_bytes=True,
                              transient=True, terminal_only=True)
            try:
                chunks = corpus_chunks(paths, text_field, settings.chunk_size or default_chunk_size(detector), logs)
                results = _Peekable(ordered_results(chunks, plan.submit, plan.max_in_flight))
                for file_index, path in enumerate(paths):
                    tally = _FileTally()

                    def write(handle: IO[str], file_index: int = file_index, tally: _FileTally = tally) -> None:
                        nonlocal done_documents, done_bytes, done_cpu
                        while (head := results.peek()) is not None and head.file_index == file_index:
                            results.take()
                            handle.write(head.text)
                            tally.documents += head.documents
                            tally.changed += head.changed
                            tally.counts.update(head.counts)
                            done_documents += head.documents
                            done_bytes += head.source_bytes
                            done_cpu += head.cpu_seconds
                            tick = ProgressTick(done_documents, done_bytes, total_bytes, time.perf_counter() - started,
                                                done_cpu)
                            rate = tick.documents / tick.seconds if tick.seconds > 0 else 0.0
                            bar.update(tick.bytes_done, info=f"{tick.documents:,} documents, {rate:,.0f}/s")
                            if on_progress is not None:
                                on_progress(tick)
                        # The reader has passed the end of this file: its problems (bad JSONL lines) are all known.
                        logs[file_index].raise_if_errors()

                    target = out / path.name
                    write_atomic(target, write)
                    files.append(FileReport(str(path), str(target), tally.documents, tally.changed,
                                            {k: tally.counts.get(k, 0) for k in detector.kinds}))
                    total.update(tally.counts)
            finally:
                bar.close()
    except BaseException:
        if created_out:  # nothing half-written: a run that fails leaves no output directory it made
            shutil.rmtree(out, ignore_errors=True)
        raise
    report: dict[str, object] = {
        "format": "klue.pii-report/1",
        "kinds": list(detector.kinds),
        "name_detection": "ner model" if detector.name_finder is not None else "kiwi + surname list",
        "documents": sum(f.documents for f in files),
        "documents_changed": sum(f.documents_changed for f in files),
        "counts": {k: total.get(k, 0) for k in detector.kinds},
        "files": [f.__dict__ for f in files],
        "note": "counts only: originals and pseudonyms are never written here",
    }
    write_json_atomic(out / REPORT_FILE, report)
    return report


def pseudonymise_files(inputs: Sequence[str], output_dir: str, detector: PiiDetector, seed: int,
                       text_field: str = "text", workers: int | None = None, executor: Executor = "local",
                       ray_address: str | None = None, progress: bool = False) -> dict[str, object]:
    """Pseudonymise each input file into `output_dir/<same name>`; write and return the count report.

    The report holds counts by kind, per file and in total; never an original or a pseudonym. The inputs
    are streamed and spread over `workers` processes (`executor="local"`; None: this process only, 0:
    every core) or Ray tasks (`executor="ray"`, on `ray_address` or a local Ray; None or 0: every CPU of
    the Ray); the output is the same bytes whatever the workers (the module doc says why). `progress`
    shows a bar with the ETA on stderr."""
    settings = ParallelSettings(workers=workers, executor=executor, ray_address=ray_address)
    return pseudonymise_corpus(inputs, output_dir, detector, seed, text_field, settings, progress=progress)
