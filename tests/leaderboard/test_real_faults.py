"""Faults on a live server (issue 38, "Real parts in tests"): a scoring worker killed mid-job, the whole server
killed and restarted, the SQLite database locked by another process. In each, nothing accepted is lost and
nothing is scored twice; what the database says is read straight from it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from live_site import LiveServer, LiveSite, write_config, write_nli_gold, write_nli_predictions

pytestmark = [pytest.mark.slow, pytest.mark.longest]

LOST_AFTER_S = 15.0  # klue.leaderboard.worker.LOST_S: a job's worker is lost after this long without a beat


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("fault-site")
    # Enough examples that a job runs long enough to be caught mid-way, still seconds in all.
    gold = write_nli_gold(base / "nli_dev.json", 5000)
    site = LiveSite.create(base / "site", write_config(base, base / "nli_dev.json", per_day=5))
    for name in ("worker", "crash", "lock"):
        site.add_user(name, f"team-{name}")
    for i in range(4):
        write_nli_predictions(gold, base / f"p{i}.jsonl", accuracy=0.5 + 0.1 * i, seed=i)
    server = LiveServer(site, workers=2, scorers=1).start()
    try:
        yield server
    finally:
        server.stop()


def _scores_of(site: LiveSite, submission: int) -> list[int]:
    return [row[0] for row in site.query("SELECT generation FROM leaderboard_score WHERE submission_id = %s",
                                         (submission,))]


def _job_of(site: LiveSite, submission: int) -> tuple[str, str]:
    """(status, worker_ids JSON) of the scoring job of `submission` (django-tasks-db's table)."""
    rows = site.query("SELECT status, worker_ids, args_kwargs FROM django_tasks_database_dbtaskresult")
    mine = [(status, workers) for status, workers, args in rows if f"[{submission}, 0]" in str(args)]
    assert len(mine) == 1, rows
    return mine[0]


def test_worker_killed_mid_job_is_requeued_and_scored_once(live: LiveServer) -> None:
    site, base = live.site, live.site.root.parent
    token = site.tokens["worker"]
    answer = live.submit(token, base / "p3.jsonl", name="survivor")
    assert answer.status_code == 201, answer.text
    submission = answer.json()["id"]
    # Straight from the database, every 10 ms: the job runs for about a second on an idle machine.
    deadline, victim = time.monotonic() + 60, None
    while time.monotonic() < deadline and victim is None:
        status, workers = _job_of(site, submission)
        if status == "RUNNING":
            claimed_by = json.loads(workers)[-1]
            victim = site.query("SELECT pid FROM leaderboard_workerheartbeat WHERE worker_id = %s",
                                (claimed_by,))[0][0]
        else:
            time.sleep(0.01)
    assert victim is not None, f"the job never started: {live.status()}"
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    job_status, _ = _job_of(site, submission)
    assert job_status == "RUNNING", "the job ended before the kill: the test did not kill a worker mid-job"

    done = live.wait_scored(token, [submission], timeout=LOST_AFTER_S + 120)[submission]
    assert done["status"] == "scored", done
    # Requeued only once the killed worker's heartbeat was older than LOST_S, not at once.
    assert time.monotonic() - killed_at >= LOST_AFTER_S - 3
    assert _scores_of(site, submission) == [0]  # scored exactly once
    job_status, workers = _job_of(site, submission)
    # Claimed twice: by the killed worker, then by its replacement.
    assert job_status == "SUCCESSFUL" and len(json.loads(workers)) == 2 and f"-{victim}-" in workers, workers
    assert "starting another" in live.log()  # the supervisor replaced the dead worker


def test_database_locked_waits_then_lands_once(live: LiveServer) -> None:
    """Another process holds SQLite's write lock for 3 s: the submission waits (busy timeout), then is stored
    once; it is neither refused nor lost, and the quota counts it once."""
    site, base = live.site, live.site.root.parent
    token, hold_s = site.tokens["lock"], 3.0
    holder = sqlite3.connect(site.root / "db.sqlite3", timeout=30, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    result: dict[str, Any] = {}

    def send() -> None:
        started = time.monotonic()
        response = live.submit(token, base / "p2.jsonl", name="patient")
        result.update(code=response.status_code, body=response.json(), took=time.monotonic() - started)

    sender = threading.Thread(target=send)
    sender.start()
    time.sleep(hold_s)
    assert sender.is_alive(), f"answered while the database was locked: {result}"
    holder.execute("COMMIT")
    holder.close()
    sender.join(timeout=120)
    assert result["code"] == 201, result
    submission = result["body"]["id"]
    assert live.wait_scored(token, [submission])[submission]["status"] == "scored"
    assert _scores_of(site, submission) == [0]
    assert site.query("SELECT count(*) FROM leaderboard_submission s JOIN leaderboard_team t ON t.id = s.team_id "
                      "WHERE t.name = 'team-lock'") == [(1,)]
    assert live.get("/api/team", token).json()["quota"]["used"]["nli"] == 1


def test_server_killed_and_restarted_loses_nothing(live: LiveServer) -> None:
    """SIGKILL to every process of the server (web, supervisor, scorer, judge) with jobs queued and running;
    after `serve` again every accepted submission is there and scored exactly once."""
    site, base = live.site, live.site.root.parent
    token = site.tokens["crash"]
    accepted = []
    for i in range(4):
        answer = live.submit(token, base / f"p{i}.jsonl", name=f"crash-{i}")
        assert answer.status_code == 201, answer.text
        accepted.append(answer.json()["id"])
    live.kill()
    pending = [pk for pk in accepted if site.query("SELECT status FROM leaderboard_submission WHERE id = %s",
                                                   (pk,)) == [("queued",)]]
    assert pending, "every job finished before the kill: nothing was in flight"
    live.start()  # the same site, a new process group (and port)
    done = live.wait_scored(token, accepted, timeout=LOST_AFTER_S + 180)
    assert sorted(done) == sorted(accepted)
    assert all(answer["status"] == "scored" for answer in done.values()), done
    assert all(_scores_of(site, pk) == [0] for pk in accepted)
    stored = site.query("SELECT s.id FROM leaderboard_submission s JOIN leaderboard_team t ON t.id = s.team_id "
                        "WHERE t.name = 'team-crash' ORDER BY s.id")
    assert [row[0] for row in stored] == accepted
    assert live.get("/api/team", token).json()["quota"]["used"]["nli"] == len(accepted)
