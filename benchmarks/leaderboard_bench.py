"""Figures of the self-hosted leaderboard (issue 38), each against a live `klue leaderboard serve` on 127.0.0.1
started the way a host starts it (tests/leaderboard/live_site.py, the tests' harness):

- throughput: full-dev NER submissions (5,000 sentences, public/private 50/50, 1,000 bootstrap resamples per
  part) sent at once, scored per minute by SCORERS scoring workers (default 2: the machine's 2 cores).
- overhead: one NER submission, upload to score (`klue submit --wait`, a fresh process as a participant runs
  it) against a fresh process that does what `klue score` does plus the same intervals on the same file
  (`score-intervals` below: the judge, the per-example statistics, 1,000 resamples); and `klue score --json`
  alone. Interleaved, median of --rounds.
- cpu: CPU seconds per NER file of one scoring job (the judge forked from a worker), of that baseline and of
  `klue score`: figures that the machine's load hardly moves, and the jobs per minute 2 idle cores allow.
- pages: GET / and /api/leaderboard with 1,000 scored submissions (100 teams x 5 NLI + 5 STS, written
  straight into the database from real scorings of the official dev sets), on SQLite and on a throwaway
  PostgreSQL 15, requests to the two interleaved; p50/p95.
- locust: a bounded headless locust run (benchmarks/leaderboard_locustfile.py) on the SQLite pages site
  (board latency under load with 1,000 submissions), and `locust-fresh` on a new NLI site (quota 3 a day):
  every accepted submission stored and scored once, each team's quota exact.

    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/leaderboard_bench.py all --out /tmp/lb-bench

Data: KLUE_DATA_DIR (the official NER, NLI and STS dev files) and KLUE_EXTRA_DATA_DIR/scoring-cases (NER
predictions). The machine's load is printed with every figure (`uptime`): prefer the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "leaderboard"))  # the tests' harness: live_site, postgres

from live_site import LiveServer, LiveSite, klue, run_locust, write_nli_predictions

SHARED = Path(os.environ.get("KLUE_EXTRA_DATA_DIR", REPO.parent / "shared" / "data"))  # scoring-cases


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def data_dir() -> Path:
    path = Path(os.environ.get("KLUE_DATA_DIR", SHARED / "klue"))
    if not (path / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv").is_file():
        sys.exit(f"no KLUE NER dev file under {path}: set KLUE_DATA_DIR")
    return path


def git_commit() -> str:
    """HEAD, or KLUE_BENCH_COMMIT for a snapshot outside git (`git archive HEAD | tar -x -C DIR`, so that
    edits in the working tree during a long run do not change what is measured)."""
    return os.environ.get("KLUE_BENCH_COMMIT") or subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
        check=False).stdout.strip()


# ------------------------------------------------------------------------------------------- inputs


def ner_jsonl(out: Path) -> list[Path]:
    """The scoring cases' NER predictions (JSON lists in gold order) as JSON Lines by guid."""
    from klue import registry
    from klue.predictions import read_predictions
    from klue.tasks.reading import read

    task = registry.get("ner")
    gold = read(task, data_dir() / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv", None, purpose="score").records
    guids = [task.guid(r) for r in gold]
    files = []
    for source in sorted((SHARED / "scoring-cases" / "ner").glob("pred_*.json.gz")):
        by_guid, _, _ = read_predictions(task, source, guids, None)
        target = out / source.name.replace(".json.gz", ".jsonl")
        with target.open("w", encoding="utf-8") as handle:
            for guid in guids:
                handle.write(json.dumps(task.prediction_to_json(by_guid[guid]), ensure_ascii=False) + "\n")
        files.append(target)
    return files


def ner_site(out: Path, db: str | None = None) -> LiveSite:
    config = out / "ner.yaml"
    gold = data_dir() / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv"
    config.write_text(f"title: NER bench\ntasks:\n  ner: {{gold: {gold}, private_fraction: 0.5}}\n"
                      "quota: {per_day: 100}\n", encoding="utf-8")
    site = LiveSite.create(out / "ner-site", config, db)
    for name in ("alpha", "beta"):
        site.add_user(name, f"team-{name}")
    return site


def score_intervals(task_name: str, gold: Path, predictions: Path) -> dict[str, Any]:
    """What `klue score` does (score_files), then the same intervals the site computes: the task's
    per-example statistics, 1,000 resamples with the site's seed, over every example of the file."""
    import numpy as np

    from klue import registry
    from klue.io.threads import single_threaded_numerics
    from klue.metrics.resampling import DEFAULT_RESAMPLES, Side, Units, bootstrap, interval
    from klue.predictions import align, read_predictions
    from klue.scoring import score_files
    from klue.tasks.reading import read

    task = registry.get(task_name)
    result = score_files(task, gold, predictions, "official", None, None)
    golds = read(task, gold, None, purpose="score").records
    guids = [task.guid(g) for g in golds]
    by_guid, _, _ = read_predictions(task, predictions, guids, None)
    aligned = align(guids, by_guid, str(predictions))
    with single_threaded_numerics():
        stats = task.example_statistics(golds, aligned, "official").only(result.report.scores)
        side = Side([stats], Units.of([task.group_key(g) for g in golds]))
        values = bootstrap([side], DEFAULT_RESAMPLES, 0)[0]
    main = [m for m in task.main_metrics if m in values]
    task_values = np.mean([values[m] for m in main], axis=0)
    return {"task_score": float(np.mean([result.report.scores[m] for m in main])),
            "interval": list(interval(task_values))}


# --------------------------------------------------------------------------------------------- figures


def throughput(out: Path, scorers: int, copies: int) -> dict[str, Any]:
    files = ner_jsonl(out)
    site = ner_site(out)
    server = LiveServer(site, workers=2, scorers=scorers).start()
    try:
        load_before = uptime()
        sent: dict[str, list[int]] = {"alpha": [], "beta": []}
        started = time.monotonic()
        for i in range(copies):
            for user, ids in sent.items():
                answer = server.submit(site.tokens[user], files[i % len(files)], task="ner", timeout=600)
                assert answer.status_code == 201, answer.text
                ids.append(answer.json()["id"])
        uploaded = time.monotonic() - started
        for user, ids in sent.items():
            done = server.wait_scored(site.tokens[user], ids, timeout=3600)
            assert all(a["status"] == "scored" for a in done.values()), done
        elapsed = time.monotonic() - started
        jobs = site.query("SELECT started_at, finished_at FROM django_tasks_database_dbtaskresult "
                          "WHERE status = 'SUCCESSFUL'")
        durations = [(_when(b) - _when(a)) for a, b in jobs]
        n = sum(len(ids) for ids in sent.values())
        return {"figure": "throughput", "submissions": n, "scorers": scorers, "upload_s": round(uploaded, 1),
                "elapsed_s": round(elapsed, 1), "per_minute": round(n / elapsed * 60, 2),
                "job_s_median": round(statistics.median(durations), 2), "load_before": load_before,
                "load_after": uptime()}
    finally:
        server.stop()


def _when(value: Any) -> float:
    import datetime as dt

    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return float(value.timestamp())


def overhead(out: Path, rounds: int) -> dict[str, Any]:
    files = ner_jsonl(out)
    site = ner_site(out)
    gold = data_dir() / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv"
    server = LiveServer(site, workers=2, scorers=1).start()
    times: dict[str, list[float]] = {"service": [], "score_intervals": [], "klue_score": []}
    scores: dict[str, Any] = {}
    try:
        load_before = uptime()
        env = {"KLUE_TOKEN": site.tokens["alpha"], "OMP_NUM_THREADS": "1"}

        def service() -> None:
            done = klue("submit", "--server", server.url, "--task", "ner", "--predictions", str(files[0]),
                        "--wait", "--json", env=env, timeout=900)
            scores["service"] = json.loads(done.stdout)["scores"]["task_score"]

        def baseline() -> None:
            done = subprocess.run([sys.executable, __file__, "score-intervals", "--task", "ner", "--gold", str(gold),
                                   "--predictions", str(files[0])], capture_output=True, text=True, check=True,
                                  env={**os.environ, "OMP_NUM_THREADS": "1"})
            scores["score_intervals"] = json.loads(done.stdout)

        def plain() -> None:
            klue("score", "--task", "ner", "--gold", str(gold), "--predictions", str(files[0]), "--json",
                 env={"OMP_NUM_THREADS": "1"}, timeout=900)

        steps = [("service", service), ("score_intervals", baseline), ("klue_score", plain)]
        for r in range(rounds):
            for name, step in (steps if r % 2 == 0 else steps[::-1]):
                started = time.monotonic()
                step()
                times[name].append(time.monotonic() - started)
        median = {k: statistics.median(v) for k, v in times.items()}
        return {"figure": "overhead", "rounds": rounds, "seconds": {k: [round(x, 2) for x in v] for k, v in times.items()},
                "median_s": {k: round(v, 2) for k, v in median.items()},
                "ratio_service_to_score_intervals": round(median["service"] / median["score_intervals"], 2),
                "ratio_service_to_klue_score": round(median["service"] / median["klue_score"], 2),
                "public_score_service": scores.get("service"), "full_score_baseline": scores.get("score_intervals"),
                "load_before": load_before, "load_after": uptime()}
    finally:
        server.stop()


def _child_cpu(command: list[str]) -> float:
    """CPU seconds (user + system) of one child process and its own children."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, capture_output=True, text=True, check=True,
                   env={**os.environ, "OMP_NUM_THREADS": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def judge_cpu(request: dict[str, Any], rounds: int) -> list[float]:
    """CPU seconds of each of `rounds` jobs as a scoring worker runs them: the judge in a child forked from
    this process, which has the judge's modules imported already (klue.leaderboard.scorer.run_judge)."""
    import resource

    from klue.leaderboard.config import Limits
    from klue.leaderboard.scorer import run_judge

    out = []
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        answer = run_judge(request, Limits())
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert answer["ok"], answer
        out.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return out


def cpu(out: Path, rounds: int) -> dict[str, Any]:
    """CPU seconds per NER full-dev file, which the load of other processes hardly changes: one scoring job
    (the judge forked from a worker, as the service runs it), the overhead's baseline (klue score + the same
    intervals, a fresh process as a user runs it) and `klue score --json` (a fresh process); min of `rounds`."""
    from klue.io.hashing import sha256_file

    files = ner_jsonl(out)
    gold = data_dir() / "klue-ner-v1.1" / "klue-ner-v1.1_dev.tsv"
    request = {"task": "ner", "gold": str(gold), "gold_format": None, "gold_sha256": sha256_file(gold),
               "seed": 0, "private_fraction": 0.5, "predictions": str(files[0]), "shown": files[0].name,
               "max_bytes": 1 << 30}
    load_before = uptime()
    done = subprocess.run([sys.executable, __file__, "judge-cpu", "--request", json.dumps(request), "--rounds",
                           str(rounds)], capture_output=True, text=True, check=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    seconds: dict[str, list[float]] = {"judge_job": json.loads(done.stdout), "score_intervals": [], "klue_score": []}
    for _ in range(rounds):
        seconds["score_intervals"].append(_child_cpu([sys.executable, __file__, "score-intervals", "--task", "ner",
                                                      "--gold", str(gold), "--predictions", str(files[0])]))
        seconds["klue_score"].append(_child_cpu([sys.executable, "-m", "klue", "score", "--task", "ner", "--gold",
                                                 str(gold), "--predictions", str(files[0]), "--json"]))
    best = {k: min(v) for k, v in seconds.items()}
    return {"figure": "cpu", "rounds": rounds, "cpu_s": {k: [round(x, 2) for x in v] for k, v in seconds.items()},
            "min_cpu_s": {k: round(v, 2) for k, v in best.items()},
            "ratio_judge_job_to_score_intervals": round(best["judge_job"] / best["score_intervals"], 2),
            "ideal_jobs_per_minute_on_2_cores": round(2 * 60 / best["judge_job"], 1),
            "load_before": load_before, "load_after": uptime()}


def seed_site(site_root: Path, teams: int, per_team: int) -> dict[str, Any]:
    """Write `teams` x `per_team` scored submissions per task into a site's database (run in a process of its
    own: it sets Django up for that site). Each is a real scoring of the official dev file (the judge, on a
    handful of corrupted copies of the gold) re-used with a per-team shift, so every row has the shape and
    size the service writes (public JSON, 1,000 resamples per part)."""
    from klue.leaderboard.site import setup

    setup(site_root)
    from django.db import transaction

    from klue.io.hashing import sha256_file
    from klue.leaderboard.gold import load
    from klue.leaderboard.judge import decode_resamples, judge
    from klue.leaderboard.models import PrivateScore, Score, Submission, TaskGold, Team

    rng = random.Random(0)
    templates: dict[str, list[dict[str, Any]]] = {}
    for gold_row in TaskGold.objects.all():
        gold_path = site_root / gold_row.path
        split = load(gold_row.task, gold_path, gold_row.format, gold_row.seed, gold_row.private_fraction)
        task, every = split.task, [*split.public, *split.private]
        templates[gold_row.task] = []
        for rate in (0.1, 0.3, 0.5):
            path = site_root.parent / f"seed-{gold_row.task}-{rate}.jsonl"
            with path.open("w", encoding="utf-8") as handle:
                for record in every:
                    obj = task.prediction_to_json(task.gold_prediction(record))
                    if rng.random() < rate:
                        donor = task.prediction_to_json(task.gold_prediction(rng.choice(every)))
                        obj = {**donor, "guid": obj["guid"]}
                    handle.write(json.dumps(obj, ensure_ascii=False) + "\n")
            answer = judge({"task": gold_row.task, "gold": str(gold_path), "gold_format": gold_row.format,
                            "gold_sha256": sha256_file(gold_path), "seed": gold_row.seed,
                            "private_fraction": gold_row.private_fraction, "predictions": str(path),
                            "shown": path.name, "max_bytes": 1 << 30})
            assert answer["ok"], answer
            templates[gold_row.task].append(answer)
    made = 0
    with transaction.atomic():
        for t in range(teams):
            team = Team.objects.create(name=f"seeded-{t:03d}")
            for task_name, answers in templates.items():
                for k in range(per_team):
                    answer = answers[(t + k) % len(answers)]
                    shift = rng.uniform(-3, 3)
                    submission = Submission.objects.create(team=team, task=task_name, name=f"m{k}",
                                                           status=Submission.SCORED, filename="seed.jsonl")
                    public, private = answer["public"], answer["private"]
                    score = Score.objects.create(
                        submission=submission, generation=0,
                        public={key: public[key] for key in ("n_examples", "scores", "breakdown", "intervals")},
                        task_score=public["task_score"] + shift, task_low=public["task_interval"][0] + shift,
                        task_high=public["task_interval"][1] + shift,
                        resamples=(decode_resamples(public["resamples"]) + shift).astype("<f8").tobytes(),
                        metric_versions=answer["metric_versions"], task_version=answer["task_version"])
                    PrivateScore.objects.create(
                        score=score, scores={key: private[key] for key in ("n_examples", "scores", "intervals")},
                        task_score=private["task_score"] + shift, task_low=private["task_interval"][0] + shift,
                        task_high=private["task_interval"][1] + shift,
                        resamples=(decode_resamples(private["resamples"]) + shift).astype("<f8").tobytes())
                    made += 1
    return {"submissions": made, "tasks": sorted(templates)}


def page_cpu(site_root: Path, requests: int) -> dict[str, Any]:
    """CPU milliseconds of the web process per page (Django's test client in this process: the view, the
    rankings with their paired tests, the template; for PostgreSQL, not the database server's share)."""
    from klue.leaderboard.site import setup

    setup(site_root)
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    out: dict[str, Any] = {}
    for path in ("/", "/api/leaderboard"):
        assert client.get(path).status_code == 200  # warm
        times = []
        for _ in range(requests):
            started = time.process_time()
            assert client.get(path).status_code == 200
            times.append(time.process_time() - started)
        out[path] = {"median_cpu_ms": round(statistics.median(times) * 1000, 1),
                     "min_cpu_ms": round(min(times) * 1000, 1)}
    return out


def pages_sites(out: Path, pg_url: str | None) -> dict[str, LiveSite]:
    config = out / "pages.yaml"
    klue_dir = data_dir()
    config.write_text(
        "title: pages bench\ntasks:\n"
        f"  nli: {{gold: {klue_dir / 'klue-nli-v1.1' / 'klue-nli-v1.1_dev.json'}, private_fraction: 0.5}}\n"
        f"  sts: {{gold: {klue_dir / 'klue-sts-v1.1' / 'klue-sts-v1.1_dev.json'}, private_fraction: 0.5}}\n"
        "quota: {per_day: 3}\n", encoding="utf-8")
    sites = {"sqlite": LiveSite.create(out / "pages-sqlite", config)}
    if pg_url is not None:
        sites["postgresql"] = LiveSite.create(out / "pages-pg", config, pg_url)
    for name, site in sites.items():
        done = subprocess.run([sys.executable, __file__, "seed", str(site.root), "--teams", "100",
                               "--per-team", "5"], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"seeding {name} failed:\n{done.stderr[-3000:]}")
        print(f"seeded {name}: {done.stdout.strip()}", flush=True)
    return sites


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {"n": len(values), "p50_ms": round(at(0.5) * 1000, 1), "p95_ms": round(at(0.95) * 1000, 1)}


def pages(sites: dict[str, LiveSite], requests: int) -> dict[str, Any]:
    servers = {name: LiveServer(site, workers=2, scorers=0).start() for name, site in sites.items()}
    try:
        load_before = uptime()
        timings: dict[str, list[float]] = {}
        for server in servers.values():  # warm: each web worker's first request sets Django up
            for _ in range(4):
                assert server.get("/").status_code == 200
        for _ in range(requests):
            for name, server in servers.items():
                for path in ("/", "/api/leaderboard"):
                    started = time.monotonic()
                    response = server.get(path)
                    timings.setdefault(f"{name} GET {path}", []).append(time.monotonic() - started)
                    assert response.status_code == 200
        cpu_ms = {}
        for name, site in sites.items():
            done = subprocess.run([sys.executable, __file__, "page-cpu", str(site.root), "--requests", "10"],
                                  capture_output=True, text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            cpu_ms[name] = json.loads(done.stdout)
        board = servers["sqlite"].get("/api/leaderboard").json()
        rows = {task: len(r) for task, r in board["public"]["tasks"].items()}
        return {"figure": "pages", "requests_each": requests, "rows_per_task": rows,
                "klue_rows": len(board["public"]["klue"]),
                "page_bytes": len(servers["sqlite"].get("/").content),
                "latency": {k: _percentiles(v) for k, v in timings.items()}, "web_cpu_ms": cpu_ms,
                "load_before": load_before, "load_after": uptime()}
    finally:
        for server in servers.values():
            server.stop()


def locust_figure(site: LiveSite, out: Path, users: int, seconds: int) -> dict[str, Any]:
    from klue import registry
    from klue.tasks.reading import read

    task = registry.get("nli")
    gold_path = data_dir() / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json"
    gold = [{"guid": task.guid(r), "gold_label": task.prediction_to_json(task.gold_prediction(r))["label"]}
            for r in read(task, gold_path, None, purpose="score").records]
    files = [write_nli_predictions(gold, out / f"locust-{i}.jsonl", 0.6 + 0.1 * i, seed=i) for i in range(3)]
    tokens = [site.add_user(f"load{i}", f"load-team-{i}") for i in range(max(1, users // 2))]
    server = LiveServer(site, workers=2, scorers=1).start()
    try:
        load_before = uptime()
        run = run_locust(server, tokens, files, users=users, seconds=seconds, out_dir=out / "locust")
        accepted = [pk for _, pk in run.answers["accepted"]]
        for team, token in enumerate(tokens):
            mine = [pk for t, pk in run.answers["accepted"] if t == team]
            server.wait_scored(token, mine, timeout=1800)
        load_teams = site.query("SELECT t.name, count(*) FROM leaderboard_submission s JOIN leaderboard_team t "
                                "ON t.id = s.team_id WHERE t.name LIKE %s GROUP BY t.name", ("load-team-%",))
        scored_once = site.query("SELECT count(*) FROM leaderboard_score WHERE submission_id IN "
                                 f"({','.join(str(int(pk)) for pk in accepted) or '0'})")
        return {"figure": "locust", "users": users, "seconds": seconds, "teams": len(tokens),
                "command": " ".join(run.command[2:]).replace(str(REPO) + "/", ""),
                "accepted": len(accepted), "distinct_ids": len(set(accepted)),
                "refused_quota": len(run.answers["refused"]), "other_answers": len(run.answers["other"]),
                "stored_per_team": dict(load_teams), "score_rows_for_accepted": scored_once[0][0],
                "stats": run.stats, "load_before": load_before, "load_after": uptime()}
    finally:
        server.stop()


def fresh_site(out: Path) -> LiveSite:
    """A new site over the official NLI dev set (quota 3 a day): the locust run without the 1,000 seeded
    submissions, so that the quota, not the board's cost, is what the users run into."""
    config = out / "fresh.yaml"
    config.write_text("title: locust bench\ntasks:\n"
                      f"  nli: {{gold: {data_dir() / 'klue-nli-v1.1' / 'klue-nli-v1.1_dev.json'}, private_fraction: 0.5}}\n"
                      "quota: {per_day: 3}\n", encoding="utf-8")
    return LiveSite.create(out / "fresh-site", config)


# ------------------------------------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("all", help="every figure (or those named by --only)")
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--only", nargs="*",
                     default=["throughput", "overhead", "cpu", "pages", "locust", "locust-fresh"])
    run.add_argument("--scorers", type=int, default=2)
    run.add_argument("--copies", type=int, default=4, help="NER submissions per team in the throughput run")
    run.add_argument("--rounds", type=int, default=3)
    run.add_argument("--requests", type=int, default=40)
    run.add_argument("--users", type=int, default=8)
    run.add_argument("--seconds", type=int, default=20)
    base = sub.add_parser("score-intervals", help="the overhead's baseline: klue score plus the same intervals")
    base.add_argument("--task", required=True)
    base.add_argument("--gold", type=Path, required=True)
    base.add_argument("--predictions", type=Path, required=True)
    jc = sub.add_parser("judge-cpu", help="CPU seconds of scoring jobs forked from this process")
    jc.add_argument("--request", required=True, help="the judge's request, JSON")
    jc.add_argument("--rounds", type=int, default=3)
    pc = sub.add_parser("page-cpu", help="CPU ms of the web process per page, in process")
    pc.add_argument("site", type=Path)
    pc.add_argument("--requests", type=int, default=10)
    seed = sub.add_parser("seed", help="write scored submissions into a site's database")
    seed.add_argument("site", type=Path)
    seed.add_argument("--teams", type=int, default=100)
    seed.add_argument("--per-team", type=int, default=5)
    args = parser.parse_args()

    if args.command == "score-intervals":
        print(json.dumps(score_intervals(args.task, args.gold, args.predictions)))
        return
    if args.command == "judge-cpu":
        print(json.dumps(judge_cpu(json.loads(args.request), args.rounds)))
        return
    if args.command == "page-cpu":
        print(json.dumps(page_cpu(args.site, args.requests)))
        return
    if args.command == "seed":
        print(json.dumps(seed_site(args.site, args.teams, args.per_team)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    header = {"commit": git_commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "cpus": os.cpu_count(), "python": sys.version.split()[0]}
    print(json.dumps(header), flush=True)
    results: list[dict[str, Any]] = [header]

    def record(figure: dict[str, Any]) -> None:
        results.append(figure)
        print(json.dumps(figure, ensure_ascii=False), flush=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")

    if "throughput" in args.only:
        out = args.out / "throughput"
        out.mkdir(exist_ok=True)
        record(throughput(out, args.scorers, args.copies))
    if "overhead" in args.only:
        out = args.out / "overhead"
        out.mkdir(exist_ok=True)
        record(overhead(out, args.rounds))
    if "cpu" in args.only:
        out = args.out / "cpu"
        out.mkdir(exist_ok=True)
        record(cpu(out, args.rounds))
    if "locust-fresh" in args.only:
        out = args.out / "fresh"
        out.mkdir(exist_ok=True)
        figure = locust_figure(fresh_site(out), out, args.users, args.seconds)
        record({**figure, "figure": "locust-fresh"})
    if "pages" in args.only or "locust" in args.only:
        out = args.out / "pages"
        out.mkdir(exist_ok=True)
        from postgres import find_bin_dir, server_user, start_server, stop_server

        bin_dir, user = find_bin_dir(), server_user()
        pg = start_server(bin_dir, user) if bin_dir is not None and user != "" else None
        try:
            sites = pages_sites(out, pg.new_database("pages") if pg is not None else None)
            if "pages" in args.only:
                record(pages(sites, args.requests))
            if "locust" in args.only:
                record(locust_figure(sites["sqlite"], out, args.users, args.seconds))
        finally:
            if pg is not None:
                stop_server(pg)


if __name__ == "__main__":
    main()
