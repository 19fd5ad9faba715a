"""Time `klue quickstart` end to end and per cell; print a Markdown table for benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/quickstart_time.py --data-dir ../shared/data/klue --extra-data-dir ../shared/data

Runs into a fresh temporary directory (nothing resumed), so the time is a cold run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from klue.results import read_results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir")
    parser.add_argument("--extra-data-dir")
    parser.add_argument("--jobs", type=int)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="klue-quickstart-") as tmp:
        out = Path(tmp) / "quickstart"
        command = [sys.executable, "-c", "from klue.cli import main; main()", "quickstart", "--out", str(out)]
        for flag, value in (("--data-dir", args.data_dir), ("--extra-data-dir", args.extra_data_dir),
                            ("--jobs", args.jobs)):
            if value is not None:
                command += [flag, str(value)]
        start = time.perf_counter()
        done = subprocess.run(command, check=False)
        total = time.perf_counter() - start
        print(f"\nquickstart exit code {done.returncode}, {total:.0f} s wall in all\n")
        print("| task | protocol | status | wall s | key scores |")
        print("|---|---|---|---:|---|")
        for path in sorted(out.rglob("results.json")):
            r = read_results(path)
            scores = ", ".join(f"{k} {v:.2f}" for k, v in r.scores.items()) if r.status == "ok" else (r.error or "")
            print(f"| {r.task} | {r.protocol} | {r.status} | {r.wall_time_s:.1f} | {scores[:90]} |")


if __name__ == "__main__":
    main()
