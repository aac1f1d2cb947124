"""The rows :class:`~harness.contest.db.ContestDB` hands out, typed: one ``NamedTuple`` per shape read.

A caller reads a column as an attribute (``team.current_submission``), which mypy checks and a
template reads the same way; the reads make them from plain tuples (the connection has no row
factory). The fields are in the order of each read's ``SELECT``: a change to one changes the other
in the same commit. The organizer's and the participant features' reads have theirs beside their
statements (:mod:`.org_db`, :mod:`.db_ops`).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TeamRow", "SessionRow", "SubmissionRow", "SubmissionSummary", "StandingRow", "RosterEntry",
           "BoardRow", "TEAM_COLUMNS", "SUBMISSION_COLUMNS"]


class TeamRow(NamedTuple):
    """A team: the sign-in token's scrypt salt and hash (never the token), its current version (None: none yet)."""

    id: int
    name: str
    salt: bytes
    token_hash: bytes
    created_at: float
    current_submission: int | None


#: the teams table's columns in :class:`TeamRow`'s order
TEAM_COLUMNS = ", ".join(TeamRow._fields)


class SessionRow(NamedTuple):
    """An unexpired session: its team and the session's CSRF token."""

    team_id: int
    csrf: str
    name: str


class SubmissionRow(NamedTuple):
    """An upload whole, logs included, with its team's name."""

    id: int
    team_id: int
    runtime: str
    filename: str
    size: int
    status: str
    created_at: float
    finished_at: float | None
    activated_at: float | None
    build_log: str
    check_log: str
    team: str


#: :class:`SubmissionRow`'s columns for a read of ``submissions s JOIN teams t ON t.id = s.team_id``
SUBMISSION_COLUMNS = ", ".join([*(f"s.{c}" for c in SubmissionRow._fields[:-1]), "t.name"])


class SubmissionSummary(NamedTuple):
    """An upload as a team's list of its versions shows it (no logs)."""

    id: int
    runtime: str
    filename: str
    size: int
    status: str
    created_at: float
    finished_at: float | None
    activated_at: float | None


class StandingRow(NamedTuple):
    """The ladder's summary of one version: its incremental rating and its totals."""

    submission_id: int
    mu: float
    sigma: float
    games: int
    wins: int
    forfeits: int
    violations: int


class RosterEntry(NamedTuple):
    """A team's current version that the ladder may play."""

    team: str
    submission_id: int
    runtime: str


class BoardRow(NamedTuple):
    """A team on the leaderboard: its current version (None: none yet), the version's standings
    (None before its first game), why it is disabled (None: it is not), and the batch fit (None
    before one covers it)."""

    team: str
    submission_id: int | None
    activated_at: float | None
    runtime: str | None
    mu: float | None
    sigma: float | None
    games: int | None
    wins: int | None
    rank_sum: int | None
    forfeits: int | None
    violations: int | None
    version_id: int | None
    disabled: str | None
    fit_mu: float | None
    fit_sigma: float | None
    fit_rank: int | None
    p_better: float | None
    noisy: float | None
    widened: float | None
    noise: float | None
