"""Pages and their JSON twins. Views stay thin: the rules are in `models` (quota, tokens), `boards` (what
a ranking shows, the private part behind `reveal`) and `jobs` (scoring, the ladder).

Who sees what: the boards and task pages are public; a submission is seen by its team and the admins,
and by others only while it is its team's entry on the public board (anything else answers 404, as if
it did not exist). The API takes `Authorization: Bearer TOKEN`; its POST endpoints take nothing else, so
they need no CSRF token (no cookie authenticates them). Pages use Django's session login and CSRF.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from django.contrib.auth import authenticate, login, logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from django_tasks_db.models import DBTaskResult

from klue.leaderboard.boards import board_json, private_board, public_board, ranked_json
from klue.leaderboard.jobs import judge_bytes
from klue.leaderboard.model_store import ModelRefused, admit
from klue.leaderboard.modeljobs import cancel, job_json, models_config, waiting_ahead
from klue.leaderboard.models import (
    ApiToken,
    LoginAttempt,
    ModelJob,
    ModelSubmission,
    QuotaExceeded,
    Score,
    SiteState,
    Submission,
    TaskGold,
    Team,
    WeeklyQuotaExceeded,
    WorkerHeartbeat,
    day_window,
    site_config,
)
from klue.leaderboard.scorer import JudgeFailure
from klue.leaderboard.submissions import create_model_submission, create_submission, model_tasks
from klue.leaderboard.worker import timing

LOGIN_WINDOW = dt.timedelta(minutes=15)
LOGIN_FAILURES = 5  # per user name in the window, then 429 until it passes
ADDRESS_FAILURES = 50  # per address (several users may share one behind a NAT)
STYLE = """body{font-family:sans-serif;max-width:72em;margin:1em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}.muted{color:#777}.error{color:#a00}nav a{margin-right:1em}nav form{display:inline}"""


# ---------------------------------------------------------------------------------------------- helpers


def _team_of(user: Any) -> Team | None:
    member = getattr(user, "member", None) if user is not None and user.is_authenticated else None
    return member.team if member is not None else None


def bearer_user(request: HttpRequest) -> User | None:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer "):
        return None
    return ApiToken.user_for(header[len("Bearer "):].strip())


def _error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def api_view(methods: tuple[str, ...], token_only: bool = False) -> Callable[..., Any]:
    """An API endpoint: the user from the Bearer token (or, for GET, the session); 401 when a token is
    given but wrong, or none is given where one is needed."""
    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @csrf_exempt
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in methods:
                return HttpResponseNotAllowed(methods)
            user: Any = None
            if "Authorization" in request.headers:
                user = bearer_user(request)
                if user is None:
                    return _error(401, "the API token is not valid")
            elif not token_only and request.user.is_authenticated:
                user = request.user
            if token_only and user is None:
                return _error(401, "this needs an API token: send `Authorization: Bearer TOKEN` "
                                   "(`klue leaderboard user add` prints one)")
            try:
                return view(request, user, *args, **kwargs)
            except Http404 as missing:  # JSON, as every API answer
                return _error(404, str(missing) or "not found")
        return wrapper
    return decorate


def _visible(submission: Submission, user: Any) -> bool:
    if user is not None and user.is_authenticated and (user.is_staff or _team_of(user) == submission.team):
        return True
    if submission.status != Submission.SCORED:
        return False
    return any(row.entry.submission_id == submission.pk
               for row in public_board().per_task.get(submission.task, []))


def _submission(pk: int, user: Any) -> Submission:
    submission = Submission.objects.select_related("team", "model_submission").filter(pk=pk).first()
    if submission is None or not _visible(submission, user):
        raise Http404("no such submission")
    return submission


def submission_json(submission: Submission, user: Any) -> dict[str, Any]:
    own = user is not None and user.is_authenticated and (user.is_staff or _team_of(user) == submission.team)
    out: dict[str, Any] = {"id": submission.pk, "task": submission.task, "team": submission.team.name,
                           "name": submission.name, "status": submission.status,
                           "created_at": submission.created_at.isoformat(), "selected": submission.selected}
    if submission.model_submission_id is not None:
        model = submission.model_submission
        assert model is not None
        out["model"] = {"model_submission": model.pk, "spec": model.spec, "family": model.family}
    if own:
        out["messages"] = list(submission.messages)
        out["filename"] = submission.filename
        job = ModelJob.objects.filter(submission=submission).first()
        if job is not None:
            out["job"] = job_json(job)
            if job.state == ModelJob.WAITING:
                out["job"]["waiting_ahead"] = waiting_ahead(job)
    score = submission.current_score()
    if score is None or submission.status != Submission.SCORED:
        return out
    revealed = SiteState.revealed()
    if score.ladder_accepted is False and not revealed:
        # Blum & Hardt's ladder releases nothing about a submission that is not better: not its score, not its
        # p-value; the page shows the standing score it was compared with.
        standing = Score.objects.filter(submission_id=score.ladder_against_id).order_by("-generation").first()
        out["scores"] = {"task_score": standing.task_score if standing else None,
                         "interval": [standing.task_low, standing.task_high] if standing else [None, None],
                         "part": "public", "standing_submission": score.ladder_against_id,
                         "withheld": "not better than the team's standing submission: the board keeps its score"}
        out["ladder"] = {"accepted": False, "against": score.ladder_against_id, "verdict": "not better"}
        return out
    out["scores"] = {"task_score": score.task_score, "interval": [score.task_low, score.task_high],
                     **score.public, "metric_versions": score.metric_versions,
                     "task_version": score.task_version, "generation": score.generation, "part": "public"}
    if score.ladder_accepted is not None:
        out["ladder"] = {"accepted": score.ladder_accepted, "p_value": score.ladder_p,
                         "against": score.ladder_against_id,
                         "verdict": "better" if score.ladder_accepted else "not better"}
    if revealed:
        private = score.private
        out["private"] = {"task_score": private.task_score, "interval": [private.task_low, private.task_high],
                          **private.scores}
    return out


def _quota(team: Team) -> dict[str, Any]:
    _, resets = day_window()
    per_day = int(site_config()["per_day"])
    return {"per_day": per_day, "resets_at": resets.isoformat(),
            "used": {t: team.used_today(t) for t in TaskGold.objects.values_list("task", flat=True)}}


def _accept_upload(team: Team, user: Any, task: str, name: str, upload: UploadedFile | None) -> Submission:
    """Record one attempt (quota counted) from an uploaded file; QuotaExceeded or ValueError."""
    if not TaskGold.objects.filter(task=task).exists():
        raise ValueError(f"this leaderboard has no task {task!r}")
    if upload is None:
        raise ValueError("no file: send the predictions as the form field `predictions`")
    cap = int(site_config()["limits"]["upload_mib"]) << 20
    filename = (upload.name or "predictions").rsplit("/", 1)[-1]
    if upload.size is not None and upload.size > cap:
        return create_submission(team, user, task, name, filename, None, upload.size,
                                 refusal=f"{filename}: the file is larger than the upload cap of {cap >> 20} MiB")
    data = upload.read()
    return create_submission(team, user, task, name, filename, data, len(data))


# ------------------------------------------------------------------------------------------------ pages


@require_GET
def board_page(request: HttpRequest) -> HttpResponse:
    return render(request, "leaderboard/board.html", {
        "title": site_config()["title"], "public": public_board(), "private": private_board(),
        "ladder": site_config()["public_ranking"] == "ladder"})


@require_GET
def board_api(request: HttpRequest) -> HttpResponse:
    private = private_board()
    out: dict[str, Any] = {"title": site_config()["title"], "public_ranking": site_config()["public_ranking"],
                           "revealed": private is not None, "public": board_json(public_board())}
    if private is not None:
        out["private"] = board_json(private)
    return JsonResponse(out)


def _task_context(task: str) -> dict[str, Any]:
    gold = TaskGold.objects.filter(task=task).first()
    if gold is None:
        raise Http404("no such task")
    from klue import registry

    spec = registry.get(task)
    public = public_board().per_task.get(task, [])
    private = private_board()
    return {"task": task, "label": spec.label, "metrics": list(spec.metrics), "gold": gold,
            "public": public, "private": None if private is None else private.per_task.get(task, [])}


@require_GET
def task_page(request: HttpRequest, task: str) -> HttpResponse:
    context = _task_context(task)
    context["rows"] = [(row, [(row.entry.scores.get(m), (row.entry.intervals.get(m) or [None, None]))
                              for m in context["metrics"]]) for row in context["public"]]
    context["title"] = site_config()["title"]
    return render(request, "leaderboard/task.html", context)


@require_GET
def task_api(request: HttpRequest, task: str) -> HttpResponse:
    context = _task_context(task)
    out: dict[str, Any] = {"task": task, "metrics": context["metrics"], "n_public": context["gold"].n_public,
                           "public": ranked_json(context["public"], metrics=True)}
    if context["private"] is not None:
        out["private"] = ranked_json(context["private"], metrics=True)
    return JsonResponse(out)


@require_GET
def submission_page(request: HttpRequest, pk: int) -> HttpResponse:
    submission = _submission(pk, request.user)
    data = submission_json(submission, request.user)
    breakdown = data.get("scores", {}).get("breakdown", {})
    return render(request, "leaderboard/submission.html", {
        "title": site_config()["title"], "s": submission, "data": data, "breakdown": breakdown,
        "own": "messages" in data, "metrics": [(k, v, (data["scores"].get("intervals", {}).get(k) or [None, None]))
                                              for k, v in data.get("scores", {}).get("scores", {}).items()]})


@api_view(("GET",))
def submission_api(request: HttpRequest, user: Any, pk: int) -> HttpResponse:
    return JsonResponse(submission_json(_submission(pk, user), user))


def _select(submission_pk: int, user: Any, selected: bool) -> Submission:
    team = _team_of(user)
    submission = Submission.objects.filter(pk=submission_pk, team=team).first() if team else None
    if submission is None:
        raise Http404("no such submission")
    if selected and not submission.selected:
        limit = int(site_config()["final_submissions"])
        marked = Submission.objects.filter(team=team, task=submission.task, selected=True).count()
        if marked >= limit:
            raise ValueError(f"your team has marked {marked} submissions of {submission.task} already, the most "
                             f"this leaderboard counts ({limit}); unmark one first")
    submission.selected = selected
    submission.save(update_fields=["selected"])
    return submission


@login_required
@require_POST
def select_page(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        _select(pk, request.user, request.POST.get("selected", "1") == "1")
    except ValueError as error:
        return render(request, "leaderboard/message.html", {"message": str(error)}, status=400)
    return redirect("team")


@api_view(("POST",), token_only=True)
def select_api(request: HttpRequest, user: Any, pk: int) -> HttpResponse:
    try:
        submission = _select(pk, user, request.POST.get("selected", "1") == "1")
    except ValueError as error:
        return _error(400, str(error))
    return JsonResponse(submission_json(submission, user))


@login_required
def submit_page(request: HttpRequest) -> HttpResponse:
    team = _team_of(request.user)
    tasks = list(TaskGold.objects.values_list("task", flat=True))
    context: dict[str, Any] = {"title": site_config()["title"], "tasks": tasks, "team": team,
                               "quota": _quota(team) if team else None,
                               "cap": site_config()["limits"]["upload_mib"], "endpoint_policy": endpoint_policy(),
                               "model_tasks": list(TaskGold.objects.exclude(train_path="").values_list(
                                   "task", flat=True)), "families": models_config().families}
    if request.method == "POST":
        if team is None:
            context["error"] = "your account belongs to no team"
        else:
            try:
                submission = _accept_upload(team, request.user, request.POST.get("task", ""),
                                            request.POST.get("name", ""), request.FILES.get("predictions"))
                return redirect("submission", pk=submission.pk)
            except (QuotaExceeded, ValueError) as error:
                context["error"] = str(error)
        return render(request, "leaderboard/submit.html", context, status=400)
    return render(request, "leaderboard/submit.html", context)


@api_view(("POST",), token_only=True)
def submit_api(request: HttpRequest, user: Any) -> HttpResponse:
    team = _team_of(user)
    if team is None:
        return _error(403, "this account belongs to no team")
    if request.POST.get("model", "").strip():
        return _model_submission(request, user, team)
    try:
        submission = _accept_upload(team, user, request.POST.get("task", "").strip().lower(),
                                    request.POST.get("name", ""), request.FILES.get("predictions"))
    except QuotaExceeded as error:
        return _error(429, str(error), resets_at=error.resets_at.isoformat())
    except ValueError as error:
        return _error(400, str(error))
    return JsonResponse(submission_json(submission, user), status=201)


def endpoint_policy() -> str:
    """One sentence for the pages: whether endpoint specs (openai:, emb:openai:) are taken, and why not."""
    if site_config().get("allow_endpoints"):
        return "Endpoint models (openai:, emb:openai:) are allowed here: the endpoint sees the hidden inputs."
    return ("Endpoint models (openai:, emb:openai:) are refused here: the endpoint would see the hidden inputs of "
            "the private part.")


def _model_submission(request: HttpRequest, user: Any, team: Team) -> HttpResponse:
    """`klue submit --model SPEC`: admitted by the model store, one submission and job per task (201)."""
    from django.conf import settings

    config = models_config()
    spec = request.POST.get("model", "").strip()[:300]
    asked = [t.strip().lower() for t in request.POST.getlist("task") if t.strip()]
    has_private = TaskGold.objects.filter(n_private__gt=0).exists()
    try:
        admitted = admit(Path(settings.KLUE_SITE), spec, families=config.families, has_private_part=has_private,
                         allow_endpoints=bool(site_config().get("allow_endpoints")))
        tasks = model_tasks(admitted.family, asked)
        model = create_model_submission(team, user, admitted, request.POST.get("name", ""), tasks)
    except ModelRefused as error:
        return _error(400, error.summary(name_errors=False))
    except (QuotaExceeded, WeeklyQuotaExceeded) as error:
        return _error(429, str(error), resets_at=error.resets_at.isoformat())
    except ValueError as error:
        return _error(400, str(error))
    return JsonResponse(model_submission_json(model, user), status=201)


def model_submission_json(model: ModelSubmission, user: Any) -> dict[str, Any]:
    submissions = Submission.objects.filter(model_submission=model).select_related("team", "model_submission")
    return {"model_submission": model.pk, "spec": model.spec, "family": model.family, "name": model.name,
            "submissions": [submission_json(s, user) for s in submissions.order_by("id")]}


def _cancel(pk: int, user: Any) -> Submission:
    team = _team_of(user)
    submission = Submission.objects.filter(pk=pk, team=team).first() if team else None
    if submission is None:
        raise Http404("no such submission")
    if submission.model_submission_id is None:
        raise ValueError("only a model submission's job can be cancelled; a file is scored at once")
    if not cancel(submission):
        raise ValueError(f"submission #{pk} has ended ({submission.status}): nothing to cancel")
    return submission


@login_required
@require_POST
def cancel_page(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        _cancel(pk, request.user)
    except ValueError as error:
        return render(request, "leaderboard/message.html", {"message": str(error)}, status=400)
    return redirect("submission", pk=pk)


@api_view(("POST",), token_only=True)
def cancel_api(request: HttpRequest, user: Any, pk: int) -> HttpResponse:
    try:
        submission = _cancel(pk, user)
    except ValueError as error:
        return _error(400, str(error))
    return JsonResponse(submission_json(Submission.objects.get(pk=submission.pk), user))


@api_view(("POST",), token_only=True)
def check_api(request: HttpRequest, user: Any) -> HttpResponse:
    """Validate a file against the task's gold guids: the problems or "ok"; no score, no quota."""
    task = request.POST.get("task", "").strip().lower()
    gold = TaskGold.objects.filter(task=task).first()
    upload = request.FILES.get("predictions")
    if gold is None or upload is None:
        return _error(400, f"this leaderboard has no task {task!r}" if gold is None else "no file")
    cap = int(site_config()["limits"]["upload_mib"]) << 20
    shown = (upload.name or "predictions").rsplit("/", 1)[-1]
    if upload.size is not None and upload.size > cap:
        too_large = f"{shown}: the file is larger than the upload cap of {cap >> 20} MiB"
        return JsonResponse({"ok": False, "problems": [too_large]})
    try:
        answer = judge_bytes(gold, upload.read(), shown, check_only=True)
    except JudgeFailure as failure:
        answer = {"ok": False, "problems": [f"{shown}: {failure}"]}
    return JsonResponse({k: answer[k] for k in ("ok", "problems", "warnings") if k in answer})


@login_required
@require_GET
def team_page(request: HttpRequest) -> HttpResponse:
    team = _team_of(request.user)
    submissions = list(Submission.objects.filter(team=team).select_related("team")) if team else []
    return render(request, "leaderboard/team.html", {
        "title": site_config()["title"], "team": team, "quota": _quota(team) if team else None,
        "submissions": [(s, s.current_score()) for s in submissions],
        "final_submissions": site_config()["final_submissions"]})


@api_view(("GET",))
def team_api(request: HttpRequest, user: Any) -> HttpResponse:
    team = _team_of(user)
    if team is None:
        return _error(401 if user is None else 403, "log in or send an API token of a team's member")
    return JsonResponse({"team": team.name, "quota": _quota(team),
                         "submissions": [submission_json(s, user) for s in Submission.objects.filter(team=team)]})


def _address(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR", ""))[:64]


def login_page(request: HttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"title": site_config()["title"]}
    if request.method == "POST":
        username = request.POST.get("username", "")[:150]
        since = timezone.now() - LOGIN_WINDOW
        failures = LoginAttempt.objects.filter(at__gte=since, succeeded=False)
        if (failures.filter(username=username).count() >= LOGIN_FAILURES
                or failures.filter(address=_address(request)).count() >= ADDRESS_FAILURES):
            context["error"] = "too many failed logins; wait 15 minutes and try again"
            return render(request, "leaderboard/login.html", context, status=429)
        user = authenticate(request, username=username, password=request.POST.get("password", ""))
        LoginAttempt.objects.create(username=username, address=_address(request), succeeded=user is not None)
        if user is not None:
            login(request, user)
            return redirect("team")
        context["error"] = "wrong user name or password"
        return render(request, "leaderboard/login.html", context, status=401)
    return render(request, "leaderboard/login.html", context)


@require_POST
def logout_page(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("board")


def healthz(request: HttpRequest) -> HttpResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"ok": True})


def status_json() -> dict[str, Any]:
    waiting = DBTaskResult.objects.filter(status="READY")
    oldest = waiting.order_by("enqueued_at").values_list("enqueued_at", flat=True).first()
    now, lost_after = timezone.now(), timing().lost_after_s
    workers = [{"worker": w.worker_id, "host": w.host, "pid": w.pid, "last_heartbeat": w.beat_at.isoformat(),
                "seconds_ago": round((now - w.beat_at).total_seconds(), 1),
                "state": "stopped" if w.stopped else ("lost" if (now - w.beat_at).total_seconds() > lost_after
                                                      else "alive")}
               for w in WorkerHeartbeat.objects.order_by("-beat_at")[:50]]
    return {"queue_length": waiting.count(), "running": DBTaskResult.objects.filter(status="RUNNING").count(),
            "oldest_waiting": oldest.isoformat() if oldest else None,
            "oldest_waiting_seconds": round((now - oldest).total_seconds(), 1) if oldest else None,
            "workers": workers, "submissions": Submission.objects.count()}


@require_GET
def status_page(request: HttpRequest) -> HttpResponse:
    return render(request, "leaderboard/status.html", {"title": site_config()["title"], "status": status_json()})


@require_GET
def status_api(request: HttpRequest) -> HttpResponse:
    return JsonResponse(status_json())


def stylesheet(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(STYLE, content_type="text/css")
    response["Cache-Control"] = "public, max-age=3600"
    return response


