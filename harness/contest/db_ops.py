"""The participant features' and the ladder-side statements on ``contest.sqlite``, beside
:class:`~harness.contest.db.ContestDB` (which holds the site's own): the auto-pause's
(:mod:`.autopause`), the leaderboard fit's (:mod:`.board_fit`), the challenges'
(:mod:`.challenges`), the status figures' (:mod:`.status`) and a backup's copies
(:mod:`.backup`). Each function takes the :class:`ContestDB` (a backup's, the files' paths) and
returns plain values or named tuples, never ``sqlite3.Row``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from harness.contest.db import ContestDB

__all__ = ["PauseCandidate", "Pause", "pause_candidates", "pause_version", "pause_of", "write_fit",
           "submissions_in", "Challenge", "ChallengeGame", "add_challenge", "pending_challenges",
           "record_challenge_game", "challenges_of_team", "challenge_games", "copy_database", "copy_counts"]


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


class Challenge(NamedTuple):
    """A team's challenge: ``seats`` is JSON ``[[team, submission id], ...]``, the challenger first."""

    id: int
    team_id: int
    seats: str
    games: int
    played: int
    status: str
    created_at: float
    finished_at: float | None


class ChallengeGame(NamedTuple):
    """One game of a challenge: teams by seat, ranking, scores and forfeits as JSON."""

    challenge_id: int
    n: int
    teams: str
    ranking: str
    scores: str
    forfeits: str


_CHALLENGE = "SELECT id, team_id, seats, games, played, status, created_at, finished_at FROM challenges"


def add_challenge(cdb: ContestDB, team_id: int, seats: str, games: int, per_hour: int) -> tuple[int | None, int]:
    """Add a pending challenge if the team's hourly quota allows it: (its id, 0), or (None, the
    minutes until the next is allowed). Checked and inserted in one transaction."""
    now = time.time()
    with cdb.write() as conn:
        recent = conn.execute("SELECT count(*), min(created_at) FROM challenges WHERE team_id = ? AND created_at > ?",
                              (team_id, now - 3600)).fetchone()
        if recent[0] >= per_hour:
            return None, int(recent[1] + 3600 - now) // 60 + 1
        cur = conn.execute("INSERT INTO challenges (team_id, seats, games, status, created_at) VALUES (?, ?, ?, "
                           "'pending', ?)", (team_id, seats, games, now))
        return int(cur.lastrowid or 0), 0


def pending_challenges(cdb: ContestDB) -> list[Challenge]:
    """The challenges not played to the end, oldest first."""
    return [Challenge(*r) for r in cdb.db.execute(f"{_CHALLENGE} WHERE status = 'pending' ORDER BY id")]


def record_challenge_game(cdb: ContestDB, game: ChallengeGame, last: bool) -> None:
    """Keep one game of a challenge and count it (the challenge is done after its ``last``)."""
    with cdb.write() as conn:
        conn.execute("INSERT OR REPLACE INTO challenge_games (challenge_id, n, teams, ranking, scores, forfeits) "
                     "VALUES (?, ?, ?, ?, ?, ?)", game)
        conn.execute("UPDATE challenges SET played = ?, status = ?, finished_at = ? WHERE id = ?",
                     (game.n + 1, "done" if last else "pending", time.time() if last else None, game.challenge_id))


def challenges_of_team(cdb: ContestDB, team_id: int, limit: int) -> list[Challenge]:
    """The team's latest ``limit`` challenges, newest first."""
    return [Challenge(*r) for r in cdb.db.execute(f"{_CHALLENGE} WHERE team_id = ? ORDER BY id DESC LIMIT ?",
                                                  (team_id, limit))]


def challenge_games(cdb: ContestDB, challenge_id: int) -> list[ChallengeGame]:
    """The games played of a challenge, in order."""
    return [ChallengeGame(*r) for r in cdb.db.execute(
        "SELECT challenge_id, n, teams, ranking, scores, forfeits FROM challenge_games WHERE challenge_id = ? "
        "ORDER BY n", (challenge_id,))]


# -- a backup's copies (harness.contest.backup) --------------------------------------------------
def copy_database(src: Path, dst: Path) -> None:
    """Copy the SQLite file ``src`` to ``dst`` with the online backup API: one consistent snapshot
    while writers go on, written as one self-contained file."""
    source = sqlite3.connect(src, timeout=30.0)  # only read: a snapshot of the last commit
    target = sqlite3.connect(dst)
    try:
        # in one step: a copy made in steps starts over whenever another process writes between
        # them (the ladder writes every second); one step is one read transaction, which in WAL
        # mode never blocks the writers
        source.backup(target, pages=-1)
        target.execute("PRAGMA journal_mode=DELETE")  # no -wal beside it
    finally:
        target.close()
        source.close()


def copy_counts(root: Path) -> dict[str, int]:
    """What a backup at ``root`` holds: teams and uploads (contest.sqlite), games done (ladder.sqlite)."""
    out: dict[str, int] = {}
    asks = {"contest.sqlite": {"teams": "SELECT count(*) FROM teams", "uploads": "SELECT count(*) FROM submissions"},
            "ladder.sqlite": {"games": "SELECT count(*) FROM games WHERE status = 'done'"}}
    for name, queries in asks.items():
        if (root / name).exists():
            db = sqlite3.connect(root / name)
            try:
                out.update({k: int(db.execute(q).fetchone()[0]) for k, q in queries.items()})
            finally:
                db.close()
    return out
