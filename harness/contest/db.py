"""The contest's own tables in ``DIR/contest.sqlite`` (SQLite, WAL) and the site's statements on them.

The other statements on them live beside this module, never in the features: the participant
features' and a backup's in :mod:`.db_ops`, the organizer's in :mod:`.org_db`; the contest's reads
of the ladder's store are in :mod:`.ladder_sql`.

- ``teams``: name, the sign-in token's scrypt hash and salt (never the token), current version;
- ``sessions``: server-side sessions, keyed by the SHA-256 of the random cookie value (a copy of
  the database does not sign anyone in), with the session's CSRF token and expiry;
- ``submissions``: every upload: runtime, status (``building``, ``checking``, ``active``,
  ``failed``; ``replaced`` once a newer version is current), build and check logs;
- ``rate``: fixed-window counters (sign-in attempts per address per minute);
- ``standings``: the leaderboard's summary, one row per version, updated as the ladder records
  games (:mod:`harness.contest.ladder`), so the leaderboard is one indexed read of ~1,000 rows
  however many games were played (bench/contest.py);
- ``meta``: contest state (``frozen`` once the finals start).

Each thread gets its own connection (the site's request handlers run on a thread pool); writes
are short transactions, so the site, the build worker and the ladder share the file. Reads return
the typed rows of :mod:`.rows` (or plain values), never ``sqlite3.Row``: the connection has no row factory.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.contest.migrations import STEPS
from harness.contest.participant_db import PARTICIPANT_SCHEMA
from harness.contest.rows import (
    SUBMISSION_COLUMNS,
    TEAM_COLUMNS,
    BoardRow,
    RosterEntry,
    SessionRow,
    StandingRow,
    SubmissionRow,
    SubmissionSummary,
    TeamRow,
)

__all__ = ["ContestDB", "STATUSES"]

STATUSES = ("building", "checking", "active", "failed", "replaced", "paused")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS teams (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    salt BLOB NOT NULL,
    token_hash BLOB NOT NULL,
    created_at REAL NOT NULL,
    current_submission INTEGER
);
CREATE TABLE IF NOT EXISTS sessions (
    id_hash TEXT PRIMARY KEY,
    team_id INTEGER NOT NULL REFERENCES teams(id),
    csrf TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS submissions (
    id INTEGER PRIMARY KEY,
    team_id INTEGER NOT NULL REFERENCES teams(id),
    runtime TEXT NOT NULL,
    filename TEXT NOT NULL,
    size INTEGER NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    finished_at REAL,
    activated_at REAL,
    build_log TEXT NOT NULL DEFAULT '',
    check_log TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS submissions_team ON submissions (team_id, created_at);
CREATE INDEX IF NOT EXISTS submissions_status ON submissions (status);
CREATE TABLE IF NOT EXISTS standings (
    submission_id INTEGER PRIMARY KEY REFERENCES submissions(id),
    version_id INTEGER NOT NULL,
    mu REAL NOT NULL,
    sigma REAL NOT NULL,
    games INTEGER NOT NULL DEFAULT 0,
    wins INTEGER NOT NULL DEFAULT 0,
    rank_sum INTEGER NOT NULL DEFAULT 0,
    forfeits INTEGER NOT NULL DEFAULT 0,
    violations INTEGER NOT NULL DEFAULT 0,
    updated_at REAL NOT NULL
);
"""


class ContestDB:
    """The contest database at ``path`` (created on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        with self.write() as db:
            # the base schema, the organizer's steps, then the participant features' tables (participant_db)
            for step in (SCHEMA, *STEPS, PARTICIPANT_SCHEMA):
                for statement in step.split(";"):
                    if statement.strip():
                        db.execute(statement)

    @property
    def db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def write(self) -> _Tx:
        """A short write transaction (BEGIN IMMEDIATE ... COMMIT).

        The threads of one process take turns on a lock first: SQLite makes a writer that finds
        the file locked sleep and retry (up to 100 ms a sleep), so 20 uploads at once waited
        each other out for seconds; on the lock each waits only for the transactions ahead of it.
        """
        return _Tx(self.db, _WRITE_LOCKS.setdefault(str(self.path.resolve()), threading.Lock()))

    # -- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        with self.write() as db:
            db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                       "excluded.value", (key, value))

    # -- teams --------------------------------------------------------------------------------
    def add_team(self, name: str, salt: bytes, token_hash: bytes) -> int:
        with self.write() as db:
            cur = db.execute("INSERT INTO teams (name, salt, token_hash, created_at) VALUES (?, ?, ?, ?)",
                             (name, salt, token_hash, time.time()))
            return int(cur.lastrowid or 0)

    def set_team_token(self, team_id: int, salt: bytes, token_hash: bytes) -> None:
        with self.write() as db:
            db.execute("UPDATE teams SET salt = ?, token_hash = ? WHERE id = ?", (salt, token_hash, team_id))
            db.execute("DELETE FROM sessions WHERE team_id = ?", (team_id,))

    def team(self, team_id: int) -> TeamRow | None:
        """The team ``team_id``, or None."""
        row = self.db.execute(f"SELECT {TEAM_COLUMNS} FROM teams WHERE id = ?", (team_id,)).fetchone()
        return TeamRow(*row) if row else None

    def team_by_name(self, name: str) -> TeamRow | None:
        """The team named ``name``, or None."""
        row = self.db.execute(f"SELECT {TEAM_COLUMNS} FROM teams WHERE name = ?", (name,)).fetchone()
        return TeamRow(*row) if row else None

    def teams(self) -> list[TeamRow]:
        """Every team, in the order they were added."""
        return [TeamRow(*r) for r in self.db.execute(f"SELECT {TEAM_COLUMNS} FROM teams ORDER BY id")]

    # -- sessions -----------------------------------------------------------------------------
    def add_session(self, id_hash: str, team_id: int, csrf: str, ttl: float) -> None:
        now = time.time()
        with self.write() as db:
            db.execute("DELETE FROM sessions WHERE expires_at < ?", (now,))
            db.execute("INSERT INTO sessions (id_hash, team_id, csrf, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                       (id_hash, team_id, csrf, now, now + ttl))

    def session(self, id_hash: str) -> SessionRow | None:
        """The unexpired session ``id_hash`` (the SHA-256 of its cookie value), or None."""
        row = self.db.execute("SELECT s.team_id, s.csrf, t.name FROM sessions s JOIN teams t ON t.id = s.team_id "
                              "WHERE s.id_hash = ? AND s.expires_at > ?", (id_hash, time.time())).fetchone()
        return SessionRow(*row) if row else None

    def drop_session(self, id_hash: str) -> None:
        with self.write() as db:
            db.execute("DELETE FROM sessions WHERE id_hash = ?", (id_hash,))

    # -- rate limits --------------------------------------------------------------------------
    def hit(self, key: str, window_seconds: int, limit: int) -> bool:
        """Count one attempt for ``key``; False if the last ``window_seconds`` hold more than ``limit``
        attempts, this one and refused ones included.

        A sliding window, exact: each attempt's time is kept (at most ``limit + 1`` per key, all
        that the answer needs), so no ``window_seconds`` ever holds more than ``limit`` accepted
        attempts. A fixed window would let ``2 * limit`` through around its boundary.
        """
        now_ms = int(time.time() * 1000)
        with self.write() as db:
            db.execute("INSERT INTO attempts (key, at_ms, count) VALUES (?, ?, 1) ON CONFLICT (key, at_ms) "
                       "DO UPDATE SET count = count + 1", (key, now_ms))
            db.execute("DELETE FROM attempts WHERE key = ? AND (at_ms <= ? OR at_ms NOT IN "
                       "(SELECT at_ms FROM attempts WHERE key = ? ORDER BY at_ms DESC LIMIT ?))",
                       (key, now_ms - window_seconds * 1000, key, limit + 1))
            count = db.execute("SELECT sum(count) FROM attempts WHERE key = ?", (key,)).fetchone()[0]
        return bool(count <= limit)

    # -- submissions --------------------------------------------------------------------------
    def admit_submission(self, team_id: int, runtime: str, filename: str, size: int, *, per_hour: int,
                         in_progress: int) -> tuple[int | None, str | None]:
        """Add a submission if the team's quotas allow it: (id, None), or (None, why not).

        Checked and inserted in one transaction, so 20 uploads at once cannot all slip under a quota.
        """
        now = time.time()
        with self.write() as db:
            recent = db.execute("SELECT count(*), min(created_at) FROM submissions WHERE team_id = ? AND "
                                "created_at > ?", (team_id, now - 3600)).fetchone()
            if recent[0] >= per_hour:
                wait = int(recent[1] + 3600 - now) // 60 + 1
                return None, (f"upload quota reached: {per_hour} uploads per hour per team; the next is allowed "
                              f"in {wait} min")
            busy = db.execute("SELECT count(*) FROM submissions WHERE team_id = ? AND status IN "
                              "('building', 'checking')", (team_id,)).fetchone()[0]
            if busy >= in_progress:
                return None, (f"too many versions in progress: {busy} of yours are being built or checked "
                              f"(at most {in_progress}); wait for them to finish")
            cur = db.execute("INSERT INTO submissions (team_id, runtime, filename, size, status, created_at) "
                             "VALUES (?, ?, ?, ?, 'building', ?)", (team_id, runtime, filename, size, now))
            return int(cur.lastrowid or 0), None

    def forget_submission(self, submission_id: int) -> None:
        """Remove a submission refused before it was kept (its upload could not be unpacked)."""
        with self.write() as db:
            db.execute("DELETE FROM submissions WHERE id = ? AND status = 'building'", (submission_id,))

    def set_status(self, submission_id: int, status: str, *, build_log: str | None = None,
                   check_log: str | None = None) -> None:
        assert status in STATUSES
        sets: list[str] = ["status = ?"]
        args: list[Any] = [status]
        if build_log is not None:
            sets.append("build_log = ?")
            args.append(build_log)
        if check_log is not None:
            sets.append("check_log = ?")
            args.append(check_log)
        if status in ("active", "failed"):
            sets.append("finished_at = ?")
            args.append(time.time())
        with self.write() as db:
            db.execute(f"UPDATE submissions SET {', '.join(sets)} WHERE id = ?", (*args, submission_id))

    def activate(self, submission_id: int) -> None:
        """Make a checked submission its team's current version (the one before it is ``replaced``)."""
        now = time.time()
        with self.write() as db:
            row = db.execute("SELECT team_id FROM submissions WHERE id = ?", (submission_id,)).fetchone()
            old = db.execute("SELECT current_submission FROM teams WHERE id = ?", (row[0],)).fetchone()[0]
            if old is not None and old > submission_id:
                # a newer version became current while this one was checked: this one stays aside
                db.execute("UPDATE submissions SET status = 'replaced', finished_at = ? WHERE id = ?",
                           (now, submission_id))
                return
            if old is not None:
                db.execute("UPDATE submissions SET status = 'replaced' WHERE id = ?", (old,))
            db.execute("UPDATE submissions SET status = 'active', finished_at = ?, activated_at = ? WHERE id = ?",
                       (now, now, submission_id))
            db.execute("UPDATE teams SET current_submission = ? WHERE id = ?", (submission_id, row[0]))

    def submission(self, submission_id: int) -> SubmissionRow | None:
        """The upload ``submission_id`` with its logs and its team's name, or None."""
        row = self.db.execute(f"SELECT {SUBMISSION_COLUMNS} FROM submissions s JOIN teams t ON t.id = s.team_id "
                              "WHERE s.id = ?", (submission_id,)).fetchone()
        return SubmissionRow(*row) if row else None

    def submissions_of(self, team_id: int, limit: int = 100) -> list[SubmissionSummary]:
        """The team's latest ``limit`` uploads, newest first, without their logs."""
        return [SubmissionSummary(*r) for r in self.db.execute(
            "SELECT id, runtime, filename, size, status, created_at, finished_at, activated_at FROM submissions "
            "WHERE team_id = ? ORDER BY id DESC LIMIT ?", (team_id, limit))]

    def standings_of(self, submission_ids: Sequence[int]) -> dict[int, StandingRow]:
        """The ladder's summary of these versions (mu, sigma, games, wins, forfeits, violations), by id."""
        if not submission_ids:
            return {}
        marks = ",".join("?" * len(submission_ids))
        rows = [StandingRow(*r) for r in self.db.execute(
            "SELECT submission_id, mu, sigma, games, wins, forfeits, violations FROM standings WHERE submission_id IN "
            f"({marks})", list(submission_ids))]
        return {r.submission_id: r for r in rows}

    def fit_order(self) -> list[tuple[int, float | None]]:
        """The last fit's versions in its order, each with P(better than the next)."""
        return [(int(r[0]), r[1]) for r in
                self.db.execute("SELECT submission_id, p_better FROM board_fit ORDER BY fit_rank")]

    def latest_announcements(self, limit: int) -> list[tuple[str, float]]:
        """The organizer's latest announcements, newest first: (text, when)."""
        return [(r[0], r[1]) for r in self.db.execute("SELECT text, at FROM announcements ORDER BY id DESC LIMIT ?",
                                                      (limit,))]

    def blocks_of_team(self, team_id: int) -> list[tuple[str, int, str]]:
        """Why ``team_id`` or one of its versions is disabled: (kind, ref, reason) of each block."""
        return [(r[0], r[1], r[2]) for r in self.db.execute(
            "SELECT b.kind, b.ref, b.reason FROM blocks b LEFT JOIN submissions s ON b.kind = 'version' AND "
            "s.id = b.ref WHERE (b.kind = 'team' AND b.ref = ?) OR s.team_id = ?", (team_id, team_id))]

    def removed_team_names(self) -> set[str]:
        """The names of the teams the organizer removed."""
        return {r[0] for r in self.db.execute("SELECT t.name FROM team_state ts JOIN teams t ON t.id = ts.team_id "
                                              "WHERE ts.removed_at IS NOT NULL")}

    def unfinished(self) -> list[int]:
        """Submissions left building or checking (by a site that stopped): to be done again."""
        return [r[0] for r in self.db.execute("SELECT id FROM submissions WHERE status IN ('building', 'checking') "
                                              "ORDER BY id")]

    def roster(self) -> list[RosterEntry]:
        """Every team's current version that is not paused (:mod:`.autopause`): team, submission id, runtime."""
        return [RosterEntry(*r) for r in self.db.execute(
            "SELECT t.name, s.id, s.runtime FROM teams t JOIN submissions s ON s.id = t.current_submission "
            "WHERE s.status != 'paused' AND " + PLAYING + " ORDER BY t.name")]

    # -- standings ----------------------------------------------------------------------------
    def add_results(self, rows: Iterable[Sequence[int]],
                    ratings: dict[int, tuple[float, float]], games: int = 0) -> None:
        """Add games to the standings: rows of (submission_id, version_id, games, wins, rank_sum,
        forfeits, violations) to add, and the current (mu, sigma) of versions by submission id."""
        now = time.time()
        with self.write() as db:
            db.executemany(
                "INSERT INTO standings (submission_id, version_id, mu, sigma, games, wins, rank_sum, forfeits, "
                "violations, updated_at) VALUES (?, ?, 25.0, 8.333, ?, ?, ?, ?, ?, ?) ON CONFLICT (submission_id) "
                "DO UPDATE SET games = games + excluded.games, wins = wins + excluded.wins, rank_sum = rank_sum + "
                "excluded.rank_sum, forfeits = forfeits + excluded.forfeits, violations = violations + "
                "excluded.violations, updated_at = excluded.updated_at",
                [(*r, now) for r in rows])
            db.executemany("UPDATE standings SET mu = ?, sigma = ? WHERE submission_id = ?",
                           [(mu, sigma, sid) for sid, (mu, sigma) in ratings.items()])
            db.execute("INSERT INTO meta (key, value) VALUES ('games', ?) ON CONFLICT (key) DO UPDATE SET "
                       "value = CAST(value AS INTEGER) + excluded.value", (str(games),))

    def standing_versions(self) -> dict[int, int]:
        """The ladder's version id of each team's current version in the standings, to its submission id."""
        return {r[0]: r[1] for r in self.db.execute("SELECT st.version_id, st.submission_id FROM standings st "
                                                    "JOIN teams t ON t.current_submission = st.submission_id")}

    def reset_standings(self, rows: Sequence[Sequence[int]],
                        ratings: dict[int, tuple[float, float]], games: int = 0) -> None:
        """Replace the standings with totals computed afresh from the ladder's store."""
        with self.write() as db:
            db.execute("DELETE FROM standings")
            db.execute("DELETE FROM meta WHERE key = 'games'")
        self.add_results(rows, ratings, games=games)

    def leaderboard(self) -> list[BoardRow]:
        """Every team not removed: its current version (None: no version yet) and its standings (mu,
        sigma, games...), since when it is current, why it is disabled (None if it is not), and
        its batch fit (``fit_mu``, ``fit_sigma``, ``fit_rank``, ``p_better``; None before one)."""
        return [BoardRow(*r) for r in self.db.execute(
            "SELECT t.name AS team, t.current_submission AS submission_id, s.activated_at, s.runtime, "
            "st.mu, st.sigma, st.games, st.wins, st.rank_sum, st.forfeits, st.violations, st.version_id, "
            "(SELECT reason FROM blocks b WHERE (b.kind = 'team' AND b.ref = t.id) OR (b.kind = 'version' AND "
            "b.ref = t.current_submission) LIMIT 1) AS disabled, bf.mu AS fit_mu, bf.sigma AS fit_sigma, "
            "bf.fit_rank, bf.p_better, bf.noisy, bf.widened, bn.noise "
            "FROM teams t LEFT JOIN submissions s ON s.id = t.current_submission "
            "LEFT JOIN standings st ON st.submission_id = t.current_submission "
            "LEFT JOIN board_fit bf ON bf.submission_id = t.current_submission "
            "LEFT JOIN board_noise bn ON bn.submission_id = t.current_submission "
            "WHERE t.id NOT IN (SELECT team_id FROM team_state WHERE removed_at IS NOT NULL)")]

    def board_key(self) -> tuple[Any, ...]:
        """Changes whenever the leaderboard may: games added, a version made current, a team added,
        disabled, enabled, reset or removed."""
        return tuple(self.db.execute("SELECT (SELECT value FROM meta WHERE key = 'games'), (SELECT max(activated_at) "
                                     "FROM submissions), (SELECT count(*) FROM teams), (SELECT count(*) || ':' || "
                                     "max(at) FROM blocks), (SELECT max(coalesce(removed_at, 0) + coalesce(reset_at, "
                                     "0)) FROM team_state), (SELECT value FROM meta WHERE key = 'fit_at')").fetchone())

    def counts(self) -> dict[str, int]:
        row = self.db.execute("SELECT (SELECT count(*) FROM teams), (SELECT count(*) FROM submissions), "
                              "(SELECT value FROM meta WHERE key = 'games')").fetchone()
        return {"teams": row[0], "submissions": row[1], "games": int(row[2] or 0)}


#: teams the ladder may choose: neither disabled (the team or its current version) nor removed
#: (:mod:`harness.contest.controls`); ``t`` is the team, ``s`` its current submission
PLAYING = ("t.id NOT IN (SELECT ref FROM blocks WHERE kind = 'team') AND s.id NOT IN (SELECT ref FROM blocks WHERE "
           "kind = 'version') AND t.id NOT IN (SELECT team_id FROM team_state WHERE removed_at IS NOT NULL)")

#: one lock per database file, shared by every ContestDB of this process
_WRITE_LOCKS: dict[str, threading.Lock] = {}


class _Tx:
    def __init__(self, db: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = db
        self.lock = lock

    def __enter__(self) -> sqlite3.Connection:
        self.lock.acquire()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.lock.release()
            raise
        return self.conn

    def __exit__(self, kind: Any, value: Any, tb: Any) -> None:
        try:
            self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self.lock.release()
