"""A whole scan: the corpus files read in order, their chunks scanned here, in spawned processes or on Ray
actors, the findings kept per corpus file (so a stopped scan resumes at the first file it had not finished),
and the outputs written atomically: OUT/TASK/examples.jsonl and OUT/summary.json (docs/contamination.md)."""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from klue.contamination import kernel
from klue.contamination.corpus import BLOCK_BYTES, CHUNK_BYTES, Chunk, CorpusFile, CorpusReader
from klue.contamination.examples import TaskSet
from klue.contamination.index import BenchmarkIndex
from klue.contamination.scan import (
    ChunkResult,
    ChunkScanner,
    Findings,
    Found,
    lines_moved,
    merge_findings,
    shift_lines,
)
from klue.errors import DataError
from klue.io.atomic import write_json_atomic, write_jsonl_atomic
from klue.io.processes import die_with_parent, import_ray
from klue.io.progress import ProgressBar

Executor = Literal["local", "ray"]
EXECUTORS: tuple[str, ...] = ("local", "ray")
STATE_DIR = ".scan-state"  # per corpus file: its findings, for a resumed scan
# a kept file state of another layout is scanned again (2: the file's `digest` replaced its sha256, and a match's
# place in the example its text)
STATE_VERSION = 2
SUMMARY_FILE = "summary.json"
EXAMPLES_FILE = "examples.jsonl"


@dataclass(frozen=True)
class ScanOptions:
    text_field: str = "text"
    workers: int = 1
    executor: Executor = "local"
    chunk_bytes: int = CHUNK_BYTES
    # the work handed out at a time for a span file, and the block of its digest (corpus.BlockDigest); smaller
    # in tests, to share a small file out between workers
    block_bytes: int = BLOCK_BYTES
    ray_address: str | None = None  # None: RAY_ADDRESS, else a local Ray


@dataclass(frozen=True)
class FileRecord:
    """A scanned corpus file, for the summary."""

    path: str
    kind: str
    compression: str
    bytes: int
    # text and JSON Lines: "sha256-blocks-4MiB:HEX" (corpus.BlockDigest, of the bytes on disk); parquet and
    # datasets: "sha256:HEX"
    digest: str | None
    documents: int
    resumed: bool  # taken from the state of an earlier run, not read again

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "compression": self.compression or None, "bytes": self.bytes,
                "digest": self.digest, "documents": self.documents, "resumed": self.resumed}


@dataclass(frozen=True)
class ScanResult:
    findings: Findings
    files: list[FileRecord]
    seconds: float  # scanning, once the workers were up
    bytes_scanned: int  # bytes on disk read in this run (resumed files not counted)
    workers: int
    startup_seconds: float = 0.0  # starting the workers (processes, Ray and its actors) and sending the index
    # CPU seconds while scanning: of the scanners on their chunks (wherever they ran), and of this process
    # beside them (handing out chunks, reading and hashing what is not a span file, merging; in one process,
    # what is not scanning)
    scan_cpu_seconds: float = 0.0
    main_cpu_seconds: float = 0.0
    plain_text_hashing: str | None = None  # "numba" (the compiled pass), "numpy" (numba absent), None: no plain text


# ------------------------------------------------------------------------------------------- executors

_WORKER_SCANNER: list[ChunkScanner] = []  # a spawned worker's scanner, built once by its initializer


def _start_worker(parent: int, index: BenchmarkIndex, compiled: bool, ready: Any) -> None:
    die_with_parent(parent)
    _WORKER_SCANNER.append(ChunkScanner(index, compiled))
    ready.put(os.getpid())


def _scan_in_worker(chunk: Chunk) -> ChunkResult:
    return _WORKER_SCANNER[0].scan(chunk)


def _worker_ready(_: int) -> bool:
    return bool(_WORKER_SCANNER)


def _wait_for_workers(pool: ProcessPoolExecutor, ready: Any, count: int) -> None:
    """Until `count` workers said they are ready (BrokenProcessPool if one died starting). Each says so itself:
    tasks sent to the pool could all be run by the first one up while another is still loading (measured: a
    second worker 0.45 s late, a tenth of a 1 GB scan on 2 cores)."""
    for _ in range(count):
        while True:
            try:
                ready.get(timeout=1.0)
                break
            except queue.Empty:
                pool.submit(_worker_ready, 0).result()  # raises if the pool broke


def _done(function: Callable[[Chunk], ChunkResult], chunk: Chunk) -> Future[ChunkResult]:
    future: Future[ChunkResult] = Future()
    try:
        future.set_result(function(chunk))
    except Exception as error:  # noqa: BLE001 (handed on through the Future, as a pool does)
        future.set_exception(error)
    return future


@contextmanager
def _executor(index: BenchmarkIndex, options: ScanOptions, compiled: bool) -> Iterator[
        tuple[Callable[[Chunk], Future[ChunkResult]], int]]:
    """(submit a chunk, the worker count); `compiled`: the scanners load the compiled pass."""
    if options.executor == "ray":
        with _ray_actors(index, options, compiled) as plan:
            yield plan
        return
    if options.workers <= 1:
        scanner = ChunkScanner(index, compiled)
        yield (lambda chunk: _done(scanner.scan, chunk)), 1
        return
    # spawn, not fork: the parent may hold threads (Ray, torch) that a fork would copy half-way
    context = multiprocessing.get_context("spawn")
    ready = context.Queue()
    pool = ProcessPoolExecutor(options.workers, mp_context=context, initializer=_start_worker,
                               initargs=(os.getpid(), index, compiled, ready))
    try:
        # every worker started (its index built, its compiled pass loaded) before the clock of the scan starts
        all(pool.map(_worker_ready, range(2 * options.workers)))  # the pool starts a process per task waiting
        _wait_for_workers(pool, ready, options.workers)
        yield (lambda chunk: pool.submit(_scan_in_worker, chunk)), options.workers
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def _ray_actors(index: BenchmarkIndex, options: ScanOptions, compiled: bool) -> Iterator[tuple[Callable[[Chunk],
                                                                                       Future[ChunkResult]], int]]:
    """Ray actors, each holding the index and its scanner (a task per chunk would unpickle the index each
    time); chunks go to them in turn. Ray is started here unless the caller already did."""
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        address = options.ray_address or os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=max(1, options.workers), include_dashboard=False, log_to_driver=False)
    try:
        workers = max(1, options.workers)
        actor = ray.remote(num_cpus=1)(ChunkScanner)
        index_ref = ray.put(index)
        actors = [actor.remote(index_ref, compiled) for _ in range(workers)]
        ray.get([a.ready.remote() for a in actors])  # every actor up before the clock of the scan starts
        turn = iter(range(1 << 62))
        yield (lambda chunk: actors[next(turn) % workers].scan.remote(chunk).future()), workers
    finally:
        if started:
            ray.shutdown()


# ------------------------------------------------------------------------------------------ the scan


def _state_path(state_dir: Path, file_index: int) -> Path:
    return state_dir / f"file-{file_index:05d}.json"


def _identity(file: CorpusFile) -> dict[str, Any]:
    stat = file.path.stat()
    return {"path": file.shown, "size": file.size(), "mtime_ns": stat.st_mtime_ns}


def _resumed(state_dir: Path | None, file_index: int, file: CorpusFile, fingerprint: str,
             text_field: str) -> tuple[Findings, FileRecord] | None:
    """The findings an earlier run kept for this file, if it scanned the same file for the same examples."""
    if state_dir is None:
        return None
    path = _state_path(state_dir, file_index)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (state.get("version"), state.get("fingerprint"), state.get("identity"), state.get("text_field")) != (
            STATE_VERSION, fingerprint, _identity(file), text_field):
        return None
    findings = {int(k): Found.from_json(v, file_index) for k, v in state["findings"].items()}
    record = FileRecord(**{**state["record"], "resumed": True})
    return findings, record


def _keep(state_dir: Path | None, file_index: int, file: CorpusFile, fingerprint: str, text_field: str,
          findings: Findings, record: FileRecord) -> None:
    if state_dir is None:
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(_state_path(state_dir, file_index), {
        "version": STATE_VERSION, "fingerprint": fingerprint, "identity": _identity(file), "text_field": text_field,
        "record": {k: v for k, v in record.__dict__.items() if k != "resumed"},
        "findings": {str(k): v.to_json() for k, v in findings.items()}})


def scan_corpus(index: BenchmarkIndex, files: list[CorpusFile], options: ScanOptions, state_dir: Path | None = None,
                progress: bool = False) -> ScanResult:
    """Scan every corpus file for the index's examples; the files an earlier run finished (kept in
    `state_dir`) are not read again. DataError naming the file (and line) of one that cannot be read."""
    fingerprint = index.fingerprint() if state_dir is not None else ""  # only a resumable scan needs it
    findings: Findings = {}
    records: dict[int, FileRecord] = {}
    todo: list[CorpusReader] = []
    for i, file in enumerate(files):
        resumed = _resumed(state_dir, i, file, fingerprint, options.text_field)
        if resumed is not None:
            merge_findings(findings, resumed[0])
            records[i] = resumed[1]
        else:
            # spans only where the scanners see the same files: this process, its workers, a Ray started here
            # (a Ray cluster elsewhere may not)
            by_span = options.executor == "local" or _local_ray(options)
            todo.append(CorpusReader(file, i, options.text_field, options.chunk_bytes, by_span, options.block_bytes))
    for reader in todo:  # before any work: a file that cannot be read at all stops the scan here
        reader.check()
    started = time.perf_counter()
    startup = 0.0
    total = sum(r.size for r in todo)
    # plain text goes through the compiled pass where numba is installed (docs/contamination.md, "Why it is fast")
    plain_text = any(r.file.kind == "text" for r in todo)
    compiled = plain_text and kernel.AVAILABLE
    done_bytes = 0
    workers = 1
    scan_cpu = main_cpu = 0.0
    if todo:
        with _executor(index, options, compiled) as (submit, workers):
            startup = time.perf_counter() - started
            started += startup
            main_cpu = -time.process_time()
            label = f"scan ({workers} {options.executor} worker{'s' if workers != 1 else ''})"
            with closing(ProgressBar(label, total or None, enabled=progress, in_bytes=True)) as bar:
                def advance(result: ChunkResult) -> None:
                    nonlocal done_bytes, scan_cpu
                    done_bytes += result.consumed
                    scan_cpu += result.cpu_seconds
                    rate = done_bytes / max(1e-9, time.perf_counter() - started) / 1e6
                    bar.update(done_bytes, info=f"{rate:,.1f} MB/s")

                # 4 chunks a worker in flight: results are taken in order, so a slow chunk at the head leaves a
                # worker that is done with the next ones idle only once they are all done (a span is only its
                # coordinates; a compressed file's chunk holds its 1 MB)
                for reader, file_findings, documents in _scan_files(todo, submit, 4 * workers, advance):
                    record = FileRecord(reader.file.shown, reader.file.kind, reader.file.compression, reader.size,
                                        reader.digest, documents, False)
                    _keep(state_dir, reader.file_index, reader.file, fingerprint, options.text_field,
                          file_findings, record)
                    merge_findings(findings, file_findings)
                    records[reader.file_index] = record
            finished = time.perf_counter()  # before the workers are stopped: that is not scanning
            main_cpu += time.process_time()
            if workers == 1 and options.executor == "local":
                main_cpu -= scan_cpu  # the chunks were scanned in this process
    return ScanResult(findings, [records[i] for i in range(len(files))], (finished if todo else started) - started,
                      done_bytes, workers, startup, scan_cpu, main_cpu,
                      ("numba" if compiled else "numpy") if plain_text else None)


@dataclass
class _Tally:
    """One file's results so far, as they are taken in order."""

    findings: Findings = field(default_factory=dict)
    documents: int = 0
    lines: int = 0  # lines of the spans taken so far (the next span's line numbers move on by this)
    block_digests: list[bytes] = field(default_factory=list)


def _scan_files(readers: list[CorpusReader], submit: Callable[[Chunk], Future[ChunkResult]], in_flight: int,
                advance: Callable[[ChunkResult], None]) -> Iterator[tuple[CorpusReader, Findings, int]]:
    """(reader, its findings, its document count) as each file is finished. Chunks are submitted across
    file boundaries, at most `in_flight` waiting; results are taken in submission order, so a file is
    finished when the marker after its last chunk comes up, and a span's lines, numbered within it, are put
    in place by the count of lines before it."""
    pending: deque[tuple[Future[ChunkResult], CorpusReader] | CorpusReader] = deque()
    current: dict[int, _Tally] = {}

    def take() -> Iterator[tuple[CorpusReader, Findings, int]]:
        head = pending.popleft()
        if isinstance(head, CorpusReader):
            tally = current.pop(head.file_index)
            if head.by_span:
                head.finish_spans(tally.block_digests)
            yield head, tally.findings, tally.documents
            return
        future, reader = head
        tally = current[reader.file_index]
        try:
            result = future.result()  # a worker's DataError (a line that cannot be read) is raised here
        except DataError as error:
            raise lines_moved(error, tally.lines) if reader.by_span else error from None
        shift_lines(result.findings, tally.lines)
        merge_findings(tally.findings, result.findings)
        tally.documents += result.documents
        tally.lines += result.lines or 0
        if result.block_digest is not None:
            tally.block_digests.append(result.block_digest)
        advance(result)

    waiting = 0
    try:
        for reader in readers:
            current[reader.file_index] = _Tally()
            for chunk in reader.chunks():
                pending.append((submit(chunk), reader))
                waiting += 1
                while waiting > in_flight:
                    waiting -= isinstance(pending[0], tuple)
                    yield from take()
            pending.append(reader)
        while pending:
            yield from take()
    finally:
        for item in pending:
            if isinstance(item, tuple):
                item[0].cancel()


def _local_ray(options: ScanOptions) -> bool:
    """Whether a Ray scan starts its own local Ray (no address given, none running)."""
    if options.executor != "ray" or options.ray_address or os.environ.get("RAY_ADDRESS"):
        return False
    return not import_ray().is_initialized()


# ------------------------------------------------------------------------------------------ outputs


def covered_share(index: BenchmarkIndex, example: int, found: Found | None) -> float:
    """The share of the example's input units that lie inside n-grams found in the corpus."""
    total = index.input_units(example)
    if found is None or total == 0:
        return 0.0
    n = index.settings.n
    inside = 0
    for positions in found.positions.values():
        covered: set[int] = set()
        for position in positions:
            covered.update(range(position, position + n))
        inside += len(covered)
    return inside / total


def example_json(index: BenchmarkIndex, example: int, found: Found | None) -> dict[str, Any]:
    guid = index.examples[example].guid
    if found is None:
        return {"guid": guid, "dirty_input": False, "dirty_with_answer": False, "longest_match": 0, "covered": 0.0,
                "first_match": None, "longest_match_text": None, "longest_match_at": None, "with_answer_at": None,
                "units": index.input_units(example)}
    return {"guid": guid, "dirty_input": True, "dirty_with_answer": found.with_answer_at is not None,
            "longest_match": found.longest, "covered": round(covered_share(index, example, found), 4),
            "first_match": {**found.first_at.to_json(), "text": index.text_of(example, found.first_from,
                                                                              index.settings.n)},
            "longest_match_text": index.text_of(example, found.longest_from, found.longest),
            "longest_match_at": found.longest_at.to_json(),
            "with_answer_at": None if found.with_answer_at is None else found.with_answer_at.to_json(),
            "units": index.input_units(example)}


def task_summary(index: BenchmarkIndex, task_set: TaskSet, numbers: range, rows: list[dict[str, Any]]) -> (
        dict[str, Any]):
    count = len(rows)
    dirty = sum(r["dirty_input"] for r in rows)
    with_answer = sum(r["dirty_with_answer"] for r in rows)
    # no input part reaches n units: such an example can never be dirty
    too_short = sum(1 for i in numbers if max(map(len, index.part_units[i]), default=0) < index.settings.n)
    return {
        "examples": count, "dirty_input": dirty, "dirty_input_share": round(dirty / count, 4) if count else 0.0,
        "dirty_with_answer": with_answer,
        "dirty_with_answer_share": round(with_answer / count, 4) if count else 0.0,
        "too_short": too_short,
        "longest_match": max((r["longest_match"] for r in rows), default=0),
        "mean_covered_of_dirty": round(sum(r["covered"] for r in rows if r["dirty_input"]) / dirty, 4) if dirty
        else None,
        "set": task_set.what, "source": task_set.source.__dict__,
    }


def write_outputs(out: Path, index: BenchmarkIndex, task_sets: list[TaskSet], result: ScanResult,
                  run: dict[str, Any]) -> dict[str, Any]:
    """OUT/TASK/examples.jsonl for every task, then OUT/summary.json, each written atomically; the summary."""
    tasks: dict[str, Any] = {}
    start = 0
    for task_set in task_sets:
        numbers = range(start, start + len(task_set.examples))
        start += len(task_set.examples)
        rows = [example_json(index, i, result.findings.get(i)) for i in numbers]
        (out / task_set.task).mkdir(parents=True, exist_ok=True)
        write_jsonl_atomic(out / task_set.task / EXAMPLES_FILE, rows)
        tasks[task_set.task] = task_summary(index, task_set, numbers, rows)
    settings = index.settings
    summary = {
        "settings": {"unit": settings.unit, "n": settings.n, "normalise": settings.normalise, **run.pop("settings")},
        "tasks": tasks,
        "corpus": [f.to_json() for f in result.files],
        "run": {"workers": result.workers, "seconds": round(result.seconds, 3),
                "startup_seconds": round(result.startup_seconds, 3), "bytes_scanned": result.bytes_scanned,
                "cpu_seconds": {"scanning": round(result.scan_cpu_seconds, 3),
                                "main_process": round(result.main_cpu_seconds, 3)},
                "mb_per_s": round(result.bytes_scanned / max(result.seconds, 1e-9) / 1e6, 2),
                "plain_text_hashing": result.plain_text_hashing, **run},
    }
    write_json_atomic(out / SUMMARY_FILE, summary)
    return summary


def check_executor(executor: str, workers: int) -> Executor:
    if executor not in EXECUTORS:
        raise DataError(f"--executor must be one of {', '.join(EXECUTORS)}, not {executor!r}")
    if workers < 1:
        raise DataError(f"--workers must be at least 1, not {workers}")
    return "ray" if executor == "ray" else "local"
