"""`hf:FILE.gguf` converted once (klue.llm.backends.gguf_cache, docs/llm.md "GGUF files in process"): how long
a load takes straight from the GGUF file (`KLUE_GGUF_CACHE=off`), the first load with the cache (converts, then
reads the copy) and a later load (reads the copy), each in a fresh process, and whether the three give the same
answers to the last bit: log-likelihoods, per-token scores with the distribution moments, greedy generation.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_llm_gguf_cache.py [--gguf FILE] [--json out.json]

Default FILE: SmolLM2-135M-Instruct (../shared/tools/real_models.py). The cache of this run is a temporary
folder, so the user's cache is neither used nor touched.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# One process per load: what it loaded in, and everything a run reads from the backend (repr, so floats are
# compared bit for bit).
CHILD = r"""
import json, sys, time, resource
started = time.perf_counter()
from klue.llm.backends.hf import HfBackend
from klue.llm.backends.base import GenerateRequest, LoglikRequest, TokenScoresRequest
imported = time.perf_counter()
backend = HfBackend(sys.argv[1], cpu=True)
loaded = time.perf_counter()
prompts = ["전제: 힛걸 진심 최고다 그 어떤 히어로보다 멋지다\n가설: 힛걸 진심 최고로 멋지다.\n답:",
           "질문: 다음 문장의 주제는? 유튜브 내달 2일까지 크리에이터 지원 공간 운영\n답:",
           "Question: is the sky blue?\nAnswer:"]
loglik = backend.loglik([LoglikRequest(p, c) for p in prompts for c in (" 예", " 아니오", " 중립", " yes")])
scores = backend.token_scores([TokenScoresRequest(p, distribution=True) for p in prompts])
generated = backend.generate([GenerateRequest(prompt=p, max_new_tokens=12) for p in prompts])
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_s": imported - started, "load_s": loaded - imported,
                  "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024,
                  "answers": repr((loglik, scores, [g.text for g in generated], backend.fingerprint))}))
"""


def default_gguf() -> Path:
    tool = Path(__file__).resolve().parents[2] / "shared" / "tools" / "real_models.py"
    found = json.loads(subprocess.run([sys.executable, str(tool)], check=True, capture_output=True,
                                      text=True).stdout)
    return Path(found["smollm2_gguf"])


def load_once(gguf: Path, cache: str) -> dict[str, object]:
    env = {**os.environ, "KLUE_GGUF_CACHE": cache, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, str(gguf)], check=False, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - started
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, default=None, help="the GGUF file (default: SmolLM2-135M-Instruct)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here too")
    args = parser.parse_args()
    gguf = args.gguf or default_gguf()
    with tempfile.TemporaryDirectory() as cache:
        runs = {"off (the GGUF file every time)": load_once(gguf, "off"),
                "first load, cache on (converts)": load_once(gguf, cache),
                "later load, cache on (the copy)": load_once(gguf, cache)}
        copy_mb = sum(p.stat().st_size for p in Path(cache).rglob("*") if p.is_file()) / 1e6
    reference = runs["off (the GGUF file every time)"]["answers"]
    print(f"{gguf.name} ({gguf.stat().st_size / 1e6:.0f} MB); the copy {copy_mb:.0f} MB; load {os.getloadavg()[0]:.1f}")
    print(f"{'load':34} {'load s':>7} {'process s':>9} {'CPU s':>6} {'peak MB':>7}  same answers")
    for name, run in runs.items():
        print(f"{name:34} {run['load_s']:7.1f} {run['process_s']:9.1f} {run['cpu_s']:6.1f} "
              f"{run['peak_rss_mb']:7.0f}  {run['answers'] == reference}")
    if args.json:
        args.json.write_text(json.dumps({"gguf": str(gguf), "copy_mb": copy_mb, "runs": runs}, indent=2),
                             encoding="utf-8")


if __name__ == "__main__":
    main()
