"""Model submissions with the real models (issue 39, "Done when"): SmolLM2-135M-Instruct (`hf:smollm2.gguf`)
and multilingual-e5-small (`emb:e5-small`) added to a site's model store beside a tiny BERT (`tiny-bert`, the
encoder family's fine-tune in the job), submitted with `klue submit --model ... --wait` to a running site whose
gold has a private part, scored, ranked beside a prediction-file entry; the same predictions as `klue
benchmark` on the same cell; the same site with `executor: ray` (a local Ray cluster this module starts) giving
the same predictions and scores; no private example's text in any line the participant reads.

Real data: the official KLUE NLI dev file (KLUE_DATA_DIR), split here by premise into a small training part
and a small gold part (a few dozen examples, so each job takes seconds to a minute on a loaded CPU).

What is left to benchmarks/model_submissions.py (RESULTS.md, "Model submissions (issue 39)"), which costs
minutes: the real e5 fine-tuned as an encoder through the site (its fine-tune is tests/training/
test_training_real.py's; the site's part of the path, store to judge, is the tiny BERT's here), the LLM's and
the encoder's `klue benchmark` twins, the LLM with shots, and the real models on Ray.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_site import LiveServer, LiveSite

from cli_in_process import Done, klue_in_process
from conftest import private_guids_of
from klue.benchmark.cells import model_slug
from real_models import e5_and_smollm2_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.longest(seconds=100)]

N_TRAIN = 12  # training examples, whole premises
SEED = 1
# The LLM's few-shot examples (the site's models.shots): none, so each of its 18 log-likelihood prompts (6 inputs,
# 3 labels) is the instruction and the input only (one shot: its cell 105 s against 78 s on 9 inputs at load 10);
# the shots' path is tests/llm's and benchmarks/model_submissions.py's.
SHOTS = 0


def nli_dev() -> Path:
    data = os.environ.get("KLUE_DATA_DIR")
    path = Path(data or "/nonexistent") / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json"
    if not path.is_file():
        pytest.skip(f"the KLUE NLI dev file is absent ({path}): set KLUE_DATA_DIR")
    return path


def split_by_premise(records: list[dict[str, Any]], scratch: Path) -> tuple[list[dict[str, Any]],
                                                                            list[dict[str, Any]]]:
    """(gold, train): whole premises (NLI's are 3 examples each) in file order. The gold: the first premise the
    site's seeded split puts in the public part and the first it puts in the private part (one of each is all
    the test needs: each model predicts every gold input, and the LLM's prompts are most of the module's time);
    the training part: the premises after them, N_TRAIN examples' worth."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(record["premise"], []).append(record)
    candidates = list(groups.values())[:8]
    scratch.write_text(json.dumps([r for group in candidates for r in group], ensure_ascii=False), encoding="utf-8")
    private = private_guids_of(scratch)  # the site's split is by a hash of each premise: the others do not matter
    public_group = next(i for i, group in enumerate(candidates) if group[0]["guid"] not in private)
    private_group = next(i for i, group in enumerate(candidates) if group[0]["guid"] in private)
    gold = [r for i in sorted((public_group, private_group)) for r in candidates[i]]
    train: list[dict[str, Any]] = []
    for group in list(groups.values())[max(public_group, private_group) + 1:]:
        if len(train) >= N_TRAIN:
            break
        train += group
    return gold, train


def add_to_store(site: Path, name: str, source: Path) -> None:
    """The model store's add (`klue leaderboard model add SITE NAME PATH [--link]`, in this process: the store
    is files, no Django): hard links where the site and the model share a file system (the hashes are still
    read), which saves copying 560 MB per site."""
    link = ["--link"] if os.stat(source).st_dev == os.stat(site).st_dev else []
    done = klue_in_process("leaderboard", "model", "add", str(site), name, str(source), *link)
    assert done.returncode == 0, done.stdout + done.stderr


def make_tiny_bert(path: Path, texts: list[str]) -> Path:
    """A tiny BertModel (random weights) with a WordPiece tokenizer trained on `texts`, as transformers saves it:
    what the encoder family fine-tunes in its job, in seconds where the real e5's fine-tune takes minutes."""
    import torch
    from transformers import AutoConfig, AutoModel

    from klue.models.tiny import make_tiny_model_dir

    torch.manual_seed(0)
    make_tiny_model_dir(path, texts=texts, vocab_size=400, hidden_size=16, layers=1, heads=2, intermediate_size=32,
                        max_len=128)
    AutoModel.from_config(AutoConfig.from_pretrained(str(path))).save_pretrained(str(path))
    return path


@dataclass
class RealSite:
    server: LiveServer
    site: LiveSite
    base: Path
    gold: list[dict[str, Any]]
    private: set[str]
    e5: Path


def make_site(base: Path, gold: list[dict[str, Any]], train: list[dict[str, Any]], store: dict[str, Path],
              models: str, env: dict[str, str] | None = None) -> tuple[LiveSite, LiveServer]:
    """A site over `gold` and `train` with `store`'s models (name -> path) in its store, served."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "nli_gold.json").write_text(json.dumps(gold, ensure_ascii=False), encoding="utf-8")
    (base / "nli_train.json").write_text(json.dumps(train, ensure_ascii=False), encoding="utf-8")
    config = base / "leaderboard.yaml"
    config.write_text("title: real models\ntasks:\n  nli: {gold: nli_gold.json, train: nli_train.json}\n"
                      f"quota: {{per_day: 10}}\nmodels: {models}\n", encoding="utf-8")
    site = LiveSite.create(base / "site", config, users=[("ana", "Team A", None, False), ("ben", "Team B", None, False)])
    for name, source in store.items():
        add_to_store(site.root, name, source)
    return site, LiveServer(site, workers=1, scorers=1, env=env or {}).start()


@pytest.fixture(scope="module")
def real_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealSite]:
    dev = nli_dev()
    e5, gguf = e5_and_smollm2_or_skip()
    base = tmp_path_factory.mktemp("real-model-site")
    gold, train = split_by_premise(json.loads(dev.read_text(encoding="utf-8")), base / "candidates.json")
    tiny = make_tiny_bert(base / "tiny-bert", [r[key] for r in gold + train for key in ("premise", "hypothesis")])
    site, server = make_site(base, gold, train, {"e5-small": e5, "smollm2.gguf": gguf, "tiny-bert": tiny},
                             f"{{limits: {{wall_s: 900, memory_gb: 12}}, seed: {SEED}, shots: {SHOTS}}}")
    try:
        yield RealSite(server, site, base, gold, private_guids_of(base / "nli_gold.json"), e5)
    finally:
        server.stop()


def submit_all(rs: RealSite, user: str, specs: list[str]) -> dict[str, Done]:
    """`klue submit --model SPEC --wait` for each spec, one after another, in this process (the subject is what
    the command prints and what the site answers, not its process; the site runs one job at a time anyway)."""
    environ = {**os.environ, "KLUE_TOKEN": rs.site.tokens[user]}
    return {spec: klue_in_process("submit", "--server", rs.server.url, "--model", spec, "--wait", "--wait-timeout",
                                  "1200", environ=environ) for spec in specs}


def submission_of(done: Done) -> int:
    return int(done.stdout.split("submission #")[2].split()[0])


def test_real_models_through_the_service_equal_klue_benchmark_and_keep_the_private_part(
        real_site: RealSite, tmp_path: Path) -> None:
    rs = real_site
    specs = ["emb:e5-small", "hf:smollm2.gguf", "tiny-bert"]
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
    # In this process (tests/cli_in_process.py): the subject is the cell's predictions, not the command's process.
    bench_run = klue_in_process("benchmark", "--tasks", "nli", "--model", f"emb:{rs.e5}", "--train",
                                str(rs.base / "nli_train.json"), "--eval", str(rs.base / "nli_gold.json"), "--seeds",
                                str(SEED), "--out", str(out))
    assert bench_run.returncode == 0, bench_run.stdout + bench_run.stderr
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
    """A local Ray cluster owned by a process of this test (ended by closing its stdin): its GCS address. One
    CPU: the job asks for one, and each CPU is a worker process Ray starts."""
    script = ("import sys, ray; ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False); "
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


def wait_ended(server: LiveServer, token: str, submission: int, timeout: float = 600) -> dict[str, Any]:
    """The submission's answer once its job ended (neither queued nor running)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer: dict[str, Any] = server.get(f"/api/submissions/{submission}", token).json()
        if answer["status"] not in ("queued", "running"):
            return answer
        time.sleep(0.5)
    raise AssertionError(f"#{submission} still pending after {timeout:.0f} s: {server.status()}")


def test_the_same_site_on_a_ray_cluster_gives_the_same_scores(real_site: RealSite, ray_cluster: str,
                                                             tmp_path: Path) -> None:
    """The executor's equivalence, with the `classic` family (its cell takes a second; what the Ray executor
    does, running the same limited child in a Ray task, is the same for every family): the Ray site's job and
    the local site's give the same predictions, byte for byte, and the same scores. The real models on Ray:
    benchmarks/model_submissions.py --ray-address (RESULTS.md, "Model submissions (issue 39)")."""
    rs = real_site
    gold = json.loads((rs.base / "nli_gold.json").read_text(encoding="utf-8"))
    train = json.loads((rs.base / "nli_train.json").read_text(encoding="utf-8"))
    site, server = make_site(tmp_path / "ray", gold, train, {},
                             f"{{executor: ray, ray_address: '{ray_cluster}', limits: {{wall_s: 900, memory_gb: 12, "
                             f"cpus: 1}}, seed: {SEED}, shots: {SHOTS}}}",
                             env={"RAY_AUTH_MODE": "token"})  # the cluster's token auth (its token: ~/.ray/auth_token)
    try:
        ray_site = RealSite(server, site, tmp_path / "ray", gold, rs.private, rs.e5)
        done = submit_all(ray_site, "ana", ["classic"])["classic"]
        assert done.returncode == 0, done.stdout + done.stderr
        assert "(ray executor)" in done.stdout
        ray_answer = server.get(f"/api/submissions/{submission_of(done)}", site.tokens["ana"]).json()
    finally:
        server.stop()
    # The local site's run of the same model (the API straight: the CLI's path is the one above).
    token = rs.site.tokens["ben"]
    sent = httpx.post(f"{rs.server.url}/api/submissions", data={"model": "classic"},
                      headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert sent.status_code == 201, sent.text
    local = wait_ended(rs.server, token, sent.json()["submissions"][0]["id"])
    assert local["status"] == ray_answer["status"] == "scored", (local, ray_answer)
    assert "(local executor)" in " ".join(local["job"]["log"])
    assert ray_answer["scores"]["scores"] == local["scores"]["scores"]
    assert ray_answer["scores"]["task_score"] == local["scores"]["task_score"]
    job = tmp_path / "ray" / "site" / "jobs" / str(ray_answer["id"]) / "predictions.jsonl"
    assert job.read_bytes() == (rs.site.root / "jobs" / str(local["id"]) / "predictions.jsonl").read_bytes()
