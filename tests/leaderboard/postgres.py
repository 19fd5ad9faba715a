"""A throwaway real PostgreSQL for the leaderboard's tests (Debian's `postgresql` package, .ci/run installs it).

`postgres_server` (session) runs initdb with trust authentication in a fresh directory under the system's temp
dir, starts the server on 127.0.0.1 with a free port and its socket in that directory, and stops and removes it
after the session. PostgreSQL refuses to run as root, so under root every binary runs as the `postgres` user
(runuser) and the directory is theirs; under another user it runs as that user. `postgres_url` gives each test
a database of its own, so migrations and rows never leak from one test into the next.

Tests import both fixtures by name: `from postgres import postgres_server, postgres_url  # noqa: F401`.
"""

from __future__ import annotations

import dataclasses
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Debian installs one directory per major version; 15 is what the issue names, a newer one works the same.
_BIN_GLOB = "/usr/lib/postgresql/*/bin"
_START_TIMEOUT_S = 60
_counter = itertools.count()


@dataclasses.dataclass(frozen=True)
class PostgresServer:
    """One running server: `url(db)` names a database on it, `new_database()` creates an empty one."""

    bin_dir: Path
    root: Path
    port: int
    run_as: str | None  # the user every binary runs as (runuser), None for the current user

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self, prefix: str = "klue") -> str:
        """A fresh empty database (owned by `postgres`); returns its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(_counter)}"
        # CREATE DATABASE cannot run inside a transaction block, hence autocommit.
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def find_bin_dir() -> Path | None:
    """The newest installed PostgreSQL's binaries, or None when the package is absent."""
    found = [Path(p) for p in glob.glob(_BIN_GLOB) if (Path(p) / "initdb").is_file()]

    def major(path: Path) -> float:
        try:
            return float(path.parent.name)
        except ValueError:
            return 0.0

    return max(found, key=major) if found else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(server_user: str | None, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL binary as its user; a failure raises with the tool's own output."""
    full = (["runuser", "-u", server_user, "--"] if server_user else []) + argv
    return subprocess.run(full, check=True, capture_output=True, text=True, timeout=_START_TIMEOUT_S)


def start_server(bin_dir: Path, run_as: str | None) -> PostgresServer:
    """initdb and start a server in a new temp dir (benchmarks/leaderboard_bench.py uses it too)."""
    root = Path(tempfile.mkdtemp(prefix="klue-pg-"))
    if run_as is not None:
        entry = pwd.getpwnam(run_as)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    server = PostgresServer(bin_dir=bin_dir, root=root, port=0, run_as=run_as)
    try:
        # --no-sync and fsync=off: a throwaway cluster, its durability is not under test (the service's is:
        # its fault tests kill the service's processes, never this server).
        _run(run_as, [str(bin_dir / "initdb"), "-D", str(server.data_dir), "-A", "trust", "-U", "postgres",
                      "-E", "UTF8", "--locale=C", "--no-sync"])
        # A port taken between the probe and the start makes pg_ctl fail: try a few.
        last_error: subprocess.CalledProcessError | None = None
        for _ in range(3):
            port = _free_port()
            options = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                       "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
            try:
                _run(run_as, [str(bin_dir / "pg_ctl"), "-D", str(server.data_dir), "-l", str(root / "server.log"),
                              "-w", "-t", str(_START_TIMEOUT_S), "-o", options, "start"])
            except subprocess.CalledProcessError as exc:
                last_error = exc
                continue
            return dataclasses.replace(server, port=port)
        log = (root / "server.log").read_text(errors="replace") if (root / "server.log").exists() else ""
        raise RuntimeError(f"PostgreSQL did not start: {last_error and last_error.stdout}{log[-2000:]}")
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise


def stop_server(server: PostgresServer) -> None:
    try:
        # immediate: nothing in a throwaway cluster needs a clean checkpoint.
        _run(server.run_as, [str(server.bin_dir / "pg_ctl"), "-D", str(server.data_dir), "-m", "immediate",
                             "-w", "stop"])
    finally:
        shutil.rmtree(server.root, ignore_errors=True)


def server_user() -> str | None:
    """`postgres` when running as root (PostgreSQL refuses root), else None (run as the current user)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return ""
    return "postgres"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A real PostgreSQL on 127.0.0.1 for the whole session (skips with the reason when it cannot run)."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip(f"PostgreSQL absent: no initdb under {_BIN_GLOB} (apt-get install postgresql; .ci/run does)")
    run_as = server_user()
    if run_as == "":
        pytest.skip("running as root without a `postgres` user: PostgreSQL refuses to run as root")
    if run_as is not None and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as the `postgres` user")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg absent: pip install 'klue[leaderboard]'")
    server = start_server(bin_dir, run_as)
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture()
def postgres_url(postgres_server: PostgresServer) -> str:
    """`postgresql://postgres@127.0.0.1:PORT/DB`: a database of this test's own on the session's server."""
    return postgres_server.new_database()
