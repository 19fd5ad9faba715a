"""Training corpora, streamed: plain text (one document a line), JSON Lines (a text field), parquet, a `datasets`
save_to_disk directory, gzip or zstd compressed (told from the bytes, not the name), named as files,
directories (every file under them) or globs.

An uncompressed text or JSON Lines file is cut into byte ranges (spans) without being read: whoever scans a
span reads it and takes the lines that start in it (docs/contamination.md, "Resume, workers, Ray"), so the
process that hands out the work reads nothing: the workers also hash the bytes they read, in blocks of 4 MiB
(`BlockDigest`), and the file's digest is put together from the blocks' digests. A compressed file is decompressed
by the reading process and cut into chunks of whole lines as raw bytes, which the workers decode and parse;
parquet and `datasets` come as batches of rows of the text column. Memory stays flat: at most a few chunks are
held at once, whatever the corpus size.
"""

from __future__ import annotations

import dataclasses
import glob
import gzip
import hashlib
import importlib
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np

from klue.errors import DataError, Problem
from klue.io.formats import is_saved_dir
from klue.io.provenance import identify
from klue.io.text import encoding_hint

Kind = Literal["text", "jsonl", "parquet", "datasets"]
Compression = Literal["", "gzip", "zstd"]
# bytes per chunk: 1 MB scanned in 10-25% less CPU than 4 MB (its arrays stay in the caches; 256 KB costs more
# again per chunk), and a corpus of a few dozen MB still splits evenly between workers (measured in
# benchmarks/contamination_speed.py)
CHUNK_BYTES = 1 << 20
# A span file is handed out a block at a time, scanned in chunks of CHUNK_BYTES, and each block hashed where it is
# scanned: the main process reads nothing (its sha256 pass beside 2 workers on 2 cores cost them 7-13% of their
# CPU per MB in cache and memory traffic, and a third process to schedule) and a task per 4 MB instead of per 1 MB
# quarters the pool's per-task cost in the main process (about 1 ms a task; measured in
# benchmarks/contamination_speed.py). The digest is Dropbox's content-hash scheme (docs/contamination.md).
BLOCK_BYTES = 4 << 20
ROWS_PER_CHUNK = 4096
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_PARQUET_MAGIC = b"PAR1"
_JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
_COMPRESSED_SUFFIXES = (".gz", ".gzip", ".zst", ".zstd")


@dataclass(frozen=True)
class CorpusFile:
    """One corpus file (or one split of a `datasets` directory) and how it is read."""

    shown: str  # for messages and the summary: the path, or DIR[split]
    path: Path
    kind: Kind
    compression: Compression = ""
    split: str | None = None

    def size(self) -> int:
        """Bytes on disk (a directory: every file under it)."""
        if self.path.is_dir():
            return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())
        return self.path.stat().st_size


@dataclass(frozen=True)
class Chunk:
    """Consecutive documents of one corpus file: raw lines (`data`) or text-column rows (`rows`)."""

    file_index: int
    shown: str
    kind: Kind
    text_field: str
    # 1-based number of the first line (text, JSON Lines) or row (parquet, datasets); in a span's chunk, 1: its
    # lines are numbered within it until the results of the spans before it are in (`relative`)
    first_line: int
    first_offset: int | None  # byte offset of the first line in the decompressed stream; None for rows
    consumed: int  # bytes of the file on disk this chunk accounts for (progress)
    data: bytes = b""
    rows: tuple[str | None, ...] = ()
    # instead of `data`: (path, start, end) of one block of an uncompressed file: the lines that start in
    # [start, end), read where the chunk is scanned, `piece_bytes` at a time (`pieces`)
    span: tuple[str, int, int] | None = None
    piece_bytes: int = CHUNK_BYTES
    relative: bool = False  # line numbers count from 1 within this chunk (it came as a span)

    def pieces(self, digest: Any) -> Iterator[Chunk]:
        """A span chunk's lines, `piece_bytes` of the span at a time, each piece numbering its lines from 1;
        the span's bytes go through `digest` (a hashlib object) as they are read."""
        assert self.span is not None
        path, start, end = self.span
        for at in range(start, end, self.piece_bytes):
            stop = min(at + self.piece_bytes, end)
            first, data = _span_lines(path, at, stop, digest)
            if first is None:
                raise DataError([Problem(self.shown, f"byte {at}", "the file changed while it was scanned")])
            yield dataclasses.replace(self, data=data, span=None, first_offset=first, first_line=1, relative=True,
                                      consumed=stop - at)


_TAIL_BLOCK = 1 << 16  # what is read at a time past a span's end, to finish its last line


def _span_lines(path: str, start: int, end: int, digest: Any = None) -> tuple[int | None, bytes]:
    """(the byte offset of the first line that starts in [start, end) of the file, the bytes from there to the
    end of the last line that does, its newline included); a line starts at 0 or after a newline, so spans
    cut anywhere share out a file's lines with none lost or read twice. No line: (end, b""); the file shorter
    than `end` (it changed): (None, b""). The bytes [start, end) go through `digest`, if given."""
    with open(path, "rb") as handle:
        if start > 0:
            handle.seek(start - 1)
            head = handle.read(end - start + 1)
            if len(head) != end - start + 1:
                return None, b""
            if digest is not None:
                digest.update(memoryview(head)[1:])
            cut = head.find(b"\n")
            if cut < 0 or start + cut == end:  # inside one line that started before this span
                return end, b""
            first, body = start + cut, memoryview(head)[cut + 1:]
        else:
            head = handle.read(end)
            if len(head) != end:
                return None, b""
            if digest is not None:
                digest.update(head)
            first, body = 0, memoryview(head)
        if not body or body[-1] == 10:
            return first, bytes(body) if len(body) < len(head) else head
        pieces: list[bytes | memoryview] = [body]
        while block := handle.read(_TAIL_BLOCK):
            newline = block.find(b"\n")
            if newline >= 0:
                pieces.append(memoryview(block)[:newline + 1])
                break
            pieces.append(block)
        return first, b"".join(pieces)  # one copy of the span's bytes (a slice, then a join, cost two: measured)


@dataclass(frozen=True)
class Documents:
    texts: list[str]
    lines: list[int]
    offsets: list[int] | None
    line_count: int = 0  # lines in the chunk (text, JSON Lines), empty ones included


def expand(specs: list[str]) -> list[CorpusFile]:
    """Every corpus file the `--corpus` values name, in the order given (a directory's and a glob's files in
    path order); DataError naming a value that names nothing."""
    files: list[CorpusFile] = []
    for spec in specs:
        path = Path(spec).expanduser()
        if path.exists():
            files.extend(_expand_path(path))
            continue
        if any(c in spec for c in "*?["):
            matched = sorted(glob.glob(str(path), recursive=True))
            if not matched:
                raise DataError(f"--corpus {spec!r}: the pattern matches no file")
            for match in matched:
                files.extend(_expand_path(Path(match)))
            continue
        raise DataError("no such file or directory", spec)
    if not files:
        raise DataError(f"--corpus {', '.join(specs)}: no corpus file found")
    return files


def _expand_path(path: Path) -> list[CorpusFile]:
    if is_saved_dir(path):
        return _dataset_splits(path)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*")
                       if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))
        return [f for p in found for f in _expand_path(p)]
    return [classify(path)]


def _dataset_splits(path: Path) -> list[CorpusFile]:
    listing = path / "dataset_dict.json"
    if listing.is_file():
        splits = json.loads(listing.read_text(encoding="utf-8")).get("splits", [])
        return [CorpusFile(f"{path}[{s}]", path, "datasets", split=str(s)) for s in splits]
    return [CorpusFile(str(path), path, "datasets")]


def classify(path: Path) -> CorpusFile:
    """A file's kind and compression, from its first bytes and its name (DataError if it cannot be read)."""
    with path.open("rb") as handle:
        head = handle.read(4)
    compression: Compression = "gzip" if head.startswith(_GZIP_MAGIC) else "zstd" if head == _ZSTD_MAGIC else ""
    name = path.name.lower()
    if compression and name.endswith(_COMPRESSED_SUFFIXES):
        name = name.rsplit(".", 1)[0]
    if head == _PARQUET_MAGIC:
        return CorpusFile(str(path), path, "parquet")
    kind: Kind = "jsonl" if name.endswith(_JSONL_SUFFIXES) else "text"
    return CorpusFile(str(path), path, kind, compression)


class BlockDigest:
    """The sha256 of the concatenated sha256 digests of a byte stream's consecutive blocks of `block_bytes`
    (the last one shorter); with 4 MiB blocks, the scheme of Dropbox's content hash. Unlike one sha256 it is
    put together from blocks hashed apart, by whichever worker read each one (`of_blocks`)."""

    def __init__(self, block_bytes: int = BLOCK_BYTES) -> None:
        self.block_bytes = block_bytes
        self.blocks: list[bytes] = []
        self.block = hashlib.sha256()
        self.filled = 0

    def update(self, data: bytes) -> None:
        view = memoryview(data)
        while len(view):
            take = min(len(view), self.block_bytes - self.filled)
            self.block.update(view[:take])
            self.filled += take
            view = view[take:]
            if self.filled == self.block_bytes:
                self.blocks.append(self.block.digest())
                self.block, self.filled = hashlib.sha256(), 0

    def hexdigest(self) -> str:
        blocks = self.blocks + ([self.block.digest()] if self.filled else [])
        return of_blocks(blocks, self.block_bytes)


def of_blocks(block_digests: list[bytes], block_bytes: int) -> str:
    """A file's digest as the summary writes it (`sha256-blocks-4MiB:HEX`), from its blocks' sha256 digests."""
    size = f"{block_bytes >> 20}MiB" if block_bytes % (1 << 20) == 0 else f"{block_bytes}B"
    return f"sha256-blocks-{size}:{hashlib.sha256(b''.join(block_digests)).hexdigest()}"


class _Tee:
    """A raw file that hashes (`BlockDigest`) and counts the bytes read through it."""

    def __init__(self, handle: IO[bytes], block_bytes: int) -> None:
        self.handle = handle
        self.digest = BlockDigest(block_bytes)
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        self.read_bytes += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self.handle.close()


def _stream(tee: _Tee, compression: Compression) -> Any:
    source: Any = tee  # reads like a binary file, which is all the decompressors ask of it
    if compression == "gzip":
        return gzip.GzipFile(fileobj=source, mode="rb")
    if compression == "zstd":
        return _optional("zstandard").ZstdDecompressor().stream_reader(source, read_across_frames=True)
    return tee


def _optional(name: str, extra: str = "contamination") -> Any:
    """A library a corpus format needs, or the one sentence that says how to get it."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise DataError(f"reading this corpus needs {name}, which is not installed: pip install "
                        f"'klue[{extra}]'") from None


def _read_errors(compression: Compression) -> tuple[type[Exception], ...]:
    """What reading a damaged file raises: OSError and EOFError (gzip), zlib.error, and zstandard's own error,
    which derives from no error of the standard library."""
    errors: tuple[type[Exception], ...] = (OSError, EOFError, zlib.error, ValueError)
    if compression == "zstd":
        errors += (_optional("zstandard").ZstdError,)
    return errors


class CorpusReader:
    """The chunks of one corpus file, in order; after the last one, `digest` is set (for text and JSON Lines
    it is taken from the bytes as they are read: no second pass; for spans, from the blocks' digests the
    scanners send back: `finish_spans`)."""

    def __init__(self, file: CorpusFile, file_index: int, text_field: str, chunk_bytes: int = CHUNK_BYTES,
                 by_span: bool = False, block_bytes: int = BLOCK_BYTES) -> None:
        self.file = file
        self.file_index = file_index
        self.text_field = text_field
        self.chunk_bytes = chunk_bytes
        self.block_bytes = block_bytes  # a span's size, and the digest's block
        # an uncompressed file's chunks as spans the workers read themselves: sending the bytes through a pipe to
        # a worker process cost the reading process several times what reading them did, and finding the lines
        # and counting them there was work one process did for all (measured: 1.25x from 1 to 2 workers)
        self.by_span = by_span and file.compression == ""
        self.digest: str | None = None
        self.size = file.size()

    def chunks(self) -> Iterator[Chunk]:
        if self.file.kind in ("text", "jsonl"):
            yield from self._span_chunks() if self.by_span else self._line_chunks()
        else:
            yield from self._row_chunks()

    def _chunk(self, first_line: int, first_offset: int | None, consumed: int, data: bytes = b"",
               rows: tuple[str | None, ...] = ()) -> Chunk:
        return Chunk(self.file_index, self.file.shown, self.file.kind, self.text_field, first_line, first_offset,
                     consumed, data, rows)

    def _line_chunks(self) -> Iterator[Chunk]:
        line, offset, reported = 1, 0, 0
        with self.file.path.open("rb") as raw:
            tee = _Tee(raw, self.block_bytes)
            stream = _stream(tee, self.file.compression)
            carry = b""
            while True:
                try:
                    block = stream.read(self.chunk_bytes)
                except _read_errors(self.file.compression) as error:
                    raise DataError([Problem(self.file.shown, f"byte {tee.read_bytes}", f"cannot be read: "
                                             f"{error} (a damaged or cut-off {self.file.compression} file?)")]) \
                        from None
                if not block:
                    break
                data = carry + block
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    carry = data
                    continue
                carry = data[cut:]
                whole = data[:cut]
                yield self._piece(line, offset, tee.read_bytes - reported, whole)
                reported = tee.read_bytes
                line += int(np.count_nonzero(np.frombuffer(whole, dtype=np.uint8) == 10))  # 4x bytes.count
                offset += len(whole)
            if carry:
                yield self._piece(line, offset, tee.read_bytes - reported, carry)
                reported = tee.read_bytes
        self.digest = tee.digest.hexdigest()

    def _piece(self, line: int, offset: int, consumed: int, data: bytes) -> Chunk:
        return self._chunk(line, offset, consumed, data=data)

    def _span_chunks(self) -> Iterator[Chunk]:
        """One span per block of BLOCK_BYTES, cut without reading (the scanner reads it, `chunk_bytes` at a
        time, and sends back the block's sha256: `finish_spans`)."""
        path = str(self.file.path)
        for start in range(0, self.size, self.block_bytes):
            end = min(start + self.block_bytes, self.size)
            yield Chunk(self.file_index, self.file.shown, self.file.kind, self.text_field, 1, start, end - start,
                        span=(path, start, end), piece_bytes=self.chunk_bytes)

    def finish_spans(self, block_digests: list[bytes]) -> None:
        """The file's digest, once every span's block digest is back (in order)."""
        self.digest = of_blocks(block_digests, self.block_bytes)

    def _row_chunks(self) -> Iterator[Chunk]:
        batches, rows_total = (self._parquet_batches() if self.file.kind == "parquet" else self._dataset_batches())
        line, reported = 1, 0
        for rows in batches:
            line_after = line + len(rows)
            # progress in bytes on disk, in proportion to the rows read
            now = self.size * (line_after - 1) // max(1, rows_total)
            yield self._chunk(line, None, now - reported, rows=tuple(rows))
            reported, line = now, line_after
        self.digest = f"sha256:{identify(self.file.path).sha256}"

    def _parquet_batches(self) -> tuple[Iterator[list[str | None]], int]:
        handle = _optional("pyarrow.parquet").ParquetFile(self.file.path)
        self._check_column(handle.schema_arrow)
        batches = (b.column(0).to_pylist() for b in handle.iter_batches(ROWS_PER_CHUNK, columns=[self.text_field]))
        return batches, handle.metadata.num_rows

    def _dataset(self) -> Any:
        datasets = _optional("datasets", "hf")
        loaded = datasets.load_from_disk(str(self.file.path))
        if isinstance(loaded, datasets.DatasetDict):
            if self.file.split is None:
                return loaded[next(iter(loaded))]
            return loaded[self.file.split]
        return loaded

    def _dataset_batches(self) -> tuple[Iterator[list[str | None]], int]:
        dataset = self._dataset()
        self._check_column(dataset.features.arrow_schema)
        column = dataset.select_columns([self.text_field]).with_format("arrow")
        batches = (b.column(0).to_pylist() for b in column.iter(batch_size=ROWS_PER_CHUNK))
        return batches, len(dataset)

    def _check_column(self, schema: Any) -> None:
        import pyarrow as pa

        names = list(schema.names)
        if self.text_field not in names:
            raise DataError([Problem(self.file.shown, "", f"no column {self.text_field!r} (--text-field); its "
                                     f"columns: {', '.join(names)}")])
        kind = schema.field(self.text_field).type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            raise DataError([Problem(self.file.shown, "", f"column {self.text_field!r} holds {kind}, not text")])

    def check(self) -> None:
        """Read the start of the file as a scan would, so that a corpus that cannot be read is named before
        any work (the rest of a file can still fail later: a cut-off archive shows only at its end)."""
        if self.file.kind in ("text", "jsonl"):
            first = next(iter(_Probe(self).chunks()), None)
            if first is not None:
                documents(first, limit=10)
            return
        batches, _ = self._parquet_batches() if self.file.kind == "parquet" else self._dataset_batches()
        rows = next(iter(batches), [])
        documents(self._chunk(1, None, 0, rows=tuple(rows[:10])))


class _Probe(CorpusReader):
    """The first chunk of a file only, small."""

    def __init__(self, reader: CorpusReader) -> None:
        super().__init__(reader.file, reader.file_index, reader.text_field, chunk_bytes=1 << 16,
                         block_bytes=reader.block_bytes)

    def _line_chunks(self) -> Iterator[Chunk]:
        chunks = super()._line_chunks()
        first = next(chunks, None)
        chunks.close()  # type: ignore[attr-defined]  # a generator
        if first is not None:
            yield first


def documents(chunk: Chunk, limit: int | None = None) -> Documents:
    """The documents of a chunk with their line (or row) numbers and byte offsets: empty lines and texts are
    skipped; DataError naming the file and line of one that cannot be read. Lines are cut and decoded for the
    whole chunk at once, not line by line (a Python step per line costs as much as hashing it)."""
    if chunk.kind in ("parquet", "datasets"):
        rows = chunk.rows[:limit]
        kept = [i for i, row in enumerate(rows) if row]
        return Documents([rows[i] or "" for i in kept], [chunk.first_line + i for i in kept], None)
    data = chunk.data
    newlines = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    if limit is not None and len(newlines) > limit:
        data, newlines = data[:newlines[limit - 1] + 1], newlines[:limit]
    starts = np.concatenate(([0], newlines + 1))
    try:
        texts = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as error:
        line = int(np.searchsorted(newlines, error.start))
        raw = data[starts[line]:newlines[line] if line < len(newlines) else len(data)]
        raise _decode_error(raw, chunk, chunk.first_line + line, error.start - int(starts[line])) from None
    if data.endswith(b"\n"):
        texts.pop()  # the empty string after the chunk's last newline
    kept = [i for i, text in enumerate(texts) if text]
    texts = [texts[i] for i in kept] if len(kept) < len(texts) else texts
    lines = [chunk.first_line + i for i in kept]
    if chunk.kind == "jsonl":
        texts = _fields(texts, chunk, lines)
        kept = [k for k, text in zip(kept, texts) if text]
        texts = [text for text in texts if text]
        lines = [chunk.first_line + i for i in kept]
    offsets = ((chunk.first_offset or 0) + starts[kept]).tolist()
    return Documents(texts, lines, offsets, len(newlines) + (0 if data.endswith(b"\n") or not data else 1))


def plain_lines(chunk: Chunk) -> tuple[str, int, int]:
    """A plain-text chunk decoded whole, its last newline dropped, how many of its lines are not empty (its
    lines are its documents, numbered from `first_line`; empty ones are lines too, with no units) and how many
    lines it has."""
    data = chunk.data[:-1] if chunk.data.endswith(b"\n") else chunk.data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        documents(chunk)  # names the line
        raise
    if not data:
        return text, 0, 1 if chunk.data else 0
    newline = np.frombuffer(data, dtype=np.uint8) == 10
    # an empty line is a newline at the start, after a newline, or at the end (counted without a list of the
    # newlines' positions: most chunks have none)
    empty = int(np.count_nonzero(newline[1:] & newline[:-1])) + int(newline[0]) + int(newline[-1])
    lines = int(np.count_nonzero(newline)) + 1
    return text, lines - empty, lines


def line_counts(byte_starts: np.ndarray) -> tuple[int, int]:
    """`plain_lines`' counts (lines not empty, lines) from where each line of the chunk starts in its bytes, its
    last newline dropped, and where they end (the compiled pass gives them: no pass over the bytes here)."""
    lengths = np.diff(byte_starts)
    lengths[:-1] -= 1  # each line but the last holds its newline
    return int(np.count_nonzero(lengths)), len(lengths)


def line_offsets(chunk: Chunk, numbers: list[int], byte_starts: np.ndarray | None = None) -> list[int]:
    """The byte offsets in the decompressed stream of lines of a plain-text chunk, by their number in it
    (0-based): only the lines a hit needs. `byte_starts`: where each line starts in the chunk, when known."""
    if byte_starts is None:
        newlines = np.flatnonzero(np.frombuffer(chunk.data, dtype=np.uint8) == 10)
        byte_starts = np.concatenate(([0], newlines + 1))
    return ((chunk.first_offset or 0) + byte_starts[numbers]).tolist()


def _fields(texts: list[str], chunk: Chunk, lines: list[int]) -> list[str]:
    """The text field of each JSON line. The chunk is parsed as one JSON array, a single call into the C
    parser (measured 3x faster than json.loads per line on KorQuAD paragraphs); on any problem, line by line,
    which names the line."""
    try:
        objects = json.loads(f"[{','.join(texts)}]")
        values = [o.get(chunk.text_field) for o in objects]
        if len(objects) == len(texts) and all(type(v) is str for v in values):
            return values
    except (ValueError, AttributeError):
        pass
    return [_field(text, chunk, number) for text, number in zip(texts, lines)]


def _decode_error(raw: bytes, chunk: Chunk, number: int, at: int) -> DataError:
    return DataError([Problem(chunk.shown, f"line {number}", f"not UTF-8 at byte {at} of the line; "
                              f"{encoding_hint(raw, chunk.shown, at)}")])


def _field(line: str, chunk: Chunk, number: int) -> str:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as error:
        raise DataError([Problem(chunk.shown, f"line {number}", f"not JSON: {error.msg}")]) from None
    if not isinstance(obj, dict):
        raise DataError([Problem(chunk.shown, f"line {number}", "not a JSON object")])
    value = obj.get(chunk.text_field)
    if value is None and chunk.text_field not in obj:
        raise DataError([Problem(chunk.shown, f"line {number}", f"no field {chunk.text_field!r} (--text-field); "
                                 f"its fields: {', '.join(map(str, obj)) or 'none'}")])
    if value is not None and not isinstance(value, str):
        raise DataError([Problem(chunk.shown, f"line {number}", f"field {chunk.text_field!r} is not a string")])
    return value or ""
