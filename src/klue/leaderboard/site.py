"""A site directory and the Django settings built from it: the one place settings are made.

```
SITE/
  site.json        database URL, secret key, the configuration as validated (0600)
  db.sqlite3       the database, unless site.json names a PostgreSQL one (WAL mode)
  gold/TASK.*      each task's gold file, copied at `init` (0600; never served)
```
`setup(site)` configures Django for the site and starts it; the web server (`klue.leaderboard.wsgi`), the
scoring workers and every `klue leaderboard` command call it before touching a model.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from klue.errors import DataError
from klue.leaderboard.config import Service

SITE_FILE = "site.json"
SITE_ENV = "KLUE_LEADERBOARD_SITE"


@dataclass(frozen=True)
class Site:
    root: Path

    @property
    def site_file(self) -> Path:
        return self.root / SITE_FILE

    @property
    def gold_dir(self) -> Path:
        return self.root / "gold"

    @property
    def sqlite_path(self) -> Path:
        return self.root / "db.sqlite3"

    def read(self) -> dict[str, Any]:
        if not self.site_file.is_file():
            raise DataError(f"not a leaderboard site (no {SITE_FILE}); create one with `klue leaderboard init`",
                            self.root)
        data: dict[str, Any] = json.loads(self.site_file.read_text(encoding="utf-8"))
        return data


def database_settings(url: str | None, site: Site, sqlite_timeout_s: float = 30.0) -> dict[str, Any]:
    """Django's DATABASES["default"] for `url` (None: the site's SQLite file).

    SQLite: WAL (readers never wait for the writer), a busy timeout (`service.sqlite_timeout_s`; past it the
    request answers 503, klue.leaderboard.middleware), and IMMEDIATE transactions, so
    every `transaction.atomic()` takes the write lock at its start: two quota checks never interleave.
    PostgreSQL: the quota transaction locks the team's row (`select_for_update`)."""
    if url is None:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(site.sqlite_path),
                "OPTIONS": {"timeout": sqlite_timeout_s, "transaction_mode": "IMMEDIATE",
                            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}}
    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise DataError(f"--db takes postgresql://USER:PASSWORD@HOST:PORT/NAME, not a {parts.scheme!r} URL")
    return {"ENGINE": "django.db.backends.postgresql", "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""), "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "", "PORT": str(parts.port or ""), "CONN_MAX_AGE": 60,
            "OPTIONS": {"connect_timeout": 10}}


def settings_for(site: Site, data: dict[str, Any]) -> dict[str, Any]:
    """Every Django setting of the site."""
    secure = bool(data.get("https", False))
    return {
        "DEBUG": False,
        "SECRET_KEY": data["secret_key"],
        "ALLOWED_HOSTS": data.get("allowed_hosts", ["127.0.0.1", "localhost", "[::1]"]),
        "INSTALLED_APPS": ["django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
                           "django.contrib.sessions", "django.contrib.messages", "django_tasks",
                           "django_tasks_db", "klue.leaderboard.apps.LeaderboardConfig"],
        "MIDDLEWARE": ["django.middleware.security.SecurityMiddleware",
                       "klue.leaderboard.middleware.security_headers",
                       "klue.leaderboard.middleware.DatabaseBusy",
                       "django.contrib.sessions.middleware.SessionMiddleware",
                       "django.middleware.common.CommonMiddleware",
                       "django.middleware.csrf.CsrfViewMiddleware",
                       "django.contrib.auth.middleware.AuthenticationMiddleware",
                       "django.contrib.messages.middleware.MessageMiddleware",
                       "django.middleware.clickjacking.XFrameOptionsMiddleware"],
        "ROOT_URLCONF": "klue.leaderboard.urls",
        "TEMPLATES": [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True,
                       "OPTIONS": {"context_processors": ["django.template.context_processors.request",
                                                          "django.contrib.auth.context_processors.auth",
                                                          "django.contrib.messages.context_processors.messages"]}}],
        "DATABASES": {"default": database_settings(data.get("db"), site,
                                                   Service.of(data["config"]).sqlite_timeout_s)},
        "DEFAULT_AUTO_FIELD": "django.db.models.BigAutoField",
        "TASKS": {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default", "models"]}},
        "USE_TZ": True,
        "TIME_ZONE": "UTC",
        "LOGIN_URL": "/login",
        "LOGIN_REDIRECT_URL": "/team",
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "SESSION_COOKIE_SECURE": secure,
        "CSRF_COOKIE_HTTPONLY": True,
        "CSRF_COOKIE_SAMESITE": "Strict",
        "CSRF_COOKIE_SECURE": secure,
        "CSRF_TRUSTED_ORIGINS": data.get("csrf_trusted_origins", []),
        "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https") if secure else None,
        "SECURE_CONTENT_TYPE_NOSNIFF": True,
        "SECURE_REFERRER_POLICY": "same-origin",
        "X_FRAME_OPTIONS": "DENY",
        # Uploads above this go to a temporary file; the upload cap itself is the site's (checked in the view).
        "FILE_UPLOAD_MAX_MEMORY_SIZE": 4 << 20,
        "DATA_UPLOAD_MAX_MEMORY_SIZE": 4 << 20,
        "LOGGING": {"version": 1, "disable_existing_loggers": False,
                    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
                    "loggers": {"django": {"handlers": ["stderr"], "level": "WARNING"},
                                "klue.leaderboard": {"handlers": ["stderr"], "level": "INFO"}}},
        "KLUE_SITE": str(site.root),
        "KLUE_CONFIG": data["config"],
    }


def setup(root: Path) -> Site:
    """Configure and start Django for the site at `root` (once per process)."""
    import django
    from django.conf import settings

    site = Site(root.resolve())
    if not settings.configured:
        settings.configure(**settings_for(site, site.read()))
        django.setup()
    elif settings.KLUE_SITE != str(site.root):
        raise RuntimeError(f"this process already serves the site {settings.KLUE_SITE}")
    os.environ[SITE_ENV] = str(site.root)
    return site
