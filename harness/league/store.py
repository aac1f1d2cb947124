"""The league store: one SQLite file per league, the source of truth for results.

The tables, their schema and its migrations: :mod:`harness.league.store_schema`; opening the file,
transactions and the meta table: :mod:`harness.league.store_base`; a game's log lines, capped and
compressed: :mod:`harness.league.logcodec`.

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from harness.league.config import BotEntry, LeagueConfig
from harness.league.logcodec import cap_log, compress_log, decompress_log
from harness.league.schedule_roundrobin import ScheduledGame, StoreRow, deal_seed, planned_chunks, schedule_fingerprint
from harness.league.store_base import StoreBase, StoreError, utc_now
from harness.league.store_pending import PendingGame, PendingView
from harness.league.store_record import GameOutcome, still_pending, write_results
from harness.league.store_rows import GAME_COLUMNS, GameRow, HistoryEntry, SeatRow, StoredViolation, ViolationRow
from harness.league.store_schema import SCHEMA_VERSION
from harness.play.violations import Violation

__all__ = ["LeagueStore", "GameOutcome", "PendingGame", "PendingView", "PlanSummary", "VersionRow", "StoreError", "SCHEMA_VERSION",
           "compress_log", "cap_log", "decompress_log"]


class VersionRow(NamedTuple):
    """A bot version as the store keeps it (``command`` and ``files`` are JSON lists)."""

    id: int
    name: str
    version: str
    command: str
    cwd: str | None
    files: str
    created_at: str

    @property
    def label(self) -> str:
        """``name@version``, as tables and pages show a version."""
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class PlanSummary:
    """What :meth:`LeagueStore.plan` did: games added, reactivated and dropped, and the totals now."""

    added: int
    reactivated: int
    dropped: int
    pending: int
    done: int


class LeagueStore(StoreBase):
    """An open league store. Use as a context manager, or call :meth:`close`."""

    # -- the league ------------------------------------------------------------------------

    def deal_secret(self) -> str | None:
        """The league's deal secret (None only in a store made before secrets existed)."""
        return self.get_meta("deal_secret")

    def id_key(self) -> str | None:
        """The key of this store's game ids: its deal secret where they are keyed (every store made
        since ids are opaque), None where they are the public hashes of an older store."""
        return self.deal_secret() if self.get_meta("game_ids") == "keyed" else None

    def adopt_deal_secret(self, seed_of: Callable[[str, int, list[str], list[str]], int], rule: str) -> int:
        """Give a store made before deal secrets one, and re-seed the deals the rule ``rule`` (the
        config's ``deals``) no longer deals, where that can still be done.

        ``seed_of(secret, round, bot names, bot labels)`` is the seed of a deal under ``rule``.
        When the store gets its secret or its deal rule changes (a store made before deals were
        per version), every game not finished gets that seed, unless a finished game with its
        seed was played by the same versions: a deal already (partly) played keeps its seed, so
        the seat orders of a duplicate set stay one deal, but a version never inherits a deal
        another version played. Returns how many games were re-seeded.
        """
        with self.transaction():
            secret = self.deal_secret()
            if secret and self.get_meta("deal_rule", "per_bot") == rule:
                return 0
            if not secret:
                secret = secrets.token_hex(32)
                self.set_meta("deal_secret", secret)
            self.set_meta("deal_rule", rule)
            rows = self.db.execute("SELECT v.id, b.name, v.version FROM versions v JOIN bots b ON b.id = v.bot_id")
            who = {vid: (name, f"{name}@{version}") for vid, name, version in rows}
            played = {(seed, tuple(sorted(json.loads(versions or "[]")))) for seed, versions in self.db.execute(
                "SELECT DISTINCT seed, versions FROM games WHERE status = 'done'")}
            updates = []
            for seq, round_, versions, seed in self.db.execute(
                    "SELECT seq, round, versions, seed FROM games WHERE status != 'done'").fetchall():
                at_table = json.loads(versions or "[]")
                if at_table and (seed, tuple(sorted(at_table))) not in played:
                    new = seed_of(secret, round_, [who[v][0] for v in at_table], [who[v][1] for v in at_table])
                    if new != seed:
                        updates.append((new, seq))
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

    def bind_league(self, config: LeagueConfig) -> dict[str, int]:
        """:meth:`bind` the store to ``config``'s league and register its bots' versions: their ids."""
        self.bind(config)
        return self.register_versions(config.bots)

    def plan_round_robin(self, config: LeagueConfig, version_ids: dict[str, int]) -> PlanSummary:
        """Bring ``config``'s round robin up to date in the store (nothing to do when its
        fingerprint is unchanged), with the deal secret and the deal rule adopted first."""
        self.adopt_deal_secret(lambda secret, round_, names, labels: deal_seed(
            config.name, config.seed, round_, labels if config.deals_per_version else names, secret), config.deals)
        fingerprint = schedule_fingerprint(config)
        if self.planned_fingerprint() == fingerprint:  # planned before with this very schedule
            return self.unchanged_plan()
        return self.plan_rows(planned_chunks(config, version_ids, self.deal_secret(), self.id_key()), fingerprint)

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
                    (bot_id, b.version, json.dumps(list(b.command)), b.cwd, json.dumps(list(b.files)), utc_now()))
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
        :func:`harness.league.schedule_roundrobin.schedule_chunks` makes them), and remember ``fingerprint``.

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

    def drop_pending_outside(self, id_prefix: str) -> int:
        """Drop every pending game whose id does not start with ``id_prefix`` (another schedule's
        games, when a league turns adaptive); returns how many."""
        return self.db.execute("UPDATE games SET status = 'dropped' WHERE status = 'pending' AND id NOT LIKE ?",
                               (f"{id_prefix}%",)).rowcount

    def bot_name(self, version_id: int) -> str | None:
        """The name of the bot of version ``version_id``, or None if there is none."""
        row = self.db.execute("SELECT b.name FROM versions v JOIN bots b ON b.id = v.bot_id WHERE v.id = ?",
                              (version_id,)).fetchone()
        return None if row is None else str(row[0])

    def game_status(self, seq: int) -> str | None:
        """The status of game ``seq`` (pending, done, dropped), or None if there is none."""
        row = self.db.execute("SELECT status FROM games WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else str(row[0])

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
        with self.transaction():
            todo = still_pending(self.db, items)
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
            write_results(self.db, todo, utc_now())
        return [seq for seq, _, _ in todo]

    # -- reading ---------------------------------------------------------------------------

    def versions(self) -> list[VersionRow]:
        """Every bot version, in registration order."""
        cursor = self.db.execute("SELECT v.id, b.name, v.version, v.command, v.cwd, v.files, v.created_at "
                                 "FROM versions v JOIN bots b ON b.id = v.bot_id ORDER BY v.id")
        return [VersionRow(*row) for row in cursor]

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

    def _tuples(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        """A cursor over ``sql``'s rows (plain tuples: the connection has no row factory), to be made into typed rows."""
        return self.db.execute(sql, args)

    def game(self, game_id: str) -> GameRow | None:
        """The game ``game_id`` as its row keeps it, or None if there is none."""
        row = self._tuples(f"SELECT {GAME_COLUMNS} FROM games WHERE id = ?", (game_id,)).fetchone()
        return GameRow(*row) if row else None

    def game_seats(self, seq: int) -> list[SeatRow]:
        """Each seat of a game: seat, rank, score, forfeited (None until it is done), name, version, version_id."""
        rows = [SeatRow(*r) for r in self._tuples(
            "SELECT s.seat, s.rank, s.score, s.forfeited, b.name, v.version, v.id FROM seats s "
            "JOIN versions v ON v.id = s.version_id JOIN bots b ON b.id = v.bot_id WHERE s.game_seq = ? ORDER BY s.seat",
            (seq,))]
        if rows:
            return rows
        return [SeatRow(*r) for r in self._tuples(  # not finished: the scheduled seats from the games row
            "SELECT CAST(j.key AS INTEGER), NULL, NULL, NULL, b.name, v.version, v.id FROM games g "
            "JOIN json_each(g.versions) j JOIN versions v ON v.id = j.value "
            "JOIN bots b ON b.id = v.bot_id WHERE g.seq = ? ORDER BY j.key", (seq,))]

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
                   game_seq: int | None = None) -> list[ViolationRow]:
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
        return [ViolationRow(*r) for r in self._tuples(sql + " ORDER BY x.id", args)]

    def violation(self, violation_id: int) -> tuple[StoredViolation, Violation] | None:
        """One violation row and its full record (its ``record`` parsed: what the referee recorded)."""
        row = self._tuples(
            "SELECT x.id, x.decision, x.seat, x.kind, x.detail, x.record, x.game_seq, g.id AS game_id, g.seed, "
            "b.name, v.version, v.command, v.cwd FROM violations x JOIN games g ON g.seq = x.game_seq "
            "LEFT JOIN versions v ON v.id = x.version_id LEFT JOIN bots b ON b.id = v.bot_id WHERE x.id = ?",
            (violation_id,)).fetchone()
        if row is None:
            return None
        found = StoredViolation(*row)
        return found, json.loads(found.record)

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

    def history_cache(self, params: str) -> list[HistoryEntry]:
        """The cached prefixes fitted with ``params``, fewest games first: games, last_seq, mu, totals."""
        try:
            return [HistoryEntry(*r) for r in self._tuples("SELECT games, last_seq, mu, totals FROM rating_history "
                                                           "WHERE params = ? ORDER BY games", (params,))]
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

