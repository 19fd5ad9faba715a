"""A real llama-cpp-python OpenAI-compatible server as a subprocess on 127.0.0.1, for the server tests (not a
test module): started on a free port, ready once GET /v1/models answers, killed or stopped by its own pid."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# One thread, for generation and for prompts (the server's own default for prompts is every CPU): the suite
# runs on 2 xdist workers on 2 cores, where a second ggml thread spins waiting for a core. No test depends on
# it: each compares a server with itself, or with transformers within a tolerance.
THREADS = 1


class LlamaServer:
    """`python -m llama_cpp.server --model MODEL` on a port of its own; the log goes to `log`."""

    def __init__(self, model: Path, log: Path, *, threads: int = THREADS, n_ctx: int = 512,
                 options: Sequence[str] = ()) -> None:
        self.model = model
        self.log = log
        self.port = free_port()
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
                   "--port", str(self.port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
                   "--n_threads_batch", str(threads), *options]
        self._log_file = log.open("wb")
        self.process = subprocess.Popen(command, stdout=self._log_file, stderr=subprocess.STDOUT,
                                        env={**os.environ, "OMP_NUM_THREADS": str(threads)})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @classmethod
    def start(cls, model: Path, log: Path, *, timeout_s: float = 90.0, n_ctx: int = 512, threads: int = THREADS,
              options: Sequence[str] = ()) -> LlamaServer:
        """Start and wait until it answers; `options` are further server arguments (`--type_k 0`)."""
        server = cls(model, log, threads=threads, n_ctx=n_ctx, options=options)
        try:
            server.wait_ready(timeout_s)
        except BaseException:
            server.stop()
            raise
        return server

    def wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.process.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as response:
                    if json.load(response).get("data"):
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"llama_cpp.server not ready after {timeout_s:g} s:\n{self.tail()}")

    def tokenize(self, text: str) -> list[int]:
        """The served model's token ids for `text` (llama-cpp-python's /extras/tokenize: BOS added)."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/extras/tokenize",
                                         data=json.dumps({"input": text}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return [int(t) for t in json.load(response)["tokens"]]

    def tail(self) -> str:
        self._log_file.flush()
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would end it: no graceful shutdown, connections just break."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait()
        self._log_file.close()
