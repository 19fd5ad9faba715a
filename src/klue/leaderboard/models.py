"""The leaderboard's records and the rules that live with them (docs/leaderboard.md).

- A `Submission` is one attempt: it is created, in the same transaction as the quota check and the scoring
  job, for every file a team sends, a rejected one too, so the quota counts attempts, not successes.
- The quota holds under concurrency because the check and the insert run in one transaction that locks the
  team's row (`select_for_update` on PostgreSQL; on SQLite every transaction is IMMEDIATE, so it holds the
  database's write lock from its start: klue.leaderboard.site).
- A `Score` is one scoring of a submission (`generation` 0, then one more per `rescore`: history kept);
  (submission, generation) is unique, so a job run twice after a requeue stores one score. The private part's
  numbers live in `PrivateScore`, which only the revealed rankings read.
- API tokens: 256 random bits, stored as their SHA-256 only, compared in constant time.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models
from django.utils import timezone

TOKEN_BYTES = 32  # 256 bits


class WeeklyQuotaExceeded(Exception):
    def __init__(self, per_week: int, resets_at: dt.datetime) -> None:
        self.per_week = per_week
        self.resets_at = resets_at
        super().__init__(f"the weekly quota of {per_week} model submissions is used up; it resets at "
                         f"{resets_at:%Y-%m-%d %H:%M} UTC")


class QuotaExceeded(Exception):
    def __init__(self, per_day: int, resets_at: dt.datetime) -> None:
        self.per_day = per_day
        self.resets_at = resets_at
        super().__init__(f"the daily quota of {per_day} submissions for this task is used up; it resets at "
                         f"{resets_at:%Y-%m-%d %H:%M} UTC")


def site_config() -> dict[str, Any]:
    config: dict[str, Any] = settings.KLUE_CONFIG
    return config


def day_window(now: dt.datetime | None = None) -> tuple[dt.datetime, dt.datetime]:
    """The current UTC day: (its start, the next midnight, when the quota resets)."""
    now = now or timezone.now()
    start = now.astimezone(dt.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + dt.timedelta(days=1)


def week_window(now: dt.datetime | None = None) -> tuple[dt.datetime, dt.datetime]:
    """The current UTC week, Monday to Monday: (its start, when the weekly model quota resets)."""
    start, _ = day_window(now)
    start -= dt.timedelta(days=start.weekday())
    return start, start + dt.timedelta(days=7)


class Team(models.Model):
    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name

    def used_today(self, task: str) -> int:
        start, _ = day_window()
        return Submission.objects.filter(team=self, task=task, created_at__gte=start).count()


class Member(models.Model):
    user = models.OneToOneField(User, on_delete=models.CASCADE, related_name="member")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="members")

    def __str__(self) -> str:
        return f"{self.user.username} ({self.team.name})"


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class ApiToken(models.Model):
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    @classmethod
    def issue(cls, user: User) -> str:
        """A new token for `user`: returned once, stored as its digest only."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        cls.objects.create(user=user, digest=token_digest(token))
        return token

    @classmethod
    def user_for(cls, token: str) -> User | None:
        """The active user holding `token`, or None. The lookup is by digest (an attacker controls no bit of
        it); the final comparison is constant-time all the same."""
        if not token or len(token) > 200:
            return None
        digest = token_digest(token)
        row = cls.objects.select_related("user").filter(digest=digest).first()
        if row is None or not hmac.compare_digest(row.digest, digest) or not row.user.is_active:
            return None
        return row.user


class TaskGold(models.Model):
    """One task of the site: where its gold is, its hash and its split."""

    task = models.CharField(max_length=32, unique=True)
    path = models.CharField(max_length=500)
    format = models.CharField(max_length=32)
    sha256 = models.CharField(max_length=64)
    seed = models.IntegerField()
    private_fraction = models.FloatField()
    n_public = models.IntegerField()
    n_private = models.IntegerField()
    order = models.IntegerField(default=0)
    # The training split model submissions train on (relative to the site; empty: none, no model jobs).
    train_path = models.CharField(max_length=500, blank=True, default="")
    train_format = models.CharField(max_length=32, blank=True, default="")
    train_sha256 = models.CharField(max_length=64, blank=True, default="")
    n_train = models.IntegerField(default=0)

    class Meta:
        ordering = ("order", "task")

    def __str__(self) -> str:
        return self.task


class ModelSubmission(models.Model):
    """One `klue submit --model SPEC`: the model as admitted, and one Submission (and one ModelJob) per task."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="model_submissions")
    user = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, related_name="+")
    spec = models.CharField(max_length=300)
    family = models.CharField(max_length=16)
    source = models.CharField(max_length=16)
    store_name = models.CharField(max_length=200, blank=True, default="")
    hub_id = models.CharField(max_length=200, blank=True, default="")
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self) -> str:
        return f"model #{self.pk} {self.spec} {self.team.name}"


class Submission(models.Model):
    QUEUED, RUNNING, SCORED, REJECTED, FAILED, CANCELLED = (
        "queued", "running", "scored", "rejected", "failed", "cancelled")
    STATUSES = tuple((s, s) for s in (QUEUED, RUNNING, SCORED, REJECTED, FAILED, CANCELLED))
    PENDING = (QUEUED, RUNNING)  # not finished yet

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="submissions")
    user = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, related_name="+")
    task = models.CharField(max_length=32)
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    status = models.CharField(max_length=16, choices=STATUSES, default=QUEUED)
    filename = models.CharField(max_length=200, blank=True)
    size = models.BigIntegerField(default=0)
    upload = models.BinaryField(null=True)  # the file as sent (kept for `rescore`); null when refused unread
    messages = models.JSONField(default=list)  # the judge's messages for a rejected file
    selected = models.BooleanField(default=False)  # marked by its team for the private ranking
    model_submission = models.ForeignKey(ModelSubmission, on_delete=models.CASCADE, null=True, blank=True,
                                         related_name="submissions")  # a model's run on this task, not a file

    class Meta:
        ordering = ("-created_at", "-id")
        indexes = (models.Index(fields=["team", "task", "created_at"]),)

    def __str__(self) -> str:
        return f"#{self.pk} {self.task} {self.team.name}"

    def current_score(self) -> Score | None:
        return self.scores.order_by("-generation").first()


class Score(models.Model):
    """One scoring of a submission on the public part (what pages show) and how it entered the ladder."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="scores")
    generation = models.IntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    public = models.JSONField()  # scores, breakdown, intervals, n_examples
    task_score = models.FloatField(null=True)
    task_low = models.FloatField(null=True)
    task_high = models.FloatField(null=True)
    resamples = models.BinaryField(null=True)  # the task score under the site's bootstrap resamples
    metric_versions = models.JSONField(default=dict)
    task_version = models.CharField(max_length=32, blank=True)
    ladder_accepted = models.BooleanField(null=True)  # ladder sites: beat the team's previous best
    ladder_p = models.FloatField(null=True)
    ladder_against = models.ForeignKey(Submission, on_delete=models.SET_NULL, null=True, related_name="+")

    class Meta:
        constraints = (models.UniqueConstraint(fields=["submission", "generation"], name="one_score_per_generation"),)
        ordering = ("submission", "-generation")


class ModelJob(models.Model):
    """One model submission's benchmark cell on one task (klue.leaderboard.modeljobs): its state, progress and
    the owner's log. `log` holds lines klue writes itself (steps, counts, times), never the cell's output."""

    WAITING, RUNNING, DONE, FAILED, CANCELLED = "waiting", "running", "done", "failed", "cancelled"
    STATES = tuple((s, s) for s in (WAITING, RUNNING, DONE, FAILED, CANCELLED))

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="model_job")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=16, choices=STATES, default=WAITING, db_index=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True)  # this attempt's start
    finished_at = models.DateTimeField(null=True)
    attempts = models.IntegerField(default=0)
    slot = models.CharField(max_length=64, blank=True, default="")  # the queue row (django-tasks-db) running it
    cancel_requested = models.BooleanField(default=False)
    progress = models.JSONField(default=dict)  # {"step", "done", "total", "eta_s", "elapsed_s"}
    log = models.JSONField(default=list)  # [[iso time, line], ...]
    wall_s = models.FloatField(null=True)  # the cell's wall time, all attempts
    cell_s = models.FloatField(null=True)  # the cell's own time (results.json), the last attempt

    class Meta:
        ordering = ("created_at", "id")


class PrivateScore(models.Model):
    """The private part's numbers of one score: read only by the rankings after `reveal`."""

    score = models.OneToOneField(Score, on_delete=models.CASCADE, related_name="private")
    scores = models.JSONField()
    task_score = models.FloatField(null=True)
    task_low = models.FloatField(null=True)
    task_high = models.FloatField(null=True)
    resamples = models.BinaryField(null=True)


class SiteState(models.Model):
    """One row: whether the private scores are public."""

    revealed_at = models.DateTimeField(null=True)

    @classmethod
    def revealed(cls) -> bool:
        return cls.objects.filter(pk=1, revealed_at__isnull=False).exists()


class WorkerHeartbeat(models.Model):
    worker_id = models.CharField(max_length=64, unique=True)
    host = models.CharField(max_length=200)
    pid = models.IntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    beat_at = models.DateTimeField(default=timezone.now)
    stopped = models.BooleanField(default=False)


class LoginAttempt(models.Model):
    username = models.CharField(max_length=150, db_index=True)
    address = models.CharField(max_length=64, db_index=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    succeeded = models.BooleanField(default=False)
