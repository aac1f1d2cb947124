"""The organizer's controls, for the site's organizer pages and ``harness contest`` alike.

Disable or enable a team or one version (the ladder's roster leaves it out at its next look, and
the team sees the reason on every page), reset a team (its current version put aside: it starts
again from its next upload) or remove it (signed out, its token dead, off the roster and the
leaderboard); games already played stay in the ladder, and the organizer's pages mark them as
played before the reset or removal. Announcements are shown on every page. Uploads can be closed
and reopened whatever the phases in contest.yaml say. Every action is written to the ``audit``
table with who did it and when, in the same transaction as the action itself.

The organizer signs in with the organizer token (``tbo_...``, printed by ``harness contest init``
and renewed by ``harness contest organizer-token``); as a team's, only its scrypt hash is kept.
The tables (``organizer``, ``org_sessions``, ``blocks``, ``team_state``, ``announcements``,
``audit``) are a migration of their own (:data:`SCHEMA`), run by :class:`~harness.contest.db.ContestDB`.
"""

from __future__ import annotations

import hmac
import re
import secrets
import time
from typing import TYPE_CHECKING

from harness.contest import org_db
from harness.contest.auth import hash_token, new_csrf, new_session_id, session_key
from harness.contest.migrations import ORGANIZER as SCHEMA
from harness.contest.rows import SubmissionRow, TeamRow

if TYPE_CHECKING:
    from harness.contest.db import ContestDB

__all__ = ["SCHEMA", "ControlError", "new_organizer_token", "organizer_token_ok", "disable", "enable", "reset_team",
           "remove_team", "announce", "announcements", "reopen_uploads", "close_uploads", "audit_log", "blocks_of",
           "org_session_add", "org_session", "team_states", "ORG_TOKEN_RE"]


ORG_TOKEN_RE = re.compile(r"^tbo_[A-Za-z0-9_-]{20,100}$")
ORG_SESSION_TTL = 12 * 3600


class ControlError(ValueError):
    """An action that cannot be done (an unknown team or version); one line saying why."""


# -- the organizer's token and sessions ----------------------------------------------------------
def new_organizer_token(cdb: ContestDB, who: str) -> str:
    """A new organizer token (the old one and every organizer session stop working)."""
    token = f"tbo_{secrets.token_urlsafe(32)}"
    salt = secrets.token_bytes(16)
    org_db.set_organizer_token(cdb, salt, hash_token(token, salt), who)
    return token


def organizer_token_ok(cdb: ContestDB, token: str) -> bool:
    """Whether ``token`` is the organizer's (the scrypt hash compared in constant time)."""
    if not ORG_TOKEN_RE.match(token.strip()):
        return False
    secret = org_db.organizer_secret(cdb)
    if secret is None:
        hash_token(token, b"0" * 16)
        return False
    return hmac.compare_digest(hash_token(token.strip(), secret[0]), secret[1])


def org_session_add(cdb: ContestDB, who: str = "organizer") -> tuple[str, str]:
    """A new organizer session: (the cookie's value, its CSRF token)."""
    sid, csrf = new_session_id(), new_csrf()
    org_db.add_org_session(cdb, session_key(sid), csrf, ORG_SESSION_TTL, who)
    return sid, csrf


def org_session(cdb: ContestDB, sid: str) -> str | None:
    """The CSRF token of the organizer session ``sid``, or None if it is not one (or expired)."""
    return org_db.org_session_csrf(cdb, session_key(sid))


# -- teams and versions --------------------------------------------------------------------------
def _team(cdb: ContestDB, name: str) -> TeamRow:
    row = cdb.team_by_name(name)
    if row is None:
        raise ControlError(f"no team named {name!r} (harness contest team list DIR shows them)")
    return row


def _version(cdb: ContestDB, version: str) -> SubmissionRow:
    digits = version[1:] if version.startswith("s") else version
    row = cdb.submission(int(digits)) if digits.isdigit() else None
    if row is None:
        raise ControlError(f"no version {version!r} (a version is s<upload id>, as the pages show it)")
    return row


def disable(cdb: ContestDB, who: str, *, team: str | None = None, version: str | None = None, reason: str) -> str:
    """Keep a team (or one version) out of the ladder until enabled; return what was done, in words."""
    reason = " ".join(reason.split())[:500] or "no reason given"
    kind, ref, what = _target(cdb, team, version)
    org_db.add_block(cdb, who, kind, ref, reason, what)
    return f"{what} disabled: the ladder leaves it out from its next round ({reason})"


def enable(cdb: ContestDB, who: str, *, team: str | None = None, version: str | None = None) -> str:
    kind, ref, what = _target(cdb, team, version)
    gone = org_db.drop_block(cdb, who, kind, ref, what)
    return f"{what} enabled" if gone else f"{what} was not disabled"


def _target(cdb: ContestDB, team: str | None, version: str | None) -> tuple[str, int, str]:
    if (team is None) == (version is None):
        raise ControlError("name a team or a version (one of them)")
    if team is not None:
        return "team", int(_team(cdb, team).id), f"team {team}"
    row = _version(cdb, str(version))
    return "version", int(row.id), f"version s{row.id} of team {row.team}"


def reset_team(cdb: ContestDB, who: str, team: str, reason: str = "") -> str:
    """Put the team's current version aside: it has no version until its next upload; games stay."""
    row = _team(cdb, team)
    org_db.reset_team(cdb, who, int(row.id), row.current_submission, reason,
                      f"team {team}: current version s{row.current_submission} put aside "
                      f"({reason or 'no reason given'})")
    return f"team {team} reset: no current version until its next upload; its games stay"


def remove_team(cdb: ContestDB, who: str, team: str, reason: str = "") -> str:
    """Remove a team: signed out, its token dead, off the roster and the leaderboard; its games stay."""
    row = _team(cdb, team)
    org_db.remove_team(cdb, who, int(row.id), secrets.token_bytes(32), reason,
                       f"team {team} ({reason or 'no reason given'})")
    return f"team {team} removed: signed out, its token no longer works, off the ladder; its games stay"


def team_states(cdb: ContestDB) -> dict[int, org_db.TeamState]:
    """Teams reset or removed, by team id."""
    return org_db.team_states(cdb)


def blocks_of(cdb: ContestDB, team_id: int | None = None) -> list[org_db.Block]:
    """Disabled teams and versions (of one team, or all), with their reasons."""
    return [b for b in org_db.blocks(cdb) if team_id is None or b.team_id == team_id]


# -- announcements, uploads, the audit -----------------------------------------------------------
def announce(cdb: ContestDB, who: str, text: str) -> str:
    text = text.strip()[:2000]
    if not text:
        raise ControlError("an announcement needs some text")
    org_db.add_announcement(cdb, who, text)
    return "announced on every page"


def announcements(cdb: ContestDB, limit: int = 5) -> list[org_db.Announcement]:
    return org_db.announcements(cdb, limit)

def reopen_uploads(cdb: ContestDB, who: str, until: float | None = None) -> str:
    """Take uploads again (after the finals froze them, or past ``phases.uploads_close``) until ``until``."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until)) if until else "the organizer closes them"
    org_db.set_uploads(cdb, who, (("frozen", "0"), ("closed", "0"), ("reopened_until", str(until or "inf"))),
                       "reopen uploads", f"until {when}")
    return f"uploads open until {when}"


def close_uploads(cdb: ContestDB, who: str) -> str:
    org_db.set_uploads(cdb, who, (("closed", "1"), ("reopened_until", "0")), "close uploads", "closed by the organizer")
    return "uploads closed"


def audit_log(cdb: ContestDB, limit: int = 500) -> list[org_db.AuditEntry]:
    return org_db.audit_log(cdb, limit)
