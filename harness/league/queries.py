"""Read-only queries on a league store for the reports, the statistics and matches.

With :mod:`harness.league.store` (which owns the schema, writing, and the reads the runner and
the command line need) this module holds every SQL statement of the harness: a schema change
touches these two files. Each function returns rows (``sqlite3.Row``, addressable by column
name) or plain values; none writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from typing import TYPE_CHECKING

from harness.league.store import LeagueStore

if TYPE_CHECKING:
    import numpy as np

    from harness.league.ratings_fit import TableBatch

__all__ = ["done_games", "done_seats", "done_table_batches", "finished_rounds", "games_of_version", "latest_games",
           "scheduled_seating", "violation_count", "versions_of_bot", "version_labels", "done_games_page", "games_by_seq",
           "latest_seqs_of_versions", "violations_of_versions", "pair_ranks", "seat_totals", "read_snapshot",
           "done_results_after", "done_count_after", "first_pending_seq", "latest_violations", "seats_of_games"]


def done_seats(store: LeagueStore) -> Iterator[tuple[int, int, int, int, int, float | None]]:
    """Every seat of every finished game in schedule order (one query):
    ``(seq, round, seed, version_id, rank, score)``, seats of one game together, by seat."""
    yield from store.db.execute(
        "SELECT g.seq, g.round, g.seed, s.version_id, s.rank, s.score FROM games g JOIN seats s "
        "ON s.game_seq = g.seq WHERE g.status = 'done' ORDER BY g.seq, s.seat")


def done_table_batches(store: LeagueStore) -> list[TableBatch]:
    """Every finished game as arrays, one :class:`~harness.league.ratings_fit.TableBatch` per
    table size (smallest first, games in schedule order): version ids and ranks by seat, and the
    game's duplicate set, one integer per (round, deal seed).

    The table's fit reads this instead of one Python object per game: two scans in one read
    transaction (a consistent snapshot while a writer records games), the finished games'
    (seq, round, seed) and every seat packed into one integer by SQL, each flattened straight
    into an int64 array by ``np.fromiter`` and grouped with numpy, no Python loop over games.
    Scanning the seats table in its key order and matching the games in numpy took 0.8 s at
    300,000 games where the join of the two took 1.0 s (bench/table.py)."""
    import numpy as np  # here: numpy costs ~0.1 s to import, and most readers of this module need none

    from harness.league.ratings_fit import TableBatch

    cursor = store.db.cursor()
    cursor.row_factory = None  # plain tuples: a sqlite3.Row per row costs more than its values
    own = not store.db.in_transaction
    if own:
        cursor.execute("BEGIN")
    try:
        games = np.fromiter(chain.from_iterable(cursor.execute(
            "SELECT seq, round, seed FROM games WHERE status = 'done' ORDER BY seq")), dtype=np.int64).reshape(-1, 3)
        # a seat as (game seq, version id << 16 | rank << 8 | seat): ranks and seats are below 256
        seats = np.fromiter(chain.from_iterable(cursor.execute(
            "SELECT game_seq, (version_id << 16) | (ifnull(rank, 255) << 8) | seat FROM seats "
            "ORDER BY game_seq, seat")), dtype=np.int64).reshape(-1, 2)
    finally:
        if own:
            cursor.execute("COMMIT")
    if not len(games):
        return []
    at = np.minimum(np.searchsorted(games[:, 0], seats[:, 0]), len(games) - 1)
    seats = seats[games[at, 0] == seats[:, 0]]  # the seats of finished games only
    starts = np.flatnonzero(np.diff(seats[:, 0], prepend=-1))  # a game's seats come together
    sizes = np.diff(np.append(starts, len(seats)))
    version, rank = seats[:, 1] >> 16, (seats[:, 1] >> 8) & 255
    # the duplicate set: one integer per distinct (round, seed), numbered in sorted order
    game_at = np.searchsorted(games[:, 0], seats[starts, 0])
    round_, seed = games[game_at, 1], games[game_at, 2]
    order = np.lexsort((seed, round_))
    new = np.ones(len(order), dtype=bool)
    new[1:] = (np.diff(round_[order]) != 0) | (np.diff(seed[order]) != 0)
    sets = np.empty(len(order), dtype=np.int64)
    sets[order] = np.cumsum(new) - 1
    batches = []
    for size in np.unique(sizes).tolist():
        mine = np.flatnonzero(sizes == size)
        at_seat = starts[mine][:, None] + np.arange(size)
        batches.append(TableBatch(version[at_seat], rank[at_seat], sets[mine]))
    return batches


def done_games(store: LeagueStore) -> list[sqlite3.Row]:
    """The finished games in schedule order: seq, id, round, seed, players, ended_by, decisions, seconds.

    The game rows themselves are small (~100 bytes); read their seats and logs one game at a time."""
    return store.db.execute("SELECT seq, id, round, seed, players, ended_by, decisions, seconds FROM games "
                            "WHERE status = 'done' ORDER BY seq").fetchall()


def latest_games(store: LeagueStore, limit: int, version_id: int | None = None) -> list[sqlite3.Row]:
    """The last ``limit`` finished games (of ``version_id``, if given), latest first: seq, id, round, ended_by."""
    if version_id is None:
        return store.db.execute("SELECT seq, id, round, ended_by FROM games WHERE status = 'done' "
                                "ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
    return store.db.execute(
        "SELECT g.seq, g.id, g.round, g.ended_by FROM games g JOIN seats s ON s.game_seq = g.seq "
        "WHERE g.status = 'done' AND s.version_id = ? ORDER BY g.seq DESC LIMIT ?", (version_id, limit)).fetchall()


def games_of_version(store: LeagueStore, version_id: int) -> int:
    """How many finished games ``version_id`` played."""
    return int(store.db.execute("SELECT count(*) FROM seats s JOIN games g ON g.seq = s.game_seq "
                                "WHERE g.status = 'done' AND s.version_id = ?", (version_id,)).fetchone()[0])


def violation_count(store: LeagueStore) -> int:
    """Violations in the whole league."""
    return int(store.db.execute("SELECT count(*) FROM violations").fetchone()[0])


def finished_rounds(store: LeagueStore) -> list[tuple[int, int]]:
    """``(seq, round)`` of every finished game, in schedule order."""
    return [(r[0], r[1]) for r in store.db.execute("SELECT seq, round FROM games WHERE status = 'done' ORDER BY seq")]


def scheduled_seating(store: LeagueStore, seq: int) -> tuple[int, list[int]]:
    """Game ``seq``'s round and version ids by seat, from its planned row: visible to another reader
    while the writer's transaction recording the game is still open (its seat rows are not)."""
    round_, versions = store.db.execute("SELECT round, versions FROM games WHERE seq = ?", (seq,)).fetchone()
    return int(round_), list(json.loads(versions))


# -- for a league whose bots come and go (the contest's ladder): each read bounded by an index --------


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


def versions_of_bot(store: LeagueStore, name: str) -> list[int]:
    """Every version id of the bot ``name``."""
    return [r[0] for r in store.db.execute("SELECT v.id FROM versions v JOIN bots b ON b.id = v.bot_id "
                                           "WHERE b.name = ?", (name,))]


def version_labels(store: LeagueStore, version_ids: Sequence[int]) -> dict[int, str]:
    """``{version id: version}`` for ``version_ids``."""
    if not version_ids:
        return {}
    return {r[0]: r[1] for r in store.db.execute(f"SELECT id, version FROM versions WHERE id IN "
                                                 f"({_marks(version_ids)})", list(version_ids))}


def done_games_page(store: LeagueStore, limit: int, before: int | None = None) -> list[sqlite3.Row]:
    """Finished games latest first, ``limit`` of them before seq ``before``: seq, id, round, ended_by, finished_at."""
    sql = "SELECT seq, id, round, ended_by, finished_at FROM games WHERE status = 'done'"
    args: list[object] = []
    if before is not None:
        sql += " AND seq < ?"
        args.append(before)
    return store.db.execute(sql + " ORDER BY seq DESC LIMIT ?", [*args, limit]).fetchall()


def games_by_seq(store: LeagueStore, seqs: Sequence[int]) -> list[sqlite3.Row]:
    """The games ``seqs``, latest first: seq, id, round, ended_by, finished_at."""
    if not seqs:
        return []
    return store.db.execute(f"SELECT seq, id, round, ended_by, finished_at FROM games WHERE seq IN ({_marks(seqs)}) "
                            f"ORDER BY seq DESC", list(seqs)).fetchall()


def latest_seqs_of_versions(store: LeagueStore, version_ids: Sequence[int], limit: int) -> list[int]:
    """The last ``limit`` finished games with a seat of one of ``version_ids`` (seqs, latest first)."""
    if not version_ids:
        return []
    return [r[0] for r in store.db.execute(f"SELECT DISTINCT game_seq FROM seats WHERE version_id IN "
                                           f"({_marks(version_ids)}) ORDER BY game_seq DESC LIMIT ?",
                                           [*version_ids, limit])]


def violations_of_versions(store: LeagueStore, version_ids: Sequence[int], limit: int) -> list[sqlite3.Row]:
    """The last ``limit`` violations of ``version_ids``: id, decision, seat, kind, detail, game_id, version."""
    if not version_ids:
        return []
    return store.db.execute(
        f"SELECT x.id, x.decision, x.seat, x.kind, x.detail, g.id AS game_id, v.version FROM violations x "
        f"JOIN games g ON g.seq = x.game_seq JOIN versions v ON v.id = x.version_id "
        f"WHERE x.version_id IN ({_marks(version_ids)}) ORDER BY x.id DESC LIMIT ?", [*version_ids, limit]).fetchall()


def pair_ranks(store: LeagueStore, a_ids: Sequence[int], b_ids: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(seq, rank of a, rank of b)`` of every finished game with a seat of ``a_ids`` and one of ``b_ids``, latest first."""
    if not a_ids or not b_ids:
        return []
    return [(r[0], r[1], r[2]) for r in store.db.execute(
        f"SELECT a.game_seq, a.rank, b.rank FROM seats a JOIN seats b ON b.game_seq = a.game_seq "
        f"WHERE a.version_id IN ({_marks(a_ids)}) AND b.version_id IN ({_marks(b_ids)}) ORDER BY a.game_seq DESC",
        [*a_ids, *b_ids])]


def seat_totals(store: LeagueStore, seqs: Sequence[int] | None = None) -> tuple[dict[int, list[int]], set[int]]:
    """Per version, ``[games, wins, rank sum, forfeits, violations]`` over the finished games ``seqs``
    (None: all of them), and the seqs found finished (a game recorded in a transaction not yet
    committed is not found)."""
    totals: dict[int, list[int]] = {}
    found: set[int] = set()
    if seqs is None:
        for vid, n, w, r, f in store.db.execute("SELECT version_id, count(rank), sum(rank = 0), sum(rank), "
                                                "sum(forfeited) FROM seats GROUP BY version_id"):
            totals[vid] = [n, w, r or 0, f or 0, 0]
        for vid, n in store.db.execute("SELECT version_id, count(*) FROM violations WHERE version_id IS NOT NULL "
                                       "GROUP BY version_id"):
            totals.setdefault(vid, [0, 0, 0, 0, 0])[4] = n
        return totals, found
    for i in range(0, len(seqs), 900):
        chunk = list(seqs[i:i + 900])
        for seq, vid, rank, forfeited in store.db.execute(f"SELECT game_seq, version_id, rank, forfeited FROM seats "
                                                          f"WHERE game_seq IN ({_marks(chunk)})", chunk):
            found.add(seq)
            t = totals.setdefault(vid, [0, 0, 0, 0, 0])
            t[0] += 1
            t[1] += int(rank == 0)
            t[2] += int(rank or 0)
            t[3] += int(forfeited or 0)
        for vid, n in store.db.execute(f"SELECT version_id, count(*) FROM violations WHERE game_seq IN "
                                       f"({_marks(chunk)}) AND version_id IS NOT NULL GROUP BY version_id", chunk):
            totals.setdefault(vid, [0, 0, 0, 0, 0])[4] += n
    return totals, found


# -- the rating history (harness.report.history): finished games after a point, as arrays -----------


@contextmanager
def read_snapshot(store: LeagueStore) -> Iterator[None]:
    """Reads inside see one state of the store while a writer records games (a read transaction;
    inside the caller's transaction if there is one)."""
    if store.db.in_transaction:
        yield
        return
    store.db.execute("BEGIN")
    try:
        yield
    finally:
        store.db.execute("COMMIT")


def done_results_after(store: LeagueStore, after_seq: int = 0) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The finished games with a seq above ``after_seq``, per table size (smallest first), in
    schedule order: ``(seqs (G,), version ids by seat (G x n), ranks by seat (G x n))``. As
    :func:`done_table_batches` reads them (two range scans, one integer per seat, numpy)."""
    import numpy as np

    cursor = store.db.cursor()
    cursor.row_factory = None
    with read_snapshot(store):
        seqs = np.fromiter(chain.from_iterable(cursor.execute(
            "SELECT seq FROM games WHERE status = 'done' AND seq > ? ORDER BY seq", (after_seq,))), dtype=np.int64)
        seats = np.fromiter(chain.from_iterable(cursor.execute(
            "SELECT game_seq, (version_id << 8) | ifnull(rank, 255) FROM seats WHERE game_seq > ? "
            "ORDER BY game_seq, seat", (after_seq,))), dtype=np.int64).reshape(-1, 2)
    if not len(seqs):
        return []
    at = np.minimum(np.searchsorted(seqs, seats[:, 0]), len(seqs) - 1)
    seats = seats[seqs[at] == seats[:, 0]]  # the seats of finished games only
    starts = np.flatnonzero(np.diff(seats[:, 0], prepend=-1))
    sizes = np.diff(np.append(starts, len(seats)))
    out = []
    for size in np.unique(sizes).tolist():
        mine = starts[sizes == size]
        at_seat = mine[:, None] + np.arange(size)
        out.append((seats[mine, 0], seats[at_seat, 1] >> 8, seats[at_seat, 1] & 255))
    return out


def done_count_after(store: LeagueStore, seq: int) -> int:
    """How many finished games have a seq above ``seq`` (0: every finished game)."""
    return int(store.db.execute("SELECT count(*) FROM games WHERE status = 'done' AND seq > ?", (seq,)).fetchone()[0])


def first_pending_seq(store: LeagueStore) -> int | None:
    """The lowest seq of a game not played yet (None: none is pending)."""
    row = store.db.execute("SELECT min(seq) FROM games WHERE status = 'pending'").fetchone()
    return None if row[0] is None else int(row[0])


def latest_violations(store: LeagueStore, limit: int, version_id: int | None = None) -> list[sqlite3.Row]:
    """The last ``limit`` violations (of ``version_id``, if given), latest first: id, decision,
    seat, kind, detail, game_id, name, version."""
    sql = ("SELECT x.id, x.decision, x.seat, x.kind, x.detail, g.id AS game_id, b.name, v.version "
           "FROM violations x JOIN games g ON g.seq = x.game_seq "
           "LEFT JOIN versions v ON v.id = x.version_id LEFT JOIN bots b ON b.id = v.bot_id")
    if version_id is None:
        return store.db.execute(sql + " ORDER BY x.id DESC LIMIT ?", (limit,)).fetchall()
    return store.db.execute(sql + " WHERE x.version_id = ? ORDER BY x.id DESC LIMIT ?", (version_id, limit)).fetchall()


def seats_of_games(store: LeagueStore, seqs: Sequence[int]) -> dict[int, list[sqlite3.Row]]:
    """The seats of the finished games ``seqs`` (one query per 900 games, where
    :meth:`LeagueStore.game_seats` takes one per game): seq -> [seat, rank, score, forfeited,
    name, version, version_id by seat]."""
    out: dict[int, list[sqlite3.Row]] = {}
    for i in range(0, len(seqs), 900):
        chunk = list(seqs[i:i + 900])
        for row in store.db.execute(
                f"SELECT s.game_seq, s.seat, s.rank, s.score, s.forfeited, b.name, v.version, v.id AS version_id "
                f"FROM seats s JOIN versions v ON v.id = s.version_id JOIN bots b ON b.id = v.bot_id "
                f"WHERE s.game_seq IN ({_marks(chunk)}) ORDER BY s.game_seq, s.seat", chunk):
            out.setdefault(row["game_seq"], []).append(row)
    return out
