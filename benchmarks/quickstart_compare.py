"""Are two quickstart directories the same, except for what a run cannot repeat?

    .venv/bin/python benchmarks/quickstart_compare.py OLD_DIR NEW_DIR

Made for issue 40's promise (a restructuring leaves the quickstart's predictions and report unchanged): run
`klue quickstart --out OLD_DIR` at the old commit (a `git worktree` of it, `PYTHONPATH=its src`) and
`--out NEW_DIR` at the new one, then this. Every file is compared byte for byte (`cmp`); a file that differs is
compared again with the fields no run repeats masked (wall and training times, throughputs, timestamps, the git
revision, the directory's own name), and named if it still differs. Exit 1 when any file differs after masking
or exists on one side only.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

# results.json / benchmark.json keys whose values depend on the clock or the checkout, not on the computation.
VOLATILE_KEYS = {"wall_time_s", "train_time_s", "train_examples_per_s", "eval_examples_per_s", "git_revision",
                 "created_at", "started_at", "finished_at"}
# The same things as the HTML report prints them.
VOLATILE_HTML = re.compile(r"[0-9a-f]{40}|\d{4}-\d\d-\d\dT[\d:]+\+00:00"
                           r"|[\d,.]+ (?:s wall|s training|train ex/s|eval ex/s)")


def masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: "*" if key in VOLATILE_KEYS else masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [masked(item) for item in value]
    return value


def same_after_masking(path: Path, old: bytes, new: bytes, names: tuple[str, str]) -> bool:
    if path.suffix == ".json":
        return bool(masked(json.loads(old)) == masked(json.loads(new)))
    if path.suffix == ".html":
        def mask(text: bytes, name: str) -> str:
            return VOLATILE_HTML.sub("*", text.decode().replace(name, "*"))
        return mask(old, names[0]) == mask(new, names[1])
    return False


def main(old_dir: Path, new_dir: Path) -> int:
    def files(root: Path) -> set[Path]:
        return {path.relative_to(root) for path in root.rglob("*") if path.is_file()}

    old_files, new_files = files(old_dir), files(new_dir)
    problems = [f"only in {old_dir}: {path}" for path in sorted(old_files - new_files)]
    problems += [f"only in {new_dir}: {path}" for path in sorted(new_files - old_files)]
    identical, masked_same = [], []
    for path in sorted(old_files & new_files):
        old, new = (old_dir / path).read_bytes(), (new_dir / path).read_bytes()
        if old == new:
            identical.append(path)
        elif same_after_masking(path, old, new, (old_dir.name, new_dir.name)):
            masked_same.append(path)
        else:
            problems.append(f"differs: {path}")
    print(f"{len(identical)} files byte-identical (predictions: "
          f"{sum(path.name == 'predictions.jsonl' for path in identical)} of "
          f"{sum(path.name == 'predictions.jsonl' for path in old_files & new_files)})")
    print(f"{len(masked_same)} files the same once times, timestamps, revision and directory name are masked: "
          + ", ".join(str(path) for path in masked_same))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
