"""One NER classic cell (seed 2, protocol local:dev-80-20) on the first N sentences of the NER dev file,
in this process (`run_benchmark(..., jobs=0)`): CPU seconds of this process and its children, of the
children alone (the CRF's training process), the scores and the predictions' sha256. Run it once with each
source tree on PYTHONPATH to compare two commits (issue 40: Kiwi loaded in fit's process only).
Usage: KLUE_DATA_DIR=... PYTHONPATH=SRC python benchmarks/bench_ner_cell_cpu.py N OUT_DIR"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
from pathlib import Path


def cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    child = children.ru_utime + children.ru_stime
    return own.ru_utime + own.ru_stime + child, child


def main() -> None:
    import klue
    from klue.benchmark.runner import BenchmarkPlan, run_benchmark

    n, out = int(sys.argv[1]), Path(sys.argv[2])
    name = "klue-ner-v1.1"
    data = out / "data"
    (data / name).mkdir(parents=True)
    sentences = (Path(os.environ["KLUE_DATA_DIR"]) / name / f"{name}_dev.tsv").read_text(encoding="utf-8")
    (data / name / f"{name}_dev.tsv").write_text("\n\n".join(sentences.split("\n\n")[:n]) + "\n\n", encoding="utf-8")
    (total, child) = cpu()
    plan = BenchmarkPlan(("ner",), ("classic",), (2,), out / "bench", protocol="local:dev-80-20", data_dir=str(data))
    summary = run_benchmark(plan, jobs=0)
    total_after, child_after = cpu()
    cell = out / "bench" / "ner" / "classic" / "seed2"
    results = json.loads((cell / "results.json").read_text(encoding="utf-8"))
    print(f"{klue.__file__}  n={n}  failed={len(summary.failed)}  cpu {total_after - total:.2f} s  "
          f"children {child_after - child:.2f} s  load {os.getloadavg()[0]:.1f}  scores {results['scores']}  "
          f"predictions sha256 {hashlib.sha256((cell / 'predictions.jsonl').read_bytes()).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
