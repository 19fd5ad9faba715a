"""Locust load on a live `klue leaderboard serve` (issue 38): participants who read the board and send
prediction files as fast as they can, several users per team so the quota is raced.

Run by tests/leaderboard/test_real_locust.py (a bounded run) and benchmarks/leaderboard_bench.py (the figures in
benchmarks/RESULTS.md); both start the server on 127.0.0.1. Settings come from the environment:

- KLUE_LOCUST_TOKENS: JSON list of API tokens, one per team; user i takes token i mod len.
- KLUE_LOCUST_FILES: JSON list of prediction files (task nli unless KLUE_LOCUST_TASK); each upload picks one.
- KLUE_LOCUST_OUT: where to write, at the end, every answer of the submission endpoint: {"accepted": [[token
  index, id], ...], "refused": [[token index, error], ...], "other": [[status, text], ...]}, and locust's final
  figures per request name ("stats": {name: {"requests", "failures", "p50_ms", "p95_ms", "rps"}}, the total as
  "Aggregated"). Taken when locust quits: its --csv file is rewritten only once a second, so a run shorter than
  that leaves a file written before the first request.
- KLUE_LOCUST_SUBMITS (optional): end the run once this many submissions were answered and every request kind
  was answered once, with no request in flight (so every answer the server gave is recorded); --run-time stays
  the cap. A bound by count, not time: the same run on an idle or a loaded machine.

    locust -f benchmarks/leaderboard_locustfile.py --headless --users 6 --spawn-rate 6 --run-time 10s \
        --host http://127.0.0.1:PORT --csv OUT/locust
"""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path
from typing import Any

import gevent
from locust import HttpUser, between, events, task
from locust.exception import StopUser

TOKENS: list[str] = json.loads(os.environ.get("KLUE_LOCUST_TOKENS", "[]"))
FILES: list[str] = json.loads(os.environ.get("KLUE_LOCUST_FILES", "[]"))
TASK = os.environ.get("KLUE_LOCUST_TASK", "nli")
SUBMITS = int(os.environ.get("KLUE_LOCUST_SUBMITS", "0"))  # 0: no bound but --run-time
ANSWERS: dict[str, list[Any]] = {"accepted": [], "refused": [], "other": []}
_next_user = itertools.count()  # locust runs the users as greenlets of one process: a plain counter is safe
_answered: dict[str, int] = {"board_api": 0, "board_page": 0, "submit": 0}  # the same: greenlets, no lock
_in_flight = [0]
_ending = [False]


class Participant(HttpUser):
    wait_time = between(0.05, 0.3)

    def on_start(self) -> None:
        if not TOKENS or not FILES:
            raise RuntimeError("set KLUE_LOCUST_TOKENS and KLUE_LOCUST_FILES (see this file's docstring)")
        self.team = next(_next_user) % len(TOKENS)
        self.headers = {"Authorization": f"Bearer {TOKENS[self.team]}"}
        self.uploads = [(Path(f).name, Path(f).read_bytes()) for f in FILES]

    def _begin(self) -> None:
        """Before a request: none once the count is reached (this user stops)."""
        if _ending[0]:
            raise StopUser()
        _in_flight[0] += 1

    def _end(self, kind: str) -> None:
        """After a request's answer: with KLUE_LOCUST_SUBMITS, end the run once the count is reached and the
        last request in flight has its answer."""
        _in_flight[0] -= 1
        _answered[kind] += 1
        if SUBMITS and _answered["submit"] >= SUBMITS and all(_answered.values()):
            _ending[0] = True
            if _in_flight[0] == 0 and self.environment.runner is not None:
                gevent.spawn(self.environment.runner.quit)  # not from this user's greenlet, which quit stops

    @task(4)
    def board_api(self) -> None:
        self._begin()
        self.client.get("/api/leaderboard", name="GET /api/leaderboard")
        self._end("board_api")

    @task(2)
    def board_page(self) -> None:
        self._begin()
        self.client.get("/", name="GET /")
        self._end("board_page")

    @task(2)
    def submit(self) -> None:
        self._begin()
        self._send()
        self._end("submit")

    def _send(self) -> None:
        name, data = random.choice(self.uploads)
        with self.client.post("/api/submissions", headers=self.headers, data={"task": TASK, "name": "locust"},
                              files={"predictions": (name, data, "application/octet-stream")},
                              name="POST /api/submissions", catch_response=True) as response:
            if response.status_code == 201:
                ANSWERS["accepted"].append([self.team, response.json()["id"]])
                response.success()
            elif response.status_code == 429:  # the quota, as it should: counted, not a failure
                ANSWERS["refused"].append([self.team, response.json().get("error", "")])
                response.success()
            else:
                ANSWERS["other"].append([response.status_code, response.text[:300]])
                response.failure(f"HTTP {response.status_code}")


@events.quitting.add_listener
def _write_answers(environment: Any, **_: Any) -> None:
    out = os.environ.get("KLUE_LOCUST_OUT")
    if out:
        record = {**ANSWERS, "stats": _final_figures(environment.stats)}
        Path(out).write_text(json.dumps(record), encoding="utf-8")


def _final_figures(stats: Any) -> dict[str, dict[str, float | None]]:
    """Per request name, and the total as "Aggregated": requests, failures, p50/p95 in ms (None without a
    request), requests per second."""
    figures: dict[str, dict[str, float | None]] = {}
    for entry in [*stats.entries.values(), stats.total]:
        answered = entry.num_requests > 0
        figures[entry.name] = {
            "requests": entry.num_requests, "failures": entry.num_failures,
            "p50_ms": entry.get_response_time_percentile(0.5) if answered else None,
            "p95_ms": entry.get_response_time_percentile(0.95) if answered else None,
            "rps": entry.total_rps}
    return figures
