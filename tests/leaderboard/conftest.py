"""Fixtures of the leaderboard tests: a site made and served as a host does it (`klue leaderboard init`,
`user add`, `serve` in subprocesses, on 127.0.0.1 and a free port; tests/leaderboard/live_site.py is the
harness) and a small synthetic NLI gold file, split as the site splits it.

Use:

    def test_something(nli_server: Served) -> None:
        answer = nli_server.server.submit(nli_server.tokens["alice"], some_file)   # httpx.Response
        nli_server.server.wait_scored(nli_server.tokens["alice"], [answer.json()["id"]])

`nli_server` is one server per test module (SQLite, two web processes, quota 5 per day, upload cap 1 MiB, two teams: alice in "Team A" with
password `PASSWORD`, bob in "<script>alert(1)</script>", and an admin `root`); `make_served(tmp, extra_config)`
starts another (e.g. `public_ranking: ladder`) and stops it at the end of the module. `predictions(accuracy_public,
accuracy_private, seed)` writes a prediction file whose accuracy differs on the two parts (so a private number
cannot coincide with a public one by chance).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from live_site import NLI_LABELS, LiveServer, LiveSite, tls, write_config, write_nli_gold

PASSWORD = "correct horse battery staple 42"
N_EXAMPLES = 400


@dataclass
class Served:
    """A running site: its server, its users' tokens, its gold (records as written) and their split."""

    site: LiveSite
    server: LiveServer
    gold: list[dict[str, Any]]
    private_guids: set[str]
    tokens: dict[str, str] = field(default_factory=dict)
    files: Path = Path()
    sessions: dict[tuple[str, str], httpx.Client] = field(default_factory=dict)  # `session`'s logged-in clients

    def predictions(self, public_accuracy: float, private_accuracy: float, seed: int, name: str = "") -> Path:
        rng = random.Random(seed)
        path = self.files / (name or f"pred-{public_accuracy}-{private_accuracy}-{seed}.jsonl")
        with path.open("w", encoding="utf-8") as out:
            for record in self.gold:
                accuracy = private_accuracy if record["guid"] in self.private_guids else public_accuracy
                right = rng.random() < accuracy
                label = record["gold_label"] if right else next(
                    x for x in rng.sample(NLI_LABELS, 3) if x != record["gold_label"])
                out.write(json.dumps({"guid": record["guid"], "label": label}) + "\n")
        return path


def private_guids_of(gold_path: Path, seed: int = 0, fraction: float = 0.5) -> set[str]:
    """The guids the site puts in the private part (the site's own split function)."""
    from klue.leaderboard.gold import load

    split = load("nli", gold_path, None, seed, fraction)
    return {split.task.guid(r) for r in split.private}


def start_served(root: Path, extra_config: str = "", per_day: int = 5, users: tuple[str, ...] = ("alice", "bob", "root"),
                 workers: int = 1, api_only: tuple[tuple[str, str], ...] = ()) -> Served:
    """A site served by `workers` web processes (two where concurrent requests are what is tested) and one
    scoring worker: each process costs a Django start, on a machine the whole suite shares."""
    root.mkdir(parents=True, exist_ok=True)
    gold_path = root / "nli_dev.json"
    gold = write_nli_gold(gold_path, N_EXAMPLES, seed=7)
    teams = {"alice": "Team A", "bob": "<script>alert(1)</script>", "root": "organisers"}
    site = LiveSite.create(root / "site", write_config(root, gold_path, per_day, extra=extra_config),
                           users=[(user, teams[user], PASSWORD, user == "root") for user in users]
                           + [(user, team, None, False) for user, team in api_only])
    served = Served(site, LiveServer(site, workers=workers, scorers=1), gold, private_guids_of(gold_path), files=root)
    served.tokens.update(site.tokens)
    served.server.start()
    return served


@pytest.fixture(scope="module")
def nli_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # Two web processes: test_service's concurrent attempts reach the database from both.
    # quinn and cora (API tokens only): test_service's quota tests, each a team with a fresh quota.
    served = start_served(tmp_path_factory.mktemp("lb"), "limits: {upload_mib: 1}\n", workers=2,
                          api_only=(("quinn", "Quota team"), ("cora", "Concurrent team")))
    try:
        yield served
    finally:
        served.server.stop()


@pytest.fixture(scope="module")
def make_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def make(extra_config: str = "", per_day: int = 5, users: tuple[str, ...] = ("alice", "bob", "root")) -> Served:
        served = start_served(tmp_path_factory.mktemp("lb"), extra_config, per_day, users)
        started.append(served)
        return served

    try:
        yield make
    finally:
        for served in started:
            served.server.stop()


def session(served: Served, user: str) -> httpx.Client:
    """A browser-like client logged in through the login form (CSRF token included); one per server and user,
    kept for the tests after the first: each login hashes the password (PBKDF2, about 0.3 CPU-s on the server),
    and what the tests read from a session does not depend on which test logged it in."""
    key = (served.server.url, user)  # a restarted server has another port: a new login
    if key not in served.sessions:
        served.sessions[key] = _log_in(served, user)
    return served.sessions[key]


def _log_in(served: Served, user: str) -> httpx.Client:
    client = httpx.Client(base_url=served.server.url, timeout=60, verify=tls())
    page = client.get("/login")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None
    answer = client.post("/login", data={"username": user, "password": PASSWORD,
                                         "csrfmiddlewaretoken": token.group(1)})
    assert answer.status_code == 302, answer.text
    return client


def csrf_of(client: httpx.Client, path: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', client.get(path).text)
    assert found is not None
    return found.group(1)
