"""Recording an attempt: the quota check, the submission and its scoring job in one transaction.

Every attempt counts, a file refused at once (over the upload cap) too; the transaction locks the team's
row (`select_for_update` on PostgreSQL; SQLite transactions are IMMEDIATE, klue.leaderboard.site), so two
concurrent attempts cannot both see the last free place.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from klue.leaderboard.jobs import score_submission
from klue.leaderboard.models import QuotaExceeded, Submission, Team, day_window, site_config


def create_submission(team: Team, user: User | None, task: str, name: str, filename: str,
                      data: bytes | None, size: int, refusal: str | None = None) -> Submission:
    """Count one attempt against the team's quota for `task` and record it: queued for scoring, or rejected
    at once with `refusal` (a file over the upload cap). QuotaExceeded when the day's attempts are used up."""
    per_day = int(site_config()["per_day"])
    start, resets_at = day_window()
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=team.pk).first()  # the lock that serialises quota checks
        used = Submission.objects.filter(team=team, task=task, created_at__gte=start).count()
        if used >= per_day:
            raise QuotaExceeded(per_day, resets_at)
        submission = Submission.objects.create(
            team=team, user=user, task=task, name=name[:200], filename=filename[:200], size=size,
            upload=data, status=Submission.REJECTED if refusal else Submission.QUEUED,
            messages=[refusal] if refusal else [])
        if refusal is None:  # the job row commits with the submission, or neither does
            score_submission.enqueue(submission.pk, 0)
    return submission
