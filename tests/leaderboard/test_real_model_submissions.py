"""Model submissions with the real models (issue 39, "Done when"): SmolLM2-135M-Instruct (`hf:smollm2.gguf`)
and multilingual-e5-small (`emb:e5-small`, and `e5-small` fine-tuned as an encoder on a small budget) added to
a site's model store, submitted with `klue submit --model ... --wait` to a running site whose gold has a
private part, scored, ranked beside a prediction-file entry; the same predictions as `klue benchmark` on the
same cell; the same site with `executor: ray` (a local Ray cluster this module starts) giving the same
predictions and scores; no private example's text in any line the participant reads.

Real data: the official KLUE NLI dev file (KLUE_DATA_DIR), split here by premise into a small training part
and a small gold part (a few dozen examples, so each job takes seconds to a minute or two on a loaded CPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from live_site import LiveServer, LiveSite, klue

from conftest import private_guids_of
from klue.benchmark.cells import model_slug
from real_models import e5_and_smollm2_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.longest]

N_GOLD, N_TRAIN = 9, 12  # examples, whole premises (NLI's are 3 each): the seeded split decides public and private; a 3-step fine-tune
SEED = 1
SHOTS = 1  # the LLM's few-shot examples (the site's models.shots; the default 5 makes each prompt 6x longer)
SERVICE = "service: {heartbeat_s: 0.5, lost_after_s: 3}\n"


def nli_dev() -> Path:
    data = os.environ.get("KLUE_DATA_DIR")
    path = Path(data or "/nonexistent") / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json"
    if not path.is_file():
        pytest.skip(f"the KLUE NLI dev file is absent ({path}): set KLUE_DATA_DIR")
    return path


def split_by_premise(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(gold, train): whole premises in file order, the first N_GOLD examples' worth to the gold."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(record["premise"], []).append(record)
    gold: list[dict[str, Any]] = []
    train: list[dict[str, Any]] = []
    for group in groups.values():
        if len(gold) < N_GOLD:
            gold += group
        elif len(train) < N_TRAIN:
            train += group
        else:
            break
    return gold, train


def add_to_store(site: Path, name: str, source: Path) -> None:
    """The model store's add (`klue leaderboard model add SITE NAME PATH [--link]`): hard links where the site
    and the model share a file system (the hashes are still read), which saves copying 560 MB per site."""
    link = ["--link"] if os.stat(source).st_dev == os.stat(site).st_dev else []
    klue("leaderboard", "model", "add", str(site), name, str(source), *link, timeout=300)


@dataclass
class RealSite:
    server: LiveServer
    site: LiveSite
    base: Path
    gold: list[dict[str, Any]]
    private: set[str]
    e5: Path
    gguf: Path


def make_site(base: Path, gold: list[dict[str, Any]], train: list[dict[str, Any]], e5: Path, gguf: Path,
              models: str, env: dict[str, str] | None = None) -> tuple[LiveSite, LiveServer]:
    base.mkdir(parents=True, exist_ok=True)
    (base / "nli_gold.json").write_text(json.dumps(gold, ensure_ascii=False), encoding="utf-8")
    (base / "nli_train.json").write_text(json.dumps(train, ensure_ascii=False), encoding="utf-8")
    config = base / "leaderboard.yaml"
    config.write_text("title: real models\ntasks:\n  nli: {gold: nli_gold.json, train: nli_train.json}\n"
                      f"quota: {{per_day: 10}}\n{SERVICE}models: {models}\n", encoding="utf-8")
    site = LiveSite.create(base / "site", config)
    add_to_store(site.root, "e5-small", e5)
    add_to_store(site.root, "smollm2.gguf", gguf)
    site.add_users([("ana", "Team A", None, False), ("ben", "Team B", None, False)])
    return site, LiveServer(site, workers=1, scorers=1, env=env or {}).start()


@pytest.fixture(scope="module")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealSite]:
    dev = nli_dev()
    e5, gguf = e5_and_smollm2_or_skip()
    gold, train = split_by_premise(json.loads(dev.read_text(encoding="utf-8")))
    base = tmp_path_factory.mktemp("real-model-site")
    site, server = make_site(base, gold, train, e5, gguf,
                             f"{{limits: {{wall_s: 900, memory_gb: 12}}, seed: {SEED}, shots: {SHOTS}}}")
    try:
        yield RealSite(server, site, base, gold, private_guids_of(base / "nli_gold.json"), e5, gguf)
    finally:
        server.stop()


def submit_all(rs: RealSite, user: str, specs: list[str]) -> dict[str, subprocess.CompletedProcess[str]]:
    """`klue submit --model SPEC --wait` for each spec, all at once (the site runs them one after another)."""
    env = {**os.environ, "KLUE_TOKEN": rs.site.tokens[user]}
    running = {spec: subprocess.Popen([sys.executable, "-m", "klue", "submit", "--server", rs.server.url, "--model",
                                       spec, "--wait", "--wait-timeout", "1200"], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE) for spec in specs}
    out = {}
    for spec, process in running.items():
        stdout, stderr = process.communicate(timeout=1500)
        out[spec] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return out


def submission_of(done: subprocess.CompletedProcess[str]) -> int:
    return int(done.stdout.split("submission #")[2].split()[0])


def test_real_models_through_the_service_equal_klue_benchmark_and_keep_the_private_part(
        real_site: RealSite, tmp_path: Path) -> None:
    rs = real_site
    specs = ["emb:e5-small", "hf:smollm2.gguf", "e5-small"]
    done = submit_all(rs, "ana", specs)
    answers = {}
    for spec in specs:
        assert done[spec].returncode == 0, done[spec].stdout + done[spec].stderr
        pk = submission_of(done[spec])
        answers[spec] = rs.server.get(f"/api/submissions/{pk}", rs.site.tokens["ana"]).json()
        assert answers[spec]["status"] == "scored" and "private" not in answers[spec], answers[spec]
        assert answers[spec]["scores"]["n_examples"] == len(rs.gold) - len(rs.private)
    # Every step and count, never the child's output: no private example's text, guid or gold in what ana reads.
    readable = [done[s].stdout + done[s].stderr for s in specs] + [json.dumps(a, ensure_ascii=False)
                                                                  for a in answers.values()]
    for record in rs.gold:
        if record["guid"] in rs.private:
            for text in (record["premise"], record["hypothesis"], record["guid"]):
                assert not any(text in line for line in readable), text

    # `klue benchmark` on the same cells (the site's train and gold files, the site's seed): the same predictions.
    out = tmp_path / "bench"
    # The embedding model's cell only: the LLM's and the encoder's are compared in benchmarks/model_submissions.py
    # (RESULTS.md, "Model submissions (issue 39)"), which costs minutes; here the same code path is what counts.
    klue("benchmark", "--tasks", "nli", "--model", f"emb:{rs.e5}", "--train", str(rs.base / "nli_train.json"),
         "--eval", str(rs.base / "nli_gold.json"), "--seeds", str(SEED), "--out", str(out), timeout=1200)
    for spec, model in (("emb:e5-small", f"emb:{rs.e5}"),):
        bench = out / "nli" / model_slug(model) / f"seed{SEED}" / "predictions.jsonl"
        job = rs.site.root / "jobs" / str(answers[spec]["id"]) / "predictions.jsonl"
        assert job.read_bytes() == bench.read_bytes(), spec

    # The benchmark's e5 predictions sent as a file by another team: the same score, ranked beside the model.
    bench = out / "nli" / model_slug(f"emb:{rs.e5}") / f"seed{SEED}" / "predictions.jsonl"
    sent = rs.server.submit(rs.site.tokens["ben"], bench, name="e5 as a file")
    assert sent.status_code == 201, sent.text
    file_answer = rs.server.wait_scored(rs.site.tokens["ben"], [sent.json()["id"]])[sent.json()["id"]]
    assert file_answer["scores"]["scores"] == answers["emb:e5-small"]["scores"]["scores"]
    board = {row["team"]: row for row in rs.server.get("/api/tasks/nli").json()["public"]}
    assert board["Team B"]["submission"] == sent.json()["id"]  # the file
    assert board["Team A"]["submission"] in {a["id"] for a in answers.values()}  # the team's best model


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[str]:
    """A local Ray cluster owned by a process of this test (ended by closing its stdin): its GCS address."""
    script = ("import sys, ray; ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False); "
              "print(ray.get_runtime_context().gcs_address, flush=True); sys.stdin.read(); ray.shutdown()")
    process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert process.stdout is not None and process.stdin is not None
    try:
        address = process.stdout.readline().strip()
        assert address, "the Ray cluster did not start"
        yield address
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def test_the_same_site_on_a_ray_cluster_gives_the_same_scores(real_site: RealSite, ray_cluster: str,
                                                             tmp_path: Path) -> None:
    rs = real_site
    gold = json.loads((rs.base / "nli_gold.json").read_text(encoding="utf-8"))
    train = json.loads((rs.base / "nli_train.json").read_text(encoding="utf-8"))
    site, server = make_site(tmp_path / "ray", gold, train, rs.e5, rs.gguf,
                             f"{{executor: ray, ray_address: '{ray_cluster}', limits: {{wall_s: 900, memory_gb: 12, "
                             f"cpus: 1}}, seed: {SEED}, shots: {SHOTS}}}",
                             env={"RAY_AUTH_MODE": "token"})  # the cluster's token auth (its token: ~/.ray/auth_token)
    try:
        ray_site = RealSite(server, site, tmp_path / "ray", gold, rs.private, rs.e5, rs.gguf)
        done = submit_all(ray_site, "ana", ["emb:e5-small"])["emb:e5-small"]
        assert done.returncode == 0, done.stdout + done.stderr
        assert "(ray executor)" in done.stdout
        ray_answer = server.get(f"/api/submissions/{submission_of(done)}", site.tokens["ana"]).json()
    finally:
        server.stop()
    local = [a for a in rs.server.get("/api/team", rs.site.tokens["ana"]).json()["submissions"]
             if a.get("model", {}).get("spec") == "emb:e5-small" and a["status"] == "scored"]
    if not local:  # this test alone: the local site's run of the same model
        done = submit_all(rs, "ana", ["emb:e5-small"])["emb:e5-small"]
        assert done.returncode == 0, done.stdout + done.stderr
        local = [rs.server.get(f"/api/submissions/{submission_of(done)}", rs.site.tokens["ana"]).json()]
    assert ray_answer["scores"]["scores"] == local[0]["scores"]["scores"]
    assert ray_answer["scores"]["task_score"] == local[0]["scores"]["task_score"]
    job = tmp_path / "ray" / "site" / "jobs" / str(ray_answer["id"]) / "predictions.jsonl"
    assert job.read_bytes() == (rs.site.root / "jobs" / str(local[0]["id"]) / "predictions.jsonl").read_bytes()
