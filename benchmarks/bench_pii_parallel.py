"""Throughput and memory of `klue pretrain pii` with 1 and 2 local worker processes (and optionally Ray).

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/bench_pii_parallel.py --lines 20000 --repeats 3
    ... --ray            # also a 2-process local Ray run
    ... --kinds rrn,phone,email,card,account,url,address --lines 1000000 --repeats 1   # no Kiwi: memory at scale

Corpus: the Korean sentences on hand under KLUE_EXTRA_DATA_DIR (KorQuAD dev contexts, KorNLI, KorSTS, YNAT
re-split titles, UD Korean; split into sentences as benchmarks/pretrain_experiment.py does), with one in
--pii-every lines replaced by a hand-written PII sentence of tests/pretraining/pii_*.txt, shuffled by seed
and repeated to --lines. Each configuration runs in a fresh process (so its peak RSS is its own), the
configurations interleaved within each repeat (order alternating), so a shared machine's load falls on
all of them alike. Every run's output must be byte-identical to the first (checked by hash).

Reported per configuration (median over repeats): end-to-end seconds (process start of the workers and
Kiwi loading included), steady-state sentences/s (from the first written chunk to the last), the workers'
sentences per CPU-second (Kiwi loading excluded; independent of the load), peak RSS of the main process
(VmHWM) and of the largest worker (ru_maxrss of the children: an upper bound); the speed-up of 2 workers
over 1; and a projection of the paper's 62 GB corpus on N cores (a: measured bytes/s of one worker x N x
the measured 2-worker efficiency; b: bytes per worker CPU-second x N; a projection, not a measurement).
Prints a markdown table and a one-line summary.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests" / "pretraining"
PAPER_BYTES = 62e9  # the paper's pretraining corpus, 62 GB
_MARK = re.compile(r"\[\[(\w+):(.*?)\]\]")


def build_corpus(path: Path, lines: int, pii_every: int, seed: int) -> dict[str, int]:
    sys.path.insert(0, str(HERE))
    from pretrain_experiment import korean_corpus  # the experiment's corpus builder (sentences, deduplicated)

    extra = Path(os.environ.get("KLUE_EXTRA_DATA_DIR", HERE.parent.parent / "shared" / "data"))
    sentences = korean_corpus(extra, exclude=()).sentences
    pii = [_MARK.sub(lambda m: m.group(2), line) for name in ("pii_testset.txt", "pii_heldout.txt")
           for line in (TESTS / name).read_text(encoding="utf-8").splitlines()
           if line.strip() and not line.startswith("#")]
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < lines:
        batch = sentences[:]
        rng.shuffle(batch)
        out.extend(batch)
    out = out[:lines]
    for index in range(0, lines, pii_every):
        out[index] = rng.choice(pii)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return {"sentences_on_hand": len(sentences), "lines": lines, "bytes": path.stat().st_size}


def _own_peak_rss_mb() -> float:
    """This process's peak RSS (VmHWM): unlike ru_maxrss, not raised by the RSS of the parent it was forked
    from (Linux keeps that across exec)."""
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(args: argparse.Namespace) -> None:
    """One run in this fresh process; prints one JSON line."""
    from klue.pretraining.pii import PII_KINDS, PiiDetector
    from klue.pretraining.pii_parallel import ParallelSettings, ProgressTick, pseudonymise_corpus

    ticks: list[ProgressTick] = []
    out = Path(args.out)
    started = time.perf_counter()
    kinds = PII_KINDS if args.kinds == "all" else tuple(args.kinds.split(","))
    report = pseudonymise_corpus([args.corpus], out, PiiDetector(kinds=kinds), seed=1,
                                 settings=ParallelSettings(workers=args.workers, executor=args.executor,
                                                           chunk_size=args.chunk_size),
                                 on_progress=ticks.append)
    seconds = time.perf_counter() - started
    first, last = ticks[0], ticks[-1]
    steady = (last.documents - first.documents) / (last.seconds - first.seconds) if len(ticks) > 1 else 0.0
    steady_bytes = (last.bytes_done - first.bytes_done) / (last.seconds - first.seconds) if len(ticks) > 1 else 0.0
    with (out / Path(args.corpus).name).open("rb") as handle:  # in blocks: the peak RSS is the run's own
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"seconds": seconds, "documents": report["documents"], "steady_docs_s": steady,
                      "steady_bytes_s": steady_bytes, "sha256": digest,
                      "cpu_docs_s": last.documents / last.worker_cpu_seconds,
                      "cpu_bytes_s": last.bytes_done / last.worker_cpu_seconds,
                      "busy_cores": (last.worker_cpu_seconds - first.worker_cpu_seconds) / (last.seconds - first.seconds),
                      "main_cpu_s": own.ru_utime + own.ru_stime,
                      "rss_main_mb": _own_peak_rss_mb(),
                      "rss_worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))


def run_one(corpus: Path, workers: int, executor: str, chunk_size: int, kinds: str,
            out: Path) -> dict[str, float | str]:
    command = [sys.executable, __file__, "--child", "--corpus", str(corpus), "--out", str(out), "--workers",
               str(workers), "--executor", executor, "--chunk-size", str(chunk_size), "--kinds", kinds]
    done = subprocess.run(command, check=True, capture_output=True, text=True,
                          env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"})
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=20000, help="corpus lines (sentences)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats of every configuration")
    parser.add_argument("--pii-every", type=int, default=10, help="one PII sentence per this many lines")
    parser.add_argument("--chunk-size", type=int, default=256, help="documents per chunk")
    parser.add_argument("--ray", action="store_true", help="also a 2-process local Ray run")
    parser.add_argument("--kinds", default="all", help="kinds to replace (comma-separated, or all); without "
                        "name, Kiwi is not loaded: a fast run for the driver's memory on a large corpus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--executor", default="local", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    configurations = [("local", 1), ("local", 2)] + ([("ray", 2)] if args.ray else [])
    with tempfile.TemporaryDirectory(prefix="klue-pii-bench-") as tmp:
        corpus = Path(tmp) / "corpus.txt"
        facts = build_corpus(corpus, args.lines, args.pii_every, args.seed)
        load_before = os.getloadavg()
        runs: dict[tuple[str, int], list[dict[str, float | str]]] = {c: [] for c in configurations}
        for repeat in range(args.repeats):
            order = configurations if repeat % 2 == 0 else configurations[::-1]
            for executor, workers in order:
                result = run_one(corpus, workers, executor, args.chunk_size, args.kinds,
                                 Path(tmp) / f"out-{executor}-{workers}")
                runs[(executor, workers)].append(result)
                print(f"# repeat {repeat + 1} {executor} x{workers}: {result['seconds']:.1f} s, "
                      f"steady {result['steady_docs_s']:.0f} sentences/s", file=sys.stderr)
        load_after = os.getloadavg()
    digests = {r["sha256"] for rs in runs.values() for r in rs}
    assert len(digests) == 1, "outputs differ between configurations"

    def med(config: tuple[str, int], key: str) -> float:
        return statistics.median(float(r[key]) for r in runs[config])

    print(f"corpus: {facts['lines']} lines, {facts['bytes'] / 1e6:.1f} MB ({facts['sentences_on_hand']} distinct "
          f"sentences on hand, 1 PII sentence per {args.pii_every}); chunk {args.chunk_size}; "
          f"kinds {args.kinds}; {args.repeats} interleaved repeats; load average before {load_before[0]:.1f}, after "
          f"{load_after[0]:.1f} on {os.cpu_count()} cores")
    print("| executor | workers | end-to-end s | sentences/s end-to-end | steady sentences/s | steady MB/s "
          "| worker CPU: sentences per CPU-s | cores busy (steady) | main CPU s | peak RSS main MB "
          "| peak RSS worker MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for config in configurations:
        docs = float(runs[config][0]["documents"])
        print(f"| {config[0]} | {config[1]} | {med(config, 'seconds'):.1f} | {docs / med(config, 'seconds'):.0f} "
              f"| {med(config, 'steady_docs_s'):.0f} | {med(config, 'steady_bytes_s') / 1e6:.3f} "
              f"| {med(config, 'cpu_docs_s'):.0f} | {med(config, 'busy_cores'):.2f} | {med(config, 'main_cpu_s'):.1f} "
              f"| {med(config, 'rss_main_mb'):.0f} | {med(config, 'rss_worker_mb'):.0f} |")
    one, two = ("local", 1), ("local", 2)
    speedup_e2e = med(one, "seconds") / med(two, "seconds")
    speedup_steady = med(two, "steady_docs_s") / med(one, "steady_docs_s")
    efficiency = min(speedup_steady / 2, 1.0)  # over 1 only by the shared load's swings: capped
    bytes_one = med(one, "steady_bytes_s")
    cpu_bytes = med(two, "cpu_bytes_s")
    print("\nProjection (not a measurement) of the paper's 62 GB, (a) one worker's steady wall-clock bytes/s here "
          f"x N x the measured 2-worker efficiency {efficiency:.2f} (capped at 1); (b) bytes per worker CPU-second "
          f"({cpu_bytes / 1e3:.1f} kB/CPU-s, load-independent) x N, i.e. perfect scaling on idle cores:")
    for cores in (1, 2, 16, 64, 256):
        rate = bytes_one * (1 if cores == 1 else cores * efficiency)
        print(f"  {cores:>4} cores: (a) {PAPER_BYTES / rate / 3600:,.1f} h   (b) "
              f"{PAPER_BYTES / (cpu_bytes * cores) / 3600:,.1f} h")
    print(f"SUMMARY lines={facts['lines']} repeats={args.repeats} 1w={med(one, 'steady_docs_s'):.0f}/s "
          f"2w={med(two, 'steady_docs_s'):.0f}/s speedup_steady={speedup_steady:.2f}x "
          f"speedup_end_to_end={speedup_e2e:.2f}x cpu_rate={med(two, 'cpu_docs_s'):.0f}/CPU-s "
          f"busy_cores_2w={med(two, 'busy_cores'):.2f} identical_outputs=yes "
          f"rss_main={med(two, 'rss_main_mb'):.0f}MB rss_worker={med(two, 'rss_worker_mb'):.0f}MB "
          f"load={load_before[0]:.1f}->{load_after[0]:.1f}")


if __name__ == "__main__":
    main()
