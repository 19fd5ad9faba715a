"""PII detection precision / recall on the hand-written Korean test sets in tests/pretraining/.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pretrain_pii_quality.py

Exact span matches (start, end, kind), micro over sentences. pii_testset.txt was written together with the
detector (tuned on); pii_heldout.txt was written afterwards and never tuned on.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from klue.pretraining.pii import PII_KINDS, PiiDetector, PiiSpan, score_spans

TESTS = Path(__file__).resolve().parents[1] / "tests" / "pretraining"
_MARK = re.compile(r"\[\[(\w+):(.*?)\]\]")


def parse(line: str) -> tuple[str, list[PiiSpan]]:
    out, spans, position, last = [], [], 0, 0
    for match in _MARK.finditer(line):
        out.append(line[last:match.start()])
        position += match.start() - last
        spans.append(PiiSpan(position, position + len(match.group(2)), match.group(1)))
        out.append(match.group(2))
        position += len(match.group(2))
        last = match.end()
    out.append(line[last:])
    return "".join(out), spans


def main() -> None:
    detector = PiiDetector()
    detector.detect("워밍업")  # load Kiwi outside the timing
    print("| set | sentences | kind | gold spans | precision | recall |")
    print("|---|---|---|---|---|---|")
    for name in ("pii_testset.txt", "pii_heldout.txt"):
        lines = [x for x in (TESTS / name).read_text(encoding="utf-8").splitlines() if x.strip() and x[0] != "#"]
        cases = [parse(x) for x in lines]
        started = time.perf_counter()
        pred = [detector.detect(text) for text, _ in cases]
        elapsed = time.perf_counter() - started
        gold = [g for _, g in cases]
        for kind in (None, *PII_KINDS):
            s = score_spans(gold, pred, kind)
            print(f"| {name} | {len(cases)} | {kind or 'all'} | {s.tp + s.fn} | {s.precision:.1f} | {s.recall:.1f} |")
        print(f"<!-- {name}: {len(cases) / elapsed:.0f} sentences/s -->")


if __name__ == "__main__":
    main()
