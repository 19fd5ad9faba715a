"""Recording an attempt: the quota check, the submission and its scoring job in one transaction (a model
submission: its per-task submissions and jobs, klue.leaderboard.modeljobs).

Every attempt counts, a file refused at once (over the upload cap) too; the transaction locks the team's
row (`select_for_update` on PostgreSQL; SQLite transactions are IMMEDIATE, klue.leaderboard.site), so two
concurrent attempts cannot both see the last free place.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import User
from django.db import transaction

from klue.leaderboard.jobs import score_submission
from klue.leaderboard.model_store import AdmittedModel
from klue.leaderboard.modeljobs import add_log, run_model_slot
from klue.leaderboard.models import (
    ModelJob,
    ModelSubmission,
    QuotaExceeded,
    Submission,
    TaskGold,
    Team,
    WeeklyQuotaExceeded,
    day_window,
    site_config,
    week_window,
)


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


def model_tasks(family: str, asked: Sequence[str]) -> list[str]:
    """The tasks a model submission runs on: `asked`, or every task of the site with a training split where
    the family applies; ValueError naming a task that has no training split, is not the site's, or where the
    family does not apply."""
    from klue import registry
    from klue.families import FALLBACK, FAMILIES

    family_object = next((f for f in FAMILIES if f.name == family), FALLBACK)
    golds = {g.task: g for g in TaskGold.objects.all()}
    out, problems = [], []
    for name in asked or list(golds):
        gold = golds.get(name)
        if gold is None:
            problems.append(f"this leaderboard has no task {name!r}")
        elif not gold.train_path:
            if asked:
                problems.append(f"{name}: this leaderboard has no training split for it, so it takes no model "
                                "submissions for it")
        elif (why := family_object.not_applicable(registry.get(name))) is not None:
            if asked:
                problems.append(f"{name}: the {family} family does not apply ({why})")
        else:
            out.append(name)
    if problems:
        raise ValueError("; ".join(problems))
    if not out:
        raise ValueError(f"no task of this leaderboard takes {family} model submissions (a task needs its "
                         "training split in the site's configuration, and the family must apply to it)")
    return list(dict.fromkeys(out))


def create_model_submission(team: Team, user: User | None, admitted: AdmittedModel, name: str,
                            tasks: Sequence[str]) -> ModelSubmission:
    """One model submission and, per task, a Submission counted against that task's daily quota and a queued
    job, all in one transaction (the team's row locked, as for files); the weekly model quota
    (`model_quota.per_week`) counts model submissions. QuotaExceeded / WeeklyQuotaExceeded: nothing stored."""
    config = site_config()
    per_day = int(config["per_day"])
    per_week = (config.get("model_quota") or {}).get("per_week")
    start, resets_at = day_window()
    week_start, week_resets = week_window()
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=team.pk).first()
        if per_week is not None and ModelSubmission.objects.filter(
                team=team, created_at__gte=week_start).count() >= int(per_week):
            raise WeeklyQuotaExceeded(int(per_week), week_resets)
        for task in tasks:
            if Submission.objects.filter(team=team, task=task, created_at__gte=start).count() >= per_day:
                raise QuotaExceeded(per_day, resets_at)
        model = ModelSubmission.objects.create(team=team, user=user, spec=admitted.spec[:300],
                                               family=admitted.family, source=admitted.source,
                                               store_name=admitted.store_name or "", hub_id=admitted.hub_id or "",
                                               name=name[:200])
        for task in tasks:
            submission = Submission.objects.create(team=team, user=user, task=task, name=(name or admitted.spec)[:200],
                                                   model_submission=model, status=Submission.QUEUED)
            job = ModelJob.objects.create(submission=submission, team=team, progress={"step": "waiting"})
            add_log(job, f"queued: {admitted.family} model {admitted.spec} on {task}")
            job.save(update_fields=["log"])
            run_model_slot.enqueue()  # one queue slot per job; the slot picks the fairest job (modeljobs)
    return model
