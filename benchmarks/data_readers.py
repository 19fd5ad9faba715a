"""Reader speed and counts on the real files: `.venv/bin/python benchmarks/data_readers.py [DATA_ROOT]`.

DATA_ROOT is the directory holding `klue/`, `klue-partial/` and `korean/` (default ../shared/data).
Each file is read `--repeat` times; the best wall time is reported with the record and word counts.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from klue import registry
from klue.errors import ProblemLog

FILES = [
    ("ner", "official", "klue/klue-ner-v1.1/klue-ner-v1.1_dev.tsv"),
    ("ner", "official", "klue-partial/klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv"),
    ("dp", "official", "klue/klue-dp-v1.1/klue-dp-v1.1_dev.tsv"),
    ("dp", "conllu", "korean/ud-korean/ko_gsd-ud-dev.conllu"),
    ("dp", "conllu", "korean/ud-korean/ko_kaist-ud-test.conllu"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("root", nargs="?", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| file | records | units | errors | warnings | best read (s) |")
    print("|---|---|---|---|---|---|")
    for task_name, reader_name, relative in FILES:
        task = registry.get(task_name)
        reader = task.read if reader_name == "official" else task.other_readers[reader_name]
        path = args.root / relative
        best = float("inf")
        for _ in range(args.repeat):
            log = ProblemLog(str(path))
            start = time.perf_counter()
            records = reader(path, log)
            best = min(best, time.perf_counter() - start)
        units = sum(len(r.nonspace_chars) if task_name == "ner" else len(r) for r in records)
        print(f"| {relative} | {len(records):,} | {units:,} | {len(log.errors)} | {len(log.warnings)} | "
              f"{best:.3f} |")


if __name__ == "__main__":
    main()
