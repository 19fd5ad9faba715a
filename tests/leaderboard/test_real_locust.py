"""A bounded locust run against the live server (issue 38, "Real parts in tests"): a few users on 127.0.0.1,
two per team, reading the board and sending files as fast as they can until SUBMITS submissions were answered
(a count, not a time: enough on a loaded machine, no more on an idle one). Every accepted
submission is stored and scored once, none twice; each team's quota holds exactly; the board's latency is
recorded (printed, and in the test's tmp dir as locust_stats.csv).
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest
from live_site import LiveServer, LiveSite, run_locust, write_config, write_nli_gold, write_nli_predictions

pytestmark = [pytest.mark.slow, pytest.mark.longest]

PER_DAY = 3
TEAMS = 2
USERS = 4  # two users per team race for its quota
SUBMITS = TEAMS * PER_DAY + 2  # answered submissions: one team at least tries past its quota, whatever the draw


def test_locust_run_loses_nothing_and_holds_quota(tmp_path: Path) -> None:
    # Found, not imported: locust monkey-patches the standard library (gevent) when imported, which breaks
    # this process's ssl once httpx or selenium have loaded it. It runs as its own process below.
    if importlib.util.find_spec("locust") is None:
        pytest.skip("locust absent: pip install locust")
    gold = write_nli_gold(tmp_path / "nli_dev.json", 200)
    site = LiveSite.create(tmp_path / "site", write_config(tmp_path, tmp_path / "nli_dev.json", PER_DAY),
                           users=[(f"user{i}", f"team{i}", None, False) for i in range(TEAMS)])
    tokens = [site.tokens[f"user{i}"] for i in range(TEAMS)]
    files = [write_nli_predictions(gold, tmp_path / f"p{i}.jsonl", 0.6 + 0.1 * i, seed=i) for i in range(3)]
    server = LiveServer(site, workers=2, scorers=1).start()
    try:
        run = run_locust(server, tokens, files, users=USERS, seconds=120, out_dir=tmp_path / "locust", submits=SUBMITS)
        print({name: {k: round(v, 1) for k, v in figures.items()} for name, figures in run.stats.items()})
        assert run.answers["other"] == [], run.answers["other"]  # only 201 and the quota's 429
        accepted = [pk for _, pk in run.answers["accepted"]]
        assert len(accepted) == len(set(accepted)), "one id answered twice"
        per_team = Counter(team for team, _ in run.answers["accepted"])
        attempts = per_team + Counter(team for team, _ in run.answers["refused"])
        # Exact: every attempt accepted until the quota, every one after it refused (however many a slow
        # machine let the users make), and the quota reached (the point of the run).
        assert all(per_team[t] == min(PER_DAY, attempts[t]) for t in range(TEAMS)), (per_team, attempts)
        assert max(attempts.values()) > PER_DAY, (attempts, run.stats)
        assert sum(attempts.values()) >= SUBMITS, attempts  # the run ended on its count, not on the time cap
        assert all("quota" in error for _, error in run.answers["refused"])
        assert run.stats["GET /api/leaderboard"]["requests"] > 0 and run.stats["GET /"]["requests"] > 0
        assert run.stats["Aggregated"]["failures"] == 0

        stored = site.query("SELECT id, status FROM leaderboard_submission ORDER BY id")
        assert sorted(pk for pk, _ in stored) == sorted(accepted)  # nothing lost, nothing extra
        for team, token in enumerate(tokens):
            mine = [pk for t, pk in run.answers["accepted"] if t == team]
            assert all(a["status"] == "scored" for a in server.wait_scored(token, mine).values())
        scores = site.query("SELECT submission_id, count(*) FROM leaderboard_score GROUP BY submission_id")
        assert sorted(scores) == [(pk, 1) for pk in sorted(accepted)]  # each scored exactly once
    finally:
        server.stop()
