"""The league store: one SQLite file per league, the source of truth for results.

The tables, their schema and its migrations: :mod:`harness.league.store_schema`.

Only one process writes results (the league runner's parent; a report or ``harness serve`` may
add to the ``rating_history`` cache, waiting at most a second for the lock, else skipping it);
each game is recorded whole inside one
transaction (with its rating update; games that finish together share one) and only while its
row is still ``pending``, so a game is never half-recorded nor counted twice, even after the
runner was killed with ``kill -9``.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from harness.league import store_schema
from harness.league.config import BotEntry, LeagueConfig, LeagueError
from harness.league.logstore import LogStore
from harness.league.pending import PendingGame, PendingView
from harness.league.schedule import ScheduledGame, StoreRow
from harness.league.store_schema import SCHEMA_VERSION

__all__ = ["LeagueStore", "GameOutcome", "PendingGame", "PendingView", "PlanSummary", "StoreError", "SCHEMA_VERSION",
           "compress_log", "cap_log", "decompress_log"]

class StoreError(LeagueError):
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
class PlanSummary:
    """What :meth:`LeagueStore.plan` did: games added, reactivated and dropped, and the totals now."""

    added: int
    reactivated: int
    dropped: int
    pending: int
    done: int


def compress_log(lines: Sequence[Any], cap: int | None = None) -> bytes:
    """zlib of the log's JSON lines (done in the workers: ~0.5 ms for a 300-message game), at most
    ``cap`` bytes of them (before compression; :func:`cap_log`)."""
    try:
        parts = list(map(orjson.dumps, lines))
    except TypeError:  # a non-string key or an odd type somewhere: the slow, lenient way
        parts = [json.dumps(line, default=str).encode() for line in lines]
    if cap is not None:
        parts = cap_log(lines, parts, cap)
    return zlib.compress(b"\n".join(parts), 2)  # level 2: 3x faster than 6 on these logs, 40% bigger


#: what a log keeps past its cap: the violations (few: a seat forfeits after strikes+1) and forfeits
_KEPT_PAST_CAP = ("violation", "forfeit")
#: room kept under the cap for the truncation mark itself
_MARK_BYTES = 256


def cap_log(lines: Sequence[Any], parts: list[bytes], cap: int) -> list[bytes]:
    """The serialised log lines ``parts`` (of ``lines``), cut where they pass ``cap`` bytes: a
    ``{"type": "truncated", ...}`` line marks the cut (what was dropped, the cap); the violations
    and forfeits after it are kept (bounded by the strikes), everything else after it is dropped."""
    total = sum(map(len, parts)) + len(parts)
    if total <= cap:
        return parts
    size, cut = 0, len(parts)
    for i, part in enumerate(parts):
        if size + len(part) + 1 > cap - _MARK_BYTES:
            cut = i
            break
        size += len(part) + 1
    after = [parts[j] for j in range(cut, len(parts))
             if isinstance(lines[j], dict) and lines[j].get("type") in _KEPT_PAST_CAP]
    kept_after = sum(map(len, after)) + len(after)
    mark = {"type": "truncated", "cap_bytes": cap, "kept_bytes": size + kept_after,
            "dropped_bytes": total - size - kept_after, "dropped_lines": len(parts) - cut - len(after)}
    return [*parts[:cut], orjson.dumps(mark), *after]


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
            self.db.execute("PRAGMA cache_size=-65536")  # up to 64 MB of pages: big plans and tables stay in memory
            self.db.execute("PRAGMA foreign_keys=ON")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise StoreError(f"{self.path}: not a league store ({exc})") from None
        self.logs = LogStore(self.path)
        #: the logs file's budget in bytes (None: none): past it, only games with violations keep their logs
        self.log_budget: int | None = None
        #: games recorded without their logs because the logs file was past its budget
        self.logs_dropped = 0
        self._logs_in_flight: list[Future[None]] = []
        if version == 0:
            with self.transaction():
                if self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise StoreError(f"{self.path}: not a league store (it has other tables)")
                LogStore.remove(self.path)  # a new store: logs left by a deleted one are not its logs
                store_schema.create(self.db)
                self.set_meta("deal_secret", secrets.token_hex(32))
            try:  # the store holds every seat's hands and the deal secret: its owner's eyes only
                os.chmod(self.path, 0o600)  # (SQLite gives its -wal and -shm files the same mode)
            except OSError:
                pass
        elif version > SCHEMA_VERSION:
            self.db.close()
            raise StoreError(f"{self.path}: made by a newer tablebots (store schema {version}, this one reads "
                             f"{SCHEMA_VERSION})")
        else:
            if version == 1:
                with self.transaction():
                    store_schema.migrate_from_1(self.db)
            if version <= 2:
                try:  # a store only readable here stays at 2: the history is fitted without its cache
                    with self.transaction():
                        store_schema.migrate_from_2(self.db)
                except sqlite3.OperationalError:
                    pass

    # -- plumbing --------------------------------------------------------------------------

    def close(self) -> None:
        self.logs.close()
        self.db.close()

    def __enter__(self) -> LeagueStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE); nested calls join the outer one.

        Commits only once the logs handed to the logs thread inside it are committed (see
        :meth:`record_many`), so a recorded game always has its log.
        """
        if self.db.in_transaction:
            yield self.db
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
            while self._logs_in_flight:
                self._logs_in_flight.pop().result()
        except BaseException:
            self._logs_in_flight.clear()  # (orphan logs of games still pending: replaced when played)
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

    def deal_secret(self) -> str | None:
        """The league's deal secret (None only in a store made before secrets existed)."""
        return self.get_meta("deal_secret")

    def adopt_deal_secret(self, seed_of: Callable[[str, int, list[str]], int]) -> int:
        """Give a store made before deal secrets one, and re-seed what can still be re-seeded.

        Every game not finished whose deal no finished game used gets the seed
        ``seed_of(secret, round, bot names)``; games of a deal already (partly) played keep their
        public seed, so the seat orders of a duplicate deal stay one deal. Returns how many
        games were re-seeded (0 when the store already has a secret).
        """
        with self.transaction():
            if self.deal_secret():
                return 0
            secret = secrets.token_hex(32)
            self.set_meta("deal_secret", secret)
            names = dict(self.db.execute("SELECT v.id, b.name FROM versions v JOIN bots b ON b.id = v.bot_id"))
            played = {row[0] for row in self.db.execute("SELECT DISTINCT seed FROM games WHERE status = 'done'")}
            updates = []
            for seq, round_, versions, seed in self.db.execute(
                    "SELECT seq, round, versions, seed FROM games WHERE status != 'done'").fetchall():
                if seed not in played and versions:
                    updates.append((seed_of(secret, round_, [names[v] for v in json.loads(versions)]), seq))
            self.db.executemany("UPDATE games SET seed = ? WHERE seq = ?", updates)
        return len(updates)

    def _config_file(self, config: LeagueConfig) -> tuple[Path, str] | None:
        """``config``'s file (absolute, resolved) and its path relative to the store's directory
        (what the store records: a checkout moved or cloned elsewhere moves both together, so
        the relative path still matches); None for a config without a file (a match's)."""
        try:
            path = Path(config.path).resolve()
        except OSError:
            return None
        if not path.is_file():
            return None
        return path, os.path.relpath(path, Path(self.path).resolve().parent)

    def owner_problem(self, config: LeagueConfig) -> str | None:
        """Why ``config`` may not use this store, as one line, or None.

        A store belongs to the config file that made it: a copied config that kept the ``name``
        (or the ``store``) would otherwise add its bots and games to the original's league. A
        config that replaced its maker (the recorded file no longer exists: renamed or moved)
        may use the store, and takes it over at its next bind.
        """
        mine = self._config_file(config)
        recorded = self.get_meta("config")
        if mine is None or recorded is None or recorded == mine[1]:
            return None
        maker = (Path(self.path).resolve().parent / recorded).resolve()
        if not maker.is_file() or maker == mine[0]:
            return None
        return (f"{self.path} holds the league of {maker}, not of {mine[0]}: give {config.path} another "
                f"`name:` (or a `store:` path) for a league of its own, or, if it replaces that config, "
                f"`harness run {config.path} --claim-store`")

    def claim(self, config: LeagueConfig) -> None:
        """Record ``config``'s file as the store's maker (``harness run --claim-store``)."""
        mine = self._config_file(config)
        if mine is not None:
            with self.transaction():
                self.set_meta("config", mine[1])

    def bind(self, config: LeagueConfig) -> None:
        """Tie the store to ``config``'s league, or refuse if it holds another league's games.

        The game, its options and the league seed define the games; changing them would mix
        incomparable results, so a store keeps them for life. The config file that made the
        store is recorded too (:meth:`owner_problem`).
        """
        problem = self.owner_problem(config)
        if problem:
            raise StoreError(problem)
        mine = self._config_file(config)
        if mine is not None and self.get_meta("config") != mine[1]:
            with self.transaction():
                self.set_meta("config", mine[1])
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
        """Bring the stored schedule in line with ``schedule`` (see :meth:`plan_rows`)."""
        rows = [(g.game_id, g.round, g.players, g.seed,
                 json.dumps([version_ids[b.label] for b in g.seats], separators=(",", ":"))) for g in schedule]
        return self.plan_rows([rows])

    def planned_fingerprint(self) -> str | None:
        """The fingerprint of the schedule the store was last planned with (None: never, or stale)."""
        return self.get_meta("plan_fingerprint")

    def plan_rows(self, chunks: Iterable[Sequence[StoreRow]], fingerprint: str | None = None) -> PlanSummary:
        """Bring the stored schedule in line with the rows of ``chunks`` (lists of ``(game_id,
        round, players, seed, versions JSON)`` in canonical order, as
        :func:`harness.league.schedule.schedule_chunks` makes them), and remember ``fingerprint``.

        New games are appended after every stored one (in the rows' order), pending games no
        longer scheduled (a bot removed or changed, fewer rounds) are dropped, and dropped games
        scheduled again are reactivated. Finished games are never touched. A store with no game
        yet takes each chunk in one insert, its indexes built after the load, with a rollback
        journal instead of the WAL when no other connection is open (new pages are written
        once instead of twice).
        """
        fresh = self.db.execute("SELECT 1 FROM games LIMIT 1").fetchone() is None
        if fresh:  # our own rows, consistent by construction: skip 3 foreign-key lookups a game
            self.db.execute("PRAGMA foreign_keys=OFF")  # (these two only settable outside a transaction)
            self.db.execute("PRAGMA threads=2")  # index builds sort on two threads
            fresh = self._set_journal("DELETE")  # refused while another connection is open: stays WAL
        try:
            return self._plan_rows(chunks, fingerprint)
        finally:
            self.db.execute("PRAGMA foreign_keys=ON")
            if fresh:
                self._set_journal("WAL")

    def _set_journal(self, mode: str) -> bool:
        """Switch the journal mode; False if SQLite refused (another connection holds the file)."""
        try:
            return str(self.db.execute(f"PRAGMA journal_mode={mode}").fetchone()[0]).upper() == mode
        except sqlite3.OperationalError:
            return False

    def _plan_rows(self, chunks: Iterable[Sequence[StoreRow]], fingerprint: str | None) -> PlanSummary:
        added = reactivated = dropped = 0
        # seq is the rowid: NULL takes max(seq) + 1, so rows appended in order keep their order
        insert = "INSERT INTO games (id, round, players, seed, versions) VALUES (?, ?, ?, ?, ?)"
        with self.transaction():
            self.set_meta("plan_fingerprint", "")  # cleared first: a crash mid-plan leaves it stale
            if self.db.execute("SELECT 1 FROM games LIMIT 1").fetchone() is None:  # a new league
                # Bulk load: inserting into the two indexes row by row (random game ids) costs
                # twice the load; they are dropped and built again in one sorted pass each, inside
                # this transaction (a crash rolls it all back). A store made before games_id had a
                # name keeps its built-in unique index and loads more slowly.
                dropped_indexes = [sql for name, sql in self.db.execute(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
                    "AND name IN ('games_id', 'games_status')")]
                for name in ("games_id", "games_status"):
                    self.db.execute(f"DROP INDEX IF EXISTS {name}")
                for chunk in chunks:
                    self.db.executemany(insert, chunk)
                    added += len(chunk)
                for sql in dropped_indexes:
                    self.db.execute(sql)
            else:
                stored = {row[0]: (row[1], row[2]) for row in self.db.execute("SELECT id, seq, status FROM games")}
                wanted = set()
                min_reactivated = None
                games: list[StoreRow] = []
                revived = []
                for chunk in chunks:
                    for row in chunk:
                        gid = row[0]
                        wanted.add(gid)
                        have = stored.get(gid)
                        if have is None:
                            games.append(row)
                        elif have[1] == "dropped":
                            revived.append((have[0],))
                            min_reactivated = have[0] if min_reactivated is None else min(min_reactivated, have[0])
                self.db.executemany(insert, games)
                self.db.executemany("UPDATE games SET status = 'pending' WHERE seq = ?", revived)
                gone = [(seq,) for gid, (seq, status) in stored.items() if status == "pending" and gid not in wanted]
                self.db.executemany("UPDATE games SET status = 'dropped' WHERE seq = ?", gone)
                added, reactivated, dropped = len(games), len(revived), len(gone)
                if min_reactivated is not None and min_reactivated <= int(self.get_meta("rated_upto", "0") or 0):
                    self.set_meta("ratings_stale", "1")  # the rated prefix skipped a game that now counts
            if fingerprint:
                self.set_meta("plan_fingerprint", fingerprint)
            counts = dict(self.db.execute("SELECT status, count(*) FROM games GROUP BY status").fetchall())
        return PlanSummary(added, reactivated, dropped, counts.get("pending", 0), counts.get("done", 0))

    def unchanged_plan(self) -> PlanSummary:
        """The summary of a plan that changed nothing (the fingerprint matched): only the totals."""
        counts = self.counts()
        return PlanSummary(0, 0, 0, counts["pending"], counts["done"])

    def pending_games(self) -> list[PendingGame]:
        """Scheduled games not played yet, in canonical order."""
        return list(self.pending_view())

    def pending_view(self, limit: int | None = None) -> PendingView:
        """The pending games in canonical order, read from the store in chunks as they are used:
        a league of millions of pending games starts playing at once (see :class:`PendingView`)."""
        return PendingView(self._pending_after, self.counts()["pending"], limit)

    def _pending_after(self, seq: int, limit: int) -> list[PendingGame]:
        return [PendingGame(g[0], g[1], g[2], g[3], tuple(json.loads(g[4]))) for g in self.db.execute(
            "SELECT seq, id, seed, round, versions FROM games WHERE status = 'pending' AND seq > ? ORDER BY seq LIMIT ?",
            (seq, limit))]

    def drop_all_pending(self) -> int:
        """Mark every pending game dropped (a decided match: its remaining plan is not wanted);
        returns how many. A later plan that wants them again makes them pending again."""
        with self.transaction():
            return self.db.execute("UPDATE games SET status = 'dropped' WHERE status = 'pending'").rowcount

    def add_games(self, rows: Sequence[StoreRow]) -> list[int]:
        """Append scheduled games (the adaptive schedule's rounds, as they are chosen); their seqs, in order."""
        seqs = []
        with self.transaction():
            for row in rows:
                cursor = self.db.execute("INSERT INTO games (id, round, players, seed, versions) VALUES (?, ?, ?, ?, ?)",
                                         row)
                seqs.append(int(cursor.lastrowid or 0))
        return seqs

    def schedule_log(self, after_seq: int = 0) -> Iterator[tuple[int, str, int, str, list[int], list[int] | None]]:
        """Every game after ``after_seq`` in order: (seq, id, round, status, version ids by seat, ranks
        by seat or None until it is done)."""
        ranks: dict[int, list[int]] = {}
        for seq, rank in self.db.execute("SELECT s.game_seq, s.rank FROM seats s JOIN games g ON g.seq = s.game_seq "
                                         "WHERE s.game_seq > ? AND g.status = 'done' ORDER BY s.game_seq, s.seat",
                                         (after_seq,)):
            ranks.setdefault(seq, []).append(rank)
        for seq, game_id, round_, status, versions in self.db.execute(
                "SELECT seq, id, round, status, versions FROM games WHERE seq > ? ORDER BY seq", (after_seq,)):
            yield seq, game_id, round_, status, json.loads(versions or "[]"), ranks.get(seq)

    def drop_pending(self, seqs: Sequence[int]) -> None:
        """Drop these games if they are still pending (a retired version's games)."""
        with self.transaction():
            self.db.executemany("UPDATE games SET status = 'dropped' WHERE seq = ? AND status = 'pending'",
                                [(s,) for s in seqs])

    def last_seq(self) -> int:
        return int(self.db.execute("SELECT coalesce(max(seq), 0) FROM games").fetchone()[0])

    def counts(self) -> dict[str, int]:
        """Number of games per status (a count per status over its range of the status index: at
        1,000,000 games 1.5-2x faster than one GROUP BY, which compares every row's status)."""
        return {s: int(self.db.execute("SELECT count(*) FROM games WHERE status = ?", (s,)).fetchone()[0])
                for s in ("pending", "done", "dropped")}

    def record(self, seq: int, outcome: GameOutcome) -> bool:
        """Record a finished game; False (and nothing written) if it is not pending any more.

        Call inside :meth:`transaction` together with the rating update, or alone (its own transaction).
        """
        return bool(self.record_many([(seq, outcome)]))

    def record_many(self, items: Sequence[tuple[int, GameOutcome]]) -> list[int]:
        """Record the games ``(seq, outcome)`` that are still pending; return their seqs, in the order given.

        The bulk path a writer keeps up with many machines on: a handful of ``executemany``
        statements over all the games (status checked with one SELECT per 900 games) instead of
        five statements a game. Each game is still recorded whole and only while its row is
        pending, so a game delivered twice (Dask's at-least-once) is recorded once; a seq given
        twice, a game no longer pending, or an id that does not match is skipped. The logs go to
        the logs file on its own thread while the results (and the caller's rating update) are
        written here; the transaction's commit, the caller's or this call's, waits for them
        (:mod:`harness.league.logstore`). Runs in the caller's transaction if there is one
        (with the rating update), else in its own.
        """
        if not items:
            return []
        db = self.db
        with self.transaction():
            pending: dict[int, tuple[str, str]] = {}
            seqs = sorted({seq for seq, _ in items})
            for i in range(0, len(seqs), _IN_CHUNK):
                chunk = seqs[i:i + _IN_CHUNK]
                marks = ",".join("?" * len(chunk))
                pending.update((seq, (gid, versions)) for seq, gid, versions in db.execute(
                    f"SELECT seq, id, versions FROM games WHERE status = 'pending' AND seq IN ({marks})", chunk))
            todo: list[tuple[int, GameOutcome, list[int]]] = []
            for seq, outcome in items:
                have = pending.get(seq)
                if have is not None and have[0] == outcome.game_id:
                    del pending[seq]  # a second copy of the same game in this batch is skipped
                    todo.append((seq, outcome, json.loads(have[1])))
            if not todo:
                return []
            log_rows = [(seq, o.game_id, o.log) for seq, o, _ in todo if o.log]
            if log_rows and self.log_budget is not None and self.logs.disk_bytes() >= self.log_budget:
                # past the budget only games with violations keep their logs (the ones someone reads)
                kept = {seq for seq, o, _ in todo if o.violations}
                self.logs_dropped += sum(1 for row in log_rows if row[0] not in kept)
                log_rows = [row for row in log_rows if row[0] in kept]
            if log_rows:  # written while the results and the ratings are; waited for at the commit
                self._logs_in_flight.append(self.logs.submit(log_rows))
            now = _now()
            db.executemany("UPDATE games SET status = 'done', ended_by = ?, decisions = ?, seconds = ?, "
                           "finished_at = ? WHERE seq = ?",
                           [(o.ended_by, o.decisions, o.seconds, now, seq) for seq, o, _ in todo])
            db.executemany("INSERT INTO seats (game_seq, seat, version_id, rank, score, forfeited) "
                           "VALUES (?, ?, ?, ?, ?, ?)",
                           [(seq, seat, versions[seat], rank, _score(score), int(seat in o.forfeits))
                            for seq, o, versions in todo for seat, (rank, score) in enumerate(zip(o.ranking, o.scores))])
            violations = [(seq, v.get("decision"), v.get("seat"), _at(versions, v.get("seat")),
                           str(v.get("kind", "?")), str(v.get("detail", "")), json.dumps(v, default=str))
                          for seq, o, versions in todo for v in o.violations]
            if violations:
                db.executemany("INSERT INTO violations (game_seq, decision, seat, version_id, kind, detail, record) "
                               "VALUES (?, ?, ?, ?, ?, ?, ?)", violations)
        return [seq for seq, _, _ in todo]

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
        sql = "SELECT seq, status, versions FROM games WHERE seq > ? ORDER BY seq"
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
            yield r[0], r[1], seats.get(r[0]) or [(v, None) for v in json.loads(r[2] or "[]")]  # type: ignore[misc]

    def game(self, game_id: str) -> sqlite3.Row | None:
        return self.db.execute("SELECT * FROM games WHERE id = ?", (game_id,)).fetchone()

    def game_seats(self, seq: int) -> list[sqlite3.Row]:
        """Each seat of a game: seat, rank, score, forfeited (None until it is done), name, version, version_id."""
        rows = self.db.execute("SELECT s.seat, s.rank, s.score, s.forfeited, b.name, v.version, v.id AS version_id "
                               "FROM seats s JOIN versions v ON v.id = s.version_id JOIN bots b ON b.id = v.bot_id "
                               "WHERE s.game_seq = ? ORDER BY s.seat", (seq,)).fetchall()
        if rows:
            return rows
        return self.db.execute(  # not finished: the scheduled seats from the games row
            "SELECT CAST(j.key AS INTEGER) AS seat, NULL AS rank, NULL AS score, NULL AS forfeited, b.name, v.version, "
            "v.id AS version_id FROM games g JOIN json_each(g.versions) j JOIN versions v ON v.id = j.value "
            "JOIN bots b ON b.id = v.bot_id WHERE g.seq = ? ORDER BY j.key", (seq,)).fetchall()

    def game_log(self, seq: int) -> list[dict[str, Any]] | None:
        """The log of game ``seq`` (None if it has none: not played, or its logs file is gone)."""
        game = self.db.execute("SELECT id FROM games WHERE seq = ?", (seq,)).fetchone()
        data = self.logs.read(seq, game[0]) if game else None
        if data is None:  # a store written before the logs had a file of their own
            row = self.db.execute("SELECT data FROM logs WHERE game_seq = ?", (seq,)).fetchone()
            data = row[0] if row else None
        return decompress_log(data) if data is not None else None

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

    # -- the rating history's cache (derived data, kept by harness.report.history) -----------------

    def history_cache(self, params: str) -> list[sqlite3.Row]:
        """The cached prefixes fitted with ``params``, fewest games first: games, last_seq, mu, totals."""
        try:
            return self.db.execute("SELECT games, last_seq, mu, totals FROM rating_history WHERE params = ? "
                                   "ORDER BY games", (params,)).fetchall()
        except sqlite3.OperationalError:  # a schema-2 store this process could not migrate
            return []

    def save_history_cache(self, params: str, entries: Sequence[tuple[int, int, bytes | None, bytes | None]],
                           keep: Iterable[int]) -> bool:
        """Store the prefixes ``entries`` (games, last_seq, mu, totals) and drop every other one
        except those of ``keep`` games with the same ``params`` (and older totals when ``entries``
        bring new ones). Best effort: False when the store
        cannot be written (read-only, or busy for more than a second)."""
        keep = sorted({*keep, *(e[0] for e in entries)})
        try:
            self.db.execute("PRAGMA busy_timeout=1000")
            with self.transaction():
                self.db.execute(f"DELETE FROM rating_history WHERE params != ? OR games NOT IN "
                                f"({','.join('?' * len(keep))})", [params, *keep])
                if any(e[3] is not None for e in entries):  # one set of totals: the newest
                    self.db.execute("UPDATE rating_history SET totals = NULL WHERE totals IS NOT NULL")
                self.db.executemany("INSERT OR REPLACE INTO rating_history (games, last_seq, params, mu, totals) "
                                    "VALUES (?, ?, ?, ?, ?)", [(n, last, params, mu, totals)
                                                               for n, last, mu, totals in entries])
            return True
        except sqlite3.OperationalError:
            return False
        finally:
            self.db.execute("PRAGMA busy_timeout=30000")

    def clear_ratings(self) -> None:
        self.db.execute("DELETE FROM ratings")
        self.set_meta("rated_upto", "0")
        self.db.execute("DELETE FROM meta WHERE key = 'ratings_stale'")


#: SQLite's default limit on bound parameters is 32766; stay well below it per IN (...) query.
_IN_CHUNK = 900


def _at(versions: list[int], seat: Any) -> int | None:
    """The version at ``seat`` (None for a violation not tied to a seat)."""
    return versions[seat] if isinstance(seat, int) and 0 <= seat < len(versions) else None


def _score(score: Any) -> Any:
    return score if isinstance(score, (int, float)) and not isinstance(score, bool) else json.dumps(score)
