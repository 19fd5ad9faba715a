"""Model submissions on a live site (issue 39), with the `classic` family (the CPU baselines: a cell takes
seconds): `klue submit --model` through the CLI, the job's cell scored by the site's judge and ranked beside a
prediction file, the same predictions as `klue benchmark` on the same cell, an owner's cancel, a killed
worker's job requeued and finished, the quotas, endpoint specs refused on a site with a private part, and
no private-part text in any line a participant can read. The real models (SmolLM2, multilingual-e5-small)
are in test_real_model_submissions.py; the configuration keys in test_config.py; the fair queue in
test_models.py.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_site import LiveServer, LiveSite, write_nli_gold, write_nli_train

from cli_in_process import Done, klue_in_process
from conftest import PASSWORD, csrf_of, private_guids_of

pytestmark = [pytest.mark.slow, pytest.mark.longest]

SERVICE = "service: {heartbeat_s: 0.5, lost_after_s: 2}\n"
MODELS = "models: {families: [classic, embedding, llm], limits: {wall_s: 300, memory_gb: 8}}\nmodel_quota: {per_week: 6}\n"


@dataclass
class ModelSite:
    server: LiveServer
    site: LiveSite
    base: Path
    gold: list[dict[str, Any]]
    private: set[str]


@pytest.fixture(scope="module")
def model_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelSite]:
    base = tmp_path_factory.mktemp("model-site")
    gold = write_nli_gold(base / "nli_dev.json", 120, seed=5)
    write_nli_train(base / "nli_train.json", 160)
    config = base / "leaderboard.yaml"
    config.write_text("title: model site\ntasks:\n  nli: {gold: nli_dev.json, train: nli_train.json}\n"
                      f"quota: {{per_day: 6}}\n{SERVICE}{MODELS}", encoding="utf-8")
    site = LiveSite.create(base / "site", config, users=[("mia", "Team M", PASSWORD, False), ("ned", "Team N", None, False),
                                                          ("kim", "Team K", None, False), ("wes", "Team W", None, False)])
    server = LiveServer(site, workers=1, scorers=1).start()
    try:
        yield ModelSite(server, site, base, gold, private_guids_of(base / "nli_dev.json"))
    finally:
        server.stop()


def submit(ms: ModelSite, user: str, *args: str, check: bool = True) -> Done:
    """`klue submit` in this process (tests/cli_in_process.py): the subject is what it sends, prints and exits
    with, not its process (a process each cost about 1.5 CPU-s)."""
    done = klue_in_process("submit", "--server", ms.server.url, *args,
                           environ={**os.environ, "KLUE_TOKEN": ms.site.tokens[user]})
    assert not check or done.returncode == 0, done.stdout + done.stderr
    return done


def private_texts(ms: ModelSite) -> list[str]:
    """Every text of a private example: premise, hypothesis (the gold label is one of three words, which any
    page names, so the labels are checked through the guids instead)."""
    return [r[key] for r in ms.gold if r["guid"] in ms.private for key in ("premise", "hypothesis")]


def owner_page(ms: ModelSite, user: str, path: str) -> str:
    """`path` as the logged-in owner sees it in a browser."""
    with httpx.Client(base_url=ms.server.url, timeout=60) as client:
        answer = client.post("/login", data={"username": user, "password": PASSWORD,
                                             "csrfmiddlewaretoken": csrf_of(client, "/login")})
        assert answer.status_code == 302, answer.text
        page = client.get(path)
        assert page.status_code == 200, page.text
        return page.text


def participant_lines(ms: ModelSite, user: str, submission: int, cli_output: str) -> list[str]:
    """Everything the owner can read about a submission: the CLI's output, the API's answer, the page."""
    api = ms.server.get(f"/api/submissions/{submission}", ms.site.tokens[user]).text
    page = owner_page(ms, user, f"/submissions/{submission}")
    assert 'id="job-log"' in page and "scored: public nli score" in page
    return [cli_output, api, json.dumps(json.loads(api), ensure_ascii=False), page]


def test_a_classic_model_is_run_scored_and_ranked_beside_a_file(model_site: ModelSite, tmp_path: Path) -> None:
    ms = model_site
    done = submit(ms, "mia", "--model", "classic", "--name", "baseline", "--wait")
    assert "scored" in done.stdout and "public nli score" in done.stdout, done.stdout + done.stderr
    assert "running the classic cell on nli: 160 training examples, 120 inputs to predict, seed 1" in done.stdout
    submission = int(done.stdout.split("submission #")[2].split()[0])
    answer = ms.server.get(f"/api/submissions/{submission}", ms.site.tokens["mia"]).json()
    assert answer["model"]["spec"] == "classic" and answer["job"]["state"] == "done"
    assert answer["scores"]["n_examples"] == len(ms.gold) - len(ms.private)
    assert "private" not in answer  # hidden until reveal, as for a file

    # The same cell by `klue benchmark` (same train and gold files, same seed): the same predictions, byte for byte.
    # The cell in this process (--jobs 0): a worker process would import klue's stack again for the same cell
    # (executors run every cell through the same execute_cell; the pool is tested in tests/benchmark/).
    out = tmp_path / "bench"
    bench_run = klue_in_process("benchmark", "--tasks", "nli", "--model", "classic", "--train",
                                str(ms.base / "nli_train.json"), "--eval", str(ms.base / "nli_dev.json"), "--seeds",
                                "1", "--out", str(out), "--jobs", "0")
    assert bench_run.returncode == 0, bench_run.stdout + bench_run.stderr
    bench = out / "nli" / "classic" / "seed1" / "predictions.jsonl"
    job = ms.site.root / "jobs" / str(submission) / "predictions.jsonl"
    assert bench.read_bytes() == job.read_bytes()

    # The benchmark's predictions sent as a file by another team: the same public score, both on the board.
    sent = ms.server.submit(ms.site.tokens["ned"], bench, name="file")
    assert sent.status_code == 201, sent.text
    file_answer = ms.server.wait_scored(ms.site.tokens["ned"], [sent.json()["id"]])[sent.json()["id"]]
    assert file_answer["scores"]["task_score"] == answer["scores"]["task_score"]
    assert file_answer["scores"]["scores"] == answer["scores"]["scores"]
    board = ms.server.get("/api/tasks/nli").json()["public"]
    assert {row["submission"] for row in board} >= {submission, sent.json()["id"]}, board

    # Nothing of the private part in what the owner reads: the CLI's lines, the API, the page (logged in or
    # not, the log is the owner's only).
    lines = participant_lines(ms, "mia", submission, done.stdout + done.stderr)
    for text in private_texts(ms):
        assert not any(text in line for line in lines), text
    assert not any(guid in line for guid in ms.private for line in lines)


def test_an_endpoint_is_refused_on_a_site_with_a_private_part(model_site: ModelSite) -> None:
    for spec in ("openai:gpt-4o-mini@http://127.0.0.1:9/v1", "emb:openai:text-embedding-3-small@http://127.0.0.1:9/v1"):
        done = submit(model_site, "wes", "--model", spec, check=False)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "endpoint would see the hidden inputs" in done.stderr
    done = submit(model_site, "wes", "--model", "emb:/etc", check=False)
    assert done.returncode == 2 and "path on the server" in done.stderr
    assert "are refused here: the endpoint would see the hidden inputs" in owner_page(model_site, "mia", "/submit")
    assert model_site.site.query("SELECT count(*) FROM leaderboard_modelsubmission s JOIN leaderboard_team t "
                                 "ON s.team_id = t.id WHERE t.name = 'Team W'") == [(0,)]


def wait_ended(ms: ModelSite, user: str, submission: int, timeout: float = 240) -> dict[str, Any]:
    """The submission's answer once its job ended (neither queued nor running)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer: dict[str, Any] = ms.server.get(f"/api/submissions/{submission}", ms.site.tokens[user]).json()
        if answer["status"] not in ("queued", "running"):
            return answer
        time.sleep(0.3)
    raise AssertionError(f"#{submission} still pending after {timeout:.0f} s: {ms.server.status()}")


def _job_row(ms: ModelSite, submission: int) -> tuple[str, int, str]:
    rows = ms.site.query("SELECT state, attempts, slot FROM leaderboard_modeljob WHERE submission_id = %s",
                         (submission,))
    return rows[0]


def _wait_running(ms: ModelSite, submission: int, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state, _, slot = _job_row(ms, submission)
        if state == "running" and (ms.site.root / "jobs" / str(submission) / "cell.json").is_file():
            return slot
        time.sleep(0.05)
    raise AssertionError(f"job of #{submission} never ran: {ms.server.status()}")


def _cell_processes(ms: ModelSite, submission: int) -> list[int]:
    cell = str(ms.site.root / "jobs" / str(submission) / "cell.json")
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if cell in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


def test_the_owner_cancels_a_running_job(model_site: ModelSite) -> None:
    ms = model_site
    done = submit(ms, "kim", "--model", "classic", "--json")
    submission = json.loads(done.stdout)["submissions"][0]["id"]
    _wait_running(ms, submission)
    # A file sent meanwhile is scored while the model runs: model jobs have workers of their own.
    file = ms.base / "kim.jsonl"
    file.write_text("".join(json.dumps({"guid": r["guid"], "label": "neutral"}) + "\n" for r in ms.gold),
                    encoding="utf-8")
    sent = ms.server.submit(ms.site.tokens["kim"], file).json()["id"]
    assert ms.server.wait_scored(ms.site.tokens["kim"], [sent], timeout=60)[sent]["status"] == "scored"
    assert _job_row(ms, submission)[0] == "running"
    assert submit(ms, "ned", "--cancel", str(submission), check=False).returncode == 2  # not ned's
    cancelled = submit(ms, "kim", "--cancel", str(submission))
    assert "cancel asked" in cancelled.stdout
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and _job_row(ms, submission)[0] != "cancelled":
        time.sleep(0.2)
    assert _job_row(ms, submission)[0] == "cancelled"
    answer = ms.server.get(f"/api/submissions/{submission}", ms.site.tokens["kim"]).json()
    assert answer["status"] == "cancelled" and "cancelled by the owner" in answer["job"]["log"][-1]
    assert _cell_processes(ms, submission) == []  # the child was killed, not left running
    again = submit(ms, "kim", "--cancel", str(submission), check=False)
    assert again.returncode == 2 and "nothing to cancel" in again.stderr


def test_a_killed_workers_job_is_requeued_and_finishes(model_site: ModelSite) -> None:
    ms = model_site
    done = submit(ms, "ned", "--model", "classic", "--json")
    submission = json.loads(done.stdout)["submissions"][0]["id"]
    slot = _wait_running(ms, submission)
    worker = ms.site.query("SELECT worker_ids FROM django_tasks_database_dbtaskresult WHERE id = %s",
                           (slot.replace("-", ""),)) or ms.site.query(
        "SELECT worker_ids FROM django_tasks_database_dbtaskresult WHERE id = %s", (slot,))
    pid = ms.site.query("SELECT pid FROM leaderboard_workerheartbeat WHERE worker_id = %s",
                        (json.loads(worker[0][0])[-1],))[0][0]
    os.kill(pid, signal.SIGKILL)  # the scoring worker, mid-job; `serve` starts another
    answer = wait_ended(ms, "ned", submission)
    assert answer["status"] == "scored", answer
    state, attempts, _ = _job_row(ms, submission)
    assert (state, attempts) == ("done", 2)
    assert any("put back in the queue" in line for line in answer["job"]["log"])
    assert ms.site.query("SELECT count(*) FROM leaderboard_score WHERE submission_id = %s", (submission,)) == [(1,)]


def test_quotas_count_model_submissions(model_site: ModelSite) -> None:
    """The weekly model quota (6 here) and the daily per-task quota (6) both count a model submission; a
    refused one stores nothing."""
    ms = model_site
    used = ms.site.query("SELECT count(*) FROM leaderboard_modelsubmission s JOIN leaderboard_team t ON "
                         "s.team_id = t.id WHERE t.name = 'Team W'")[0][0]
    ids, token = [], ms.site.tokens["wes"]
    for _ in range(6 - used):  # the API straight (the CLI's path is tested above): a process each costs seconds
        answer = httpx.post(f"{ms.server.url}/api/submissions", data={"model": "classic"},
                            headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert answer.status_code == 201, answer.text
        ids.append(answer.json()["submissions"][0]["id"])
    for pk in ids:  # free the queue
        httpx.post(f"{ms.server.url}/api/submissions/{pk}/cancel", headers={"Authorization": f"Bearer {token}"},
                   timeout=60)
    refused = submit(ms, "wes", "--model", "classic", check=False)
    assert refused.returncode == 2 and "quota" in refused.stderr, refused.stderr
    team = ms.server.get("/api/team", ms.site.tokens["wes"]).json()
    assert team["quota"]["used"]["nli"] == 6
