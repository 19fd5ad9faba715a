"""Validation (1) of issue 41: `--unit word --n 13 --normalise gpt3` flags exactly what lm-evaluation-harness's
janitor flags on the same texts, and how much faster the scan is than the janitor's Python n-gram path.

The janitor's functions are its own code, installed beside klue, not in its environment:

    .venv/bin/python -m pip install --no-deps --target /tmp/lmeval lm-eval==0.4.9
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/contamination_janitor.py --lmeval /tmp/lmeval [--json out.json]

The texts: the input parts of the NLI, STS, NER and DP dev sets (KLUE_DATA_DIR). The corpus (a JSONL file
written to a temporary directory): KorQuAD 1.0 dev contexts, KorNLI's XNLI dev pairs, KorSTS train and dev
pairs, the first 5,000 KLUE NER train sentences (KLUE_EXTRA_DATA_DIR), and 400 dev texts planted in it, half
of them altered the ways the janitor's normalisation forgives (ASCII case, ASCII punctuation) or does not
(Korean punctuation, spacing), repeated to --mb megabytes.

Speed is wall time and CPU time of this process (on a shared machine the CPU time is the steadier).

Agreement: per example (dirty or not, any input part) and per n-gram (which of each part's 13-grams are in the
corpus), janitor against scan. Speed: the janitor's Python path over the corpus (`Janitor.normalize_string`,
then `word_ngrams(.., 13)` into a set, as `register_contaminant_python` does for a text) against
`scan_corpus` on the same file, in one process, alternated --repeats times; the best of each is reported,
with the load average beside it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from klue import registry
from klue.contamination import kernel
from klue.contamination.corpus import expand
from klue.contamination.examples import examples_of
from klue.contamination.index import Example, build_index
from klue.contamination.run import ScanOptions, scan_corpus
from klue.contamination.units import Settings
from klue.io.locate import roots_from
from klue.tasks.reading import read

TASKS = ("nli", "sts", "ner", "dp")


def load_janitor(target: Path) -> Any:
    """lm_eval/decontamination/janitor.py by its path (lm_eval's __init__ imports its evaluator, whose
    dependencies are not installed: only the janitor's own code is wanted)."""
    path = target / "lm_eval" / "decontamination" / "janitor.py"
    spec = importlib.util.spec_from_file_location("lm_eval_janitor", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    stderr, sys.stderr = sys.stderr, open(os.devnull, "w")  # noqa: SIM115 (its C++-module warning, printed once)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.stderr.close()
        sys.stderr = stderr
    return module


def benchmark_examples(roots: Any) -> list[Example]:
    examples: list[Example] = []
    for name in TASKS:
        task = registry.get(name)
        dev = task.file("dev")
        assert dev is not None
        examples += examples_of(task, read(task, roots.klue / dev.path, purpose="score").records)
    return examples


def corpus_texts(extra: Path, *, one_line: bool = False) -> list[str]:
    """The Korean documents beside the KLUE files (KorQuAD 1.0 dev contexts, deduplicated; KorNLI's XNLI dev;
    KorSTS; the first 5,000 KLUE NER train sentences); `one_line`: a context's line breaks as spaces, so each
    document is one line of a plain-text corpus (benchmarks/contamination_speed.py)."""
    texts: list[str] = []
    korquad = json.loads((extra / "korean/korquad-v1/KorQuAD_v1.0_dev.json").read_text(encoding="utf-8"))
    contexts = (p["context"] for a in korquad["data"] for p in a["paragraphs"])
    texts += list(dict.fromkeys(c.replace("\n", " ") if one_line else c for c in contexts))
    for name in ("korean/kornli/xnli.dev.ko.tsv", "korean/korsts/sts-train.tsv", "korean/korsts/sts-dev.tsv"):
        texts += (extra / name).read_text(encoding="utf-8").splitlines()[1:]
    ner = registry.get("ner")
    texts += [r.text for r in read(ner, extra / "klue-partial/klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv",
                                   purpose="score").records]
    return texts


def plant(texts: list[str], examples: list[Example], rng: random.Random, count: int = 400) -> list[str]:
    """`count` dev texts inside corpus documents, half of them altered."""
    out = list(texts)
    chosen = rng.sample([part for e in examples for part in e.input if len(part.split()) >= 13], count)
    for i, text in enumerate(chosen):
        kind = i % 4
        if kind == 1:
            text = text.upper().replace(" ", ' "', 1) + "!"  # ASCII case and punctuation: the janitor forgives
        elif kind == 2:
            text = text.replace(" ", "·", 1)  # Korean punctuation: the janitor keeps it as a letter
        elif kind == 3:
            text = text.replace(" ", "", 1)  # spacing
        where = rng.randrange(len(out))
        out.insert(where, f"{out[where][:200]} {text} {out[where][-100:]}")
    return out


def janitor_corpus_ngrams(janitor_module: Any, texts: list[str]) -> set[str]:
    """The janitor's Python path over a corpus: normalize_string, then word_ngrams(.., 13), into a set."""
    janitor = janitor_module.Janitor(ngram_n=13)
    grams: set[str] = set()
    for text in texts:
        grams.update(janitor_module.word_ngrams(janitor.normalize_string(text), 13))
    return grams


def janitor_flags(janitor_module: Any, examples: list[Example], corpus: set[str]) -> list[list[set[int]]]:
    """Per example, per input part: the positions of its 13-grams the corpus holds, as the janitor finds them."""
    janitor = janitor_module.Janitor(ngram_n=13)
    return [[{i for i, g in enumerate(janitor_module.word_ngrams(janitor.normalize_string(part), 13)) if g in corpus}
             for part in example.input] for example in examples]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lmeval", type=Path, default=Path("/tmp/lmeval"))
    parser.add_argument("--mb", type=float, default=10.0, help="corpus size (MB of UTF-8) after repeating")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--blocked", action="store_true",
                        help="each side's repeats back to back (janitor, then scan), so each runs with its own data in "
                             "the caches, as a long scan does; by default they alternate (fair under a changing load)")
    parser.add_argument("--numpy", action="store_true",
                        help="hash plain text with the numpy path, not the compiled pass (the figures before it)")
    args = parser.parse_args()
    if args.numpy:
        kernel.AVAILABLE = False
    roots = roots_from(None, None)
    if roots.extra is None:
        raise SystemExit("set KLUE_EXTRA_DATA_DIR (../shared/data)")
    janitor_module = load_janitor(args.lmeval)
    examples = benchmark_examples(roots)
    natural = corpus_texts(roots.extra)
    planted = plant(natural, examples, random.Random(41))
    index = build_index(examples, Settings("word", 13, "gpt3"))
    report: dict[str, Any] = {"examples": len(examples), "input_parts": sum(len(e.input) for e in examples),
                              "hashing": "numba" if kernel.AVAILABLE else "numpy"}
    with tempfile.TemporaryDirectory() as tmp:
        for name, texts in (("natural", natural), ("planted", planted)):
            size = sum(len(t.encode()) + 1 for t in texts)
            texts = texts * max(1, round(args.mb * 1e6 / size))
            path = Path(tmp) / f"{name}.txt"  # one document a line: the n-gram work, no format to parse
            path.write_text("".join(t.replace("\n", " ") + "\n" for t in texts), encoding="utf-8")
            report[name] = compare(janitor_module, index, examples, path, args.repeats, args.blocked)
            print(name, json.dumps(report[name], ensure_ascii=False), flush=True)
    report["load_average"] = os.getloadavg()
    print(json.dumps(report, ensure_ascii=False, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")


def compare(janitor_module: Any, index: Any, examples: list[Example], path: Path, repeats: int,
            blocked: bool = False) -> dict[str, Any]:
    """Agreement and speed of the janitor and the scan on one corpus file."""
    mb = path.stat().st_size / 1e6
    files = expand([str(path)])
    jan_times, scan_times, jan_cpu, scan_cpu = [], [], [], []
    grams: set[str] = set()
    result = None

    def janitor() -> None:
        nonlocal grams
        start, cpu = time.perf_counter(), time.process_time()
        grams = janitor_corpus_ngrams(janitor_module, path.read_text(encoding="utf-8").splitlines())
        jan_times.append(time.perf_counter() - start)
        jan_cpu.append(time.process_time() - cpu)

    def scan() -> None:
        nonlocal result
        start, cpu = time.perf_counter(), time.process_time()
        result = scan_corpus(index, files, ScanOptions())
        scan_times.append(time.perf_counter() - start)
        scan_cpu.append(time.process_time() - cpu)

    # alternated by default, so both see the same load; --blocked: each side's repeats back to back
    order = [janitor] * repeats + [scan] * repeats if blocked else [janitor, scan] * repeats
    for step in order:
        step()
    assert result is not None
    flags = janitor_flags(janitor_module, examples, grams)
    janitor_dirty = [any(parts) for parts in flags]
    scan_dirty = [i in result.findings for i in range(len(examples))]
    scan_positions = [[result.findings[i].positions.get(p, set()) if i in result.findings else set()
                       for p in range(len(e.input))] for i, e in enumerate(examples)]
    return {
        "mb": round(mb, 2), "janitor_dirty": sum(janitor_dirty), "scan_dirty": sum(scan_dirty),
        "examples_agreeing": sum(a == b for a, b in zip(janitor_dirty, scan_dirty)),
        "parts_with_the_same_13grams_found": sum(a == b for ex_a, ex_b in zip(flags, scan_positions)
                                                 for a, b in zip(ex_a, ex_b)),
        "disagreeing_guids": [e.guid for e, a, b in zip(examples, janitor_dirty, scan_dirty) if a != b][:20],
        "janitor_s": [round(t, 2) for t in jan_times], "scan_s": [round(t, 2) for t in scan_times],
        "janitor_mb_per_s": round(mb / min(jan_times), 2), "scan_mb_per_s": round(mb / min(scan_times), 2),
        "speed_ratio": round(min(jan_times) / min(scan_times), 1),
        # CPU seconds of this process: what a shared machine's other work disturbs least
        "janitor_cpu_s": [round(t, 2) for t in jan_cpu], "scan_cpu_s": [round(t, 2) for t in scan_cpu],
        "cpu_speed_ratio": round(min(jan_cpu) / min(scan_cpu), 1), "load": os.getloadavg()[0],
        "order": "blocked" if blocked else "alternated",
    }


if __name__ == "__main__":
    main()
