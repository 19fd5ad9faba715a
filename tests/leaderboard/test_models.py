"""The rules that live in the models and the job, in process on one SQLite site (Django is configured
once per test process, so every test here shares `django_site`): tokens, the UTC day, the quota counting
every attempt, a job run twice storing one score, rescoring keeping the history, and requeueing the jobs
of a worker whose heartbeat stopped."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from live_site import klue, write_config, write_nli_gold, write_nli_predictions

pytestmark = pytest.mark.slow  # the site is made by `klue leaderboard init` in a process of its own


@pytest.fixture(scope="session")
def django_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from django.conf import settings

    if settings.configured:
        pytest.skip("Django is configured for another site in this process")
    root = tmp_path_factory.mktemp("lb-models")
    gold = root / "dev.json"
    records = write_nli_gold(gold, 300)
    klue("leaderboard", "init", str(root / "site"), "--config", str(write_config(root, gold, per_day=3)))
    from klue.leaderboard.site import setup

    setup(root / "site")
    yield {"root": root, "records": records}


@pytest.fixture
def team(django_site: dict[str, Any], request: pytest.FixtureRequest) -> Any:
    from klue.leaderboard.models import Team

    return Team.objects.create(name=f"team {request.node.name}")


def test_tokens_are_stored_as_hashes(django_site: dict[str, Any]) -> None:
    from django.contrib.auth.models import User

    from klue.leaderboard.models import ApiToken

    user = User.objects.create(username="tok")
    token = ApiToken.issue(user)
    assert len(token) >= 43
    assert ApiToken.objects.get(user=user).digest == hashlib.sha256(token.encode()).hexdigest()
    assert ApiToken.user_for(token) == user
    assert ApiToken.user_for(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert ApiToken.user_for("") is None
    user.is_active = False
    user.save()
    assert ApiToken.user_for(token) is None


def test_the_quota_day_is_the_utc_day(django_site: dict[str, Any]) -> None:
    from klue.leaderboard.models import day_window

    seoul = dt.timezone(dt.timedelta(hours=9))
    start, resets = day_window(dt.datetime(2027, 3, 2, 7, 30, tzinfo=seoul))  # 22:30 UTC on March 1
    assert start == dt.datetime(2027, 3, 1, tzinfo=dt.timezone.utc)
    assert resets == dt.datetime(2027, 3, 2, tzinfo=dt.timezone.utc)


def test_every_attempt_counts_and_the_next_is_refused(team: Any) -> None:
    from klue.leaderboard.models import QuotaExceeded, Submission
    from klue.leaderboard.submissions import create_submission

    create_submission(team, None, "nli", "", "big.jsonl", None, 1 << 30, refusal="over the cap")
    create_submission(team, None, "nli", "", "a.jsonl", b"not json", 8)
    create_submission(team, None, "nli", "", "b.jsonl", b"not json", 8)
    with pytest.raises(QuotaExceeded) as caught:
        create_submission(team, None, "nli", "", "c.jsonl", b"{}", 2)
    assert "resets at" in str(caught.value) and caught.value.resets_at.tzinfo is not None
    assert Submission.objects.filter(team=team).count() == 3
    assert Submission.objects.get(team=team, filename="big.jsonl").status == Submission.REJECTED


def test_yesterdays_attempts_do_not_count(team: Any) -> None:
    from django.utils import timezone

    from klue.leaderboard.models import Submission
    from klue.leaderboard.submissions import create_submission

    for _ in range(3):
        Submission.objects.create(team=team, task="nli", created_at=timezone.now() - dt.timedelta(days=1))
    create_submission(team, None, "nli", "", "a.jsonl", b"x", 1)  # not refused


def _run_job(submission_id: int, generation: int) -> str:
    from klue.leaderboard.jobs import score_submission

    result: str = score_submission.call(submission_id, generation)
    return result


def test_a_job_run_twice_stores_one_score_and_rescoring_keeps_history(django_site: dict[str, Any], team: Any,
                                                                      tmp_path: Path) -> None:
    from klue.leaderboard.models import PrivateScore, Score, Submission
    from klue.leaderboard.service import rescore
    from klue.leaderboard.submissions import create_submission

    path = write_nli_predictions(django_site["records"], tmp_path / "p.jsonl", 0.8, seed=3)
    submission = create_submission(team, None, "nli", "m", "p.jsonl", path.read_bytes(), path.stat().st_size)
    assert _run_job(submission.pk, 0) == "scored"
    assert _run_job(submission.pk, 0) == "already scored"  # the requeued copy of a finished job
    assert Score.objects.filter(submission=submission).count() == 1
    assert PrivateScore.objects.filter(score__submission=submission).count() == 1
    score = Score.objects.get(submission=submission)
    assert score.metric_versions == {"accuracy": score.metric_versions["accuracy"], "macro_f1":
                                     score.metric_versions["macro_f1"]} and score.task_version
    assert rescore(submission.pk) == 1
    assert _run_job(submission.pk, 1) == "scored"
    assert list(Score.objects.filter(submission=submission).order_by("generation").values_list(
        "generation", flat=True)) == [0, 1]
    assert Submission.objects.get(pk=submission.pk).current_score().generation == 1  # type: ignore[union-attr]


def test_a_rejected_file_keeps_the_judges_messages(django_site: dict[str, Any], team: Any) -> None:
    from klue.leaderboard.models import Submission
    from klue.leaderboard.submissions import create_submission

    submission = create_submission(team, None, "nli", "", "bad.jsonl", b'{"guid": "nope", "label": "x"}\n', 31)
    assert _run_job(submission.pk, 0) == "rejected"
    submission = Submission.objects.get(pk=submission.pk)
    assert submission.status == Submission.REJECTED and any("bad.jsonl" in m for m in submission.messages)


def test_jobs_of_a_silent_worker_are_requeued(django_site: dict[str, Any]) -> None:
    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    from klue.leaderboard.models import WorkerHeartbeat
    from klue.leaderboard.worker import requeue_lost, timing

    old = timezone.now() - dt.timedelta(seconds=timing().lost_after_s * 4)
    WorkerHeartbeat.objects.create(worker_id="dead", host="h", pid=1, beat_at=old)
    WorkerHeartbeat.objects.create(worker_id="alive", host="h", pid=2, beat_at=timezone.now())
    common = {"args_kwargs": {"args": [1, 0], "kwargs": {}}, "task_path": "klue.leaderboard.jobs.score_submission",
              "backend_name": "default", "run_after": timezone.now(), "status": "RUNNING", "started_at": old}
    dead = DBTaskResult.objects.create(worker_ids=["dead"], **common)
    alive = DBTaskResult.objects.create(worker_ids=["alive"], **common)
    assert requeue_lost() == 1
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert (dead.status, alive.status) == ("READY", "RUNNING")
    DBTaskResult.objects.filter(pk__in=[dead.pk, alive.pk]).delete()


def test_a_board_is_rebuilt_only_when_a_score_lands(django_site: dict[str, Any], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from klue.leaderboard import boards
    from klue.leaderboard.models import Team
    from klue.leaderboard.submissions import create_submission

    built = []
    real = boards.build_public_board
    monkeypatch.setattr(boards, "build_public_board", lambda: built.append(1) or real())
    first = boards.public_board()
    again = boards.public_board()
    assert len(built) == 1  # the second page came from the cache
    assert [r.entry.submission_id for r in again.per_task["nli"]] == [r.entry.submission_id
                                                                     for r in first.per_task["nli"]]
    path = write_nli_predictions(django_site["records"], tmp_path / "c.jsonl", 0.5, seed=9)
    submission = create_submission(Team.objects.create(name="cached"), None, "nli", "", path.name, path.read_bytes(),
                                   path.stat().st_size)
    boards.public_board()
    assert len(built) == 1  # queued, not scored: the same board
    assert _run_job(submission.pk, 0) == "scored"
    assert "cached" in {r.entry.team for r in boards.public_board().per_task["nli"]}
    assert len(built) == 2


def test_boards_rank_entries_and_hide_the_private_part_until_reveal(django_site: dict[str, Any],
                                                                     tmp_path: Path) -> None:
    from klue.leaderboard.boards import board_json, private_board, public_board
    from klue.leaderboard.models import Team
    from klue.leaderboard.service import reveal
    from klue.leaderboard.submissions import create_submission

    for name, accuracy in (("strong", 0.95), ("weak", 0.1)):
        team = Team.objects.create(name=name)
        path = write_nli_predictions(django_site["records"], tmp_path / f"{name}.jsonl", accuracy, seed=5)
        submission = create_submission(team, None, "nli", name, path.name, path.read_bytes(), path.stat().st_size)
        assert _run_job(submission.pk, 0) == "scored"
    rows = [r for r in public_board().per_task["nli"] if r.entry.team in ("strong", "weak")]
    assert [r.entry.team for r in rows] == ["strong", "weak"]
    assert rows[0].entry.resamples is not None and len(rows[0].entry.resamples) == 1000
    assert rows[0].rank < rows[1].rank  # about 97% against 40% right on 150 examples: separated
    assert private_board() is None
    assert "private" not in board_json(public_board())
    assert reveal() is True and reveal() is False
    board = private_board()
    assert board is not None
    private = {r.entry.team: r for r in board.per_task["nli"]}
    assert private["strong"].entry.score > private["weak"].entry.score  # type: ignore[operator]


def _model_jobs(team: Any, n: int) -> list[Any]:
    from klue.leaderboard.models import ModelJob, ModelSubmission, Submission

    model = ModelSubmission.objects.create(team=team, spec="classic", family="classic", source="builtin")
    jobs = []
    for _ in range(n):
        submission = Submission.objects.create(team=team, task="nli", model_submission=model)
        jobs.append(ModelJob.objects.create(submission=submission, team=team))
    return jobs


def test_the_model_queue_is_fair_between_teams(django_site: dict[str, Any]) -> None:
    """Team A queues ten jobs, then team B one, then team C two: one worker serves A, B, C, A, C, A, ...
    (the team served longest ago first), and with A's job running a second worker takes B's, not A's next."""
    from klue.leaderboard.modeljobs import pick_next
    from klue.leaderboard.models import ModelJob, Team

    ModelJob.objects.filter(state=ModelJob.WAITING).update(state=ModelJob.CANCELLED)
    a, b, c = (Team.objects.create(name=f"fair {x}") for x in "ABC")
    _model_jobs(a, 10)
    _model_jobs(b, 1)
    _model_jobs(c, 2)
    first, second = pick_next("slot-1"), pick_next("slot-2")  # two workers at once
    assert first is not None and second is not None
    assert (first.team_id, second.team_id) == (a.pk, b.pk)
    third = pick_next("slot-3")  # A and B each run one: C's turn
    assert third is not None and third.team_id == c.pk
    order = []
    for job in (first, second, third):
        ModelJob.objects.filter(pk=job.pk).update(state=ModelJob.DONE)
    while (job := pick_next("slot-x")) is not None:  # one worker from now on
        order.append({a.pk: "A", b.pk: "B", c.pk: "C"}[job.team_id])
        ModelJob.objects.filter(pk=job.pk).update(state=ModelJob.DONE)
    assert order == ["A", "C"] + ["A"] * 8


def test_a_lost_slots_model_job_waits_again_and_a_waiting_job_cancels_at_once(django_site: dict[str, Any]) -> None:
    from klue.leaderboard.modeljobs import cancel, pick_next, requeue_slots
    from klue.leaderboard.models import ModelJob, Submission, Team

    ModelJob.objects.filter(state=ModelJob.WAITING).update(state=ModelJob.CANCELLED)
    team = Team.objects.create(name="requeue team")
    running, waiting = _model_jobs(team, 2)
    picked = pick_next("slot-lost")
    assert picked is not None and picked.pk == running.pk
    assert Submission.objects.get(pk=running.submission_id).status == Submission.RUNNING
    assert requeue_slots(["slot-lost"]) == 1
    again = ModelJob.objects.get(pk=running.pk)
    assert (again.state, again.slot, again.attempts) == (ModelJob.WAITING, "", 1)
    assert "put back in the queue" in again.log[-1][1]
    assert Submission.objects.get(pk=running.submission_id).status == Submission.QUEUED
    assert cancel(Submission.objects.get(pk=waiting.submission_id))
    assert ModelJob.objects.get(pk=waiting.pk).state == ModelJob.CANCELLED
    assert Submission.objects.get(pk=waiting.submission_id).status == Submission.CANCELLED
    assert not cancel(Submission.objects.get(pk=waiting.submission_id))  # ended: nothing to cancel
    resumed = pick_next("slot-next")
    assert resumed is not None and (resumed.pk, resumed.attempts) == (running.pk, 2)


def test_a_job_whose_ray_task_died_gets_a_new_slot_until_its_attempts_run_out(django_site: dict[str, Any]) -> None:
    from django_tasks_db.models import DBTaskResult

    from klue.leaderboard.modeljobs import MAX_ATTEMPTS, pick_next, requeue_lost_task
    from klue.leaderboard.models import ModelJob, Submission, Team

    ModelJob.objects.filter(state=ModelJob.WAITING).update(state=ModelJob.CANCELLED)
    (job,) = _model_jobs(Team.objects.create(name="ray team"), 1)
    slots = DBTaskResult.objects.filter(status="READY").count()
    for attempt in range(1, MAX_ATTEMPTS + 1):
        picked = pick_next(f"slot-ray-{attempt}")
        assert picked is not None and (picked.pk, picked.attempts) == (job.pk, attempt)
        if attempt < MAX_ATTEMPTS:
            assert requeue_lost_task(picked)
            again = ModelJob.objects.get(pk=job.pk)
            assert again.state == ModelJob.WAITING and "Ray task running this job died" in again.log[-1][1]
            assert Submission.objects.get(pk=job.submission_id).status == Submission.QUEUED
            assert DBTaskResult.objects.filter(status="READY").count() == slots + attempt  # a slot for the retry
    assert not requeue_lost_task(ModelJob.objects.get(pk=job.pk))  # out of attempts: the job fails
