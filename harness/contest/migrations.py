"""Tables added to ``contest.sqlite`` after its first schema, each step ``CREATE ... IF NOT EXISTS``
so that a database made before it is brought up to date when it is opened (:class:`~.db.ContestDB`)."""

from __future__ import annotations

__all__ = ["ORGANIZER", "BOARD_FIT", "BOARD_NOISE", "ATTEMPTS", "STEPS"]

#: the organizer's token and sessions, disabled teams and versions, reset and removed teams,
#: announcements and the audit of every organizer action (:mod:`harness.contest.controls`)
ORGANIZER = """
CREATE TABLE IF NOT EXISTS organizer (id INTEGER PRIMARY KEY CHECK (id = 1), salt BLOB NOT NULL,
                                      token_hash BLOB NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS org_sessions (id_hash TEXT PRIMARY KEY, csrf TEXT NOT NULL, created_at REAL NOT NULL,
                                         expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS blocks (kind TEXT NOT NULL, ref INTEGER NOT NULL, reason TEXT NOT NULL, by TEXT NOT NULL,
                                   at REAL NOT NULL, PRIMARY KEY (kind, ref));
CREATE TABLE IF NOT EXISTS team_state (team_id INTEGER PRIMARY KEY REFERENCES teams(id), removed_at REAL,
                                       reset_at REAL, reason TEXT);
CREATE TABLE IF NOT EXISTS announcements (id INTEGER PRIMARY KEY, text TEXT NOT NULL, by TEXT NOT NULL,
                                          at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY, at REAL NOT NULL, who TEXT NOT NULL, action TEXT NOT NULL,
                                  detail TEXT NOT NULL);
"""


#: the leaderboard's ratings from the batch fit of ``harness table`` (:mod:`harness.contest.board_fit`),
#: one row per version that played, refitted in the background as games arrive
BOARD_FIT = """
CREATE TABLE IF NOT EXISTS board_fit (submission_id INTEGER PRIMARY KEY, mu REAL NOT NULL, sigma REAL NOT NULL,
                                      fit_rank INTEGER NOT NULL, p_better REAL, noisy REAL, widened REAL);
"""

#: each fitted version's own performance noise over beta (None: the fit found no noises that
#: differ), beside ``board_fit`` (a table of its own, so a database made before it gains it as it opens)
BOARD_NOISE = """
CREATE TABLE IF NOT EXISTS board_noise (submission_id INTEGER PRIMARY KEY, noise REAL);
"""

#: sign-in attempts, one row per key and millisecond, kept for the sliding window of
#: :meth:`~.db.ContestDB.hit` (replaces the fixed-window ``rate`` table, which stays unused in
#: databases made before it)
ATTEMPTS = """
CREATE TABLE IF NOT EXISTS attempts (key TEXT NOT NULL, at_ms INTEGER NOT NULL, count INTEGER NOT NULL,
                                     PRIMARY KEY (key, at_ms)) WITHOUT ROWID;
"""

STEPS = (ORGANIZER, BOARD_FIT, BOARD_NOISE, ATTEMPTS)
