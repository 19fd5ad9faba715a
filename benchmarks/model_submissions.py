"""Model submissions (issue 39) against `klue benchmark` on the same cells, for benchmarks/RESULTS.md.

A site is made and served the way a host does it (tests/leaderboard/live_site.py, the tests' harness) on a
split of the official KLUE NLI dev file (whole premises: the first --gold examples' worth are the site's gold,
the next --train its training split), with multilingual-e5-small and SmolLM2-135M-Instruct (GGUF) in its model
store. Each model goes through `klue submit --model SPEC --wait` (one at a time); then `klue benchmark` runs the
same cells (the site's train and gold files, the site's seed) in one process per model, and its predictions
are sent to the site as files by another team. Printed (JSON): per model, the service's public score, the
public score of the benchmark's predictions sent as a file, whether the two predictions files are identical,
the benchmark's full-gold scores, and the times: the job's wall time (child process, from start to results),
the cell's own time inside it, the bare `klue benchmark` cell's time and the `klue benchmark` process's, and
submit-to-scored as the participant sees it; the load average before and after.

    KLUE_DATA_DIR=/work/shared/data/klue OMP_NUM_THREADS=1 PYTHONPATH=src \\
        .venv/bin/python benchmarks/model_submissions.py --out /tmp/modsub-bench
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "leaderboard"))  # the tests' harness: live_site
sys.path.insert(0, str(REPO / "tests"))  # real_models

from live_site import LiveServer, LiveSite, klue

from klue.benchmark.cells import model_slug
from real_models import me5_directory, smollm2_gguf

SEED = 1
SHOTS = 5  # the site's models.shots (its default)


def split_by_premise(records: list[dict[str, Any]], n_gold: int, n_train: int) -> tuple[list[Any], list[Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(record["premise"], []).append(record)
    gold: list[Any] = []
    train: list[Any] = []
    for group in groups.values():
        if len(gold) < n_gold:
            gold += group
        elif len(train) < n_train:
            train += group
    return gold, train


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--gold", type=int, default=30)
    parser.add_argument("--train", type=int, default=34)
    parser.add_argument("--specs", default="emb:e5-small,hf:smollm2.gguf,e5-small",
                        help="comma-separated: which of the three real models to send")
    parser.add_argument("--ray-address", default=None,
                        help="run the site's jobs on this Ray cluster (models.executor: ray; the server is given "
                             "RAY_AUTH_MODE=token, the cluster's default in Ray 2.60)")
    args = parser.parse_args()
    e5, why = me5_directory()
    gguf, why2 = smollm2_gguf()
    if e5 is None or gguf is None:
        sys.exit(f"no real model: {why or why2}")
    dev = Path(os.environ["KLUE_DATA_DIR"]) / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json"
    gold, train = split_by_premise(json.loads(dev.read_text(encoding="utf-8")), args.gold, args.train)
    base = args.out
    base.mkdir(parents=True, exist_ok=False)
    (base / "nli_gold.json").write_text(json.dumps(gold, ensure_ascii=False), encoding="utf-8")
    (base / "nli_train.json").write_text(json.dumps(train, ensure_ascii=False), encoding="utf-8")
    (base / "leaderboard.yaml").write_text(
        "title: model submissions\ntasks:\n  nli: {gold: nli_gold.json, train: nli_train.json}\n"
        f"quota: {{per_day: 20}}\nmodels: {{limits: {{wall_s: 3600, memory_gb: 12, cpus: 1}}, seed: {SEED}, shots: {SHOTS}"
        + (f", executor: ray, ray_address: '{args.ray_address}'" if args.ray_address else "") + "}\n",
        encoding="utf-8")
    site = LiveSite.create(base / "site", base / "leaderboard.yaml")
    for name, path in (("e5-small", e5), ("smollm2.gguf", gguf)):
        subprocess.run([sys.executable, "-c", ("import sys; from pathlib import Path; from klue.leaderboard."
                        "model_store import add_model; add_model(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))"),
                        str(site.root), name, str(path)], check=True)
    site.add_users([("ana", "Team A", None, False), ("ben", "Team B", None, False)])
    server = LiveServer(site, workers=1, scorers=1,
                        env={"RAY_AUTH_MODE": "token"} if args.ray_address else {}).start()
    every = {"emb:e5-small": f"emb:{e5}", "hf:smollm2.gguf": f"hf:{gguf}", "e5-small": str(e5)}
    models = {spec: every[spec] for spec in args.specs.split(",")}
    rows: dict[str, dict[str, Any]] = {}
    loads = {"start": load()}
    try:
        for spec, local in models.items():
            started = time.perf_counter()
            done = klue("submit", "--server", server.url, "--model", spec, "--wait", "--wait-timeout", "3600", "--json",
                        env={"KLUE_TOKEN": site.tokens["ana"]}, timeout=3700)
            submit_s = time.perf_counter() - started
            answer = json.loads(done.stdout)["submissions"][0]
            job = answer["job"]
            rows[spec] = {"submission": answer["id"], "service_public": answer["scores"]["task_score"],
                          "service_scores": answer["scores"]["scores"], "job_wall_s": job["wall_s"],
                          "job_cell_s": job["cell_s"], "submit_to_scored_s": submit_s}
            loads[f"after {spec}"] = load()
            started = time.perf_counter()
            overrides = ("--override", f"shots={SHOTS}") if spec.startswith("hf:") else ()
            klue("benchmark", "--tasks", "nli", "--model", local, *overrides, "--train", str(base / "nli_train.json"),
                 "--eval", str(base / "nli_gold.json"), "--seeds", str(SEED), "--out", str(base / "bench"),
                 timeout=3700)
            rows[spec]["benchmark_process_s"] = time.perf_counter() - started
            loads[f"after benchmark {spec}"] = load()
            cell = base / "bench" / "nli" / model_slug(local) / f"seed{SEED}"
            results = json.loads((cell / "results.json").read_text(encoding="utf-8"))
            rows[spec]["benchmark_cell_s"] = results["wall_time_s"]
            rows[spec]["benchmark_full_gold"] = results["scores"]
            job_predictions = site.root / "jobs" / str(answer["id"]) / "predictions.jsonl"
            rows[spec]["same_predictions"] = job_predictions.read_bytes() == (cell / "predictions.jsonl").read_bytes()
            sent = server.submit(site.tokens["ben"], cell / "predictions.jsonl", name=f"{spec} via klue benchmark")
            scored = server.wait_scored(site.tokens["ben"], [sent.json()["id"]])[sent.json()["id"]]
            rows[spec]["benchmark_public"] = scored["scores"]["task_score"]
            rows[spec]["benchmark_scores"] = scored["scores"]["scores"]
    finally:
        server.stop()
    n_gold = len(gold)
    print(json.dumps({"gold_examples": n_gold, "train_examples": len(train), "seed": SEED, "shots": SHOTS,
                      "executor": f"ray at {args.ray_address}" if args.ray_address else "local",
                      "loads": loads,
                      "models": rows}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
