"""Spans share out a file's lines exactly, and a scan writes the same examples.jsonl and summary.json (apart
from the run's own figures) whatever the chunk size, the worker count or the executor: the first match is the
earliest in corpus order however the work was split."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from scan_helpers import ARTICLE, EXAMPLES, NOISE, OTHER, SECOND, SHORT, write_jsonl

from klue.contamination.corpus import CorpusReader, _span_lines, expand
from klue.contamination.examples import TaskSet
from klue.contamination.index import build_index
from klue.contamination.run import EXAMPLES_FILE, SUMMARY_FILE, ScanOptions, scan_corpus, write_outputs
from klue.contamination.scan import ChunkScanner
from klue.contamination.units import Settings
from klue.errors import DataError
from klue.io.provenance import DataSource


@pytest.mark.parametrize("text", [b"", b"\n", b"a", b"a\n", b"\n\nab\n\ncd", b"abc\nd\n\n\nefgh\nij\n",
                                  "가나\n다\n\n라마바사\n".encode()])
def test_spans_cut_anywhere_share_out_every_line_once(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(text)
    for size in range(1, len(text) + 2):
        pieces = []
        for start in range(0, len(text), size):
            first, data = _span_lines(str(path), start, min(start + size, len(text)))
            assert first is not None and text[first:first + len(data)] == data
            assert first == 0 or not data or text[first - 1:first] == b"\n"  # a line's start
            pieces.append(data)
        assert b"".join(pieces) == text, size


def test_a_span_past_the_end_of_a_changed_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(b"abc\n")
    assert _span_lines(str(path), 2, 10) == (None, b"")


def _corpus_lines(rng: random.Random) -> list[str]:
    """Noise with the examples copied in at many places: whole, partly, with their answer, twice in one line,
    after empty lines, and one line longer than the chunks the tests cut."""
    lines = [rng.choice(NOISE) for _ in range(300)]
    placed = [ARTICLE, f"{SECOND} {SHORT} neutral", " ".join(OTHER.split()[2:]), f"{ARTICLE} 그리고 {ARTICLE}",
              "", "", " ".join([NOISE[0]] * 40 + [OTHER]), SECOND]
    for text in placed * 3:
        lines.insert(rng.randrange(len(lines)), text)
    return lines


def _outputs(out: Path, corpus: list[Path], **options: Any) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The bytes of every examples.jsonl and the summary without its run figures, from `scan_corpus`."""
    settings = Settings()
    index = build_index(EXAMPLES, settings)
    result = scan_corpus(index, expand([str(p) for p in corpus]), ScanOptions(**options))
    source = DataSource("examples", "0" * 40, len(EXAMPLES), "scanned")
    write_outputs(out, index, [TaskSet("nli", EXAMPLES, source, "test")], result,
                  {"settings": {}, "executor": options.get("executor", "local")})
    summary = json.loads((out / SUMMARY_FILE).read_text(encoding="utf-8"))
    run = summary.pop("run")
    assert run["workers"] == options.get("workers", 1)
    return {p.parent.name: p.read_bytes() for p in out.glob(f"*/{EXAMPLES_FILE}")}, summary


def _corpora(tmp_path: Path) -> list[Path]:
    lines = _corpus_lines(random.Random(41))
    text = tmp_path / "c.txt"
    text.write_text("\n".join(lines), encoding="utf-8")  # the last line without its newline
    jsonl = write_jsonl(tmp_path / "c.jsonl", list(reversed(lines)))
    zipped = tmp_path / "c.txt.gz"  # compressed: cut by the reading process, not into spans
    zipped.write_bytes(gzip.compress("\n".join(lines[::2]).encode()))
    return [text, jsonl, zipped]


def test_the_outputs_do_not_depend_on_the_chunk_size(tmp_path: Path) -> None:
    corpus = _corpora(tmp_path)
    whole, summary = _outputs(tmp_path / "whole", corpus)
    rows = [json.loads(line) for line in whole["nli"].decode().splitlines()]
    assert [r["dirty_input"] for r in rows] == [True, True, True, False] and rows[1]["dirty_with_answer"]
    assert rows[0]["first_match"]["line"] > 1
    assert [f["digest"] for f in summary["corpus"]] == [_dropbox_digest(p.read_bytes()) for p in corpus]
    for chunk_bytes in (61, 200, 4096):  # shorter than a line, a few lines, many lines
        assert _outputs(tmp_path / f"c{chunk_bytes}", corpus, chunk_bytes=chunk_bytes) == (whole, summary)
    for block_bytes in (150, 1000):  # spans of a few lines, each read in pieces of 61 bytes
        blocks, in_blocks = _outputs(tmp_path / f"b{block_bytes}", corpus, chunk_bytes=61, block_bytes=block_bytes)
        assert blocks == whole and [f["digest"] for f in in_blocks["corpus"]] == [
            _block_digest(p.read_bytes(), block_bytes, f"{block_bytes}B") for p in corpus]
        assert {**in_blocks, "corpus": summary["corpus"]} == summary  # nothing else differs


def _block_digest(data: bytes, size: int, label: str) -> str:
    """sha256 over the sha256 digests of the blocks, computed here on the whole file."""
    digests = b"".join(hashlib.sha256(data[i:i + size]).digest() for i in range(0, len(data), size))
    return f"sha256-blocks-{label}:{hashlib.sha256(digests).hexdigest()}"


def _dropbox_digest(data: bytes) -> str:
    return _block_digest(data, 4 << 20, "4MiB")


def test_a_file_of_several_blocks_has_the_same_digest_read_as_spans_or_as_a_stream(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"".join(b"%d %s\n" % (i, b"x" * (i % 97)) for i in range(160_000)))  # 9.2 MB: 3 blocks
    file = expand([str(path)])[0]
    spans = CorpusReader(file, 0, "text", by_span=True)
    chunks = list(spans.chunks())
    assert len(chunks) == 3 and spans.digest is None
    scanner = ChunkScanner(build_index(EXAMPLES, Settings()))
    spans.finish_spans([scanner.scan(c).block_digest or b"" for c in chunks])
    stream = CorpusReader(file, 0, "text", by_span=False)
    assert sum(1 for _ in stream.chunks()) > 3
    assert spans.digest == stream.digest == _dropbox_digest(path.read_bytes())


@pytest.mark.slow  # two spawned workers start in a few seconds, twice
def test_two_workers_write_what_one_process_writes(tmp_path: Path) -> None:
    corpus = _corpora(tmp_path)
    one = _outputs(tmp_path / "one", corpus, chunk_bytes=150, block_bytes=300)
    assert _outputs(tmp_path / "two", corpus, chunk_bytes=150, block_bytes=300, workers=2) == one
    bad = tmp_path / "bad.jsonl"  # past the start checked before any work, in a later span
    bad.write_text('{"text": "가"}\n' * 300 + '{"body": "나"}\n', encoding="utf-8")
    with pytest.raises(DataError) as error:
        scan_corpus(build_index(EXAMPLES, Settings()), expand([str(bad)]),
                    ScanOptions(chunk_bytes=100, block_bytes=700, workers=2))
    assert (error.value.problems[0].path, error.value.problems[0].location) == (str(bad), "line 301")


@pytest.mark.slow
@pytest.mark.longest  # starts a local Ray (about 10-20 s here)
def test_ray_actors_write_what_one_process_writes(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    corpus = _corpora(tmp_path)
    on_ray = _outputs(tmp_path / "ray", corpus, chunk_bytes=150, block_bytes=300, workers=2, executor="ray")
    assert on_ray == _outputs(tmp_path / "one", corpus, chunk_bytes=150, block_bytes=300)


def test_the_scan_waits_for_each_worker_and_stops_if_one_died_starting() -> None:
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool
    from queue import Queue

    from klue.contamination.run import _wait_for_workers

    class BrokenPool:
        def submit(self, *_: object) -> Future[bool]:
            future: Future[bool] = Future()
            future.set_exception(BrokenProcessPool("a worker died starting"))
            return future

    said: Queue[int] = Queue()
    said.put(1)
    said.put(2)
    _wait_for_workers(BrokenPool(), said, 2)  # both said so: the pool is not asked
    said.put(1)
    with pytest.raises(BrokenProcessPool):
        _wait_for_workers(BrokenPool(), said, 2)
