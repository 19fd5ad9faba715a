"""Model-submission jobs: the fair queue, one benchmark cell per (model submission, task), progress, cancel,
requeue and resume (docs/leaderboard.md, "Model submissions").

- **Queue.** Creating a model submission enqueues one queue slot (`run_model_slot`, a django-tasks-db job
  like the scoring jobs) per task. A slot does not name its job: when a worker claims it, it takes the
  fairest waiting job: from the team with the fewest jobs running, then the team served longest ago, then
  that team's oldest job. One team's ten models therefore alternate with another team's one instead of
  running first. As many slots as jobs: every job runs once.
- **Run.** The job's cell (klue.leaderboard.modelcell: what `klue benchmark` runs on the site's train and
  gold files with the site's seed) in a limited child process (`executor: local`) or a Ray task (`executor:
  ray`), in SITE/jobs/SUBMISSION/. Its predictions.jsonl becomes the submission's file and goes through the
  scoring job's own path (klue.leaderboard.jobs.score_submission: the same judge, the same public/private
  split), so the entry ranks beside uploaded files. The cell's own results.json (scored on the whole gold,
  private part included) stays in the job's directory and is shown nowhere.
- **Requeue and resume.** A worker that stops beating has its slots put back (klue.leaderboard.worker) and
  its running jobs set waiting; the next attempt runs in the same directory, so the encoder family resumes
  from its last checkpoint, the LLM family from its request cache and the embedding family from its
  embedding cache; a classic cell starts over. A cell that had finished is only scored. A job whose Ray task
  died is put back with a new slot (MAX_ATTEMPTS in all).
- **Cancel.** The owner's cancel marks the job; a waiting job ends at once, a running one at its next poll
  (its child process group is killed, or its Ray task cancelled).
- **The owner's log** holds lines this module writes (steps, counts, times, the public score) and the numbers
  of the cell's progress lines: nothing the child printed, so no example, prediction or gold text.
"""

from __future__ import annotations

import datetime as dt
import logging
import socket
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone
from django_tasks import TaskContext, task

from klue.errors import DataError
from klue.leaderboard import modelcell
from klue.leaderboard.config import ModelsConfig
from klue.leaderboard.jobs import score_submission
from klue.leaderboard.model_store import AdmittedModel, materialise
from klue.leaderboard.models import ModelJob, Submission, TaskGold, site_config

log = logging.getLogger("klue.leaderboard")

JOBS_DIR = "jobs"
PROGRESS_EVERY_S = 2.0  # how often a running job's progress is written to the database
MAX_ATTEMPTS = 3  # a job whose Ray task died is put back this many times in all, then fails
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def models_config() -> ModelsConfig:
    return ModelsConfig.of(site_config())


def job_dir(submission_id: int) -> Path:
    return Path(settings.KLUE_SITE) / JOBS_DIR / str(submission_id)


def add_log(job: ModelJob, line: str) -> None:
    """One line of the owner's log (written by klue; never the cell's output)."""
    job.log = [*job.log, [timezone.now().isoformat(timespec="seconds"), line]]


def pick_next(slot: str) -> ModelJob | None:
    """The fairest waiting job, marked running under `slot` (see the module's docstring), or None."""
    with transaction.atomic():
        # Every waiting row locked (PostgreSQL refuses FOR UPDATE with DISTINCT: the teams are found here), so
        # two workers choose one after the other; on SQLite the IMMEDIATE transaction does the same.
        waiting = list(ModelJob.objects.select_for_update().filter(state=ModelJob.WAITING, cancel_requested=False)
                       .order_by("created_at", "id"))
        teams = sorted({job.team_id for job in waiting})
        if not teams:
            return None
        running = dict(ModelJob.objects.filter(state=ModelJob.RUNNING, team_id__in=teams)
                       .values_list("team_id").annotate(n=Count("id")))
        served = dict(ModelJob.objects.filter(team_id__in=teams, started_at__isnull=False)
                      .values_list("team_id").annotate(last=Max("started_at")))
        team = min(teams, key=lambda t: (running.get(t, 0), served.get(t) or EPOCH, t))
        job = next(j for j in waiting if j.team_id == team)
        job.state, job.slot, job.started_at, job.attempts = ModelJob.RUNNING, slot, timezone.now(), job.attempts + 1
        job.progress = {"step": "starting"}
        add_log(job, f"attempt {job.attempts} started on {socket.gethostname()[:40]}")
        job.save(update_fields=["state", "slot", "started_at", "attempts", "progress", "log"])
        Submission.objects.filter(pk=job.submission_id).update(status=Submission.RUNNING)
    return job


def requeue_slots(slots: list[str]) -> int:
    """Jobs running under queue rows that were put back (their worker stopped beating): waiting again."""
    count = 0
    for job in ModelJob.objects.filter(slot__in=slots, state=ModelJob.RUNNING):
        _put_back(job, "the worker running this job stopped")
        count += 1
    return count


def _put_back(job: ModelJob, why: str, *fields: str) -> None:
    """A running job waiting again (its next attempt runs in the same directory), with `why` in its log;
    `fields`: other fields of the row the caller changed."""
    job.state, job.slot, job.progress = ModelJob.WAITING, "", {"step": "waiting"}
    add_log(job, f"{why}; put back in the queue (it resumes where the model's family can)")
    job.save(update_fields=["state", "slot", "progress", "log", *fields])
    Submission.objects.filter(pk=job.submission_id).update(status=Submission.QUEUED)


def requeue_lost_task(job: ModelJob) -> bool:
    """A job whose Ray task (or its node) died: waiting again with a new queue slot, while it has attempts
    left (it resumes in the same directory); False when it has none."""
    if job.attempts >= MAX_ATTEMPTS:
        return False
    with transaction.atomic():
        _put_back(job, "the Ray task running this job died", "wall_s")
        run_model_slot.enqueue()
    return True


def cancel(submission: Submission) -> bool:
    """The owner's cancel: a waiting job ends now, a running one at its next poll; False when it had ended."""
    with transaction.atomic():
        job = ModelJob.objects.select_for_update().filter(submission=submission).first()
        if job is None or job.state not in (ModelJob.WAITING, ModelJob.RUNNING):
            return False
        job.cancel_requested = True
        add_log(job, "cancel asked by the owner")
        fields = ["cancel_requested", "log"]
        if job.state == ModelJob.WAITING:
            job.state, job.finished_at, job.progress = ModelJob.CANCELLED, timezone.now(), {"step": "cancelled"}
            fields += ["state", "finished_at", "progress"]
            Submission.objects.filter(pk=submission.pk).update(status=Submission.CANCELLED)
        job.save(update_fields=fields)
    return True


class _Watch:
    """Asked by the running cell every poll: is the job cancelled? (and, every PROGRESS_EVERY_S, the cell's
    progress into the job's row)."""

    def __init__(self, job: ModelJob, out_dir: Path) -> None:
        self.job, self.out_dir, self.shown, self.at = job, out_dir, 0, 0.0

    def __call__(self) -> bool:
        now = time.monotonic()
        if now - self.at < PROGRESS_EVERY_S:
            return False
        self.at = now
        job = ModelJob.objects.get(pk=self.job.pk)
        if job.cancel_requested:
            return True
        self.record(job)
        return False

    def record(self, job: ModelJob) -> None:
        """The progress lines the cell wrote since the last look, into the job's row."""
        progress = modelcell.progress_of(self.out_dir)
        if len(progress) > self.shown:
            for item in progress[self.shown:]:
                add_log(job, item.line())
            last = progress[-1]
            job.progress = {"step": last.step, "done": last.done, "total": last.total,
                            "elapsed_s": last.elapsed_s, "eta_s": last.eta_s}
            self.shown = len(progress)
            job.save(update_fields=["progress", "log"])


def _cell(job: ModelJob, gold: TaskGold, model: str, out_dir: Path) -> None:
    site = Path(settings.KLUE_SITE)
    config = models_config()
    spec = modelcell.model_cell(gold.task, model, config.seed, out_dir, site / gold.train_path,
                                gold.train_format, site / gold.path, gold.format, config.shots)
    out_dir.mkdir(parents=True, exist_ok=True)
    modelcell.write_cell(spec, out_dir / modelcell.CELL_FILE)


def _end(job: ModelJob, state: str, line: str, status: str | None = None, message: str | None = None) -> None:
    job.state, job.finished_at, job.progress = state, timezone.now(), {"step": state}
    add_log(job, line)
    job.save(update_fields=["state", "finished_at", "progress", "log", "wall_s", "cell_s"])
    if status is not None:
        Submission.objects.filter(pk=job.submission_id).update(status=status, messages=[message or line])


def run_job(job: ModelJob) -> str:
    """Run one picked job to its end: the cell, then the scoring of its predictions."""
    submission = Submission.objects.select_related("model_submission").get(pk=job.submission_id)
    ms = submission.model_submission
    assert ms is not None
    gold = TaskGold.objects.get(task=submission.task)
    out_dir = job_dir(submission.pk)
    config = models_config()
    admitted = AdmittedModel(ms.spec, ms.family, ms.source, ms.store_name or None, ms.hub_id or None)
    try:
        model = materialise(Path(settings.KLUE_SITE), admitted)
        _cell(job, gold, model, out_dir)
    except Exception:
        log.exception("model job %s could not start", job.pk)
        _end(job, ModelJob.FAILED, "the job could not start; the organisers have the details", Submission.FAILED)
        return "failed"
    ended = modelcell.finished_cell(out_dir)
    if ended is None:
        add_log(job, f"running the {ms.family} cell on {gold.task}: {gold.n_train:,} training examples, "
                     f"{gold.n_public + gold.n_private:,} inputs to predict, seed {config.seed}"
                     f"{f', {config.shots} shots' if ms.family == 'llm' else ''} "
                     f"({config.executor} executor)")
        job.save(update_fields=["log"])
        watch = _Watch(job, out_dir)
        if config.executor == "ray":
            try:
                run = modelcell.run_ray(out_dir, config, model, watch)
            except DataError:
                log.exception("model job %s: the Ray cluster", job.pk)
                _end(job, ModelJob.FAILED, "the site could not run the job on its Ray cluster; the organisers have "
                                           "the details", Submission.FAILED)
                return "failed"
        else:
            run = modelcell.run_local(out_dir, config.limits, watch)
        job = ModelJob.objects.get(pk=job.pk)
        watch.record(job)  # the lines written since the last poll
        job.wall_s = (job.wall_s or 0.0) + run.seconds
        ended = run.status
    else:
        add_log(job, "the cell had finished before the worker stopped: scoring it")
    if ended == modelcell.CANCELLED:
        _end(job, ModelJob.CANCELLED, "cancelled by the owner", Submission.CANCELLED)
        return "cancelled"
    if ended == modelcell.LOST and requeue_lost_task(job):
        return "requeued"
    if ended == modelcell.WALL:
        _end(job, ModelJob.FAILED, f"stopped at the site's wall-time limit ({config.limits.wall_s:g} s)",
             Submission.FAILED)
        return "failed"
    if ended != modelcell.OK:
        why = ("the model's run failed" if ended == modelcell.FAILED else
               f"its Ray task died {job.attempts} times" if ended == modelcell.LOST else
               f"the model's process ended without results (a limit: {config.limits.memory_gb:g} GB of memory, or "
               "a signal)")
        _end(job, ModelJob.FAILED, f"{why}; the organisers have its log", Submission.FAILED)
        return "failed"
    from klue.results import PREDICTIONS_FILE, RESULTS_FILE, read_results

    job.cell_s = read_results(out_dir / RESULTS_FILE).wall_time_s
    data = (out_dir / PREDICTIONS_FILE).read_bytes()
    Submission.objects.filter(pk=submission.pk).update(upload=data, size=len(data), filename=PREDICTIONS_FILE)
    job.progress = {"step": "scoring"}
    add_log(job, f"the cell finished in {job.cell_s:.1f} s; scoring its predictions with the site's judge")
    job.save(update_fields=["progress", "log", "wall_s", "cell_s"])
    outcome = score_submission.call(submission.pk, 0)
    scored = Submission.objects.get(pk=submission.pk)
    score = scored.current_score()
    line = (f"scored: public {gold.task} score {score.task_score:.2f}" if scored.status == Submission.SCORED
            and score is not None and score.task_score is not None and score.ladder_accepted is not False
            else f"scoring: {outcome}")
    _end(job, ModelJob.DONE if scored.status == Submission.SCORED else ModelJob.FAILED, line)
    return outcome


@task(takes_context=True, queue_name="models")  # klue.leaderboard.worker.MODELS_QUEUE: workers of their own
def run_model_slot(context: TaskContext) -> str:
    """One queue slot: the fairest waiting model job, run to its end (nothing waiting: nothing to do)."""
    job = pick_next(str(context.task_result.id))
    if job is None:
        return "nothing waiting"
    try:
        return run_job(job)
    except Exception:
        log.exception("model job %s failed", job.pk)
        _end(ModelJob.objects.get(pk=job.pk), ModelJob.FAILED, "the job failed on the server; the organisers have "
                                                                 "the details", Submission.FAILED)
        raise


def job_json(job: ModelJob) -> dict[str, Any]:
    """What the owner sees of a job: state, progress (step, counts, ETA), attempts, the log."""
    return {"state": job.state, "progress": job.progress, "attempts": job.attempts,
            "log": [f"{at} {line}" for at, line in job.log], "wall_s": job.wall_s, "cell_s": job.cell_s}


def waiting_ahead(job: ModelJob) -> int:
    """Jobs waiting that were queued before this one (a rough position: the fair order may differ)."""
    return ModelJob.objects.filter(Q(state=ModelJob.WAITING) & (Q(created_at__lt=job.created_at) | Q(
        created_at=job.created_at, id__lt=job.pk))).count()
