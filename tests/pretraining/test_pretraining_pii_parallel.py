"""Parallel pseudonymisation: the same bytes for 1 and 2 worker processes and a 2-process local Ray, input
order kept, streamed reading split exactly as the corpus reader splits, and a bounded number of chunks
in flight."""

from __future__ import annotations

import json
import random
import re
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from klue.errors import DataError
from klue.pretraining.corpus import read_corpus_text
from klue.pretraining.pii import PII_KINDS, PiiDetector, document_rng, pseudonymise
from klue.pretraining.pii_parallel import (
    ParallelSettings,
    ordered_results,
    pseudonymise_corpus,
    pseudonymise_files,
    stream_lines,
)

HERE = Path(__file__).parent
_MARK = re.compile(r"\[\[(\w+):(.*?)\]\]")


def _sentences() -> list[str]:
    """The hand-written PII sentences of the detector's test sets (marks removed), plus plain ones."""
    lines = [line for name in ("pii_testset.txt", "pii_heldout.txt")
             for line in (HERE / name).read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.startswith("#")]
    return [_MARK.sub(lambda m: m.group(2), line) for line in lines]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A text file (blank lines, a repeated name in several documents) and a .jsonl file (blank lines)."""
    sentences = _sentences()
    rng = random.Random(3)
    texts = [rng.choice(sentences) for _ in range(150)] + ["", "홍길동 씨와 홍길동 씨", "평범한 문장."]
    folder = tmp_path_factory.mktemp("corpus")
    text_file = folder / "docs.txt"
    text_file.write_text("\n".join(texts) + "\n", encoding="utf-8")
    jsonl_file = folder / "docs.jsonl"
    jsonl_file.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + ("\n\n" if i % 9 else "\n")
                                  for i, t in enumerate(texts[:60])), encoding="utf-8")
    return [text_file, jsonl_file]


@pytest.fixture(scope="module")
def detector() -> PiiDetector:
    return PiiDetector()


@pytest.fixture(scope="module")
def one_worker(corpus: list[Path], detector: PiiDetector, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("one")
    pseudonymise_corpus(corpus, out, detector, seed=7, settings=ParallelSettings(workers=1, chunk_size=16))
    return out


def _outputs(folder: Path) -> dict[str, bytes]:
    report = json.loads((folder / "pii_report.json").read_text(encoding="utf-8"))
    for entry in report["files"]:
        entry.pop("output")  # the only place the output folder is named
    return {"docs.txt": (folder / "docs.txt").read_bytes(), "docs.jsonl": (folder / "docs.jsonl").read_bytes(),
            "report": json.dumps(report, sort_keys=True).encode()}


def test_one_worker_is_the_per_document_pseudonymisation_in_input_order(
        corpus: list[Path], detector: PiiDetector, one_worker: Path) -> None:
    """Each output line is its document pseudonymised with the (seed, file, position) generator: the
    chunked, streamed path changes nothing of what the one-process code wrote."""
    texts = corpus[0].read_text(encoding="utf-8").splitlines()
    expected = [pseudonymise(t, detector, document_rng(7, 0, i)).text for i, t in enumerate(texts)]
    assert (one_worker / "docs.txt").read_text(encoding="utf-8").splitlines() == expected
    objects = [json.loads(line) for line in corpus[1].read_text(encoding="utf-8").splitlines() if line.strip()]
    written = [json.loads(line) for line in (one_worker / "docs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [o["id"] for o in written] == [o["id"] for o in objects]
    assert [o["text"] for o in written] == [pseudonymise(o["text"], detector, document_rng(7, 1, i)).text
                                            for i, o in enumerate(objects)]
    assert expected != texts[:len(expected)]  # PII was replaced


@pytest.mark.slow
def test_two_worker_processes_write_the_same_bytes(corpus: list[Path], detector: PiiDetector, one_worker: Path,
                                                   tmp_path: Path) -> None:
    pseudonymise_corpus(corpus, tmp_path, detector, seed=7,
                        settings=ParallelSettings(workers=2, chunk_size=16, max_in_flight=3))
    assert _outputs(tmp_path) == _outputs(one_worker)


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[object]:
    """One local Ray (2 CPUs) for the module; one already started by another test is reused."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


@pytest.mark.slow
def test_local_ray_writes_the_same_bytes(corpus: list[Path], tmp_path: Path, ray_cluster: object) -> None:
    """Every kind but names (names need Kiwi in each Ray worker, seconds each; the process test above
    covers them): the Ray path, chunked, writes what one local worker writes."""
    detector = PiiDetector(kinds=tuple(k for k in PII_KINDS if k != "name"))
    pseudonymise_corpus(corpus, tmp_path / "one", detector, seed=7, settings=ParallelSettings(workers=1))
    pseudonymise_corpus(corpus, tmp_path / "ray", detector, seed=7,
                        settings=ParallelSettings(workers=2, executor="ray", chunk_size=16))
    assert _outputs(tmp_path / "ray") == _outputs(tmp_path / "one")
    assert json.loads((tmp_path / "ray" / "pii_report.json").read_text(encoding="utf-8"))["counts"]["phone"] > 0


def test_ray_missing_is_one_clear_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "in.txt"
    source.write_text("문장\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(DataError, match=re.escape("pip install 'klue[ray]'")):
        pseudonymise_files([str(source)], str(tmp_path / "out"), PiiDetector(kinds=("phone",)), seed=1,
                           executor="ray")
    assert not (tmp_path / "out" / "in.txt").exists()


def test_settings_refuse_what_cannot_work() -> None:
    with pytest.raises(DataError, match="--executor"):
        ParallelSettings(executor="dask")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="--workers"):
        ParallelSettings(workers=-1)
    with pytest.raises(DataError, match="--ray-address goes with --executor ray"):
        ParallelSettings(ray_address="ray://head:10001")


def test_ordered_results_keep_order_and_bound_the_chunks_in_flight() -> None:
    """Out-of-order completion (random delays) comes back in input order; never more than `max_in_flight`
    items are taken from the input and not yet handed out."""
    rng = random.Random(0)
    delays = [rng.uniform(0, 0.01) for _ in range(40)]
    taken = 0
    lock = threading.Lock()

    def items() -> Iterator[int]:
        nonlocal taken
        for index in range(40):
            with lock:
                taken += 1
            yield index

    def work(index: int) -> int:
        time.sleep(delays[index])
        return index * 10

    seen: list[int] = []
    with ThreadPoolExecutor(4) as pool:
        for result in ordered_results(items(), lambda i: pool.submit(work, i), max_in_flight=3):
            assert taken - len(seen) <= 3
            seen.append(result)
    assert seen == [i * 10 for i in range(40)]


def test_ordered_results_read_the_input_lazily() -> None:
    """An endless input: only as much is read as the consumer takes plus the in-flight bound."""
    pulled = 0

    def endless() -> Iterator[int]:
        nonlocal pulled
        while True:
            pulled += 1
            yield pulled

    def done(value: int) -> Future[int]:
        future: Future[int] = Future()
        future.set_result(value)
        return future

    results = ordered_results(endless(), done, max_in_flight=5)
    assert [next(results) for _ in range(3)] == [1, 2, 3]
    assert pulled <= 3 + 5


def test_stream_lines_split_as_the_corpus_reader_does(tmp_path: Path) -> None:
    path = tmp_path / "mixed.txt"
    path.write_bytes("\ufeff첫 줄\r\n둘\r셋\u2028넷\n\n\x0c다섯\n끝".encode())
    lines = [line for line, _ in stream_lines(path)]
    assert lines == read_corpus_text(path).splitlines()
    assert sum(size for _, size in stream_lines(path)) == path.stat().st_size


@pytest.mark.parametrize("data", [b"ok\n\xff\xfe bad\n", b"ok\n\0bad\n"])
def test_bad_bytes_get_the_corpus_readers_message(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(data)
    with pytest.raises(DataError) as expected:
        read_corpus_text(path)
    with pytest.raises(DataError) as streamed:
        list(stream_lines(path))
    assert str(streamed.value) == str(expected.value) and "line 2" in str(streamed.value)


def test_bad_jsonl_lines_are_all_told_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "a"}\nnot json\n{"id": 3}\n', encoding="utf-8")
    with pytest.raises(DataError) as error:
        pseudonymise_files([str(path)], str(tmp_path / "out"), PiiDetector(kinds=("phone",)), seed=1)
    assert "line 2" in str(error.value) and "line 3" in str(error.value)
    assert not (tmp_path / "out" / "docs.jsonl").exists()
