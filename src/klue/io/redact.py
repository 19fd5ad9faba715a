"""Credentials out of what klue shows and writes: the one place a URL's secrets are blanked.

A server or mirror URL may carry credentials (`http://user:pass@host/v1`, `ray://user:token@host:10001`,
`?api_key=...`). klue uses them to connect, but every message, results file, manifest, directory name and
report shows the URL through `redact_url` (one URL) or `redact_text` (any text that may hold URLs), so the
secret is on no screen and in no file. `split_credentials` takes the user:password part out of a URL for a
client that sends it as an `Authorization: Basic` header instead.
"""

from __future__ import annotations

import base64
import re
import urllib.parse

MASK = "***"
# The parts of a URL a secret can hide in: user:password before the host, and query parameters by name.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]+)@")
_SECRET_PARAMS = re.compile(
    r"(?P<name>[?&](?:api[_-]?key|key|token|access[_-]?token|auth|password|passwd|secret|sig|signature)=)"
    r"(?P<value>[^&#\s]+)", re.IGNORECASE)


def redact_text(text: str) -> str:
    """`text` with the userinfo of every URL in it and its secret-looking query values replaced by ***."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    return _SECRET_PARAMS.sub(lambda m: f"{m['name']}{MASK}", text)


def redact_url(url: str) -> str:
    """One URL as klue shows it: `http://user:pass@host/v1` -> `http://***@host/v1` (a URL without
    credentials is returned unchanged)."""
    return redact_text(url)


def has_credentials(url: str) -> bool:
    return redact_text(url) != url


def split_credentials(url: str) -> tuple[str, str | None]:
    """(the URL without its user:password, the `Authorization` header value that carries them, or None)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc)), f"Basic {token}"
