"""A small HTTP file server on 127.0.0.1 for the downloader tests (not a test module itself).

It serves bytes by path, can break a response off mid-body a given number of times (Content-Length
promises the whole body; half is sent; the connection closes), can drip a body a few bytes at a time
(a slow server that never goes silent long enough for a read timeout), honours `Range: bytes=N-` when
asked to, and stops by itself after a deadline even if a test forgets to stop it.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Self


@dataclass
class Route:
    body: bytes
    breaks: int = 0  # this many responses break off after half their body, then the full body is sent
    accept_ranges: bool = True
    status: int = 200
    status_times: int | None = None  # answer `status` this many times, then the body (None: always)
    headers: dict[str, str] = field(default_factory=dict)  # sent with a `status` answer (Retry-After)
    drip_s: float = 0.0  # > 0: send `drip_bytes` bytes, then wait this long, until the body is sent
    drip_bytes: int = 1


@dataclass
class Hit:
    path: str
    range: str | None
    authorization: str | None = None


@dataclass
class FileServer:
    routes: dict[str, Route]
    deadline_s: float = 60.0
    hits: list[Hit] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        server_ref = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 5  # a stuck client cannot hold a handler thread for long

            def log_message(self, format: str, *args: object) -> None:  # keep test output clean
                return

            def do_GET(self) -> None:
                path = urllib.parse.unquote(urllib.parse.urlparse(self.path).path).lstrip("/")
                server_ref.hits.append(Hit(path, self.headers.get("Range"), self.headers.get("Authorization")))
                route = server_ref.routes.get(path)
                if route is None:
                    self.send_error(404, "Not Found")
                    return
                if route.status != 200 and route.status_times != 0:
                    if route.status_times is not None:
                        route.status_times -= 1
                    self.send_response(route.status)
                    for name, value in route.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body, start = route.body, 0
                requested = self.headers.get("Range", "")
                if route.accept_ranges and requested.startswith("bytes=") and requested.endswith("-"):
                    start = int(requested[len("bytes=") : -1])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                else:
                    self.send_response(200)
                part = body[start:]
                self.send_header("Content-Length", str(len(part)))
                self.send_header("Content-Type", "application/octet-stream")
                if route.accept_ranges:
                    self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if route.breaks > 0:
                    route.breaks -= 1
                    self.wfile.write(part[: len(part) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if route.drip_s > 0:
                    self._drip(part, route)
                    return
                self.wfile.write(part)

            def _drip(self, part: bytes, route: Route) -> None:
                try:
                    for start in range(0, len(part), route.drip_bytes):
                        if server_ref.stopping.is_set():
                            return
                        self.wfile.write(part[start : start + route.drip_bytes])
                        self.wfile.flush()
                        time.sleep(route.drip_s)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up: what a drip is for
                    self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._watchdog = threading.Timer(self.deadline_s, self._server.shutdown)
        self._watchdog.daemon = True

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        self._watchdog.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._watchdog.cancel()
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released): connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
