"""The WSGI application for gunicorn: the site directory comes from KLUE_LEADERBOARD_SITE (set by
`klue leaderboard serve`)."""

from __future__ import annotations

import os
from pathlib import Path

from klue.leaderboard.site import SITE_ENV, setup

setup(Path(os.environ[SITE_ENV]))

from django.core.wsgi import get_wsgi_application  # after the settings exist

application = get_wsgi_application()
