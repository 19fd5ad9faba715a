"""Faults on a live server (issue 38, "Real parts in tests"): a scoring worker killed mid-job, the whole server
killed and restarted, the SQLite database locked by another process past its busy timeout. In each, nothing
accepted is lost and nothing is scored twice; what the database says is read straight from it. The site's
`service` timing is short (a beat every 0.5 s, a worker lost after 2 s, a 2 s busy timeout) so the faults
take seconds, not the defaults' 15 s and 30 s.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator

import pytest
from live_site import LiveServer, LiveSite, write_config, write_nli_gold, write_nli_predictions

from cli_in_process import Done, klue_in_process

pytestmark = [pytest.mark.slow, pytest.mark.longest]

LOST_AFTER_S = 2.0  # the site's service.lost_after_s: a job's worker is lost after this long without a beat
BUSY_TIMEOUT_S = 2.0  # service.sqlite_timeout_s
SERVICE = f"service: {{heartbeat_s: 0.5, lost_after_s: {LOST_AFTER_S}, sqlite_timeout_s: {BUSY_TIMEOUT_S}}}\n"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("fault-site")
    # Enough examples that a job runs long enough to be caught mid-way, still seconds in all.
    gold = write_nli_gold(base / "nli_dev.json", 5000)
    site = LiveSite.create(base / "site", write_config(base, base / "nli_dev.json", per_day=5, extra=SERVICE),
                           users=[(name, f"team-{name}", None, False) for name in ("worker", "crash", "lock")])
    for i in range(4):
        write_nli_predictions(gold, base / f"p{i}.jsonl", accuracy=0.5 + 0.1 * i, seed=i)
    server = LiveServer(site, workers=1, scorers=1).start()
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
    # Requeued only once the killed worker's heartbeat was older than lost_after_s, not at once (its last beat
    # was at most one beat, 0.5 s, before the kill).
    assert time.monotonic() - killed_at >= LOST_AFTER_S - 0.6
    assert _scores_of(site, submission) == [0]  # scored exactly once
    job_status, workers = _job_of(site, submission)
    # Claimed twice: by the killed worker, then by its replacement.
    assert job_status == "SUCCESSFUL" and len(json.loads(workers)) == 2 and f"-{victim}-" in workers, workers
    assert "starting another" in live.log()  # the supervisor replaced the dead worker


def test_database_locked_past_its_timeout_answers_503_and_klue_submit_retries(live: LiveServer) -> None:
    """Another process holds SQLite's write lock past the site's busy timeout: the submission waits the
    timeout, then answers 503 with Retry-After and nothing is stored; `klue submit` tries again, and once the
    lock is gone its retry is stored once and counts once toward the quota."""
    site, base = live.site, live.site.root.parent
    token = site.tokens["lock"]
    holder = sqlite3.connect(site.root / "db.sqlite3", timeout=30, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    sender: threading.Thread | None = None
    sent: list[Done] = []
    try:
        started = time.monotonic()
        busy = live.submit(token, base / "p2.jsonl", name="refused")
        waited = time.monotonic() - started
        assert busy.status_code == 503, busy.text
        assert int(busy.headers["Retry-After"]) > 0 and "nothing was recorded" in busy.json()["error"]
        assert waited >= BUSY_TIMEOUT_S - 0.2, f"answered after {waited:.1f} s, before the busy timeout"
        # `klue submit` in this process (tests/cli_in_process.py), on a thread while this one holds the lock: the
        # subject is what it sends and retries, not its process (a process costs about 1.5 CPU-s of imports).
        sender = threading.Thread(target=lambda: sent.append(klue_in_process(
            "submit", "--server", live.url, "--task", "nli", "--predictions", str(base / "p2.jsonl"), "--name",
            "patient", "--json", environ={**os.environ, "KLUE_TOKEN": token})))
        sender.start()
        deadline = time.monotonic() + 120
        while live.log().count("answered 503") < 2 and time.monotonic() < deadline and sender.is_alive():
            time.sleep(0.1)
        assert live.log().count("answered 503") >= 2, live.log()  # klue submit's first try met the lock
    finally:
        holder.execute("COMMIT")
        holder.close()
        if sender is not None:  # its end, even when an assertion above failed: it holds this process's environ
            sender.join(timeout=120)
    assert sent, "klue submit did not end within 120 s of the lock's release"
    out, err = sent[0].stdout, sent[0].stderr
    assert sent[0].returncode == 0 and "busy" in err, (out, err)
    submission = json.loads(out)["id"]
    assert live.wait_scored(token, [submission])[submission]["status"] == "scored"
    assert _scores_of(site, submission) == [0]
    stored = site.query("SELECT s.name FROM leaderboard_submission s JOIN leaderboard_team t ON t.id = s.team_id "
                        "WHERE t.name = 'team-lock'")
    assert stored == [("patient",)]  # the 503s stored nothing
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
