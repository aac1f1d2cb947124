"""The league store: one SQLite file per league, the source of truth for results.

Tables (schema version in ``PRAGMA user_version``):

- ``meta``: what the league is (name, game, options, seed) and derived-data markers
  (``rated_upto``, the rating parameters the stored ratings were computed with).
- ``bots`` and ``versions``: every bot name, and every version of it (command, cwd, files).
- ``games``: the schedule and its results, one row per scheduled game: ``seq`` (canonical
  order), id, seed, round, players, status (``pending`` | ``done`` | ``dropped``), ended_by,
  decisions, seconds, finished_at. ``seats``: the version at each seat, its rank, score, and
  whether it forfeited.
- ``violations``: every violation, its full record as JSON plus the columns one filters on.
- ``logs``: each game's log, zlib-compressed JSON lines.
- ``ratings``: TrueSkill mu and sigma per version over the games up to ``rated_upto`` (derived
  data, rebuilt by :mod:`harness.league.ratings`).

Only one process writes (the league runner's parent); each game is recorded whole inside one
transaction (with its rating update; games that finish together share one) and only while its
row is still ``pending``, so a game is never half-recorded nor counted twice, even after the
runner was killed with ``kill -9``.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harness.league.config import BotEntry, ConfigError, LeagueConfig
from harness.league.schedule import ScheduledGame

__all__ = ["LeagueStore", "GameOutcome", "PendingGame", "PlanSummary", "StoreError", "SCHEMA_VERSION",
           "compress_log", "decompress_log"]

SCHEMA_VERSION = 1

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
    id TEXT NOT NULL UNIQUE,
    round INTEGER NOT NULL,
    players INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'dropped')),
    ended_by TEXT,
    decisions INTEGER,
    seconds REAL,
    finished_at TEXT
);
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
"""


class StoreError(ConfigError):
    """A store that cannot be used with this config (another league, a newer schema...)."""


@dataclass
class GameOutcome:
    """What a finished game leaves in the store (built by the worker from the referee's GameRecord)."""

    game_id: str
    ranking: list[int]
    scores: list[Any]
    ended_by: str
    forfeits: list[int] = field(default_factory=list)
    violations: list[dict[str, Any]] = field(default_factory=list)
    log: bytes = b""  # compress_log() of the game's log lines
    decisions: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class PendingGame:
    """A scheduled game not played yet, as stored."""

    seq: int
    game_id: str
    seed: int
    round: int
    version_ids: tuple[int, ...]


@dataclass(frozen=True)
class PlanSummary:
    """What :meth:`LeagueStore.plan` did: games added, reactivated and dropped, and the totals now."""

    added: int
    reactivated: int
    dropped: int
    pending: int
    done: int


def compress_log(lines: Sequence[Any]) -> bytes:
    """zlib of the log's JSON lines (done in the workers: ~0.5 ms for a 300-message game)."""
    try:
        text = b"\n".join(map(orjson.dumps, lines))
    except TypeError:  # a non-string key or an odd type somewhere: the slow, lenient way
        text = "\n".join(json.dumps(line, default=str) for line in lines).encode()
    return zlib.compress(text, 2)  # level 2: 3x faster than 6 on these logs, 40% bigger


def decompress_log(data: bytes) -> list[dict[str, Any]]:
    """The log lines back from :func:`compress_log`."""
    text = zlib.decompress(data).decode()
    return [json.loads(line) for line in text.split("\n") if line]


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class LeagueStore:
    """An open league store. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(f"{self.path}: no such store (run the league first: harness run CONFIG)")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: cannot open the store ({exc})") from None
        self.db.row_factory = sqlite3.Row
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a commit survives a killed process
            self.db.execute("PRAGMA foreign_keys=ON")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise StoreError(f"{self.path}: not a league store ({exc})") from None
        if version == 0:
            with self.transaction():
                if self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise StoreError(f"{self.path}: not a league store (it has other tables)")
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        elif version > SCHEMA_VERSION:
            self.db.close()
            raise StoreError(f"{self.path}: made by a newer tablebots (store schema {version}, this one reads "
                             f"{SCHEMA_VERSION})")

    # -- plumbing --------------------------------------------------------------------------

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> LeagueStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE); nested calls join the outer one."""
        if self.db.in_transaction:
            yield self.db
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                        "excluded.value", (key, value))

    # -- the league ------------------------------------------------------------------------

    def bind(self, config: LeagueConfig) -> None:
        """Tie the store to ``config``'s league, or refuse if it holds another league's games.

        The game, its options and the league seed define the games; changing them would mix
        incomparable results, so a store keeps them for life.
        """
        identity = {"league": config.name, "game": config.game,
                    "options": json.dumps(config.options, sort_keys=True), "seed": str(config.seed)}
        with self.transaction():
            for key, value in identity.items():
                stored = self.get_meta(key)
                if stored is None:
                    self.set_meta(key, value)
                elif stored != value:
                    raise StoreError(
                        f"{self.path}: holds games of {key} {stored}, but {config.path} says {value}; "
                        f"use another store (the 'store' key) or delete this one")

    def register_versions(self, bots: Sequence[BotEntry]) -> dict[str, int]:
        """Make sure every bot version exists; return ``{label: version_id}``."""
        ids = {}
        with self.transaction():
            for b in bots:
                self.db.execute("INSERT OR IGNORE INTO bots (name) VALUES (?)", (b.name,))
                bot_id = self.db.execute("SELECT id FROM bots WHERE name = ?", (b.name,)).fetchone()[0]
                self.db.execute(
                    "INSERT OR IGNORE INTO versions (bot_id, version, command, cwd, files, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (bot_id, b.version, json.dumps(list(b.command)), b.cwd, json.dumps(list(b.files)), _now()))
                ids[b.label] = self.db.execute("SELECT id FROM versions WHERE bot_id = ? AND version = ?",
                                               (bot_id, b.version)).fetchone()[0]
        return ids

    def plan(self, schedule: Sequence[ScheduledGame], version_ids: dict[str, int]) -> PlanSummary:
        """Bring the stored schedule in line with ``schedule``.

        New games are appended after every stored one (in ``schedule``'s order), pending games no
        longer scheduled (a bot removed or changed, fewer rounds) are dropped, and dropped games
        scheduled again are reactivated. Finished games are never touched.
        """
        wanted = {g.game_id for g in schedule}
        added = reactivated = dropped = 0
        with self.transaction():
            stored = {row["id"]: (row["seq"], row["status"])
                      for row in self.db.execute("SELECT id, seq, status FROM games")}
            next_seq = (self.db.execute("SELECT max(seq) FROM games").fetchone()[0] or 0) + 1
            min_reactivated = None
            for g in schedule:
                have = stored.get(g.game_id)
                if have is None:
                    self.db.execute("INSERT INTO games (seq, id, round, players, seed) VALUES (?, ?, ?, ?, ?)",
                                    (next_seq, g.game_id, g.round, g.players, g.seed))
                    self.db.executemany("INSERT INTO seats (game_seq, seat, version_id) VALUES (?, ?, ?)",
                                        [(next_seq, s, version_ids[b.label]) for s, b in enumerate(g.seats)])
                    next_seq += 1
                    added += 1
                elif have[1] == "dropped":
                    self.db.execute("UPDATE games SET status = 'pending' WHERE seq = ?", (have[0],))
                    reactivated += 1
                    min_reactivated = have[0] if min_reactivated is None else min(min_reactivated, have[0])
            for gid, (seq, status) in stored.items():
                if status == "pending" and gid not in wanted:
                    self.db.execute("UPDATE games SET status = 'dropped' WHERE seq = ?", (seq,))
                    dropped += 1
            if min_reactivated is not None and min_reactivated <= int(self.get_meta("rated_upto", "0") or 0):
                self.set_meta("ratings_stale", "1")  # the rated prefix skipped a game that now counts
            counts = dict(self.db.execute("SELECT status, count(*) FROM games GROUP BY status").fetchall())
        return PlanSummary(added, reactivated, dropped, counts.get("pending", 0), counts.get("done", 0))

    def pending_games(self) -> list[PendingGame]:
        """Scheduled games not played yet, in canonical order."""
        seats: dict[int, list[int]] = {}
        for row in self.db.execute("SELECT s.game_seq, s.version_id FROM seats s JOIN games g ON g.seq = s.game_seq "
                                   "WHERE g.status = 'pending' ORDER BY s.game_seq, s.seat"):
            seats.setdefault(row[0], []).append(row[1])
        return [PendingGame(row["seq"], row["id"], row["seed"], row["round"], tuple(seats[row["seq"]]))
                for row in self.db.execute("SELECT seq, id, seed, round FROM games WHERE status = 'pending' "
                                           "ORDER BY seq")]

    def counts(self) -> dict[str, int]:
        """Number of games per status."""
        counts = dict(self.db.execute("SELECT status, count(*) FROM games GROUP BY status").fetchall())
        return {s: counts.get(s, 0) for s in ("pending", "done", "dropped")}

    def record(self, seq: int, outcome: GameOutcome) -> bool:
        """Record a finished game; False (and nothing written) if it is not pending any more.

        Call inside :meth:`transaction` together with the rating update, or alone (its own transaction).
        """
        with self.transaction():
            row = self.db.execute("SELECT status, id FROM games WHERE seq = ?", (seq,)).fetchone()
            if row is None or row["status"] != "pending" or row["id"] != outcome.game_id:
                return False
            self.db.execute("UPDATE games SET status = 'done', ended_by = ?, decisions = ?, seconds = ?, "
                            "finished_at = ? WHERE seq = ?",
                            (outcome.ended_by, outcome.decisions, outcome.seconds, _now(), seq))
            forfeits = set(outcome.forfeits)
            self.db.executemany(
                "UPDATE seats SET rank = ?, score = ?, forfeited = ? WHERE game_seq = ? AND seat = ?",
                [(rank, _score(score), int(seat in forfeits), seq, seat)
                 for seat, (rank, score) in enumerate(zip(outcome.ranking, outcome.scores))])
            version_at = dict(self.db.execute("SELECT seat, version_id FROM seats WHERE game_seq = ?", (seq,)))
            self.db.executemany(
                "INSERT INTO violations (game_seq, decision, seat, version_id, kind, detail, record) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(seq, v.get("decision"), v.get("seat"), version_at.get(v.get("seat")), str(v.get("kind", "?")),
                  str(v.get("detail", "")), json.dumps(v, default=str)) for v in outcome.violations])
            if outcome.log:
                self.db.execute("INSERT INTO logs (game_seq, data) VALUES (?, ?)", (seq, outcome.log))
        return True

    # -- reading ---------------------------------------------------------------------------

    def versions(self) -> list[sqlite3.Row]:
        """Every bot version: id, name, version, command, cwd, files, created_at."""
        return self.db.execute("SELECT v.id, b.name, v.version, v.command, v.cwd, v.files, v.created_at "
                               "FROM versions v JOIN bots b ON b.id = v.bot_id ORDER BY v.id").fetchall()

    def seat_stats(self) -> dict[int, dict[str, float]]:
        """Per version over finished games: games, wins (rank 0, shared or not), rank_sum, forfeits.

        A seat has a rank only once its game is done (one scan of a covering index).
        """
        stats = {}
        for row in self.db.execute("SELECT version_id, count(rank), sum(rank = 0), sum(rank), sum(forfeited) "
                                   "FROM seats GROUP BY version_id"):
            stats[row[0]] = {"games": row[1], "wins": row[2], "rank_sum": row[3], "forfeits": row[4]}
        for row in self.db.execute("SELECT version_id, count(*) FROM violations GROUP BY version_id"):
            stats.setdefault(row[0], {"games": 0, "wins": 0, "rank_sum": 0, "forfeits": 0})["violations"] = row[1]
        return stats

    def finished_after(self, seq: int, limit: int | None = None) -> Iterator[tuple[int, str, list[tuple[int, int]]]]:
        """Games after ``seq`` in order: (seq, status, [(version_id, rank) per seat]) (ranks None unless done)."""
        sql = "SELECT seq, status FROM games WHERE seq > ? ORDER BY seq"
        args: tuple[Any, ...] = (seq,)
        if limit is not None:
            sql += " LIMIT ?"
            args = (seq, limit)
        rows = self.db.execute(sql, args).fetchall()
        if not rows:
            return
        lo, hi = rows[0][0], rows[-1][0]
        seats: dict[int, list[tuple[int, int]]] = {}
        for s in self.db.execute("SELECT game_seq, version_id, rank FROM seats WHERE game_seq BETWEEN ? AND ? "
                                 "ORDER BY game_seq, seat", (lo, hi)):
            seats.setdefault(s[0], []).append((s[1], s[2]))
        for r in rows:
            yield r[0], r[1], seats.get(r[0], [])

    def game(self, game_id: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM games WHERE id = ?", (game_id,)).fetchone()

    def game_seats(self, seq: int) -> list[sqlite3.Row]:
        return self.db.execute("SELECT s.seat, s.rank, s.score, s.forfeited, b.name, v.version, v.id AS version_id "
                               "FROM seats s JOIN versions v ON v.id = s.version_id JOIN bots b ON b.id = v.bot_id "
                               "WHERE s.game_seq = ? ORDER BY s.seat", (seq,)).fetchall()

    def game_log(self, seq: int) -> list[dict[str, Any]] | None:
        row = self.db.execute("SELECT data FROM logs WHERE game_seq = ?", (seq,)).fetchone()
        return decompress_log(row[0]) if row else None

    def find_games(self, prefix: str, limit: int = 5) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM games WHERE id LIKE ? ORDER BY seq LIMIT ?",
                                              (prefix + "%", limit))]

    def violations(self, *, bot: str | None = None, kind: str | None = None,
                   game_seq: int | None = None) -> list[sqlite3.Row]:
        """Violations in order, with game id, bot name and version; filtered by bot name (or name@version) and kind."""
        sql = ("SELECT x.id, x.decision, x.seat, x.kind, x.detail, g.id AS game_id, g.seed, b.name, v.version "
               "FROM violations x JOIN games g ON g.seq = x.game_seq "
               "LEFT JOIN versions v ON v.id = x.version_id LEFT JOIN bots b ON b.id = v.bot_id")
        where: list[str] = []
        args: list[Any] = []
        if bot is not None:
            name, _, version = bot.partition("@")
            where.append("b.name = ?")
            args.append(name)
            if version:
                where.append("v.version = ?")
                args.append(version)
        if kind is not None:
            where.append("x.kind = ?")
            args.append(kind)
        if game_seq is not None:
            where.append("x.game_seq = ?")
            args.append(game_seq)
        if where:
            sql += " WHERE " + " AND ".join(where)
        return self.db.execute(sql + " ORDER BY x.id", args).fetchall()

    def violation(self, violation_id: int) -> tuple[sqlite3.Row, dict[str, Any]] | None:
        """One violation row and its full record."""
        row = self.db.execute(
            "SELECT x.id, x.decision, x.seat, x.kind, x.detail, x.record, x.game_seq, g.id AS game_id, g.seed, "
            "b.name, v.version, v.command, v.cwd FROM violations x JOIN games g ON g.seq = x.game_seq "
            "LEFT JOIN versions v ON v.id = x.version_id LEFT JOIN bots b ON b.id = v.bot_id WHERE x.id = ?",
            (violation_id,)).fetchone()
        return (row, json.loads(row["record"])) if row else None

    # -- ratings (derived data, maintained by harness.league.ratings) ------------------------------

    def load_ratings(self, version_ids: Sequence[int] | None = None) -> dict[int, tuple[float, float]]:
        if version_ids is None:
            rows = self.db.execute("SELECT version_id, mu, sigma FROM ratings")
        else:
            marks = ",".join("?" * len(version_ids))
            rows = self.db.execute(f"SELECT version_id, mu, sigma FROM ratings WHERE version_id IN ({marks})",
                                   list(version_ids))
        return {r[0]: (r[1], r[2]) for r in rows}

    def save_ratings(self, ratings: dict[int, tuple[float, float]]) -> None:
        self.db.executemany("INSERT INTO ratings (version_id, mu, sigma) VALUES (?, ?, ?) ON CONFLICT (version_id) "
                            "DO UPDATE SET mu = excluded.mu, sigma = excluded.sigma",
                            [(k, mu, sigma) for k, (mu, sigma) in ratings.items()])

    def clear_ratings(self) -> None:
        self.db.execute("DELETE FROM ratings")
        self.set_meta("rated_upto", "0")
        self.db.execute("DELETE FROM meta WHERE key = 'ratings_stale'")


def _score(score: Any) -> Any:
    return score if isinstance(score, (int, float)) and not isinstance(score, bool) else json.dumps(score)
