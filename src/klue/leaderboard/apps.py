"""The Django application of the leaderboard."""

from __future__ import annotations

from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "klue.leaderboard"
    label = "leaderboard"
    verbose_name = "KLUE leaderboard"
    default_auto_field = "django.db.models.BigAutoField"
