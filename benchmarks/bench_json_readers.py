"""Speed of the JSON-task readers (and the foreign readers) on the real files in ../shared/data.

Usage: .venv/bin/python benchmarks/bench_json_readers.py [SHARED_DATA_DIR]
Prints, per file: examples read, problems found, best-of-3 wall time and examples per second.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from klue.errors import ProblemLog
from klue.tasks.mrc import records as mrc
from klue.tasks.nli import records as nli
from klue.tasks.re import records as re
from klue.tasks.sts import records as sts
from klue.tasks.wos import records as wos
from klue.tasks.ynat import records as ynat

FILES: list[tuple[str, Callable[[Path, ProblemLog], list[Any]], str]] = [
    ("nli", nli.read, "klue/klue-nli-v1.1/klue-nli-v1.1_dev.json"),
    ("sts", sts.read, "klue/klue-sts-v1.1/klue-sts-v1.1_dev.json"),
    ("ynat", ynat.read, "klue-partial/ynat-v1.1/ynat-v1_dev_sample_10.json"),
    ("ynat-resplit", ynat.read_resplit, "klue-derived/ynat-resplit/ynat-resplit_train.json"),
    ("re", re.read, "klue-derived/re-train-sample/klue-re-v1.1_train.sample3247.json"),
    ("mrc (KorQuAD)", mrc.read_korquad, "korean/korquad-v1/KorQuAD_v1.0_dev.json"),
    ("wos", wos.read, "klue-partial/wos-v1.1/wos-v1.1_dev_sample_10.json"),
    ("kornli", nli.read_kornli, "korean/kornli/xnli.dev.ko.tsv"),
    ("korsts", sts.read_korsts, "korean/korsts/sts-train.tsv"),
]


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "data"
    print("| reader | file | examples | problems | best of 3 (ms) | examples/s |")
    print("|---|---|---|---|---|---|")
    for name, reader, relative in FILES:
        path = root / relative
        best = float("inf")
        for _ in range(3):
            log = ProblemLog(str(path))
            start = time.perf_counter()
            records = reader(path, log)
            best = min(best, time.perf_counter() - start)
        print(f"| {name} | {relative} | {len(records):,} | {len(log.problems)} | {best * 1000:.1f} | "
              f"{len(records) / best:,.0f} |")


if __name__ == "__main__":
    main()
