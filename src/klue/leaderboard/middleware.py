"""Security headers on every answer: a strict Content-Security-Policy (no script, no inline style, no
framing), and no caching of pages that depend on who asks. A database still locked when its busy timeout
ran out answers 503 with Retry-After instead of a 500 (`DatabaseBusy`)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse

RETRY_AFTER_S = 2  # seconds; klue submit waits this long before it tries again
BUSY = "the database is busy; nothing was recorded (no quota used): try again"
log = logging.getLogger("klue.leaderboard")

CSP = ("default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
ADMIN_CSP = CSP.replace("default-src 'none'", "default-src 'self'")


def security_headers(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy",
                                    ADMIN_CSP if request.path.startswith("/admin/") else CSP)
        response.headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
        response.headers.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
        if "Cache-Control" not in response.headers and request.path != "/style.css":
            response.headers["Cache-Control"] = "private, no-store"
        return response
    return middleware


class DatabaseBusy:
    """SQLite's write lock held past `service.sqlite_timeout_s` (a backup, a long write elsewhere): 503 and
    Retry-After, JSON under /api/. The request's transaction was rolled back, so nothing of it is stored and
    the attempt counts toward no quota; `klue submit` retries it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not (isinstance(exception, OperationalError) and "locked" in str(exception)):
            return None
        log.warning("%s %s: database locked past the busy timeout; answered 503", request.method, request.path)
        response: HttpResponse
        if request.path.startswith("/api/"):
            response = JsonResponse({"error": BUSY, "retry_after": RETRY_AFTER_S}, status=503)
        else:
            response = HttpResponse(BUSY, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
