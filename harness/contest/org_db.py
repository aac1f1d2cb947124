"""The organizer's statements on ``contest.sqlite`` (its tables: :data:`~.migrations.ORGANIZER`),
for :mod:`.controls` and the organizer's pages (:mod:`.organizer`). Every action writes its
``audit`` row in the same transaction as the action itself. Reads return named tuples or plain
values, never ``sqlite3.Row``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from harness.contest.rows import SUBMISSION_COLUMNS, SubmissionRow

if TYPE_CHECKING:
    from harness.contest.db import ContestDB

__all__ = ["TeamState", "Block", "Announcement", "AuditEntry", "TeamSummary", "set_organizer_token",
           "organizer_secret", "add_org_session", "org_session_csrf", "drop_org_session", "add_block", "drop_block",
           "reset_team", "remove_team", "team_states", "blocks", "add_announcement", "announcements",
           "set_uploads", "audit_log", "team_summaries", "team_submissions"]


class TeamState(NamedTuple):
    """A team reset or removed: when, and the organizer's reason."""

    team_id: int
    removed_at: float | None
    reset_at: float | None
    reason: str | None


class Block(NamedTuple):
    """A disabled team (``kind`` team, ``ref`` its id) or version (``kind`` version, ``ref`` its
    submission id), and the team it belongs to."""

    kind: str
    ref: int
    reason: str
    by: str
    at: float
    team_id: int | None


class Announcement(NamedTuple):
    id: int
    text: str
    by: str
    at: float


class AuditEntry(NamedTuple):
    id: int
    at: float
    who: str
    action: str
    detail: str


class TeamSummary(NamedTuple):
    """A team as the organizer's overview lists it: its uploads and its current version's totals."""

    id: int
    name: str
    current_submission: int | None
    uploads: int
    failed: int
    busy: int
    last_upload: float | None
    games: int | None
    violations: int | None


def _audit(db: sqlite3.Connection, who: str, action: str, detail: str) -> None:
    db.execute("INSERT INTO audit (at, who, action, detail) VALUES (?, ?, ?, ?)", (time.time(), who, action, detail))


def set_organizer_token(cdb: ContestDB, salt: bytes, token_hash: bytes, who: str) -> None:
    """Keep a new organizer token's hash; every organizer session is signed out."""
    with cdb.write() as db:
        db.execute("INSERT INTO organizer (id, salt, token_hash, created_at) VALUES (1, ?, ?, ?) ON CONFLICT (id) DO "
                   "UPDATE SET salt = excluded.salt, token_hash = excluded.token_hash, created_at = excluded.created_at",
                   (salt, token_hash, time.time()))
        db.execute("DELETE FROM org_sessions")
        _audit(db, who, "organizer token", "a new organizer token; every organizer session signed out")


def organizer_secret(cdb: ContestDB) -> tuple[bytes, bytes] | None:
    """The organizer token's (salt, scrypt hash), or None before one is made."""
    row = cdb.db.execute("SELECT salt, token_hash FROM organizer WHERE id = 1").fetchone()
    return (bytes(row[0]), bytes(row[1])) if row else None


def add_org_session(cdb: ContestDB, id_hash: str, csrf: str, ttl: float, who: str) -> None:
    now = time.time()
    with cdb.write() as db:
        db.execute("DELETE FROM org_sessions WHERE expires_at < ?", (now,))
        db.execute("INSERT INTO org_sessions (id_hash, csrf, created_at, expires_at) VALUES (?, ?, ?, ?)",
                   (id_hash, csrf, now, now + ttl))
        _audit(db, who, "sign in", "signed in on the site")


def org_session_csrf(cdb: ContestDB, id_hash: str) -> str | None:
    """The CSRF token of the unexpired organizer session ``id_hash``, or None."""
    row = cdb.db.execute("SELECT csrf FROM org_sessions WHERE id_hash = ? AND expires_at > ?",
                         (id_hash, time.time())).fetchone()
    return str(row[0]) if row else None


def drop_org_session(cdb: ContestDB, id_hash: str) -> None:
    with cdb.write() as db:
        db.execute("DELETE FROM org_sessions WHERE id_hash = ?", (id_hash,))


def add_block(cdb: ContestDB, who: str, kind: str, ref: int, reason: str, what: str) -> None:
    with cdb.write() as db:
        db.execute("INSERT INTO blocks (kind, ref, reason, by, at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, ref) "
                   "DO UPDATE SET reason = excluded.reason, by = excluded.by, at = excluded.at",
                   (kind, ref, reason, who, time.time()))
        _audit(db, who, f"disable {kind}", f"{what}: {reason}")


def drop_block(cdb: ContestDB, who: str, kind: str, ref: int, what: str) -> bool:
    """Enable what was disabled; False if it was not."""
    with cdb.write() as db:
        gone = db.execute("DELETE FROM blocks WHERE kind = ? AND ref = ?", (kind, ref)).rowcount
        _audit(db, who, f"enable {kind}", what)
    return bool(gone)


def reset_team(cdb: ContestDB, who: str, team_id: int, current: int | None, reason: str, detail: str) -> None:
    """Put the team's current version aside and note the reset."""
    with cdb.write() as db:
        if current is not None:
            db.execute("UPDATE submissions SET status = 'replaced' WHERE id = ?", (current,))
        db.execute("UPDATE teams SET current_submission = NULL WHERE id = ?", (team_id,))
        db.execute("INSERT INTO team_state (team_id, reset_at, reason) VALUES (?, ?, ?) ON CONFLICT (team_id) DO "
                   "UPDATE SET reset_at = excluded.reset_at, reason = excluded.reason", (team_id, time.time(), reason))
        _audit(db, who, "reset team", detail)


def remove_team(cdb: ContestDB, who: str, team_id: int, dead_hash: bytes, reason: str, detail: str) -> None:
    """Sign the team out, replace its token's hash with ``dead_hash`` and note the removal."""
    with cdb.write() as db:
        db.execute("UPDATE teams SET token_hash = ? WHERE id = ?", (dead_hash, team_id))
        db.execute("DELETE FROM sessions WHERE team_id = ?", (team_id,))
        db.execute("INSERT INTO team_state (team_id, removed_at, reason) VALUES (?, ?, ?) ON CONFLICT (team_id) DO "
                   "UPDATE SET removed_at = excluded.removed_at, reason = excluded.reason",
                   (team_id, time.time(), reason))
        _audit(db, who, "remove team", detail)


def team_states(cdb: ContestDB) -> dict[int, TeamState]:
    """Teams reset or removed, by team id."""
    return {r[0]: TeamState(*r) for r in cdb.db.execute("SELECT team_id, removed_at, reset_at, reason FROM team_state")}


def blocks(cdb: ContestDB) -> list[Block]:
    """Every disabled team and version, with the team it belongs to."""
    return [Block(*r) for r in cdb.db.execute(
        "SELECT b.kind, b.ref, b.reason, b.by, b.at, CASE b.kind WHEN 'team' THEN b.ref ELSE s.team_id END "
        "FROM blocks b LEFT JOIN submissions s ON b.kind = 'version' AND s.id = b.ref")]


def add_announcement(cdb: ContestDB, who: str, text: str) -> None:
    with cdb.write() as db:
        db.execute("INSERT INTO announcements (text, by, at) VALUES (?, ?, ?)", (text, who, time.time()))
        _audit(db, who, "announce", text)


def announcements(cdb: ContestDB, limit: int) -> list[Announcement]:
    """The latest ``limit`` announcements, newest first."""
    return [Announcement(*r) for r in cdb.db.execute("SELECT id, text, by, at FROM announcements ORDER BY id DESC "
                                                     "LIMIT ?", (limit,))]


def set_uploads(cdb: ContestDB, who: str, meta: Sequence[tuple[str, str]], action: str, detail: str) -> None:
    """Set the uploads' ``meta`` keys (frozen, closed, reopened_until) and audit it, in one transaction."""
    with cdb.write() as db:
        for key, value in meta:
            db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                       "excluded.value", (key, value))
        _audit(db, who, action, detail)


def audit_log(cdb: ContestDB, limit: int) -> list[AuditEntry]:
    """The latest ``limit`` organizer actions, newest first."""
    return [AuditEntry(*r) for r in cdb.db.execute("SELECT id, at, who, action, detail FROM audit ORDER BY id DESC "
                                                   "LIMIT ?", (limit,))]


def team_summaries(cdb: ContestDB) -> list[TeamSummary]:
    """Every team by name, with its uploads (all, failed, in progress, the last) and its current
    version's games and violations."""
    return [TeamSummary(*r) for r in cdb.db.execute(
        "SELECT t.id, t.name, t.current_submission, (SELECT count(*) FROM submissions WHERE team_id = t.id),"
        " (SELECT count(*) FROM submissions WHERE team_id = t.id AND status = 'failed'), "
        "(SELECT count(*) FROM submissions WHERE team_id = t.id AND status IN ('building', 'checking')), "
        "(SELECT max(created_at) FROM submissions WHERE team_id = t.id), st.games, st.violations "
        "FROM teams t LEFT JOIN standings st ON st.submission_id = t.current_submission ORDER BY t.name")]


def team_submissions(cdb: ContestDB, team_id: int, limit: int = 100) -> list[SubmissionRow]:
    """The team's latest uploads whole, newest first, with their build and check logs."""
    return [SubmissionRow(*r) for r in cdb.db.execute(
        f"SELECT {SUBMISSION_COLUMNS} FROM submissions s JOIN teams t ON t.id = s.team_id WHERE s.team_id = ? "
        "ORDER BY s.id DESC LIMIT ?", (team_id, limit))]
