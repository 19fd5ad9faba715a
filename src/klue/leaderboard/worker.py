"""A scoring worker: django-tasks-db's `db_worker` (it claims jobs with `select_for_update(skip_locked)`),
plus a heartbeat and the requeueing of jobs whose worker died.

Each worker writes its heartbeat every `service.heartbeat_s` seconds (2 by default). Any worker, at every
beat, puts back in the queue the running jobs whose worker's heartbeat is older than `service.lost_after_s`
(15 by default; or that no heartbeat names): a worker killed mid-job loses nothing. The job itself stores at most one score per (submission, generation)
(klue.leaderboard.jobs), so a job requeued while its first worker was only slow is not scored twice.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
import socket
import threading

from django.core.management import call_command
from django.db import close_old_connections, connection, transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from klue.leaderboard.config import Service
from klue.leaderboard.modeljobs import requeue_slots
from klue.leaderboard.models import WorkerHeartbeat, site_config

log = logging.getLogger("klue.leaderboard")
SCORING_QUEUE = "default"  # scoring jobs (files, and a model job's predictions: scored inside the model job)
MODELS_QUEUE = "models"  # model submissions' queue slots (klue.leaderboard.modeljobs): minutes each


def new_worker_id() -> str:
    return f"{socket.gethostname()[:30]}-{os.getpid()}-{secrets.token_hex(4)}"


def timing() -> Service:
    """The site's heartbeat and lost-worker timing (its configuration's `service`)."""
    return Service.of(site_config())


def requeue_lost(lost_after: float | None = None) -> int:
    """Put back the running jobs whose worker's heartbeat is older than `lost_after` seconds (the site's
    `service.lost_after_s` by default); their count."""
    lost_after = timing().lost_after_s if lost_after is None else lost_after
    cutoff = timezone.now() - dt.timedelta(seconds=lost_after)
    alive = set(WorkerHeartbeat.objects.filter(beat_at__gte=cutoff, stopped=False).values_list("worker_id", flat=True))
    requeued: list[str] = []
    with transaction.atomic():
        for job in DBTaskResult.objects.select_for_update().filter(status="RUNNING"):
            owner = job.worker_ids[-1] if job.worker_ids else None
            if owner in alive or (job.started_at is not None and job.started_at >= cutoff):
                continue
            job.status, job.started_at = "READY", None
            job.save(update_fields=["status", "started_at"])
            requeued.append(str(job.pk))
        requeue_slots(requeued)  # the model jobs those queue rows were running wait again
    if requeued:
        log.warning("requeued %d job(s) whose worker stopped beating", len(requeued))
    return len(requeued)


def _beat(worker_id: str, stop: threading.Event, every: float) -> None:
    while not stop.wait(every):
        try:
            WorkerHeartbeat.objects.filter(worker_id=worker_id).update(beat_at=timezone.now())
            requeue_lost()
        except Exception:  # a locked or restarting database: the next beat tries again
            log.exception("heartbeat failed")
        finally:
            close_old_connections()
    connection.close()


def run_worker(worker_id: str | None = None, max_tasks: int | None = None, queue: str = SCORING_QUEUE) -> None:
    """Run the jobs of `queue` until stopped (SIGTERM/SIGINT end it after the current job): scoring jobs, or
    model submissions' jobs on their own queue, so a model running for minutes never holds up a file."""
    worker_id = worker_id or new_worker_id()
    WorkerHeartbeat.objects.update_or_create(worker_id=worker_id, defaults={
        "host": socket.gethostname(), "pid": os.getpid(), "beat_at": timezone.now(), "stopped": False})
    requeue_lost()
    stop = threading.Event()
    beater = threading.Thread(target=_beat, args=(worker_id, stop, timing().heartbeat_s), name="heartbeat", daemon=True)
    beater.start()
    options: dict[str, object] = {"worker_id": worker_id, "interval": 0.3, "reload": False,
                                  "startup_delay": False, "verbosity": 0, "queue_name": queue}
    if max_tasks is not None:
        options["max_tasks"] = max_tasks
    try:
        call_command("db_worker", **options)
    finally:
        stop.set()
        beater.join(timeout=5)
        WorkerHeartbeat.objects.filter(worker_id=worker_id).update(stopped=True, beat_at=timezone.now())
