"""NER's CRF trained in a child process (`NerBaseline.fit`, issue 40) against the same training in this
process (`NerBaseline.train_here`), interleaved in + child + in + child on the first N sentences of the
NER train file: wall and CPU seconds (this process and its children), and whether the models are the same
bytes. Usage: KLUE_EXTRA_DATA_DIR=... python benchmarks/bench_ner_crf_child.py [N]

`--meddle [N]`: the defect itself, on the first N (300) sentences of the NER dev file (KLUE_DATA_DIR), no Kiwi
features: the model's sha1 trained in this process and in the child, each quiet and with a thread calling
the C `rand()` in a loop meanwhile (as a Ray worker's threads may)."""

from __future__ import annotations

import ctypes
import hashlib
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

from klue.errors import ProblemLog
from klue.tasks.ner.baseline import NerBaseline
from klue.tasks.ner.records import read


def cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def meddle(n: int) -> None:
    path = Path(os.environ["KLUE_DATA_DIR"]) / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv"
    records = read(path, ProblemLog(str(path)), "train")[:n]
    libc = ctypes.CDLL(None)
    for way in ("in process", "child"):
        for meddling in (False, True, False, True):
            stop, calls = threading.Event(), [0]

            def loop(stop: threading.Event = stop, calls: list[int] = calls) -> None:
                while not stop.is_set():
                    libc.rand()
                    calls[0] += 1

            thread = threading.Thread(target=loop)
            if meddling:
                thread.start()
            baseline = NerBaseline(1, morpheme_features=False)
            with tempfile.TemporaryDirectory() as scratch:
                if way == "child":
                    baseline.fit(records, None)
                    model = baseline._model
                else:
                    baseline.train_here(records, Path(scratch) / "m")
                    model = (Path(scratch) / "m").read_bytes()
            stop.set()
            if meddling:
                thread.join()
            assert model is not None
            print(f"{way:10s} {'rand() meanwhile' if meddling else 'quiet':16s} rand() calls {calls[0]:>9,}  "
                  f"model sha1 {hashlib.sha1(model).hexdigest()[:12]}", flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--meddle"]:
        meddle(int(sys.argv[2]) if len(sys.argv) > 2 else 300)
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    path = Path(os.environ["KLUE_EXTRA_DATA_DIR"]) / "klue-partial/klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv"
    records = read(path, ProblemLog(str(path)), "train")[:n]
    for way in ("in process", "child", "in process", "child"):
        baseline = NerBaseline(1)
        wall, used = time.perf_counter(), cpu()
        if way == "child":
            baseline.fit(records, None)
            model = baseline._model
        else:
            with tempfile.TemporaryDirectory() as scratch:
                baseline.train_here(records, Path(scratch) / "m")
                model = (Path(scratch) / "m").read_bytes()
        assert model is not None
        print(f"{way:10s} wall {time.perf_counter() - wall:6.1f} s  cpu {cpu() - used:6.1f} s  "
              f"model sha1 {hashlib.sha1(model).hexdigest()[:12]}  load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
