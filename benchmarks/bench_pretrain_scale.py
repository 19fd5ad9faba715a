"""Pretraining at scale: memory and throughput of `klue pretrain tokenizer --sample`, `prepare` and `mlm`.

    .venv/bin/python benchmarks/bench_pretrain_scale.py --sizes-mb 30 300 --workers 1 2

Builds synthetic corpora of the given sizes from the Korean text under KLUE_EXTRA_DATA_DIR (KorSTS, KorNLI,
the KLUE sets: every sentence found, de-duplicated, repeated and shuffled by a seed) in a temporary
directory (never the repository; removed at the end), then runs the real commands as subprocesses and
samples the resident memory of each command's whole process tree (main process plus workers) every 0.1 s:
- `klue pretrain tokenizer --sample N` on the largest corpus (reservoir sample over the streamed corpus,
  then training);
- `klue pretrain prepare` on every size with every worker count (peak RSS must not grow with the corpus);
- `klue pretrain mlm --data` (the tiny model, CPU) on the smallest corpus's shards: tokens/s.
Each rate is projected to the paper's 62 GB corpus (rate x size, N cores assuming linear scaling): a
projection, not a measurement. Figures are printed as a Markdown table and written as JSON (--json).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

PAPER_BYTES = 62e9
KLUE = [sys.executable, "-c", "from klue.cli import main; main()"]


def korean_sentences(root: Path) -> list[str]:
    """Every distinct sentence of the Korean sets under `root` (TSV columns and JSON string fields)."""
    found: set[str] = set()
    for path in sorted(root.rglob("*.tsv")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[1:]:
            for cell in line.split("\t"):
                if len(cell) > 15 and any("\uac00" <= c <= "\ud7a3" for c in cell):
                    found.add(" ".join(cell.split()))
    for path in sorted(root.rglob("*.json")):
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        stack = [obj]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, str) and len(item) > 15 and sum("\uac00" <= c <= "\ud7a3" for c in item) > 5:
                found.update(" ".join(line.split()) for line in item.splitlines() if len(line.strip()) > 15)
    return sorted(found)


def write_corpus(sentences: list[str], path: Path, size_bytes: int, seed: int) -> int:
    """`sentences` repeated, each round shuffled by (seed, round), until `size_bytes`; returns the lines."""
    lines = 0
    written = 0
    round_ = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < size_bytes:
            order = list(sentences)
            random.Random(f"{seed}-{round_}").shuffle(order)
            for sentence in order:
                data = sentence + "\n"
                handle.write(data)
                written += len(data.encode())
                lines += 1
                if written >= size_bytes:
                    break
            round_ += 1
    return lines


def run_measured(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run a klue command; wall time, peak RSS of the whole tree (sum) and of its largest process."""
    import resource

    import psutil

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen([*KLUE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = {"tree": 0, "largest": 0}
    parent = psutil.Process(process.pid)

    def sample() -> None:
        while process.poll() is None:
            try:
                procs = [parent, *parent.children(recursive=True)]
                rss = [p.memory_info().rss for p in procs]
            except psutil.Error:
                continue
            peak["tree"] = max(peak["tree"], sum(rss))
            peak["largest"] = max(peak["largest"], max(rss))
            time.sleep(0.1)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    stdout, stderr = process.communicate()
    thread.join()
    if process.returncode != 0:
        raise SystemExit(f"failed: klue {' '.join(args)}\n{stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # every waited-for descendant: workers included
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": time.perf_counter() - started, "cpu_s": cpu, "peak_rss_tree_mb": peak["tree"] / 2**20,
            "peak_rss_largest_mb": peak["largest"] / 2**20, "stdout": stdout.strip()}


def projection(bytes_per_s_one_core: float, cores: int) -> float:
    """Hours for 62 GB on `cores` cores, assuming linear scaling (a projection)."""
    return PAPER_BYTES / (bytes_per_s_one_core * cores) / 3600


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[30, 300])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sample", type=int, default=100_000, help="--sample of the tokenizer run")
    parser.add_argument("--vocab-size", type=int, default=32_000)
    parser.add_argument("--mlm-steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--tmp", type=Path, default=None, help="where the corpora go (default: a new temp dir)")
    parser.add_argument("--ratio-rounds", type=int, default=0,
                        help="then run prepare on the smallest corpus with each --workers value in turn, this many "
                             "rounds (interleaved: the speed-up under a shared machine's changing load)")
    parser.add_argument("--ratio-only", action="store_true", help="only the tokenizer and the interleaved rounds")
    options = parser.parse_args()
    data_root = Path(os.environ.get("KLUE_EXTRA_DATA_DIR", "../shared/data"))
    if not data_root.is_dir():
        raise SystemExit(f"no Korean data at {data_root} (set KLUE_EXTRA_DATA_DIR)")
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    work = Path(tempfile.mkdtemp(prefix="klue_bench_scale_", dir=options.tmp))
    results: dict[str, Any] = {"cpu_count": os.cpu_count(), "load_avg_start": os.getloadavg(), "runs": []}
    try:
        sentences = korean_sentences(data_root)
        results["distinct_sentences"] = len(sentences)
        corpora = {}
        for size in options.sizes_mb:
            path = work / f"corpus_{size}MB.txt"
            lines = write_corpus(sentences, path, size * 2**20, options.seed)
            corpora[size] = (path, lines)
            print(f"corpus {size} MB: {lines:,} lines", file=sys.stderr)
        largest = max(options.sizes_mb)
        smallest = min(options.sizes_mb)
        tok = work / "tok"
        path, lines = corpora[largest]
        run = run_measured(["pretrain", "tokenizer", "-c", str(path), "-o", str(tok), "--pretokenize", "whitespace",
                            "--vocab-size", str(options.vocab_size), "--sample", str(options.sample),
                            "--seed", str(options.seed)], env)
        run |= {"step": "tokenizer", "size_mb": largest, "lines": lines, "sample": options.sample,
                "mb_per_s": largest / run["seconds"]}
        results["runs"].append(run)
        print(json.dumps(run), file=sys.stderr)
        for size in [] if options.ratio_only else options.sizes_mb:
            for workers in options.workers:
                path, lines = corpora[size]
                out = work / f"shards_{size}_{workers}"
                run = run_measured(["pretrain", "prepare", "--tokenizer", str(tok), "-c", str(path), "-o", str(out),
                                    "--max-len", "128", "--workers", str(workers)], env)
                index = json.loads((out / "index.json").read_text())
                run |= {"step": "prepare", "size_mb": size, "workers": workers, "lines": lines,
                        "tokens": index["tokens"], "tokens_per_s": index["tokens"] / run["seconds"],
                        "mb_per_s": size / run["seconds"]}
                results["runs"].append(run)
                print(json.dumps(run), file=sys.stderr)
                if size != smallest or workers != options.workers[0]:
                    shutil.rmtree(out)
        for round_ in range(options.ratio_rounds):
            for workers in options.workers:
                path, lines = corpora[smallest]
                out = work / f"ratio_{round_}_{workers}"
                run = run_measured(["pretrain", "prepare", "--tokenizer", str(tok), "-c", str(path), "-o", str(out),
                                    "--max-len", "128", "--workers", str(workers)], env)
                run |= {"step": "prepare-interleaved", "round": round_, "size_mb": smallest, "workers": workers,
                        "lines": lines, "mb_per_s": smallest / run["seconds"]}
                results["runs"].append(run)
                print(json.dumps(run), file=sys.stderr)
                shutil.rmtree(out)
        if not options.ratio_only:
            shards = work / f"shards_{smallest}_{options.workers[0]}"
            model = work / "model"
            run = run_measured(["pretrain", "mlm", "--data", str(shards), "-o", str(model), "--config", "tiny",
                                "--max-steps", str(options.mlm_steps), "--batch-size", "32", "--log-every", "10",
                                "--save-every", "0", "--cpu"], env)
            summary = json.loads((model / "pretrain_summary.json").read_text())
            run |= {"step": "mlm", "size_mb": smallest, "steps": summary["steps"], "tokens_per_s": summary["tokens_per_s"],
                    "train_time_s": summary["train_time_s"]}
            results["runs"].append(run)
            print(json.dumps(run), file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["load_avg_end"] = os.getloadavg()
    report(results)
    if options.json:
        options.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


def report(results: dict[str, Any]) -> None:
    print(f"cpu_count {results['cpu_count']}, load average at start {results['load_avg_start']}, "
          f"at end {results['load_avg_end']}; {results['distinct_sentences']:,} distinct sentences\n")
    print("| step | corpus | workers | wall s | CPU s | MB per wall s | MB per CPU s | tokens per wall s | "
          "peak RSS: tree (largest process) MB | 62 GB projection at the CPU-s rate, 1 / 16 / 64 cores |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for run in results["runs"]:
        workers = run.get("workers", 1)
        if run["step"] == "mlm":
            wall_rate = cpu_rate = "-"
            proj = "-"
        else:
            per_cpu_s = run["size_mb"] * 2**20 / run["cpu_s"]
            wall_rate, cpu_rate = f"{run['size_mb'] / run['seconds']:.2f}", f"{per_cpu_s / 2**20:.2f}"
            proj = " / ".join(f"{projection(per_cpu_s, c):.1f} h" for c in (1, 16, 64))
        tokens = f"{run['tokens_per_s']:,.0f}" if "tokens_per_s" in run else "-"
        print(f"| {run['step']} | {run['size_mb']} MB | {workers} | {run['seconds']:.1f} | {run['cpu_s']:.1f} | "
              f"{wall_rate} | {cpu_rate} | {tokens} | {run['peak_rss_tree_mb']:.0f} ({run['peak_rss_largest_mb']:.0f}) "
              f"| {proj} |")


if __name__ == "__main__":
    main()
