"""The scoring job (a django-tasks task run by `db_worker`) and the ladder's rule.

A job scores one (submission, generation): the judge runs in a limited subprocess outside any transaction;
then one transaction stores the score, its private part and the ladder's decision, and marks the submission
scored. A job that runs twice (its worker lost its heartbeat, the job was requeued, and the first worker
finished after all) finds the score stored and does nothing: nothing is scored twice.

The ladder (Blum & Hardt 2015, parameter-free, with a paired test): a team's public score on a task changes
only when a new submission beats its standing one by a paired bootstrap test on the same public examples
(the same resamples, `klue.reporting.intervals.paired_test`) at p < 0.05; otherwise it is "not better".
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django_tasks import task

from klue.leaderboard.config import Limits
from klue.leaderboard.judge import decode_resamples
from klue.leaderboard.models import PrivateScore, Score, Submission, TaskGold, Team, site_config
from klue.leaderboard.scorer import JudgeFailure, run_judge
from klue.reporting.intervals import ALPHA, paired_test

log = logging.getLogger("klue.leaderboard")


def judge_request(gold: TaskGold, predictions: Path, shown: str, check_only: bool = False) -> dict[str, Any]:
    config = site_config()
    return {"task": gold.task, "gold": str(Path(settings.KLUE_SITE) / gold.path), "gold_format": gold.format,
            "gold_sha256": gold.sha256, "seed": gold.seed, "private_fraction": gold.private_fraction,
            "predictions": str(predictions), "shown": shown, "check_only": check_only,
            "max_bytes": int(config["limits"]["decompressed_mib"]) << 20}


def limits() -> Limits:
    return Limits(**site_config()["limits"])


def judge_bytes(gold: TaskGold, data: bytes, shown: str, check_only: bool = False) -> dict[str, Any]:
    """The judge's answer for an upload held in memory (written to a private scratch file)."""
    with tempfile.TemporaryDirectory(prefix="klue-upload-") as scratch:
        path = Path(scratch) / "upload"
        path.write_bytes(data)
        return run_judge(judge_request(gold, path, shown, check_only), limits())


def _array(data: Any) -> np.ndarray | None:
    return None if data is None else np.frombuffer(bytes(data), dtype="<f8")


def ladder_decision(team: Team, task_name: str, candidate: Score) -> tuple[bool, float | None, Submission | None]:
    """(accepted, p, the standing submission compared with): accepted when the team has no standing score
    on the task, or the candidate beats it by the paired test."""
    standing = (Score.objects.filter(submission__team=team, submission__task=task_name, ladder_accepted=True)
                .exclude(submission=candidate.submission).select_related("submission")
                .order_by("-created_at", "-id").first())
    if standing is None:
        return True, None, None
    new, old = _array(candidate.resamples), _array(standing.resamples)
    if candidate.task_score is None or standing.task_score is None or new is None or old is None:
        return False, None, standing.submission
    test = paired_test(new, old, candidate.task_score - standing.task_score)
    accepted = test.difference > 0 and test.p_value < ALPHA
    return accepted, test.p_value, standing.submission


def without_private_text(answer: dict[str, Any], submission_id: int) -> dict[str, Any]:
    """A model submission's judge messages as counts: a message about a prediction may quote it (an MRC span,
    a label), and the model made it from a private input. The messages themselves go to the server's log."""
    out = dict(answer)
    for key, what in (("problems", "the judge rejected the model's predictions"), ("warnings", "judge warnings")):
        lines = answer.get(key) or []
        if lines:
            log.warning("model submission %s, %s:\n%s", submission_id, what, "\n".join(lines))
            out[key] = [(f"{what}: {len(lines)} message(s); the organisers have them (they may quote the model's "
                         "predictions on hidden examples)")]
    return out


@task()
def score_submission(submission_id: int, generation: int) -> str:
    submission = Submission.objects.get(pk=submission_id)
    if Score.objects.filter(submission=submission, generation=generation).exists():
        return "already scored"
    gold = TaskGold.objects.get(task=submission.task)
    shown = submission.filename or "predictions"
    try:
        answer = judge_bytes(gold, bytes(submission.upload or b""), shown)
    except JudgeFailure as failure:
        answer = {"ok": False, "problems": [f"{shown}: {failure}"]}
    except Exception:
        failed = "scoring failed on the server; the organisers have the details"
        Submission.objects.filter(pk=submission_id).update(status=Submission.FAILED, messages=[failed])
        log.exception("scoring submission %s failed", submission_id)
        raise
    if submission.model_submission_id is not None:
        answer = without_private_text(answer, submission_id)
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission_id)
        Team.objects.select_for_update().filter(pk=submission.team_id).first()  # ladder decisions one at a time
        if Score.objects.filter(submission=submission, generation=generation).exists():
            return "already scored"
        if not answer["ok"]:
            submission.status, submission.messages = Submission.REJECTED, answer["problems"]
            submission.save(update_fields=["status", "messages"])
            return "rejected"
        public, private = answer["public"], answer["private"]
        interval = public["task_interval"] or [None, None]
        score = Score(submission=submission, generation=generation,
                      public={k: public[k] for k in ("n_examples", "scores", "breakdown", "intervals")},
                      task_score=public["task_score"], task_low=interval[0], task_high=interval[1],
                      resamples=None if public["resamples"] is None else decode_resamples(public["resamples"]).tobytes(),
                      metric_versions=answer["metric_versions"], task_version=answer["task_version"])
        if site_config()["public_ranking"] == "ladder":
            score.ladder_accepted, score.ladder_p, score.ladder_against = ladder_decision(
                submission.team, submission.task, score)
        score.save()
        private_interval = private["task_interval"] or [None, None]
        PrivateScore.objects.create(
            score=score, scores={k: private[k] for k in ("n_examples", "scores", "intervals")},
            task_score=private["task_score"], task_low=private_interval[0], task_high=private_interval[1],
            resamples=None if private["resamples"] is None else decode_resamples(private["resamples"]).tobytes())
        submission.status, submission.messages = Submission.SCORED, answer["warnings"]
        submission.save(update_fields=["status", "messages"])
    log.info("scored submission %s (generation %s)", submission_id, generation)  # never a private number
    return "scored"
