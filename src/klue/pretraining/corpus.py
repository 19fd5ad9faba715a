"""Corpus files for tokenizer and masked-LM training, read as a stream, and sentence helpers.

A corpus is a list of sources, each one of:
- a text file (one text per line) or a `.jsonl` file (one JSON object per line, the text under "text"),
  either of them plain, gzip-compressed (`.gz`) or zstd-compressed (`.zst`, `.zstd`);
- a directory of such files (shards): every non-hidden file under it, in sorted path order;
- a `datasets` save_to_disk directory (`DIR`, or `DIR:split` for a DatasetDict), or, from Python, any
  `datasets.Dataset` / `IterableDataset`: its rows are streamed, the text under the text field.
Blank lines are skipped. `iter_corpus` yields the texts one by one, reading files in 1 MiB blocks, so memory
stays flat however large the corpus; `read_corpus` is the same as a list. (The corpus of the pretraining
experiment, built from the Korean sets on hand, is made by benchmarks/pretrain_experiment.py.)

Every file is checked as it streams: missing files, bytes that are not UTF-8 (with the encoding they most
likely are, and the command that converts them) and NUL bytes are a `DataError` naming the file and line;
a leading byte-order mark is dropped, so neither a BOM nor a NUL can become a vocabulary entry. After the
first problem in a file the texts stop and the rest of the file is scanned for more problems (every bad
JSONL line, how many lines hold NUL bytes), then one error lists them. `read_corpus_text` reads one whole
file with the same checks (the PII pseudonymiser uses it).
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from klue.errors import DataError, ProblemLog
from klue.io.text import decode_utf8, encoding_hint, jsonl_objects, read_bytes

_SENTENCE_END = re.compile(r"(?<=[.?!。])\s+")
_BLOCK_BYTES = 1 << 20  # a file streams in blocks of this many (decompressed) bytes, cut at a line end
_HEAD_BYTES = 1 << 16  # the first block is at least this long: the UTF-16 / BOM checks look at a file's head
COMPRESSED_SUFFIXES = (".gz", ".zst", ".zstd")


def _check_no_nul(text: str, log: ProblemLog) -> None:
    """One error at the first line with a NUL character (with the count): no text corpus holds one, and
    one that reached the tokenizer trainer would become a vocabulary entry."""
    first = text.find("\0")
    if first < 0:
        return
    lines = text.split("\n")
    with_nul = sum(1 for line in lines if "\0" in line)
    _log_nul(log, text.count(chr(10), 0, first) + 1, with_nul)


def _log_nul(log: ProblemLog, first_line: int, lines_with_nul: int) -> None:
    also = f"; {lines_with_nul - 1} more lines have them" if lines_with_nul > 1 else ""
    log.error(f"line {first_line}", f"a NUL byte: a text corpus holds none (is this a binary file?){also}")


def read_corpus_text(path: Path) -> str:
    """The UTF-8 text of one corpus file, a leading BOM dropped; DataError naming the file (and line) when
    it is missing, a directory, not UTF-8 (with the likely encoding) or holds NUL bytes."""
    log = ProblemLog(str(path))
    data = read_bytes(path, log)
    text = decode_utf8(data, log) if data is not None else None
    if text is not None:
        _check_no_nul(text, log)
    log.raise_if_errors()
    assert text is not None  # raise_if_errors raised otherwise
    return text


def _universal_lines(text: str) -> list[str]:
    """Lines as a text-mode `open()` gives them: `\\n`, `\\r\\n` and `\\r` end a line."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


# ------------------------------------------------------------------------------------ sources


@dataclass(frozen=True)
class DatasetSource:
    """A `datasets` save_to_disk directory given as a corpus (`DIR` or `DIR:split`)."""

    text: str  # as given
    directory: Path
    split: str | None


def is_compressed(path: Path) -> bool:
    return path.suffix in COMPRESSED_SUFFIXES


def is_jsonl(path: Path) -> bool:
    """A JSON Lines file, compressed or not (`x.jsonl`, `x.jsonl.gz`, `x.jsonl.zst`)."""
    name = path.with_suffix("") if is_compressed(path) else path
    return name.suffix == ".jsonl"


def expand_sources(paths: Iterable[Path | str]) -> list[Path | DatasetSource]:
    """Each corpus path as the files (or dataset) it stands for: a directory of shards becomes its files in
    sorted order, a `datasets` directory stays one source; a missing path stays, to fail when read."""
    from klue.io.formats import is_saved_dir, saved_path

    sources: list[Path | DatasetSource] = []
    for raw in paths:
        path = Path(raw)
        saved = saved_path(path) if not path.is_file() else None
        if saved is not None and (is_saved_dir(saved.directory) or saved.split is not None):
            sources.append(DatasetSource(str(raw), saved.directory, saved.split))
        elif path.is_dir():
            files = sorted((p for p in path.rglob("*") if p.is_file()
                            and not any(part.startswith(".") for part in p.relative_to(path).parts)),
                           key=lambda p: p.relative_to(path).as_posix())
            if not files:
                raise DataError("a corpus directory with no files in it (it is read as a directory of shards)",
                                path)
            sources.extend(files)
        else:
            sources.append(path)
    return sources


def _open_binary(path: Path, log: ProblemLog) -> IO[bytes] | None:
    """The decompressed byte stream of a corpus file, or None after logging why it cannot be read."""
    if path.is_dir():  # said plainly: "Is a directory" from the OS reads like a missing file to many
        log.error("", "is a directory, not a file")  # noqa: PLE1205 (ProblemLog, not logging)
        return None
    try:
        handle: IO[bytes] = path.open("rb")
    except OSError as error:
        log.error("", f"cannot read file: {error.strerror or error}")  # noqa: PLE1205
        return None
    if path.suffix == ".gz":
        return gzip.GzipFile(fileobj=handle, mode="rb")  # type: ignore[return-value]  # typeshed: GzipFile is no IO[bytes]
    if path.suffix in (".zst", ".zstd"):
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(handle, closefd=True)
    return handle


def _byte_blocks(stream: IO[bytes], path: Path, log: ProblemLog) -> Iterator[bytes]:
    """The stream in blocks of whole lines (the last may lack its line end); a damaged compressed stream is
    logged."""
    carry = b""
    first = True
    while True:
        try:
            data = stream.read(_BLOCK_BYTES)
        except (OSError, EOFError, ValueError) as error:  # gzip / zstd: truncated or not compressed at all
            log.error("", f"cannot decompress {path.suffix} file: {error}")  # noqa: PLE1205
            return
        if not data:
            break
        data = carry + data
        if first and len(data) < _HEAD_BYTES:
            carry = data
            continue
        cut = data.rfind(b"\n") + 1
        if cut == 0:  # one line longer than a block: keep reading
            carry = data
            continue
        first = False
        carry = data[cut:]
        yield data[:cut]
    if carry:
        yield carry


@dataclass
class _FileScan:
    """What streaming one file has seen: where the next block starts, and the first NUL line."""

    line: int = 1  # number of the first line of the next block (counting `\n`)
    offset: int = 0  # byte offset of the next block in the (decompressed) file
    first_nul: int | None = None
    lines_with_nul: int = 0


def _decode_block(block: bytes, scan: _FileScan, log: ProblemLog) -> str | None:
    """One block as text, or None after logging where its bytes stop being UTF-8 (the file's first block
    goes through the same check as a whole file: BOM, UTF-16 without a BOM)."""
    if scan.offset == 0:
        return decode_utf8(block, log)
    try:
        return block.decode("utf-8")
    except UnicodeDecodeError as error:
        line = scan.line + block.count(b"\n", 0, error.start)
        offset = scan.offset + error.start
        log.error(f"line {line}", f"bytes that are not UTF-8 at byte offset {offset}: "
                                 f"{block[error.start:error.start + 4]!r}; "
                                 f"{encoding_hint(block, log.path, error.start)}")
        return None


def _jsonl_texts(lines: list[str], first_line: int, log: ProblemLog, text_field: str) -> list[str]:
    """The texts of a block of JSONL lines; bad lines are logged at their line in the whole file."""
    local = ProblemLog(log.path)
    texts = [obj[text_field].strip() for _, obj in jsonl_objects(lines, local, text_field)]
    for problem in local.problems:
        number = int(problem.location.removeprefix("line ")) + first_line - 1
        (log.error if problem.severity == "error" else log.warning)(f"line {number}", problem.message)
    return texts


def _file_texts(path: Path, text_field: str) -> Iterator[str]:
    """The texts of one corpus file, streamed; DataError (every problem in the file) at its end."""
    log = ProblemLog(str(path))
    stream = _open_binary(path, log)
    if stream is None:
        log.raise_if_errors()
        return
    jsonl = is_jsonl(path)
    scan = _FileScan()
    universal_line = 1  # JSONL line numbers count universal lines (`\r` too), as a text-mode read does
    decoded = True  # False after bytes that are not UTF-8: nothing after them is text
    with stream:
        for block in _byte_blocks(stream, path, log):
            text = _decode_block(block, scan, log) if decoded else None
            decoded = text is not None
            if text is not None and "\0" in text:
                with_nul = [i for i, line in enumerate(text.split("\n")) if "\0" in line]
                if scan.first_nul is None:
                    scan.first_nul = scan.line + with_nul[0]
                scan.lines_with_nul += len(with_nul)
            if text is not None:
                lines = _universal_lines(text.removesuffix("\n"))
                if scan.first_nul is not None:  # a NUL byte is said alone, not as invalid JSON too
                    texts = []
                elif jsonl:
                    texts = _jsonl_texts(lines, universal_line, log, text_field)
                else:
                    texts = [stripped for stripped in (line.strip() for line in lines) if stripped]
                universal_line += len(lines)
                if not log.errors and scan.first_nul is None:  # after a problem: only look for more
                    yield from texts
            scan.line += block.count(b"\n")
            scan.offset += len(block)
    if scan.first_nul is not None:
        _log_nul(log, scan.first_nul, scan.lines_with_nul)
    log.raise_if_errors()


def _dataset_texts(dataset: Any, text_field: str, where: str) -> Iterator[str]:
    """The non-blank texts of a `datasets` Dataset or IterableDataset, streamed row by row."""
    names = getattr(dataset, "column_names", None)
    if names is not None and text_field not in names:
        raise DataError(f"no {text_field!r} column; the columns are {', '.join(names)}", where)
    rows = dataset.to_iterable_dataset() if hasattr(dataset, "to_iterable_dataset") else dataset
    for index, row in enumerate(rows):
        value = row.get(text_field)
        if not isinstance(value, str):
            raise DataError(f"row {index}: the {text_field!r} field is not a string", where)
        if "\0" in value:
            raise DataError(f"row {index}: a NUL character: a text corpus holds none", where)
        stripped = value.replace("\ufeff", "").strip()
        if stripped:
            yield stripped


def _source_texts(source: Path | DatasetSource, text_field: str) -> Iterator[str]:
    if isinstance(source, DatasetSource):
        from klue.io.formats import SavedPath
        from klue.io.hf import load_saved

        yield from _dataset_texts(load_saved(SavedPath(source.directory, source.split)), text_field, source.text)
    else:
        yield from _file_texts(source, text_field)


CorpusSource = Path | str | Any  # a path (file, directory, `datasets` directory) or a `datasets` object


def iter_corpus(sources: Sequence[CorpusSource], text_field: str = "text") -> Iterator[str]:
    """The texts of a corpus, one at a time in order (see the module doc); DataError when it holds none."""
    any_text = False
    for source in sources:
        if isinstance(source, (str, Path)):
            for expanded in expand_sources([source]):
                for text in _source_texts(expanded, text_field):
                    any_text = True
                    yield text
        else:
            for text in _dataset_texts(source, text_field, type(source).__name__):
                any_text = True
                yield text
    if not any_text:
        raise DataError(f"no text in the corpus files: {', '.join(str(p) for p in sources)}")


def read_corpus(paths: Sequence[CorpusSource], text_field: str = "text") -> list[str]:
    """The whole corpus as a list (small corpora; large ones stream through `iter_corpus`)."""
    return list(iter_corpus(paths, text_field))


def corpus_fingerprint(sources: Sequence[CorpusSource]) -> list[dict[str, Any]]:
    """What identifies a corpus: every file (in reading order) with its size and SHA-256; a `datasets`
    object by its fingerprint."""
    from klue.io.hashing import sha256_file

    entries: list[dict[str, Any]] = []
    for source in sources:
        if not isinstance(source, (str, Path)):
            entries.append({"dataset": type(source).__name__,
                            "fingerprint": getattr(source, "_fingerprint", None) or repr(source)})
            continue
        for expanded in expand_sources([source]):
            if isinstance(expanded, DatasetSource):
                files = sorted(p for p in expanded.directory.rglob("*") if p.is_file())
                digest = hashlib.sha256()
                for file in files:
                    digest.update(f"{file.relative_to(expanded.directory).as_posix()}\0{sha256_file(file)}\n"
                                  .encode())
                entries.append({"path": expanded.text, "sha256": digest.hexdigest()})
            elif expanded.is_file():
                entries.append({"path": str(expanded), "bytes": expanded.stat().st_size,
                                "sha256": sha256_file(expanded)})
            else:
                list(_file_texts(expanded, "text"))  # raises: missing or unreadable, said as the reader says it
    return entries


def reservoir_sample(texts: Iterable[str], size: int, seed: int) -> list[str]:
    """`size` texts drawn uniformly from a stream of unknown length (reservoir sampling, Algorithm R),
    returned in stream order; the same stream and seed always give the same sample. Written by hand: it is
    a few lines, and neither numpy nor the standard library samples from a stream."""
    import random

    if size < 1:
        raise DataError(f"--sample {size}: a sample holds at least one text")
    rng = random.Random(seed)
    kept: list[tuple[int, str]] = []
    for index, text in enumerate(texts):
        if index < size:
            kept.append((index, text))
            continue
        slot = rng.randrange(index + 1)
        if slot < size:
            kept[slot] = (index, text)
    kept.sort()
    return [text for _, text in kept]


def normalise_sentence(text: str) -> str:
    return " ".join(text.split())


def split_sentences(text: str) -> list[str]:
    return [s for s in (normalise_sentence(p) for p in _SENTENCE_END.split(text)) if s]

