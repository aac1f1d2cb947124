"""The league store's tables, their schema and its migrations (:mod:`harness.league.store` reads
and writes them). The schema version is SQLite's ``PRAGMA user_version``.

Tables (schema version in ``PRAGMA user_version``):

- ``meta``: what the league is (name, game, options, seed), its ``deal_secret`` (32 random bytes
  made with the store, hashed into every deal's seed: see :mod:`harness.league.schedule_roundrobin`; the
  store is never visible to a sandboxed bot) and derived-data markers (``rated_upto``, the
  rating parameters the stored ratings were computed with).
- ``bots`` and ``versions``: every bot name, and every version of it (command, cwd, files).
- ``games``: the schedule and its results, one row per scheduled game: ``seq`` (canonical
  order), id, seed, round, players, the version at each seat (``versions``, a JSON list), status
  (``pending`` | ``done`` | ``dropped``), ended_by, decisions, seconds, finished_at. ``seats``:
  one row per seat of a *finished* game: its version, rank, score, and whether it forfeited.
  (Schema 2: a pending game's seats live in its games row, so planning a league writes one row
  per game instead of three, and builds one index less; bench/league.py part 4 measures it.
  A schema-1 store is migrated when opened.)
- ``violations``: every violation, its full record as JSON plus the columns one filters on.
- ``logs``: each game's log, zlib-compressed JSON lines, in stores written before the logs moved
  to a file of their own, ``<store>-logs`` (:mod:`harness.league.logstore`); read from either.
- ``ratings``: TrueSkill mu and sigma per version over the games up to ``rated_upto`` (derived
  data, rebuilt by :mod:`harness.league.ratings`).
- ``rating_history`` (schema 3): the report's rating history, fitted prefixes of the finished
  games kept so that a report or page load fits only what is new (derived data, a cache:
  :mod:`harness.report.history` says when an entry is still valid; deleting the rows is safe).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping

__all__ = ["SCHEMA", "SCHEMA_VERSION", "create", "migrate_from_1", "migrate_from_2"]

SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE bots (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE versions (
    id INTEGER PRIMARY KEY,
    bot_id INTEGER NOT NULL REFERENCES bots(id),
    version TEXT NOT NULL,
    command TEXT NOT NULL,
    cwd TEXT NOT NULL,
    files TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (bot_id, version)
);
CREATE TABLE games (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    round INTEGER NOT NULL,
    players INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',  -- pending | done | dropped (no CHECK: it tripled a plan's inserts)
    ended_by TEXT,
    decisions INTEGER,
    seconds REAL,
    finished_at TEXT,
    versions TEXT  -- JSON list of version ids by seat (schema 2)
);
CREATE UNIQUE INDEX games_id ON games (id);
CREATE INDEX games_status ON games (status, seq);
CREATE TABLE seats (
    game_seq INTEGER NOT NULL REFERENCES games(seq),
    seat INTEGER NOT NULL,
    version_id INTEGER NOT NULL REFERENCES versions(id),
    rank INTEGER,
    score NUMERIC,
    forfeited INTEGER,
    PRIMARY KEY (game_seq, seat)
) WITHOUT ROWID;
CREATE INDEX seats_stats ON seats (version_id, rank, forfeited);  -- covers the table's per-bot counts
CREATE TABLE violations (
    id INTEGER PRIMARY KEY,
    game_seq INTEGER NOT NULL REFERENCES games(seq),
    decision INTEGER,
    seat INTEGER,
    version_id INTEGER REFERENCES versions(id),
    kind TEXT NOT NULL,
    detail TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX violations_game ON violations (game_seq);
CREATE INDEX violations_version ON violations (version_id, kind);
CREATE TABLE logs (game_seq INTEGER PRIMARY KEY REFERENCES games(seq), data BLOB NOT NULL);
CREATE TABLE ratings (
    version_id INTEGER PRIMARY KEY REFERENCES versions(id),
    mu REAL NOT NULL,
    sigma REAL NOT NULL
);
CREATE TABLE rating_history (
    games INTEGER PRIMARY KEY,  -- the first `games` finished games in schedule order
    last_seq INTEGER NOT NULL,  -- the seq of the last of them
    params TEXT NOT NULL,       -- the rating parameters of the fit
    mu BLOB,                    -- a point of the chart: version ids and their mu (harness.report.history)
    totals BLOB                 -- where the next fit resumes: the pairs' totals over these games
);
"""


def create(db: sqlite3.Connection, meta: Mapping[str, str]) -> None:
    """Make every table of a new store, write its first ``meta`` rows and stamp its schema version
    (inside the caller's transaction)."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)
    db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def migrate_from_1(db: sqlite3.Connection) -> None:
    """Schema 1 -> 2: every game's seat versions into its row, seat rows kept only for finished
    games (inside the caller's transaction)."""
    db.execute("ALTER TABLE games ADD COLUMN versions TEXT")
    by_game: dict[int, list[int]] = {}
    for seq, version_id in db.execute("SELECT game_seq, version_id FROM seats ORDER BY game_seq, seat"):
        by_game.setdefault(seq, []).append(version_id)
    db.executemany("UPDATE games SET versions = ? WHERE seq = ?",
                   [(json.dumps(v, separators=(",", ":")), seq) for seq, v in by_game.items()])
    db.execute("DELETE FROM seats WHERE game_seq IN (SELECT seq FROM games WHERE status != 'done')")
    db.execute("PRAGMA user_version=2")


def migrate_from_2(db: sqlite3.Connection) -> None:
    """Schema 2 -> 3: the rating history's cache (inside the caller's transaction; raises
    sqlite3.OperationalError on a store this process may only read)."""
    table = SCHEMA[SCHEMA.index("CREATE TABLE rating_history"):].rstrip().rstrip(";")
    db.execute(table.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1))
    db.execute("PRAGMA user_version=3")
