"""`klue leaderboard serve`: gunicorn (several web workers) and the scoring workers, as child processes of
one supervisor. A scoring worker that dies is started again (its job was requeued by the others'
heartbeat check, or by the new worker's first one); SIGTERM or SIGINT stops them all. No Django here: each
child sets up the site itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from klue.leaderboard.site import SITE_ENV

RESTART_PAUSE_S = 1.0


@dataclass
class Supervisor:
    site: Path
    host: str
    port: int
    web_workers: int
    scorers: int
    model_workers: int = 0  # workers of model submissions' jobs (their own queue)
    children: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    stopping: bool = False

    def env(self) -> dict[str, str]:
        return {**os.environ, SITE_ENV: str(self.site), "OMP_NUM_THREADS": "1"}

    def web_command(self) -> list[str]:
        # gthread: a browser keeps idle connections open, and a sync worker waits on one while the next request
        # queues (a 60 s stall with --workers 1); threads serve the others meanwhile.
        return [sys.executable, "-m", "gunicorn", "--workers", str(self.web_workers), "--worker-class", "gthread",
                "--threads", "4", "--bind",
                f"{self.host}:{self.port}", "--timeout", "120", "--graceful-timeout", "10",
                "--worker-tmp-dir", "/dev/shm" if Path("/dev/shm").is_dir() else "/tmp",
                "--no-control-socket",  # unused, and one path per user: two sites on a machine would share it
                "klue.leaderboard.wsgi:application"]

    def scorer_command(self, models: bool = False) -> list[str]:
        return [sys.executable, "-m", "klue", "leaderboard", "worker", str(self.site), *(["--models"] if models else [])]

    def start(self, name: str) -> None:
        command = self.web_command() if name == "web" else self.scorer_command(name.startswith("models-"))
        self.children[name] = subprocess.Popen(command, env=self.env())

    def stop(self, *_: object) -> None:
        self.stopping = True
        for child in self.children.values():
            if child.poll() is None:
                child.terminate()

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        self.start("web")
        print(f"klue: serving {self.site} at http://{self.host}:{self.port} ({self.web_workers} web processes, "
              f"{self.scorers} scoring workers, {self.model_workers} model-job workers); Ctrl-C stops", file=sys.stderr,
              flush=True)
        for i in range(self.scorers):
            self.start(f"scorer-{i}")
        for i in range(self.model_workers):
            self.start(f"models-{i}")
        while not self.stopping:
            time.sleep(0.5)
            for name, child in list(self.children.items()):
                if child.poll() is None or self.stopping:
                    continue
                if name == "web":
                    print(f"klue: error: the web server stopped (exit status {child.returncode})", file=sys.stderr)
                    self.stop()
                    break
                print(f"klue: scoring worker {name} stopped (exit status {child.returncode}); starting another",
                      file=sys.stderr)
                time.sleep(RESTART_PAUSE_S)
                self.start(name)
        deadline = time.monotonic() + 20
        for child in self.children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
        web = self.children.get("web")
        return 0 if web is None or web.returncode in (0, -signal.SIGTERM) else 1
