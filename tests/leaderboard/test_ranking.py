"""Rankings: significance groups by paired tests on shared resamples, each team's entry on a plain and a
ladder board, the private ranking's picks, the KLUE score."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from klue.leaderboard.ranking import Candidate, klue_entries, private_entries, public_entries, rank

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def paired(scores: list[float], noise: float, seed: int = 0, n: int = 1000, own: float = 0.1) -> list[np.ndarray]:
    """Resamples of each score that share a common draw (as one bootstrap over the same examples gives):
    a common shift per resample plus a small individual part."""
    rng = np.random.default_rng(seed)
    common = rng.normal(0, noise, n)
    return [s + common + rng.normal(0, noise * own, n) for s in scores]


def candidate(i: int, team: str, score: float | None, resamples: np.ndarray | None = None, task: str = "nli",
              minutes: int = 0, **kw: object) -> Candidate:
    return Candidate(i, team, task, f"m{i}", T0 + dt.timedelta(minutes=minutes), score, None, None, resamples,
                     **kw)  # type: ignore[arg-type]


def test_close_entries_share_a_rank_and_a_clear_gap_separates() -> None:
    scores = [80.0, 79.9, 70.0, 69.95]
    res = [r.copy() for r in paired(scores, 2.0)]
    # Independent noise that swamps the 0.1 gap between the first two: no paired test separates them.
    res[1] = res[0] - 0.1 + np.random.default_rng(1).normal(0, 3.0, 1000)
    ranked = rank([candidate(i, f"t{i}", s, r) for i, (s, r) in enumerate(zip(scores, res))])
    assert [r.rank for r in ranked] == [1, 1, 3, 3]
    assert ranked[0].relation == "top"
    assert "does not separate" in ranked[1].relation and "separates them" in ranked[2].relation
    assert ranked[2].p_value is not None and ranked[2].p_value < 0.05


def test_a_tiny_consistent_gap_on_the_same_examples_is_separated() -> None:
    # Paired: the same examples move both entries together, so even 0.3 points is a real difference.
    res = paired([75.3, 75.0], 2.0, own=0.01)
    ranked = rank([candidate(1, "a", 75.3, res[0]), candidate(2, "b", 75.0, res[1])])
    assert [r.rank for r in ranked] == [1, 2]


def test_entries_without_statistics_keep_their_position_and_say_so() -> None:
    ranked = rank([candidate(1, "a", 70.0), candidate(2, "b", 80.0)])
    assert [(r.entry.team, r.rank) for r in ranked] == [("b", 1), ("a", 2)]
    assert "no statistics" in ranked[1].relation


def test_plain_board_keeps_each_teams_best_and_the_ladder_its_standing_score() -> None:
    subs = [candidate(1, "a", 70.0, minutes=0, ladder_accepted=True),
            candidate(2, "a", 75.0, minutes=1, ladder_accepted=False),  # higher, but "not better" on the ladder
            candidate(3, "a", 72.0, minutes=2, ladder_accepted=True),
            candidate(4, "b", 60.0, minutes=0, ladder_accepted=True)]
    plain = {c.team: c.submission_id for c in public_entries(subs, ladder=False)}
    ladder = {c.team: c.submission_id for c in public_entries(subs, ladder=True)}
    assert plain == {"a": 2, "b": 4}
    assert ladder == {"a": 3, "b": 4}


def test_ties_on_the_public_board_go_to_the_earlier_submission() -> None:
    subs = [candidate(2, "a", 70.0, minutes=5), candidate(1, "a", 70.0, minutes=1)]
    assert public_entries(subs, ladder=False)[0].submission_id == 1


def test_private_entry_from_marked_submissions_else_the_best_public_ones() -> None:
    subs = [candidate(1, "a", 90.0, public_score=60.0), candidate(2, "a", 50.0, public_score=80.0),
            candidate(3, "a", 55.0, public_score=79.0), candidate(4, "b", 40.0, public_score=70.0, selected=True),
            candidate(5, "b", 99.0, public_score=90.0)]
    picked = {c.team: c.submission_id for c in private_entries(subs, final_submissions=2)}
    # a marked nothing: its two best public (2, 3) count, the best private of those is 3 (55), not 1 (90)
    assert picked == {"a": 3, "b": 4}


@pytest.mark.parametrize("missing", ["sts", None])
def test_klue_score_only_for_entries_with_every_task(missing: str | None) -> None:
    tasks = ["nli", "sts"]
    res = paired([70.0, 80.0, 60.0, 90.0], 1.0)
    entries = {"nli": [candidate(1, "a", 70.0, res[0], "nli"), candidate(2, "b", 60.0, res[2], "nli")],
               "sts": [candidate(3, "a", 80.0, res[1], "sts")]}
    if missing is None:
        entries["sts"].append(candidate(4, "b", 90.0, res[3], "sts"))
    klue = {c.team: c for c in klue_entries(entries, tasks)}
    assert set(klue) == ({"a"} if missing else {"a", "b"})
    assert klue["a"].score == pytest.approx(75.0)
    assert klue["a"].low is not None and klue["a"].low < 75.0 < klue["a"].high  # type: ignore[operator]
    assert klue["a"].scores == {"nli": 70.0, "sts": 80.0}
