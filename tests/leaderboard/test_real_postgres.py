"""The end-to-end flow on a real PostgreSQL (issue 38, "Real parts in tests"): `klue leaderboard init --db
postgresql://...`, two teams, `serve` as its own process, `klue submit --wait`, ranks with intervals and
groups; and the quota holding exactly when one team's submissions arrive at once on several web workers.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator

import pytest
from live_site import (
    LiveServer,
    LiveSite,
    write_config,
    write_nli_gold,
    write_nli_predictions,
    write_nli_train,
)
from postgres import PostgresServer, postgres_server  # noqa: F401  # the fixture, by name

from cli_in_process import Done, klue_in_process

pytestmark = [pytest.mark.slow, pytest.mark.longest]

PER_DAY = 5


@pytest.fixture(scope="module")
def pg_server(tmp_path_factory: pytest.TempPathFactory,
              postgres_server: PostgresServer) -> Iterator[LiveServer]:  # noqa: F811
    base = tmp_path_factory.mktemp("pg-site")
    gold = write_nli_gold(base / "nli_dev.json", 240)
    write_nli_train(base / "nli_train.json", 90)  # model submissions too (the fair queue's locking on PostgreSQL)
    config = write_config(base, base / "nli_dev.json", PER_DAY)
    config.write_text(config.read_text(encoding="utf-8").replace(
        "private_fraction: 0.5}", f"private_fraction: 0.5, train: {base / 'nli_train.json'}}}"), encoding="utf-8")
    site = LiveSite.create(base / "site", config, db=postgres_server.new_database("lb"),
                           users=[(name, team, None, False) for name, team in (("alice", "Team A"), ("bob", "Team B"),
                                                                                ("carol", "Team C"))])
    for name, accuracy in (("good", 0.95), ("poor", 0.4)):
        write_nli_predictions(gold, base / f"{name}.jsonl", accuracy, seed=len(name))
    # Two web workers: the concurrent submissions below reach the database from two processes at once.
    server = LiveServer(site, workers=2, scorers=1).start()
    try:
        yield server
    finally:
        server.stop()


def submit(server: LiveServer, user: str, *args: str) -> Done:
    """`klue submit` in this process (tests/cli_in_process.py): the subject is the site's answer on PostgreSQL,
    not the command's process (a process each cost about 1.5 CPU-s)."""
    done = klue_in_process("submit", "--server", server.url, *args,
                           environ={**os.environ, "KLUE_TOKEN": server.site.tokens[user]})
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_submit_and_rank_on_postgres(pg_server: LiveServer) -> None:
    site, base = pg_server.site, pg_server.site.root.parent
    assert not (site.root / "db.sqlite3").exists(), "--db postgresql:// must keep no SQLite file"
    answers = {}
    for user, predictions in (("alice", "good"), ("bob", "poor")):
        done = submit(pg_server, user, "--task", "nli", "--predictions", str(base / f"{predictions}.jsonl"), "--name",
                      predictions, "--wait", "--json")
        answers[user] = json.loads(done.stdout)
        assert answers[user]["status"] == "scored", answers[user]
        low, high = answers[user]["scores"]["interval"]
        assert low <= answers[user]["scores"]["task_score"] <= high
    assert answers["alice"]["scores"]["task_score"] > answers["bob"]["scores"]["task_score"]

    board = pg_server.get("/api/leaderboard").json()
    assert board["revealed"] is False and "private" not in board
    rows = board["public"]["tasks"]["nli"]
    assert [r["team"] for r in rows] == ["Team A", "Team B"]
    # 0.95 against 0.4 accuracy on 120 public examples: the paired test separates them, rank 2 follows.
    assert [r["rank"] for r in rows] == [1, 2]
    assert all(r["interval"][0] <= r["score"] <= r["interval"][1] for r in rows)
    assert rows[1]["p_value"] is not None and rows[1]["p_value"] < 0.05

    # The rows are in PostgreSQL, where the site said.
    stored = site.query("SELECT t.name, s.status FROM leaderboard_submission s JOIN leaderboard_team t "
                        "ON t.id = s.team_id WHERE t.name IN ('Team A', 'Team B') ORDER BY t.name")
    assert stored == [("Team A", "scored"), ("Team B", "scored")]


def test_quota_exact_under_concurrent_submissions_on_postgres(pg_server: LiveServer) -> None:
    """12 attempts at once on a quota of 5: exactly 5 accepted and stored, 7 refused with the reset time."""
    site, base = pg_server.site, pg_server.site.root.parent
    token, attempts = site.tokens["carol"], 12
    barrier = threading.Barrier(attempts)
    codes: list[tuple[int, dict]] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        predictions = base / ("good.jsonl" if i % 2 else "poor.jsonl")
        barrier.wait()
        response = pg_server.submit(token, predictions, name=f"c{i}")
        with lock:
            codes.append((response.status_code, response.json()))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(attempts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    accepted = [answer["id"] for code, answer in codes if code == 201]
    refused = [answer for code, answer in codes if code == 429]
    assert len(codes) == attempts
    assert len(accepted) == PER_DAY and len(set(accepted)) == PER_DAY, codes
    assert len(refused) == attempts - PER_DAY, codes
    assert all("quota" in r["error"] and r["resets_at"] for r in refused)
    stored = site.query("SELECT s.id FROM leaderboard_submission s JOIN leaderboard_team t ON t.id = s.team_id "
                        "WHERE t.name = 'Team C' ORDER BY s.id")
    assert [row[0] for row in stored] == sorted(accepted)
    # The sixth attempt of the day stays refused afterwards, whatever the first five were.
    late = pg_server.submit(token, base / "good.jsonl")
    assert late.status_code == 429
    team = pg_server.get("/api/team", token).json()
    assert team["quota"]["used"]["nli"] == PER_DAY and team["quota"]["resets_at"].endswith("00:00:00+00:00")


def test_a_model_submission_on_postgres(pg_server: LiveServer) -> None:
    """The model queue's locking (SELECT ... FOR UPDATE of the waiting jobs) and a job's run on PostgreSQL."""
    site = pg_server.site
    done = submit(pg_server, "bob", "--model", "classic", "--wait", "--json")
    answer = json.loads(done.stdout)["submissions"][0]
    assert answer["status"] == "scored" and answer["job"]["state"] == "done", answer
    assert site.query("SELECT state, attempts FROM leaderboard_modeljob WHERE submission_id = %s",
                      (answer["id"],)) == [("done", 1)]
