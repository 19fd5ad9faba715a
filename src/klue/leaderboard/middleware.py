"""Security headers on every answer: a strict Content-Security-Policy (no script, no inline style, no
framing), and no caching of pages that depend on who asks."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

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
