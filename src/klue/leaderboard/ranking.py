"""Rankings with intervals and significance groups (pure functions; `klue.leaderboard.boards` feeds them
from the database).

An entry shares the rank of the one above it unless a paired test on the same examples separates them:
both entries' scores under the site's bootstrap resamples (every submission of a task is resampled with
the same seed over the same examples, so the resamples are paired) give the difference's p-value
(`klue.reporting.intervals.paired_test`); below 0.05 the entry takes its own position as rank. The KLUE
score of an entry with every task is the mean of its task scores; under each resample, the mean of its
task scores under that resample (as `klue report` does).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from klue.metrics.resampling import interval
from klue.reporting.intervals import ALPHA, paired_test


@dataclass(frozen=True)
class Candidate:
    """One scored submission as the rankings see it (public or, after reveal, private numbers)."""

    submission_id: int
    team: str
    task: str
    name: str
    created_at: dt.datetime
    score: float | None
    low: float | None
    high: float | None
    resamples: np.ndarray | None = field(default=None, compare=False, repr=False)
    scores: dict[str, Any] = field(default_factory=dict, compare=False)
    intervals: dict[str, Any] = field(default_factory=dict, compare=False)
    ladder_accepted: bool | None = None
    selected: bool = False
    public_score: float | None = None  # the public task score (for the private ranking's default picks)
    score_id: int = 0  # the stored score it comes from


@dataclass(frozen=True)
class Ranked:
    rank: int
    entry: Candidate
    relation: str  # in words: how the entry stands against the one above
    p_value: float | None


def _key(c: Candidate) -> tuple[float, dt.datetime, int]:
    score = c.score if c.score is not None and math.isfinite(c.score) else -math.inf
    return (-score, c.created_at, c.submission_id)


def rank(entries: Iterable[Candidate]) -> list[Ranked]:
    """Entries best first, each with its rank and, in words, whether a paired test separates it from the
    entry above."""
    ordered = sorted(entries, key=_key)
    out: list[Ranked] = []
    for position, entry in enumerate(ordered, start=1):
        if not out:
            out.append(Ranked(1, entry, "top", None))
            continue
        above = out[-1]
        a, b = above.entry.resamples, entry.resamples
        if a is None or b is None or above.entry.score is None or entry.score is None or len(a) != len(b):
            out.append(Ranked(position, entry, "not tested against the entry above (no statistics)", None))
            continue
        test = paired_test(a, b, above.entry.score - entry.score)
        p = test.p_value
        p_text = "p<0.001" if p < 0.001 else f"p={p:.3f}"
        if test.difference > 0 and p < ALPHA:
            out.append(Ranked(position, entry, f"below the entry above: a paired test separates them ({p_text})", p))
        else:
            out.append(Ranked(above.rank, entry, f"shares the rank above: a paired test does not separate them "
                                                 f"({p_text})", p))
    return out


def public_entries(candidates: Sequence[Candidate], ladder: bool) -> list[Candidate]:
    """Each team's entry on one task's public board: its best public score, or on a ladder site the
    standing score (the last submission the ladder accepted)."""
    best: dict[str, Candidate] = {}
    for c in candidates:
        if c.score is None:
            continue
        if ladder:
            if c.ladder_accepted and (c.team not in best or (c.created_at, c.submission_id) >
                                      (best[c.team].created_at, best[c.team].submission_id)):
                best[c.team] = c
        elif c.team not in best or _key(c) < _key(best[c.team]):
            best[c.team] = c
    return list(best.values())


def private_entries(candidates: Sequence[Candidate], final_submissions: int) -> list[Candidate]:
    """Each team's entry on one task's private board: the best private score among the submissions it
    marked, or, when it marked none, among its `final_submissions` best public ones."""
    by_team: dict[str, list[Candidate]] = {}
    for c in candidates:
        by_team.setdefault(c.team, []).append(c)
    out = []
    for team_candidates in by_team.values():
        chosen = [c for c in team_candidates if c.selected]
        if not chosen:
            ranked = sorted(team_candidates, key=lambda c: (-(c.public_score if c.public_score is not None
                                                               else -math.inf), c.created_at))
            chosen = ranked[:final_submissions]
        scored = [c for c in chosen if c.score is not None]
        if scored:
            out.append(min(scored, key=_key))
    return out


def klue_entries(per_task: dict[str, list[Candidate]], tasks: Sequence[str]) -> list[Candidate]:
    """One entry per team with an entry on every task: the mean task score, its interval from the mean of
    the resamples, named by the team."""
    teams: dict[str, dict[str, Candidate]] = {}
    for task, entries in per_task.items():
        for entry in entries:
            teams.setdefault(entry.team, {})[task] = entry
    out = []
    for of_team in teams.values():
        if set(of_team) != set(tasks) or any(of_team[t].score is None for t in tasks):
            continue
        score = float(np.mean([of_team[t].score for t in tasks]))
        vectors = [of_team[t].resamples for t in tasks]
        resamples = low = high = None
        if all(v is not None for v in vectors) and len({len(v) for v in vectors if v is not None}) == 1:
            resamples = np.mean(np.stack([v for v in vectors if v is not None]), axis=0)
            low, high = interval(resamples)
        latest = max(of_team.values(), key=lambda c: c.created_at)
        out.append(replace(latest, submission_id=0, task="klue", name="", score=score, low=low, high=high,
                           resamples=resamples, scores={t: of_team[t].score for t in tasks}, intervals={}))
    return out
