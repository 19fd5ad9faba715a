"""`klue submit`: send a prediction file to a leaderboard (`klue leaderboard serve`), with the API token
from KLUE_TOKEN. Standard library HTTP only, so a participant needs nothing beyond `pip install klue`."""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Annotated, Any

import typer

from klue.cli._common import fail

REFUSED = 2  # the server refused the submission (quota, a rejected file): its reason on stderr (README, "Exit codes")
UNREACHABLE = 3
BUSY_RETRIES = 4  # a 503 (the server's database busy; nothing was recorded) is tried again this many times
MAX_WAIT_S = 30.0
PENDING = ("queued", "running")


def register(app: typer.Typer) -> None:
    app.command("submit")(submit_command)


def _multipart(fields: dict[str, str], file_field: str, path: Path) -> tuple[bytes, str]:
    boundary = f"klue-{secrets.token_hex(16)}"
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    filename = path.name.replace('"', "_")
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{filename}"\r\n'
                 f"Content-Type: application/octet-stream\r\n\r\n".encode() + path.read_bytes() + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _call(server: str, path: str, token: str, body: bytes | None = None, content_type: str | None = None,
          timeout: float = 300) -> tuple[int, dict[str, Any]]:
    """The server's status and JSON answer. A 503 (busy: the server recorded nothing) is sent again after its
    Retry-After (else 2, 4, 8, ... s), BUSY_RETRIES times, then exits UNREACHABLE. Nothing else is retried:
    a connection lost after the upload may have stored the submission, and a second one would cost quota."""
    for attempt in range(BUSY_RETRIES + 1):
        status, answer, retry_after = _call_once(server, path, token, body, content_type, timeout)
        if status != 503:
            return status, answer
        if attempt < BUSY_RETRIES:
            pause = min(MAX_WAIT_S, retry_after if retry_after is not None else 2.0 ** (attempt + 1))
            print(f"klue: {server} is busy ({answer.get('error', 'HTTP 503')}); trying again in {pause:.0f} s",
                  file=sys.stderr)
            time.sleep(pause)
    fail(f"{server}: still busy after {BUSY_RETRIES + 1} tries: {answer.get('error', 'HTTP 503')}", UNREACHABLE)


def _call_once(server: str, path: str, token: str, body: bytes | None, content_type: str | None,
               timeout: float) -> tuple[int, dict[str, Any], float | None]:
    request = urllib.request.Request(server.rstrip("/") + path, data=body, method="POST" if body is not None else "GET")
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Accept", "application/json")
    if content_type:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # the user's server URL
            return response.status, json.loads(response.read() or b"{}"), None
    except urllib.error.HTTPError as error:
        try:
            answer = json.loads(error.read() or b"{}")
        except json.JSONDecodeError:
            answer = {"error": f"HTTP {error.code} {error.reason}"}
        retry_after = error.headers.get("Retry-After", "") if error.headers is not None else ""
        pause = float(retry_after) if retry_after.strip().isdigit() else None
        return error.code, answer if isinstance(answer, dict) else {"error": str(answer)}, pause
    except (urllib.error.URLError, OSError) as error:
        fail(f"{server}: the leaderboard does not answer ({getattr(error, 'reason', error)})", UNREACHABLE)


def _score_line(answer: dict[str, Any]) -> str:
    scores = answer.get("scores") or {}
    low, high = (scores.get("interval") or [None, None])[:2]
    value = scores.get("task_score")
    text = "undefined" if value is None else f"{value:.2f}"
    interval = f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else ""
    ladder = answer.get("ladder")
    if ladder and not ladder["accepted"]:
        return (f"not better than your standing submission #{ladder['against']}: the board keeps its public "
                f"{answer['task']} score {text}{interval}")
    verdict = "; ladder: better, the board shows it" if ladder else ""
    return f"public {answer['task']} score {text}{interval} (95% interval, {scores.get('n_examples')} examples){verdict}"


def submit_command(
    server: Annotated[str, typer.Option("--server", help="The leaderboard's address, e.g. https://lb.example.org.",
                                        show_default=False)],
    task: Annotated[list[str] | None, typer.Option("--task", help="The task the predictions are for; with --model, "
                                                   "the tasks to run it on (repeat it; default: every task of the "
                                                   "site that takes the model's family).",
                                                   show_default=False)] = None,
    model: Annotated[str | None, typer.Option("--model", help="Send a model instead of predictions: the site runs "
                                              "it on its own machines on the hidden inputs. SPEC names a model of "
                                              "the site's store (emb:e5-small, hf:smollm2.gguf, e5-small for an "
                                              "encoder fine-tuned on the site's training split), `classic`, or a "
                                              "hub id the site fetches.", show_default=False)] = None,
    cancel: Annotated[int | None, typer.Option("--cancel", help="Cancel submission ID's model job (waiting or "
                                               "running).", show_default=False)] = None,
    predictions: Annotated[Path | None, typer.Option("--predictions", help="The prediction file (JSON Lines as "
                                                     "`klue score` reads it; .gz accepted).", show_default=False)] = None,
    name: Annotated[str, typer.Option("--name", help="The model's name, shown on the board.")] = "",
    check: Annotated[bool, typer.Option("--check", help="Only validate the file against the task's examples: every "
                                        "problem with its guid; costs no quota and shows no score.")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until the submission is scored and print the public "
                                       "score with its interval (a model: its job's log lines as they come, "
                                       "then each task's score).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (id, status, and the public "
                                          "scores once scored).")] = False,
    token_env: Annotated[str, typer.Option("--token-env", help="Environment variable holding the API "
                                           "token.")] = "KLUE_TOKEN",
    select: Annotated[int | None, typer.Option("--select", help="Mark submission ID for the private ranking "
                                               "(instead of sending a file).", show_default=False)] = None,
    wait_timeout: Annotated[float, typer.Option("--wait-timeout", help="Seconds --wait waits at most.")] = 900,
) -> None:
    """Send PREDICTIONS for TASK (or a --model) to a leaderboard; prints the submission's id (with --wait, its
    public score).

    A refused submission (the daily quota used up, a file the judge rejects, no or a wrong token) exits with
    status 2 and the reason on stderr; a server that does not answer, or stays busy (503) after a few tries, 3.
    """
    token = os.environ.get(token_env, "").strip()
    if not token:
        fail(f"no API token: set {token_env} to the token `klue leaderboard user add` printed")
    if select is not None:
        status, answer = _call(server, f"/api/submissions/{select}/select", token, b"selected=1",
                               "application/x-www-form-urlencoded")
        _finish(status, answer, as_json, f"marked submission #{select} for the private ranking")
        return
    if cancel is not None:
        status, answer = _call(server, f"/api/submissions/{cancel}/cancel", token, b"", "application/x-www-form-urlencoded")
        _finish(status, answer, as_json, f"submission #{cancel}: {answer.get('status')} (cancel asked)")
        return
    if model is not None:
        if predictions is not None or check:
            fail("--model sends a model, not a file: leave out --predictions and --check")
        _submit_model(server, token, model, task or [], name, wait, wait_timeout, as_json)
        return
    if not task or len(task) > 1 or predictions is None:
        fail("give one --task and --predictions (or --model SPEC, or --select ID)")
    task_name = task[0]
    if not predictions.is_file():
        fail(f"{predictions}: no such file")
    body, content_type = _multipart({"task": task_name, "name": name}, "predictions", predictions)
    if check:
        status, answer = _call(server, "/api/check", token, body, content_type)
        if status != 200:
            _refused(answer, as_json)
        if as_json:
            print(json.dumps(answer, ensure_ascii=False))
        else:
            for line in answer.get("problems", []) + answer.get("warnings", []):
                print(line, file=sys.stderr)
            print(f"{predictions}: {'valid' if answer.get('ok') else 'not valid'} for {task_name}")
        raise typer.Exit(0 if answer.get("ok") else REFUSED)
    status, answer = _call(server, "/api/submissions", token, body, content_type)
    if status != 201:
        _refused(answer, as_json)
    if wait:
        deadline = time.monotonic() + wait_timeout
        while answer.get("status") in PENDING and time.monotonic() < deadline:
            time.sleep(0.5)
            status, answer = _call(server, f"/api/submissions/{answer['id']}", token)
            if status != 200:
                _refused(answer, as_json)
    if as_json:
        print(json.dumps(answer, ensure_ascii=False))
    else:
        print(f"submission #{answer['id']}: {answer['status']}")
        if answer.get("status") == "scored":
            print(_score_line(answer))
    if answer.get("status") in ("rejected", "failed"):
        for line in answer.get("messages", []):
            print(line, file=sys.stderr)
        raise typer.Exit(REFUSED)


def _finish(status: int, answer: dict[str, Any], as_json: bool, message: str) -> None:
    if status != 200:
        _refused(answer, as_json)
    print(json.dumps(answer, ensure_ascii=False) if as_json else message)


def _refused(answer: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(answer, ensure_ascii=False))
    print(f"klue: error: refused: {answer.get('error', answer)}", file=sys.stderr)
    raise typer.Exit(REFUSED)


def _submit_model(server: str, token: str, model: str, tasks: list[str], name: str, wait: bool,
                  wait_timeout: float, as_json: bool) -> None:
    """POST the model spec; with `wait`, follow each task's job (its log lines, once each) until it ends."""
    fields = [("model", model), ("name", name)] + [("task", t) for t in tasks]
    body = urllib.parse.urlencode(fields).encode("ascii")
    status, answer = _call(server, "/api/submissions", token, body, "application/x-www-form-urlencoded")
    if status != 201:
        _refused(answer, as_json)
    submissions = {s["id"]: s for s in answer["submissions"]}
    if not as_json:
        print(f"model submission #{answer['model_submission']} ({answer['family']}): "
              + ", ".join(f"submission #{pk} {s['task']}" for pk, s in submissions.items()))
    shown: dict[int, int] = {pk: 0 for pk in submissions}
    deadline = time.monotonic() + wait_timeout
    while wait and any(s["status"] in PENDING for s in submissions.values()) and time.monotonic() < deadline:
        time.sleep(1.0)
        for pk, current in list(submissions.items()):
            if current["status"] not in PENDING:
                continue
            status, submissions[pk] = _call(server, f"/api/submissions/{pk}", token)
            if status != 200:
                _refused(submissions[pk], as_json)
            shown[pk] = _print_log(submissions[pk], shown[pk], as_json)
    for pk, current in submissions.items():
        shown[pk] = _print_log(current, shown[pk], as_json)
    if as_json:
        print(json.dumps({**answer, "submissions": list(submissions.values())}, ensure_ascii=False))
    else:
        for pk, current in submissions.items():
            print(f"submission #{pk} {current['task']}: {current['status']}")
            if current.get("status") == "scored":
                print(_score_line(current))
    if any(s.get("status") in ("rejected", "failed", "cancelled") for s in submissions.values()):
        for current in submissions.values():
            for line in current.get("messages", []) if current.get("status") != "scored" else []:
                print(f"#{current['id']} {current['task']}: {line}", file=sys.stderr)
        raise typer.Exit(REFUSED)


def _print_log(answer: dict[str, Any], shown: int, as_json: bool) -> int:
    """The job's log lines not printed yet (the server writes them: klue's own steps and counts); how many now."""
    lines = (answer.get("job") or {}).get("log", [])
    if not as_json:
        for line in lines[shown:]:
            print(f"#{answer['id']} {answer['task']}: {line}")
    return len(lines)
