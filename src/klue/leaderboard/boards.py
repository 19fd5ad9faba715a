"""The rankings of the site, from its database: the public board (always) and the private one (after
`reveal` only). Every page and API answer that shows a score goes through here, so the private part is read
in one place, behind `SiteState.revealed()`.

A board is rebuilt only when what it shows can have changed: each web process keeps the last one in Django's
cache under a key made of the scores' count and newest id, the reveal state and the number of marked
submissions (a few cheap queries), for at most `BOARD_TTL_S` seconds (a team renamed in the admin shows
within that). Rebuilding costs about a quarter second of CPU with 1,000 scored submissions (RESULTS.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db.models import Count, Max

from klue.leaderboard.models import Score, SiteState, Submission, TaskGold, site_config
from klue.leaderboard.ranking import Candidate, Ranked, klue_entries, private_entries, public_entries, rank


@dataclass
class Board:
    part: str  # "public" or "private"
    tasks: list[str]
    per_task: dict[str, list[Ranked]] = field(default_factory=dict)
    klue: list[Ranked] = field(default_factory=list)


def _array(data: Any) -> np.ndarray | None:
    return None if data is None else np.frombuffer(bytes(data), dtype="<f8")


def current_scores(task: str | None = None) -> list[Score]:
    """The newest score of every scored submission (of `task`), without the resamples (8 kB each: only the
    entries' are read, by `with_resamples`)."""
    query = (Score.objects.select_related("submission__team", "private").filter(submission__status="scored")
             .defer("resamples", "private__resamples"))
    if task is not None:
        query = query.filter(submission__task=task)
    newest: dict[int, Score] = {}
    for score in query.order_by("submission_id", "-generation"):
        newest.setdefault(score.submission_id, score)
    return list(newest.values())


def with_resamples(entries: list[Candidate], private: bool) -> list[Candidate]:
    """The entries with their resamples read (one query for all of them)."""
    field_name = "private__resamples" if private else "resamples"
    found = dict(Score.objects.filter(pk__in=[e.score_id for e in entries]).values_list("pk", field_name))
    return [replace(e, resamples=_array(found.get(e.score_id))) for e in entries]


def public_candidate(score: Score) -> Candidate:
    sub = score.submission
    return Candidate(sub.pk, sub.team.name, sub.task, sub.name, sub.created_at, score.task_score,
                     score.task_low, score.task_high, None, score.public.get("scores", {}),
                     score.public.get("intervals", {}), score.ladder_accepted, sub.selected, score.task_score,
                     score.pk)


def site_tasks() -> list[str]:
    return list(TaskGold.objects.values_list("task", flat=True))


BOARD_TTL_S = 30


def _version() -> str:
    counts = Score.objects.aggregate(n=Count("id"), newest=Max("id"))
    marked = Submission.objects.filter(selected=True).count()
    return f"{counts['n']}-{counts['newest']}-{int(SiteState.revealed())}-{marked}"


def public_board() -> Board:
    return _cached("public", build_public_board)


def private_board() -> Board | None:
    """The private ranking, or None before `reveal`."""
    if not SiteState.revealed():
        return None
    return _cached("private", build_private_board)


def _cached(kind: str, build: Callable[[], Board]) -> Board:
    """The board of `kind` from Django's cache, built anew when what it shows can have changed (`_version`)."""
    key = f"klue-board-{kind}-{_version()}"
    board: Board | None = cache.get(key)
    if board is None:
        board = build()
        cache.set(key, board, BOARD_TTL_S)
    return board


def build_public_board() -> Board:
    ladder = site_config()["public_ranking"] == "ladder"
    tasks = site_tasks()
    board = Board("public", tasks)
    entries: dict[str, list[Candidate]] = {}
    by_task: dict[str, list[Candidate]] = {t: [] for t in tasks}
    for score in current_scores():
        by_task.setdefault(score.submission.task, []).append(public_candidate(score))
    for task in tasks:
        entries[task] = with_resamples(public_entries(by_task[task], ladder), private=False)
        board.per_task[task] = rank(entries[task])
    board.klue = rank(klue_entries(entries, tasks))
    return board


def build_private_board() -> Board:
    tasks = site_tasks()
    board = Board("private", tasks)
    by_task: dict[str, list[Candidate]] = {t: [] for t in tasks}
    for score in current_scores():
        sub, private = score.submission, score.private
        by_task.setdefault(sub.task, []).append(Candidate(
            sub.pk, sub.team.name, sub.task, sub.name, sub.created_at, private.task_score, private.task_low,
            private.task_high, None, private.scores.get("scores", {}),
            private.scores.get("intervals", {}), None, sub.selected, score.task_score, score.pk))
    final = int(site_config()["final_submissions"])
    entries = {t: with_resamples(private_entries(by_task[t], final), private=True) for t in tasks}
    for task in tasks:
        board.per_task[task] = rank(entries[task])
    board.klue = rank(klue_entries(entries, tasks))
    return board


def ranked_json(rows: list[Ranked], metrics: bool = False) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        entry = row.entry
        item: dict[str, Any] = {"rank": row.rank, "team": entry.team, "score": entry.score,
                                "interval": [entry.low, entry.high], "relation": row.relation,
                                "p_value": row.p_value}
        if entry.submission_id:
            item.update({"submission": entry.submission_id, "name": entry.name})
        if metrics or not entry.submission_id:
            item["scores"] = entry.scores
            if entry.intervals:
                item["intervals"] = entry.intervals
        out.append(item)
    return out


def board_json(board: Board) -> dict[str, Any]:
    return {"part": board.part, "tasks": {t: ranked_json(board.per_task.get(t, [])) for t in board.tasks},
            "klue": ranked_json(board.klue)}
