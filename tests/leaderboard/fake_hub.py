"""A model hub on 127.0.0.1 for the model store's tests (not a test module): the three routes
huggingface_hub's `snapshot_download` asks (2.x), for repositories held in memory.

- `GET /api/models/ORG/NAME/revision/REV`: the repository's commit (`sha`) and its files;
- `GET /api/models/ORG/NAME/tree/COMMIT?recursive=true`: every file with its size and blob id;
- `HEAD|GET /ORG/NAME/resolve/COMMIT/FILE`: a file, with `X-Repo-Commit` and `ETag`.

A repository that is not there answers 404 with `X-Error-Code: RepoNotFound`, as the hub does. Every
request's path is recorded (`FakeHub.requests`), so a test can say which files were never fetched.

    with serving({"org/tiny": {"config.json": b"{...}", "model.safetensors": ...}}) as hub:
        snapshot_download("org/tiny", endpoint=hub.url, ...)
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def repo_of(directory: Path) -> dict[str, bytes]:
    """A repository holding the files of `directory` (sub-directories included)."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


class FakeHub:
    def __init__(self, repos: dict[str, dict[str, bytes]]) -> None:
        self.repos = repos
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reads `requests`
                pass

            def do_HEAD(self) -> None:
                self.do_GET()

            def do_GET(self) -> None:
                hub.requests.append(f"{self.command} {self.path}")
                status, body, headers = hub.answer(unquote(urlsplit(self.path).path))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, path: str) -> tuple[int, bytes, dict[str, str]]:
        parts = path.strip("/").split("/")
        api = parts[:2] == ["api", "models"]
        repo_id = "/".join(parts[2:4] if api else parts[0:2])
        files = self.repos.get(repo_id)
        if files is None:
            return 404, b'{"error": "Repository not found"}', {"X-Error-Code": "RepoNotFound",
                                                                "Content-Type": "application/json"}
        rest = parts[4:] if api else parts[2:]
        if api and rest[:1] == ["revision"]:
            info = {"id": repo_id, "sha": COMMIT, "siblings": [{"rfilename": name} for name in files]}
            return 200, json.dumps(info).encode(), {"Content-Type": "application/json"}
        if api and rest[:1] == ["tree"]:
            tree = [{"type": "file", "path": name, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}
                    for name, data in files.items()]
            return 200, json.dumps(tree).encode(), {"Content-Type": "application/json"}
        name = "/".join(rest[2:])
        if not api and rest[:1] == ["resolve"] and name in files:
            data = files[name]
            return 200, data, {"X-Repo-Commit": COMMIT, "ETag": f'"{hashlib.sha256(data).hexdigest()}"'}
        return 404, b"", {"X-Error-Code": "EntryNotFound"}

    def fetched(self) -> set[str]:
        """The files whose bytes were asked for (GET of a resolve URL)."""
        return {request.split(f"/resolve/{COMMIT}/", 1)[1] for request in self.requests
                if request.startswith("GET ") and "/resolve/" in request}


@contextmanager
def serving(repos: dict[str, dict[str, bytes]]) -> Iterator[FakeHub]:
    """A FakeHub answering on 127.0.0.1 until the block ends."""
    hub = FakeHub(repos)
    hub.thread.start()
    try:
        yield hub
    finally:
        hub.server.shutdown()
        hub.server.server_close()
