"""The participant features' and the ladder-side statements on ``contest.sqlite``, beside
:class:`~harness.contest.db.ContestDB` (which holds the site's own): the auto-pause's
(:mod:`.autopause`), the leaderboard fit's (:mod:`.board_fit`) and the status figures'
(:mod:`.status`). Each function takes the :class:`ContestDB` and returns plain values or
named tuples, never ``sqlite3.Row``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from harness.contest.db import ContestDB

__all__ = ["PauseCandidate", "Pause", "pause_candidates", "pause_version", "pause_of", "write_fit",
           "submissions_in"]


class PauseCandidate(NamedTuple):
    """A current, active version with at least the games the auto-pause looks at, and its totals."""

    team_id: int
    name: str
    id: int
    games: int
    forfeits: int
    violations: int


class Pause(NamedTuple):
    """Why and when a version was paused, and its totals at that moment."""

    submission_id: int
    team_id: int
    paused_at: float
    reason: str
    games: int
    forfeits: int
    violations: int


def pause_candidates(cdb: ContestDB, min_games: int) -> list[PauseCandidate]:
    """Every current active version that played ``min_games`` ladder games or more."""
    return [PauseCandidate(*r) for r in cdb.db.execute(
        "SELECT t.id AS team_id, t.name, s.id, st.games, st.forfeits, st.violations FROM teams t "
        "JOIN submissions s ON s.id = t.current_submission JOIN standings st ON st.submission_id = s.id "
        "WHERE s.status = 'active' AND st.games >= ?", (min_games,))]


def pause_version(cdb: ContestDB, c: PauseCandidate, reason: str) -> bool:
    """Pause ``c`` (still active) with ``reason``; False if it was no longer active."""
    with cdb.write() as conn:
        done = conn.execute("UPDATE submissions SET status = 'paused' WHERE id = ? AND status = 'active'",
                            (c.id,)).rowcount
        if done:
            conn.execute("INSERT OR REPLACE INTO pauses (submission_id, team_id, paused_at, reason, games, "
                         "forfeits, violations) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (c.id, c.team_id, time.time(), reason, c.games, c.forfeits, c.violations))
    return bool(done)


def pause_of(cdb: ContestDB, submission_id: int) -> Pause | None:
    """The pause of a version, or None."""
    row = cdb.db.execute("SELECT submission_id, team_id, paused_at, reason, games, forfeits, violations FROM pauses "
                         "WHERE submission_id = ?", (submission_id,)).fetchone()
    return Pause(*row) if row else None


def write_fit(cdb: ContestDB, fitted: Sequence[tuple[object, ...]], games: int) -> None:
    """Replace ``board_fit`` with ``fitted`` rows (submission_id, mu, sigma, fit_rank, p_better,
    noisy, widened) and note when and over how many games, in one transaction."""
    with cdb.write() as conn:
        conn.execute("DELETE FROM board_fit")
        conn.executemany("INSERT INTO board_fit (submission_id, mu, sigma, fit_rank, p_better, noisy, widened) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)", fitted)
        for key, value in (("fit_at", str(time.time())), ("fit_games", str(games))):
            conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                         "excluded.value", (key, value))


def submissions_in(cdb: ContestDB, status: str) -> int:
    """How many submissions have ``status``."""
    return int(cdb.db.execute("SELECT count(*) FROM submissions WHERE status = ?", (status,)).fetchone()[0])

