"""`klue contamination scan` from its options: the sets, the index, the corpus, the scan, the outputs, and a
short account on the console (every dirty example is in OUT/TASK/examples.jsonl)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from klue.contamination import kernel
from klue.contamination.corpus import expand
from klue.contamination.examples import task_sets
from klue.contamination.index import build_index
from klue.contamination.run import STATE_DIR, ScanOptions, check_executor, scan_corpus, write_outputs
from klue.contamination.units import Settings
from klue.io.console import make_console
from klue.io.locate import roots_from
from klue.io.provenance import git_revision, utc_now

SHOWN_DIRTY = 10  # dirty examples printed per task; all of them are in examples.jsonl


def run_scan_command(*, corpus: list[str], out: Path, text_field: str, tasks: str, protocol: str | None,
                     eval_file: Path | None, eval_format: str | None, unit: str, n: int | None, normalise: str,
                     workers: int, executor: str, data_dir: str | None, extra_data_dir: str | None) -> dict[str, Any]:
    """Everything is checked (options, sets, every corpus file's start) before the first byte is written."""
    import klue

    console = make_console(stderr=True)
    settings = Settings.of(unit, n, normalise)
    chosen_executor = check_executor(executor, workers)
    roots = roots_from(data_dir, extra_data_dir)
    sets, skipped = task_sets(tasks, roots, protocol, eval_file, eval_format)
    for line in skipped:
        console.print(f"skipped {line}", markup=False, highlight=False, soft_wrap=True)
    files = expand(corpus)
    if not kernel.AVAILABLE and any(f.kind == "text" for f in files):
        console.print("plain text is hashed with numpy: numba is not installed (pip install 'klue[contamination]' "
                      "for the compiled pass, docs/contamination.md)", markup=False, highlight=False, soft_wrap=True)
    index = build_index([e for s in sets for e in s.examples], settings)
    options = ScanOptions(text_field, workers, chosen_executor)
    result = scan_corpus(index, files, options, out / STATE_DIR, progress=True)
    run = {"settings": {"text_field": text_field, "tasks": [s.task for s in sets], "skipped": skipped},
           "executor": chosen_executor, "klue_version": klue.__version__, "git_revision": git_revision(),
           "finished": utc_now()}
    summary = write_outputs(out, index, sets, result, run)
    _report(summary, out)
    return summary


def _report(summary: dict[str, Any], out: Path) -> None:
    import json

    write = sys.stdout.write
    settings = summary["settings"]
    write(f"{settings['n']}-{settings['unit']} overlap ({settings['normalise']} normalisation) with "
          f"{len(summary['corpus'])} corpus file(s), {summary['run']['mb_per_s']} MB/s\n")
    for task, row in summary["tasks"].items():
        write(f"{task}: {row['dirty_input']:,} of {row['examples']:,} dirty on their input "
              f"({100 * row['dirty_input_share']:.2f}%), {row['dirty_with_answer']:,} with their answer; "
              f"{row['too_short']:,} too short to match\n")
        shown = 0
        with (out / task / "examples.jsonl").open(encoding="utf-8") as lines:
            for line in lines:
                example = json.loads(line)
                if not example["dirty_input"]:
                    continue
                if shown == SHOWN_DIRTY:
                    write(f"  ... and more in {out / task / 'examples.jsonl'}\n")
                    break
                at = example["longest_match_at"]
                write(f"  {example['guid']}: {example['longest_match']} units, {100 * example['covered']:.0f}% "
                      f"covered, at {at['file']}:{at['line']}: {example['longest_match_text'][:80]}\n")
                shown += 1
    write(f"written: {out / 'summary.json'} and OUT/TASK/examples.jsonl\n")
