"""`klue quickstart` at official scale: build an official-layout data directory of the official sizes, run
the quickstart on it, record wall time and peak memory per cell and in total.

    OMP_WAIT_POLICY=PASSIVE .venv/bin/python benchmarks/quickstart_official_scale.py \\
        --source ../shared/data [--keep DIR] [--tasks all] [--json out.json]

The official train sets (and the YNAT, RE, MRC and WoS dev sets) are not on this machine, so the directory
is built from the real files in `--source` (../shared/data, see its README), written in the official file
names and formats (`klue-ner-v1.1/klue-ner-v1.1_train.tsv`, ...) at the sizes each task.yaml declares:

| task | train from | dev from |
|---|---|---|
| NER | klue-partial first 5,000 train sentences, repeated | the official dev file, as is |
| others | the 80% part of one real file, cut by the task's group (premise, context, dialogue, guid) | the 20% part |

Each part is repeated, in order, until it has the official size, every copy under a fresh official-style
guid (`klue-nli-v1_train_00017`); groups stay whole (an MRC context keeps its questions, a WoS dialogue its
turns), so a size in groups can end a few units above the declared one for questions (MRC). MRC gets
unanswerable questions as the official file has (every fourth question moved to the next context, marked
`is_impossible`), because the baseline then picks its threshold on the training questions. Sources: YNAT
klue-derived ynat-resplit (train file / test file), STS and NLI the official dev files, RE the klue-derived
10% train sample, DP the official dev file, MRC KorQuAD 1.0 dev, WoS the 10 dev-sample dialogues.

Caveat: repeated data has fewer distinct strings than the real files (smaller CRF and vocabulary feature
sets), so times are a lower bound for what depends on the number of distinct features; every cost that
grows with the number of examples (morphological analysis, candidate spans, parsing) is at full size.
Scores here are NOT official and not comparable with anything: train copies repeat.

Measurement: `klue quickstart --out DIR` with `KLUE_DATA_DIR` = the built directory and no extra data
directory (so `--protocol auto` picks `official` for every task), in a child process. Total peak memory is
the highest sum of RSS over the quickstart's whole process tree (psutil, polled every 0.2 s; shared pages
count once per process, so it is an upper bound). Per cell: wall time from its results.json, and the
worker's peak RSS while it ran that cell, recorded by a sampler that a `sitecustomize` module (written to a
temporary directory on PYTHONPATH, for this child only) starts in every process of the tree; it reads the
cell from the `spec` of the running `execute_cell` frame and never changes what runs.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from klue import registry

SPLIT_FRACTION = 0.8  # share of a source file's groups that becomes train


# -- building the directory ---------------------------------------------------------------------------------
def _in_train(key: str) -> bool:
    """A stable 80/20 cut by group key (sha1, so the same in every process)."""
    return int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF < SPLIT_FRACTION


def _split(groups: Sequence[tuple[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(train groups, dev groups) by the hash of each group's key; order kept."""
    train = [g for key, g in groups if _in_train(key)]
    dev = [g for key, g in groups if not _in_train(key)]
    return train, dev


def _repeat(groups: Sequence[Any], size: int, weight: Callable[[Any], int] = lambda g: 1) -> list[Any]:
    """Groups in order, cycled until their total weight reaches `size` (groups never cut)."""
    if not groups:
        raise ValueError("no groups to repeat")
    out: list[Any] = []
    total = 0
    while total < size:
        for group in groups:
            if total >= size:
                break
            out.append(group)
            total += weight(group)
    return out


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")


def _regid(items: Sequence[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [{**item, "guid": f"{prefix}_{i:05d}"} for i, item in enumerate(items)]


def _tsv_blocks(path: Path) -> tuple[list[str], list[list[str]]]:
    """An official KLUE TSV (NER, DP): its header comment lines and its sentence blocks (lines)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    index = 0
    while index < len(lines) and lines[index].startswith("## "):
        index += 1
    index -= 1  # the last `##` line before the first character line opens the first sentence
    header = lines[:index]
    blocks: list[list[str]] = []
    for line in lines[index:]:
        if line.startswith("## ") and "\t" in line:
            blocks.append([line])
        elif line.strip() and blocks:
            blocks[-1].append(line)
    return header, blocks


def _write_tsv(path: Path, header: list[str], blocks: Sequence[list[str]], prefix: str) -> None:
    out = io.StringIO()
    out.write("\n".join(header) + "\n")
    for i, block in enumerate(blocks):
        guid, text = block[0][3:].split("\t", 1)
        source = guid.rsplit("_", 1)[-1] if not guid.rsplit("_", 1)[-1].isdigit() else "wikitree"
        out.write(f"## {prefix}_{i:05d}_{source}\t{text}\n")
        out.write("\n".join(block[1:]) + "\n\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out.getvalue(), encoding="utf-8")


def _sizes(name: str) -> tuple[int, int]:
    sizes = registry.get(name).sizes
    return sizes["train"], sizes["dev"]


def build_ner(source: Path, root: Path) -> None:
    n_train, _ = _sizes("ner")
    header, blocks = _tsv_blocks(source / "klue-partial/klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv")
    _write_tsv(root / "klue-ner-v1.1/klue-ner-v1.1_train.tsv", header, _repeat(blocks, n_train), "klue-ner-v1_train")
    shutil.copy(source / "klue/klue-ner-v1.1/klue-ner-v1.1_dev.tsv", root / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv")


def build_dp(source: Path, root: Path) -> None:
    n_train, n_dev = _sizes("dp")
    header, blocks = _tsv_blocks(source / "klue/klue-dp-v1.1/klue-dp-v1.1_dev.tsv")
    train, dev = _split([(b[0], b) for b in blocks])
    _write_tsv(root / "klue-dp-v1.1/klue-dp-v1.1_train.tsv", header, _repeat(train, n_train), "klue-dp-v1_train")
    _write_tsv(root / "klue-dp-v1.1/klue-dp-v1.1_dev.tsv", header, _repeat(dev, n_dev), "klue-dp-v1_dev")


def _build_flat(name: str, source_train: Path, source_dev: Path | None, root: Path, folder: str, stem: str,
                guid_prefix: str, group: Callable[[dict[str, Any]], str], fill: Callable[[dict[str, Any]], dict[str, Any]]
                = lambda item: item) -> None:
    """A task whose official file is a JSON list of examples, cut into groups of consecutive same-key items."""
    n_train, n_dev = _sizes(name)

    def grouped(items: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
        out: list[tuple[str, list[dict[str, Any]]]] = []
        for item in items:
            key = group(item)
            if out and out[-1][0] == key:
                out[-1][1].append(item)
            else:
                out.append((key, [item]))
        return out

    items = [fill(item) for item in _read_json(source_train)]
    if source_dev is None:
        train, dev = _split(grouped(items))
    else:
        train = [g for _, g in grouped(items)]
        dev = [g for _, g in grouped([fill(item) for item in _read_json(source_dev)])]
    for split, groups, size in (("train", train, n_train), ("dev", dev, n_dev)):
        flat = [item for g in _repeat(groups, size, len) for item in g]
        _write_json(root / folder / f"{stem}_{split}.json", _regid(flat, f"{guid_prefix}_{split}"))


def _ynat_fill(item: dict[str, Any]) -> dict[str, Any]:
    """A ynat-resplit row ({guid, title, label}) in the official schema (three agreeing annotators)."""
    label = item["label"]
    none = "해당없음"
    return {"guid": item["guid"], "title": item["title"], "predefined_news_category": label, "label": label,
            "annotations": {"annotators": ["01", "02", "03"],
                            "annotations": {"first-scope": [label] * 3, "second-scope": [none] * 3,
                                            "third-scope": [none] * 3}},
            "url": "https://example.invalid/ynat", "date": "2016.06.30. 오전 10:36"}


def build_ynat(source: Path, root: Path) -> None:
    _build_flat("ynat", source / "klue-derived/ynat-resplit/ynat-resplit_train.json",
                source / "klue-derived/ynat-resplit/ynat-resplit_test.json", root, "ynat-v1.1", "ynat-v1.1",
                "ynat-v1", lambda item: item["guid"], _ynat_fill)


def build_sts(source: Path, root: Path) -> None:
    _build_flat("sts", source / "klue/klue-sts-v1.1/klue-sts-v1.1_dev.json", None, root, "klue-sts-v1.1",
                "klue-sts-v1.1", "klue-sts-v1", lambda item: item["guid"])


def build_nli(source: Path, root: Path) -> None:
    _build_flat("nli", source / "klue/klue-nli-v1.1/klue-nli-v1.1_dev.json", None, root, "klue-nli-v1.1",
                "klue-nli-v1.1", "klue-nli-v1", lambda item: item["premise"])


def build_re(source: Path, root: Path) -> None:
    _build_flat("re", source / "klue-derived/re-train-sample/klue-re-v1.1_train.sample3247.json", None, root,
                "klue-re-v1.1", "klue-re-v1.1", "klue-re-v1", lambda item: item["guid"])
    shutil.copy(source / "klue/klue-re-v1.1/relation_list.json", root / "klue-re-v1.1/relation_list.json")


def build_wos(source: Path, root: Path) -> None:
    # 10 dialogues are too few to cut: train and dev both repeat all of them (the rule tracker fits nothing).
    n_train, n_dev = _sizes("wos")
    dialogues = _read_json(source / "klue-partial/wos-v1.1/wos-v1.1_dev_sample_10.json")
    for split, size in (("train", n_train), ("dev", n_dev)):
        _write_json(root / f"wos-v1.1/wos-v1.1_{split}.json", _regid(_repeat(dialogues, size), f"wos-v1_{split}"))
    shutil.copy(source / "klue/wos-v1.1/ontology.json", root / "wos-v1.1/ontology.json")


def build_mrc(source: Path, root: Path) -> None:
    n_train, n_dev = _sizes("mrc")
    squad = _read_json(source / "korean/korquad-v1/KorQuAD_v1.0_dev.json")
    paragraphs = [(p["context"], (article["title"], p)) for article in squad["data"] for p in article["paragraphs"]]
    train, dev = _split(paragraphs)
    for split, groups, size in (("train", train, n_train), ("dev", dev, n_dev)):
        chosen = _repeat(groups, size, lambda g: len(g[1]["qas"]))
        contexts = [{"context": p["context"], "qas": []} for _, p in chosen]
        titles = [title for title, _ in chosen]
        number = 0
        for index, (_, p) in enumerate(chosen):
            for qa in p["qas"]:
                guid = f"klue-mrc-v1_{split}_{number:05d}"
                if number % 4 == 3:  # unanswerable: the question asked of the next context
                    target = (index + 1) % len(chosen)
                    item = {"question": qa["question"], "answers": [], "question_type": 3, "is_impossible": True,
                            "guid": guid}
                else:
                    target = index
                    item = {"question": qa["question"], "answers": qa["answers"], "question_type": 1,
                            "is_impossible": False, "guid": guid}
                contexts[target]["qas"].append(item)
                number += 1
        data = [{"title": title, "news_category": None, "source": "korquad", "paragraphs": [c]}
                for title, c in zip(titles, contexts, strict=True) if c["qas"]]
        _write_json(root / f"klue-mrc-v1.1/klue-mrc-v1.1_{split}.json", {"version": "1.1", "data": data})


BUILDERS: dict[str, Callable[[Path, Path], None]] = {
    "ynat": build_ynat, "sts": build_sts, "nli": build_nli, "ner": build_ner, "re": build_re, "dp": build_dp,
    "mrc": build_mrc, "wos": build_wos,
}


def build(source: Path, root: Path, tasks: Sequence[str]) -> None:
    for name in tasks:
        BUILDERS[name](source, root)


# -- measuring ------------------------------------------------------------------------------------------
# Started in every Python process of the quickstart's tree (PYTHONPATH): samples the process's RSS and the
# benchmark cell its main thread is running (the `spec` argument of `execute_cell`, read from the frame).
SITECUSTOMIZE = '''
import os, sys, threading, time, json

def _sample(log_dir, period):
    import resource
    path = os.path.join(log_dir, f"rss-{os.getpid()}.jsonl")
    page = os.sysconf("SC_PAGE_SIZE")
    main = threading.main_thread().ident
    with open(path, "a", encoding="utf-8") as out:
        while True:
            cell = None
            frame = sys._current_frames().get(main)
            while frame is not None:
                if frame.f_code.co_name == "execute_cell" and "spec" in frame.f_locals:
                    cell = getattr(frame.f_locals["spec"], "task", None)
                    break
                frame = frame.f_back
            with open(f"/proc/{os.getpid()}/statm") as statm:
                rss = int(statm.read().split()[1]) * page
            out.write(json.dumps({"t": time.time(), "cpu": time.process_time(), "cell": cell, "rss": rss}) + "\\n")
            out.flush()
            time.sleep(period)

_dir = os.environ.get("KLUE_BENCH_RSS_DIR")
if _dir:
    threading.Thread(target=_sample, args=(_dir, 0.2), daemon=True).start()
'''


@dataclass
class TreePeak:
    peak_rss: int = 0
    peak_processes: int = 0


def _poll_tree(process: subprocess.Popen[bytes], period: float) -> Iterator[TreePeak]:
    peak = TreePeak()
    root = psutil.Process(process.pid)
    while process.poll() is None:
        total, count = 0, 0
        try:
            members = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for member in members:
            try:
                total += member.memory_info().rss
                count += 1
            except psutil.NoSuchProcess:
                continue
        if total > peak.peak_rss:
            peak.peak_rss, peak.peak_processes = total, count
        yield peak
        time.sleep(period)
    yield peak


def cell_peaks(rss_dir: Path) -> dict[str, dict[str, float]]:
    """Per cell: the peak RSS of the worker while it ran the cell, its RSS when the cell began, and the CPU
    seconds (all threads) the worker spent between the first and last sample of the cell."""
    out: dict[str, dict[str, float]] = {}
    for path in rss_dir.glob("rss-*.jsonl"):
        previous: str | None = None
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                sample = json.loads(line)
            except json.JSONDecodeError:  # the last line of a process killed while writing
                continue
            cell = sample["cell"]
            if cell is None:
                previous = None
                continue
            row = out.setdefault(cell, {"peak_rss_mb": 0.0, "start_rss_mb": sample["rss"] / 2**20,
                                        "cpu_s": 0.0, "_cpu0": sample["cpu"]})
            if previous != cell:
                row["start_rss_mb"] = sample["rss"] / 2**20
                row["_cpu0"] = sample["cpu"]
            row["cpu_s"] = sample["cpu"] - row["_cpu0"]
            row["peak_rss_mb"] = max(row["peak_rss_mb"], sample["rss"] / 2**20)
            previous = cell
    for row in out.values():
        del row["_cpu0"]
    return out


def run_quickstart(root: Path, out: Path, tasks: str, jobs: int | None) -> dict[str, Any]:
    rss_dir = Path(tempfile.mkdtemp(prefix="klue-qs-rss-"))
    hook_dir = Path(tempfile.mkdtemp(prefix="klue-qs-hook-"))
    (hook_dir / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "KLUE_EXTRA_DATA_DIR"}
    env.update(KLUE_DATA_DIR=str(root), KLUE_BENCH_RSS_DIR=str(rss_dir),
               PYTHONPATH=os.pathsep.join(filter(None, [str(hook_dir), env.get("PYTHONPATH")])))
    command = [sys.executable, "-c", "from klue.cli import main; main()", "quickstart", "--out", str(out),
               "--tasks", tasks]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env)
    peak = TreePeak()
    for peak in _poll_tree(process, 0.2):
        pass
    wall = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cells = cell_peaks(rss_dir)
    shutil.rmtree(rss_dir, ignore_errors=True)
    shutil.rmtree(hook_dir, ignore_errors=True)
    rows = []
    for path in sorted(out.rglob("results.json")):
        r = _read_json(path)
        rows.append({"task": r["task"], "protocol": r["protocol"], "status": r["status"], "n_train": r["n_train"],
                     "n_eval": r["n_eval"], "wall_s": r["wall_time_s"], "train_s": r["train_time_s"],
                     "scores": r["scores"], "error": r.get("error"), **cells.get(r["task"], {})})
    return {"exit_code": process.returncode, "wall_s": wall, "cpu_s": children.ru_utime + children.ru_stime, "peak_tree_rss_mb": peak.peak_rss / 2**20,
            "peak_tree_processes": peak.peak_processes, "cells": rows, "cpu_count": os.cpu_count(),
            "load_average_at_end": os.getloadavg()}


def print_table(report: dict[str, Any]) -> None:
    print(f"\nquickstart exit code {report['exit_code']}: {report['wall_s']:.0f} s wall, {report['cpu_s']:.0f} s CPU "
          f"(user+sys, whole tree), peak RSS of the "
          f"process tree {report['peak_tree_rss_mb']:.0f} MB ({report['peak_tree_processes']} processes), "
          f"load average at the end {report['load_average_at_end']}\n")
    print("| task | protocol | train / eval | status | cell wall s | fit s | cell CPU s | worker peak RSS MB "
          "(at start) | scores |")
    print("|---|---|---|---|---:|---:|---:|---:|---|")
    for c in report["cells"]:
        scores = ", ".join(f"{k} {v:.2f}" for k, v in c["scores"].items()) if c["status"] == "ok" else c["error"]
        memory = (f"{c['peak_rss_mb']:.0f} ({c['start_rss_mb']:.0f})" if "peak_rss_mb" in c else "-")
        cpu = f"{c['cpu_s']:.0f}" if "cpu_s" in c else "-"
        print(f"| {c['task']} | {c['protocol']} | {c['n_train']:,} / {c['n_eval']:,} | {c['status']} | "
              f"{c['wall_s']:.1f} | {c['train_s']:.1f} | {cpu} | {memory} | {scores} |")


def print_comparison(before: dict[str, Any], after: dict[str, Any]) -> None:
    """Two `--json` reports side by side (before / after), per cell and in total."""
    print("| task | cell wall s | cell CPU s | worker peak RSS MB | main scores |")
    print("|---|---:|---:|---:|---|")
    after_cells = {c["task"]: c for c in after["cells"]}
    for b in before["cells"]:
        a = after_cells.get(b["task"], {})

        def pair(key: str, row_b: dict[str, Any] = b, row_a: dict[str, Any] = a) -> str:
            return " / ".join(f"{row[key]:.0f}" if key in row else "-" for row in (row_b, row_a))

        scores = "; ".join(f"{k} {b['scores'].get(k, float('nan')):.2f} / {a.get('scores', {}).get(k, float('nan')):.2f}"
                           for k in list(b["scores"])[:2])
        print(f"| {b['task']} | {pair('wall_s')} | {pair('cpu_s')} | {pair('peak_rss_mb')} | {scores} |")
    print(f"| total | {before['wall_s']:.0f} / {after['wall_s']:.0f} | {before['cpu_s']:.0f} / {after['cpu_s']:.0f} | "
          f"{before['peak_tree_rss_mb']:.0f} / {after['peak_tree_rss_mb']:.0f} (tree) | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=Path(os.environ.get("KLUE_EXTRA_DATA_DIR", "../shared/data")),
                        help="the directory holding klue/, klue-partial/, klue-derived/ and korean/")
    parser.add_argument("--tasks", default="all", help="`all` or comma-separated task names")
    parser.add_argument("--jobs", type=int, help="passed to klue quickstart (default: its own)")
    parser.add_argument("--keep", type=Path, help="build the data here (must not exist yet) and keep it")
    parser.add_argument("--build-only", action="store_true", help="build the directory and stop")
    parser.add_argument("--json", type=Path, help="write the measurements here")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"),
                        help="print two --json reports side by side and stop")
    args = parser.parse_args()
    if args.compare:
        print_comparison(*(json.loads(p.read_text(encoding="utf-8")) for p in args.compare))
        return
    names = list(BUILDERS) if args.tasks == "all" else args.tasks.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="klue-official-scale-"))
    try:
        root = args.keep if args.keep is not None else scratch / "klue"
        if args.keep is not None and args.keep.exists():
            print(f"using the existing directory {root}")
        else:
            start = time.perf_counter()
            build(args.source, root, names)
            print(f"built {root} in {time.perf_counter() - start:.1f} s")
        if args.build_only:
            return
        report = run_quickstart(root, scratch / "quickstart", args.tasks, args.jobs)
        print_table(report)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)



if __name__ == "__main__":
    main()
