"""A leaderboard site made and served the way a host does it, for the real-part tests (test_real_*.py): the
`klue leaderboard` commands in subprocesses, the server as its own process group on 127.0.0.1 with a free
port, and the API over HTTP. Nothing here imports Django: the tests see the service only from outside, as
its users and its operators do (plus a read of the database, to count what is stored).
"""

from __future__ import annotations

import functools
import json
import math
import os
import random
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

NLI_LABELS = ("entailment", "neutral", "contradiction")
START_TIMEOUT_S = 120.0  # the server's first answer; a loaded 2-core machine starts gunicorn slowly


@functools.cache
def tls() -> ssl.SSLContext:
    """One TLS context for every request of the tests (httpx's `verify`): httpx otherwise builds one per client,
    loading the CA store, about 70 CPU-ms a request (each poll of `wait_scored` too) for a server on plain
    http://127.0.0.1, where it is never used."""
    return httpx.create_ssl_context()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_nli_gold(path: Path, n: int, seed: int = 0) -> list[dict[str, Any]]:
    """A small NLI dev file in the official format (Hangul text, two sources, so the split has groups)."""
    rng = random.Random(seed)
    gold = []
    for i in range(n):
        label = NLI_LABELS[rng.randrange(3)]
        gold.append({"guid": f"klue-nli-v1_dev_{i:05d}", "source": ("airbnb", "wikitree", "policy")[i % 3],
                     "premise": f"숙소 {i}번은 역에서 가깝고 조용합니다.", "hypothesis": f"숙소 {i}번은 시끄럽습니다.",
                     "gold_label": label, "author": label, "label2": label, "label3": label, "label4": label,
                     "label5": label})
    path.write_text(json.dumps(gold, ensure_ascii=False), encoding="utf-8")
    return gold


def write_nli_train(path: Path, n: int) -> list[dict[str, Any]]:
    """A training split with texts and guids of its own (none shared with the gold)."""
    records = write_nli_gold(path, n, seed=3)
    for i, record in enumerate(records):
        record["guid"] = f"klue-nli-v1_train_{i:05d}"
        record["premise"] = f"식당 {i}호점은 바다가 보이고 넓습니다."
        record["hypothesis"] = f"식당 {i}호점은 {'좁습니다' if record['gold_label'] == 'contradiction' else '넓습니다'}."
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return records


def write_nli_predictions(gold: list[dict[str, Any]], path: Path, accuracy: float, seed: int) -> Path:
    """JSON Lines predictions that keep each gold label with probability `accuracy`, else guess."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for record in gold:
            label = record["gold_label"] if rng.random() < accuracy else NLI_LABELS[rng.randrange(3)]
            out.write(json.dumps({"guid": record["guid"], "label": label}) + "\n")
    return path


def klue(*args: str, env: dict[str, str] | None = None, check: bool = True,
         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`klue ARGS` in a subprocess with this interpreter (and so this checkout's source: PYTHONPATH)."""
    done = subprocess.run([sys.executable, "-m", "klue", *args], check=False, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    if check and done.returncode != 0:
        raise AssertionError(f"klue {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def write_config(root: Path, gold: Path, per_day: int, title: str = "KLUE 리더보드 (test)",
                 extra: str = "") -> Path:
    path = root / "leaderboard.yaml"
    path.write_text(f"title: {title}\ntasks:\n  nli: {{gold: {gold}, private_fraction: 0.5}}\n"
                    f"quota: {{per_day: {per_day}}}\n{extra}", encoding="utf-8")
    return path


@dataclass
class LiveSite:
    """A site directory with its users' tokens (name -> token)."""

    root: Path
    db: str | None = None  # a PostgreSQL URL, or None for the site's SQLite file
    tokens: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path, config: Path, db: str | None = None,
               users: Iterable[tuple[str, str, str | None, bool]] = ()) -> LiveSite:
        """`klue leaderboard init ROOT --config CONFIG [--db DB]`, then `user add` for each of `users` (as
        add_users takes them). Two processes: init configures Django for the directory it builds before
        renaming it, so a `user add` in the same process would find Django set up for another path."""
        klue("leaderboard", "init", str(root), "--config", str(config), *(("--db", db) if db else ()))
        site = cls(root, db)
        users = list(users)
        if users:
            site.add_users(users)
        return site

    def add_user(self, name: str, team: str, password: str | None = None, admin: bool = False) -> str:
        env = {"KLUE_TEST_PASSWORD": password} if password else None
        args = ["leaderboard", "user", "add", str(self.root), "--name", name, "--team", team]
        args += ["--password-env", "KLUE_TEST_PASSWORD"] if password else []
        args += ["--admin"] if admin else []
        token = klue(*args, env=env).stdout.strip()
        self.tokens[name] = token
        return token

    def add_users(self, users: Iterable[tuple[str, str, str | None, bool]]) -> dict[str, str]:
        """`klue leaderboard user add` for each (name, team, password or None, admin), all in one process (one
        interpreter and one Django start instead of one each: about 1.3 CPU-seconds a user); name -> token."""
        specs = [[name, team, password, admin] for name, team, password, admin in users]
        done = subprocess.run([sys.executable, "-c", _ADD_USERS, str(self.root), json.dumps(specs)], check=False,
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise AssertionError(f"klue leaderboard user add exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        tokens: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
        self.tokens.update(tokens)
        return tokens

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows straight from the site's database (SQLite file or PostgreSQL), read-only use."""
        if self.db is None:
            with sqlite3.connect(f"file:{self.root / 'db.sqlite3'}?mode=ro", uri=True, timeout=30) as conn:
                return list(conn.execute(sql.replace("%s", "?"), params).fetchall())
        import psycopg

        with psycopg.connect(self.db) as conn:
            return list(conn.execute(sql, params).fetchall())


# The `klue` command's own app, called once per user in one process (the password through --password-env, as
# a host gives it); each call's stdout is the token it prints.
_ADD_USERS = """
import contextlib, io, json, os, sys
from klue.cli import app
site, tokens = sys.argv[1], {}
for name, team, password, admin in json.loads(sys.argv[2]):
    args = ["leaderboard", "user", "add", site, "--name", name, "--team", team] + (["--admin"] if admin else [])
    if password:
        os.environ["KLUE_TEST_PASSWORD"] = password
        args += ["--password-env", "KLUE_TEST_PASSWORD"]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        app(args, standalone_mode=False)
    tokens[name] = printed.getvalue().strip()
print(json.dumps(tokens))
"""


class PortTaken(Exception):
    """The free port found was taken before the server bound it."""


@dataclass
class LiveServer:
    """`klue leaderboard serve SITE` as its own process group (supervisor, gunicorn, scoring workers)."""

    site: LiveSite
    workers: int = 2
    scorers: int = 1
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    _log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LiveServer:
        """Serve on a free port; another port when one taken between the probe and the bind (parallel tests)."""
        for attempt in range(3):
            try:
                return self._start_once()
            except PortTaken:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _start_once(self) -> LiveServer:
        self.port = free_port()
        self.log_path = self.site.root.parent / f"serve-{self.port}.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "klue", "leaderboard", "serve", str(self.site.root), "--port", str(self.port),
             "--workers", str(self.workers), "--scorers", str(self.scorers)],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "OMP_NUM_THREADS": "1", **self.env})
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = self.log()
            if "Connection in use" in text or "Address already in use" in text:
                self.kill()  # gunicorn retries the bind for seconds: another server may answer meanwhile
                raise PortTaken(self.port)
            if self.process.poll() is not None:
                self._reap_group(signal.SIGKILL)
                raise AssertionError(f"the server stopped at start (exit {self.process.returncode}):\n{text}")
            try:
                # gunicorn's own line first: a /healthz answer alone might come from another test's server.
                if f"Listening at: {self.url}" in text and httpx.get(
                        f"{self.url}/healthz", timeout=5, verify=tls()).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.kill()
        raise AssertionError(f"the server did not answer /healthz in {START_TIMEOUT_S:.0f} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path else ""

    def _signal_group(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        """SIGTERM, as an operator stops it; SIGKILL what is left after 30 s."""
        if self.process is None:
            return
        self._signal_group(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        self._reap_group(signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL to every process of the server at once: a crash, with no chance to clean up."""
        if self.process is None:
            return
        self._signal_group(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._reap_group(signal.SIGKILL)

    def _reap_group(self, sig: int) -> None:
        """Children outlive their supervisor's death: end what is left of this server's group."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass
        if self._log is not None:
            self._log.close()
            self._log = None

    # ------------------------------------------------------------------------------------------- the API

    def get(self, path: str, token: str | None = None, timeout: float = 60) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.get(self.url + path, headers=headers, timeout=timeout, verify=tls())

    def submit(self, token: str, predictions: Path, task: str = "nli", name: str = "",
               timeout: float = 120) -> httpx.Response:
        with predictions.open("rb") as handle:
            return httpx.post(f"{self.url}/api/submissions", headers={"Authorization": f"Bearer {token}"},
                              data={"task": task, "name": name},
                              files={"predictions": (predictions.name, handle, "application/octet-stream")},
                              timeout=timeout, verify=tls())

    def wait_scored(self, token: str, ids: Iterable[int], timeout: float = 180) -> dict[int, dict[str, Any]]:
        """Each submission's answer once it left the queue (scored, rejected or failed)."""
        pending, done = set(ids), {}
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for pk in sorted(pending):
                answer = self.get(f"/api/submissions/{pk}", token).json()
                if answer["status"] != "queued":
                    done[pk] = answer
                    pending.discard(pk)
            if pending:
                time.sleep(0.3)
        assert not pending, f"still queued after {timeout:.0f} s: {sorted(pending)}; status {self.status()}"
        return done

    def status(self) -> dict[str, Any]:
        answer: dict[str, Any] = self.get("/api/status").json()
        return answer


# ------------------------------------------------------------------------------------------------ locust

LOCUSTFILE = Path(__file__).resolve().parents[2] / "benchmarks" / "leaderboard_locustfile.py"


@dataclass
class LocustRun:
    """What a bounded locust run saw: every answer of the submission endpoint (the locustfile's record) and
    locust's own figures per request name (requests, failures, p50/p95 in ms, requests per second)."""

    answers: dict[str, list[Any]]
    stats: dict[str, dict[str, float]]
    command: list[str]


def run_locust(server: LiveServer, tokens: list[str], files: list[Path], users: int, seconds: int,
               out_dir: Path, submits: int = 0) -> LocustRun:
    """`locust --headless` against `server` (127.0.0.1 only), `users` users for `seconds` seconds, or (`submits`
    above 0) until that many submissions were answered, `seconds` then being the cap."""
    out_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--users", str(users),
               "--spawn-rate", str(users), "--run-time", f"{seconds}s", "--host", server.url,
               "--csv", str(out_dir / "locust"), "--only-summary", "--stop-timeout", "30", "--loglevel", "WARNING"]
    answers_path = out_dir / "answers.json"
    env = {**os.environ, "KLUE_LOCUST_TOKENS": json.dumps(tokens),
           "KLUE_LOCUST_FILES": json.dumps([str(f) for f in files]), "KLUE_LOCUST_OUT": str(answers_path),
           "KLUE_LOCUST_SUBMITS": str(submits)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=seconds + 180, check=False)
    if not answers_path.is_file():
        raise AssertionError(f"locust wrote no answers (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    record = json.loads(answers_path.read_text(encoding="utf-8"))
    # The locustfile's own final figures: locust's --csv file may predate the last requests (rewritten once a second).
    stats = {name: {key: math.nan if value is None else float(value) for key, value in figures.items()}
             for name, figures in record.pop("stats").items()}
    return LocustRun(record, stats, command)
