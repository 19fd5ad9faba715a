"""Speed of `klue contamination scan` on Korean text (issue 41): MB/s per core, 1 against 2 worker processes and
Ray, peak memory at two corpus sizes, and the projection to the KLUE paper's 62 GB pretraining corpus.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/contamination_speed.py [--mb 16 64] [--repeats 2] [--json F]

The benchmark side: the NLI, STS, NER and DP dev sets (KLUE_DATA_DIR), default settings (8 eojeols, klue
normalisation). The corpus: real Korean documents from KLUE_EXTRA_DATA_DIR (KorQuAD 1.0 dev contexts, KorNLI,
KorSTS, the first 5,000 KLUE NER train sentences), one document a line, repeated to each size in --mb and
written as plain text to a temporary directory. Each measurement is one `klue contamination scan` in a fresh
process (so its peak RSS, with its workers', is its own), alternated between the configurations --repeats
times; the best time of each is reported, with the load average of the shared machine beside it, and the
CPU seconds of the command and its worker processes (on a machine with no idle core, wall-time scaling
cannot show; the CPU seconds show what the workers cost beside one process).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

PAPER_CORPUS_GB = 62.0  # KLUE paper, section 3 (pretraining corpora: 62 GB after preprocessing)
TASKS = "nli,sts,ner,dp"


def corpus_lines(extra: Path) -> list[str]:
    from contamination_janitor import corpus_texts  # this folder is on the path when a script of it runs

    return corpus_texts(extra, one_line=True)


def write_corpus(lines: list[str], mb: float, path: Path) -> Path:
    block = "".join(line + "\n" for line in lines).encode()
    with path.open("wb") as handle:
        for _ in range(max(1, round(mb * 1e6 / len(block)))):
            handle.write(block)
    return path


def one_scan(corpus: Path, out: Path, workers: int, executor: str) -> dict[str, Any]:
    """A scan in a fresh process: its wall time, its MB/s (the scan's own figure) and its peak RSS."""
    code = ("import resource, json, sys; from klue.contamination.command import run_scan_command; "
            "from pathlib import Path; s = run_scan_command(corpus=[sys.argv[1]], out=Path(sys.argv[2]), "
            "text_field='text', tasks=sys.argv[3], protocol=None, eval_file=None, eval_format=None, unit='eojeol', "
            "n=None, normalise='klue', workers=int(sys.argv[4]), executor=sys.argv[5], data_dir=None, "
            "extra_data_dir=None); r = resource.getrusage; "
            "me, kids = r(resource.RUSAGE_SELF), r(resource.RUSAGE_CHILDREN); "
            "print('RESULT', json.dumps({'run': s['run'], 'rss_mb': me.ru_maxrss / 1024, "
            "'children_rss_mb': kids.ru_maxrss / 1024, 'cpu_s': me.ru_utime + me.ru_stime, "
            "'children_cpu_s': kids.ru_utime + kids.ru_stime}))")
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, str(corpus), str(out), TASKS, str(workers), executor],
                          capture_output=True, text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    wall = time.perf_counter() - start
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    mb = result["run"]["bytes_scanned"] / 1e6
    return {"wall_s": round(wall, 2), "scan_s": result["run"]["seconds"], "mb_per_s": result["run"]["mb_per_s"],
            "rss_mb": round(result["rss_mb"], 1), "workers_rss_mb": round(result["children_rss_mb"], 1),
            # CPU seconds of the whole command (reading the sets, the index, the scan) and of its spawned
            # workers; Ray's actors are not its children and are not counted
            "cpu_s": round(result["cpu_s"], 2), "workers_cpu_s": round(result["children_cpu_s"], 2),
            "mb": round(mb, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, nargs=2, default=[16.0, 64.0], help="the two corpus sizes")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ray", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    extra = Path(os.environ["KLUE_EXTRA_DATA_DIR"])
    lines = corpus_lines(extra)
    report: dict[str, Any] = {"tasks": TASKS, "settings": "eojeol, n=8, klue", "cores": os.cpu_count(),
                              "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        small = write_corpus(lines, args.mb[0], Path(tmp) / "small.txt")
        large = write_corpus(lines, args.mb[1], Path(tmp) / "large.txt")
        report["corpus_mb"] = [round(small.stat().st_size / 1e6, 1), round(large.stat().st_size / 1e6, 1)]
        configs = [("small", small, 1, "local"), ("large", large, 1, "local"), ("small", small, 2, "local"),
                   ("large", large, 2, "local")]
        if args.ray:
            configs.append(("large", large, 2, "ray"))
        runs: dict[str, list[dict[str, Any]]] = {}
        for repeat in range(args.repeats):
            for size, corpus, workers, executor in configs:
                key = f"{size} {executor} x{workers}"
                out = Path(tmp) / f"out-{repeat}-{key.replace(' ', '-')}"
                runs.setdefault(key, []).append({**one_scan(corpus, out, workers, executor),
                                                 "load": os.getloadavg()[0]})
                print(key, runs[key][-1], flush=True)
    best = {key: max(r, key=lambda x: x["mb_per_s"]) for key, r in runs.items()}
    one, two = best["large local x1"]["mb_per_s"], best["large local x2"]["mb_per_s"]
    # CPU seconds per MB of corpus, from the difference between the two sizes (what reading the sets, building
    # the index and starting workers cost cancels): robust to the load, unlike wall time
    cheapest = {key: min(r, key=lambda x: x["cpu_s"] + x["workers_cpu_s"]) for key, r in runs.items()}
    span = cheapest["large local x1"]["mb"] - cheapest["small local x1"]["mb"]

    def per_mb(workers: int, field: str) -> float:
        return (cheapest[f"large local x{workers}"][field] - cheapest[f"small local x{workers}"][field]) / span

    single = per_mb(1, "cpu_s")
    main_two, workers_two = per_mb(2, "cpu_s"), per_mb(2, "workers_cpu_s")
    report.update({
        "runs": runs, "best": best,
        "cpu_s_per_mb_1_process": round(single, 5), "cpu_mb_per_s_per_core": round(1 / single, 1),
        "cpu_s_per_mb_2_workers": {"reader": round(main_two, 5), "workers": round(workers_two, 5)},
        # with two idle cores the reader and the workers run side by side: the slower of the reader and half
        # the workers' work sets the pace
        "projected_scaling_1_to_2_on_idle_cores": round(single / max(main_two, workers_two / 2), 2),
        "projection_62gb_cpu_hours": round(PAPER_CORPUS_GB * 1e3 * single / 3600, 2),
        "mb_per_s_per_core": one, "scaling_1_to_2_workers": round(two / one, 2),
        "scaling_1_to_2_ray": round(best["large ray x2"]["mb_per_s"] / one, 2) if args.ray else None,
        "projection_62gb_hours_1_core": round(PAPER_CORPUS_GB * 1e3 / one / 3600, 2),
        "projection_62gb_hours_2_workers": round(PAPER_CORPUS_GB * 1e3 / two / 3600, 2),
        "load_after": os.getloadavg(), "this_process_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    })
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
