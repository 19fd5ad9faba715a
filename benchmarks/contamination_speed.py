"""Speed of `klue contamination scan` on Korean text (issue 41): 1 against 2 worker processes and 2 Ray actors in
wall time, CPU seconds per MB (scanning, and the main process beside the workers), peak memory at two corpus
sizes, and the projection to the KLUE paper's 62 GB pretraining corpus. One command:

    KLUE_DATA_DIR=... KLUE_EXTRA_DATA_DIR=... OMP_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/contamination_speed.py [--mb 64 256] [--repeats 3] [--no-ray] [--json F]

The benchmark side: the NLI, STS, NER and DP dev sets (KLUE_DATA_DIR), default settings (8 eojeols, klue
normalisation). The corpus: real Korean documents from KLUE_EXTRA_DATA_DIR (KorQuAD 1.0 dev contexts, KorNLI,
KorSTS, the first 5,000 KLUE NER train sentences), one document a line, repeated to each size in --mb and
written as plain text to a temporary directory. Each measurement is one `klue contamination scan` in a fresh
process (its peak resident memory, VmHWM, and its workers' are read from /proc while it runs). On the larger corpus, 1 process, 2 worker processes
and 2 Ray actors run in turn, --repeats times (interleaved, so each repeat's three runs see the same load);
the scaling is each repeat's ratio of scan MB/s (the summary's `run.mb_per_s`: the scan once the workers are
up, until its last result is merged), and its median. The smaller corpus is scanned by 1 process and 2 workers
once per repeat too, for memory at two sizes. The load average is recorded beside every run: wall-time
scaling means something only on a machine with 2 idle cores; the CPU seconds (`run.cpu_seconds` of the
summary: what the scanners spent on their chunks, wherever they ran, and what the main process spent beside
them) show on a loaded machine whether 2 workers cost more CPU per MB than 1 and how much the main process
does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

PAPER_CORPUS_GB = 62.0  # KLUE paper, section 3 (pretraining corpora: 62 GB after preprocessing)
TASKS = "nli,sts,ner,dp"
CONFIGS = {"1 process": (1, "local"), "2 workers": (2, "local"), "2 Ray actors": (2, "ray")}


def corpus_lines(extra: Path) -> list[str]:
    from contamination_janitor import corpus_texts  # this folder is on the path when a script of it runs

    return corpus_texts(extra, one_line=True)


def write_corpus(lines: list[str], mb: float, path: Path) -> Path:
    block = "".join(line + "\n" for line in lines).encode()
    with path.open("wb") as handle:
        for _ in range(max(1, round(mb * 1e6 / len(block)))):
            handle.write(block)
    return path


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return children


def _peak_kb(pid: int) -> tuple[int, str] | None:
    """A process's peak resident memory (VmHWM, kB: its own, unlike ru_maxrss, which a spawned process inherits
    from the process it was forked from) and its command line."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0), command


def watch_memory(root: int, peaks: dict[int, tuple[int, str]], stop: threading.Event) -> None:
    """Every 0.1 s until `stop`: the peak memory of `root` and of every process under it."""
    while not stop.wait(0.1):
        tree, todo = _children(), [root]
        while todo:
            pid = todo.pop()
            todo += tree.get(pid, [])
            if (seen := _peak_kb(pid)) is not None:
                peaks[pid] = max(seen, peaks.get(pid, (0, "")))


def one_scan(corpus: Path, out: Path, workers: int, executor: str) -> dict[str, Any]:
    """A scan in a fresh process: its scan figures (from the summary), its peak memory and its workers'."""
    code = ("import resource, json, sys; from klue.contamination.command import run_scan_command; "
            "from pathlib import Path; s = run_scan_command(corpus=[sys.argv[1]], out=Path(sys.argv[2]), "
            "text_field='text', tasks=sys.argv[3], protocol=None, eval_file=None, eval_format=None, unit='eojeol', "
            "n=None, normalise='klue', workers=int(sys.argv[4]), executor=sys.argv[5], data_dir=None, "
            "extra_data_dir=None); r = resource.getrusage; "
            "me, kids = r(resource.RUSAGE_SELF), r(resource.RUSAGE_CHILDREN); "
            "print('RESULT', json.dumps({'run': s['run'], 'tasks': s['tasks'], 'cpu_s': me.ru_utime + me.ru_stime, "
            "'children_cpu_s': kids.ru_utime + kids.ru_stime}))")
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", code, str(corpus), str(out), TASKS, str(workers), executor],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1"})
    peaks: dict[int, tuple[int, str]] = {}
    stop = threading.Event()
    watcher = threading.Thread(target=watch_memory, args=(process.pid, peaks, stop), daemon=True)
    watcher.start()
    stdout, stderr = process.communicate()
    stop.set()
    watcher.join()
    wall = time.perf_counter() - start
    if process.returncode:
        raise SystemExit(f"the scan failed ({process.returncode}):\n{stderr[-3000:]}")
    workers_kb = [kb for pid, (kb, command) in peaks.items()
                  if pid != process.pid and ("multiprocessing" in command or "ChunkScanner" in command)
                  and "resource_tracker" not in command]
    line = next(x for x in stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    run = result["run"]
    mb = run["bytes_scanned"] / 1e6
    cpu = run["cpu_seconds"]
    return {"mb": round(mb, 1), "scan_s": run["seconds"], "mb_per_s": run["mb_per_s"],
            "startup_s": run["startup_seconds"], "command_wall_s": round(wall, 2),
            # CPU per MB while scanning: the scanners on their chunks (wherever they ran), the main process
            "scan_cpu_ms_per_mb": round(1e3 * cpu["scanning"] / mb, 2),
            "main_cpu_ms_per_mb": round(1e3 * cpu["main_process"] / mb, 2),
            # peak resident memory (VmHWM) of the scan's process and of the largest of its workers (spawned
            # processes, or Ray's ChunkScanner actors)
            "rss_mb": round(peaks.get(process.pid, (0, ""))[0] / 1024, 1),
            "workers_rss_mb": round(max(workers_kb) / 1024, 1) if workers_kb else None,
            # the whole command's CPU (reading the sets, the index, starting workers, the scan)
            "command_cpu_s": round(result["cpu_s"] + result["children_cpu_s"], 2),
            "dirty": {task: row["dirty_input"] for task, row in result["tasks"].items()},
            "load": round(os.getloadavg()[0], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, nargs=2, default=[64.0, 256.0], help="the two corpus sizes (MB)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ray", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    extra = Path(os.environ["KLUE_EXTRA_DATA_DIR"])
    lines = corpus_lines(extra)
    began = time.perf_counter()
    report: dict[str, Any] = {"tasks": TASKS, "settings": "eojeol, n=8, klue", "cores": os.cpu_count(),
                              "load_before": os.getloadavg()}
    configs = {k: v for k, v in CONFIGS.items() if args.ray or v[1] != "ray"}
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        small = write_corpus(lines, args.mb[0], Path(tmp) / "small.txt")
        large = write_corpus(lines, args.mb[1], Path(tmp) / "large.txt")
        report["corpus_mb"] = [round(small.stat().st_size / 1e6, 1), round(large.stat().st_size / 1e6, 1)]
        plan = [("large", large, name) for name in configs] + [("small", small, name) for name in list(CONFIGS)[:2]]
        for repeat in range(args.repeats):
            for size, corpus, name in plan:
                key = f"{size}: {name}"
                workers, executor = CONFIGS[name]
                out = Path(tmp) / f"out-{repeat}-{size}-{workers}-{executor}"
                runs.setdefault(key, []).append(one_scan(corpus, out, workers, executor))
                print(key, json.dumps(runs[key][-1]), flush=True)
    one = runs["large: 1 process"]
    report["runs"] = runs

    def scaling(name: str) -> dict[str, Any]:
        ratios = [b["mb_per_s"] / a["mb_per_s"] for a, b in zip(one, runs[f"large: {name}"])]
        return {"per_repeat": [round(r, 2) for r in ratios], "median": round(statistics.median(ratios), 2),
                "loads": [(a["load"], b["load"]) for a, b in zip(one, runs[f"large: {name}"])]}

    def median(key: str, field: str) -> float:
        return round(statistics.median(r[field] for r in runs[key]), 2)

    single = median("large: 1 process", "scan_cpu_ms_per_mb") + median("large: 1 process", "main_cpu_ms_per_mb")
    report.update({
        "scaling_1_to_2_workers": scaling("2 workers"),
        "scaling_1_to_2_ray": scaling("2 Ray actors") if args.ray else None,
        "cpu_ms_per_mb": {name: {"scanning": median(f"large: {name}", "scan_cpu_ms_per_mb"),
                                 "main_process": median(f"large: {name}", "main_cpu_ms_per_mb")}
                          for name in configs},
        "mb_per_s_per_core_cpu": round(1e3 / single, 1),
        "projection_62gb_cpu_hours": round(PAPER_CORPUS_GB * 1e3 * single / 1e3 / 3600, 3),
        "peak_rss_mb": {key: {"main": max(r["rss_mb"] for r in rs),
                              "largest_worker": max((r["workers_rss_mb"] or 0) for r in rs) or None}
                        for key, rs in runs.items()},
        "load_after": os.getloadavg(), "seconds": round(time.perf_counter() - began, 1),
    })
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
