"""Read-only queries on a league store for the reports, the statistics and matches.

With :mod:`harness.league.store` (which owns the schema, writing, and the reads the runner and
the command line need) this module holds every SQL statement of the harness: a schema change
touches these two files. Each function returns typed rows (the ``NamedTuple``s of
:mod:`harness.league.store_rows`, a column an attribute) or plain values; none writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

from harness.league.store import LeagueStore
from harness.league.store_rows import GAME_COLUMNS, GamePage, GameRow, GameSeatRow, ViolationRow

if TYPE_CHECKING:
    import numpy as np

    from harness.league.ratings_fit import TableBatch

__all__ = ["GameArrays", "done_games", "done_game_arrays", "done_seats", "done_table_batches", "table_batches",
           "ScheduleArrays", "schedule_arrays", "finished_rounds", "games_of_version", "latest_games",
           "scheduled_seating", "violation_count", "versions_of_bot", "version_labels", "done_games_page", "games_by_seq",
           "latest_seqs_of_versions", "violations_of_versions", "pair_ranks", "seat_totals", "read_snapshot",
           "done_results_after", "done_count_after", "pending_count", "done_count_upto", "pairs_ahead", "first_pending_seq", "latest_violations", "seats_of_games",
           "game_arrays_of", "done_seqs_after", "done_among", "open_seqs_between", "violations_after",
           "PairGame", "pair_games"]


@dataclass(frozen=True, eq=False)
class GameArrays:
    """Finished games of one table size as arrays: by seat (G x n) version ids, ranks (0 =
    first) and scores; by game (G,) seq, round and deal seed. Compared and hashed by identity
    (what is derived from one, such as its duplicate sets, can be kept with it); do not change
    its arrays in place."""

    versions: np.ndarray
    ranks: np.ndarray
    scores: np.ndarray
    seqs: np.ndarray
    rounds: np.ndarray
    seeds: np.ndarray


def done_seats(store: LeagueStore) -> Iterator[tuple[int, int, int, int, int, float | None]]:
    """Every seat of every finished game in schedule order (one query):
    ``(seq, round, seed, version_id, rank, score)``, seats of one game together, by seat."""
    yield from _tuples(store, "SELECT g.seq, g.round, g.seed, s.version_id, s.rank, s.score FROM games g "
                              "JOIN seats s ON s.game_seq = g.seq WHERE g.status = 'done' ORDER BY g.seq, s.seat")


def done_game_arrays(store: LeagueStore) -> list[GameArrays]:
    """Every finished game as arrays, one :class:`GameArrays` per table size (smallest first,
    games in schedule order): version ids, ranks (0 = first) and scores by seat, and each game's
    seq, round and deal seed.

    Two scans in one read transaction (a consistent snapshot while a writer records games), the
    finished games' (seq, round, seed) and every seat packed by SQL into (game seq, version id,
    rank and seat in one integer, score), each flattened straight into an array by ``np.fromiter``
    and grouped with numpy, no Python loop over games. Scanning the seats table in its key order
    and matching the games in numpy took 0.8 s at 300,000 games where the join of the two took
    1.0 s (bench/table.py)."""
    import numpy as np  # here: numpy costs ~0.1 s to import, and most readers of this module need none

    cursor = store.db.cursor()
    with read_snapshot(store):
        games = np.fromiter(chain.from_iterable(cursor.execute(
            "SELECT seq, round, seed FROM games WHERE status = 'done' ORDER BY seq")), dtype=np.int64).reshape(-1, 3)
        # a seat as (game seq, version id << 16 | rank << 8 | seat, score): ranks and seats are
        # below 256, and every value is exact in a float64 (integers below 2^53)
        seats = np.fromiter(chain.from_iterable(cursor.execute(
            "SELECT game_seq, (version_id << 16) | (ifnull(rank, 255) << 8) | seat, ifnull(score, 0) FROM seats "
            "ORDER BY game_seq, seat")), dtype=np.float64).reshape(-1, 3)
    return _grouped(games, seats)


def _grouped(games: np.ndarray, seats: np.ndarray) -> list[GameArrays]:
    """Games (seq, round, seed) sorted by seq and seats (seq, packed, score) sorted by (seq, seat),
    as :class:`GameArrays` per table size; seats of games not in ``games`` are left out."""
    import numpy as np

    if not len(games) or not len(seats):
        return []
    seq, packed, score = seats[:, 0].astype(np.int64), seats[:, 1].astype(np.int64), seats[:, 2]
    at = np.minimum(np.searchsorted(games[:, 0], seq), len(games) - 1)
    finished = games[at, 0] == seq  # the seats of finished games only
    seq, packed, score = seq[finished], packed[finished], score[finished]
    starts = np.flatnonzero(np.diff(seq, prepend=-1))  # a game's seats come together
    sizes = np.diff(np.append(starts, len(seq)))
    version, rank = packed >> 16, (packed >> 8) & 255
    game = games[np.searchsorted(games[:, 0], seq[starts])]
    out = []
    for size in np.unique(sizes).tolist():
        mine = np.flatnonzero(sizes == size)
        at_seat = starts[mine][:, None] + np.arange(size)
        out.append(GameArrays(version[at_seat], rank[at_seat], score[at_seat], game[mine, 0], game[mine, 1],
                              game[mine, 2]))
    return out


def game_arrays_of(store: LeagueStore, seqs: Sequence[int]) -> list[GameArrays]:
    """The finished games among ``seqs`` as :func:`done_game_arrays` gives them (one query per
    900 games: for the few games recorded since a reader last looked)."""
    import numpy as np

    wanted = sorted(set(seqs))
    cursor = store.db.cursor()
    games: list[tuple[int, int, int]] = []
    seats: list[tuple[float, float, float]] = []
    with read_snapshot(store):
        for i in range(0, len(wanted), 900):
            chunk = wanted[i:i + 900]
            games += cursor.execute(f"SELECT seq, round, seed FROM games WHERE status = 'done' AND seq IN "
                                    f"({_marks(chunk)}) ORDER BY seq", chunk).fetchall()
            seats += cursor.execute(f"SELECT game_seq, (version_id << 16) | (ifnull(rank, 255) << 8) | seat, "
                                    f"ifnull(score, 0) FROM seats WHERE game_seq IN ({_marks(chunk)}) "
                                    f"ORDER BY game_seq, seat", chunk).fetchall()
    return _grouped(np.array(games, dtype=np.int64).reshape(-1, 3), np.array(seats, dtype=np.float64).reshape(-1, 3))


def done_seqs_after(store: LeagueStore, after_seq: int) -> list[int]:
    """The seqs of the finished games after ``after_seq`` (a range of the status index)."""
    return [r[0] for r in store.db.execute("SELECT seq FROM games WHERE status = 'done' AND seq > ? ORDER BY seq",
                                           (after_seq,))]


def done_among(store: LeagueStore, seqs: Sequence[int]) -> list[int]:
    """Which of ``seqs`` are finished games."""
    out: list[int] = []
    for i in range(0, len(seqs), 900):
        chunk = list(seqs[i:i + 900])
        out += [r[0] for r in store.db.execute(f"SELECT seq FROM games WHERE status = 'done' AND seq IN "
                                               f"({_marks(chunk)})", chunk)]
    return out


def open_seqs_between(store: LeagueStore, after_seq: int, upto_seq: int) -> list[int]:
    """The games not finished (pending or dropped) with ``after_seq < seq <= upto_seq``."""
    return [r[0] for r in store.db.execute("SELECT seq FROM games WHERE seq > ? AND seq <= ? AND status != 'done'",
                                           (after_seq, upto_seq))]


def violations_after(store: LeagueStore, after_id: int) -> tuple[dict[int, int], int]:
    """Per version, the violations with an id above ``after_id``, and the highest id (``after_id``
    if none)."""
    counts: dict[int, int] = {}
    last = after_id
    for vid, n, top in store.db.execute("SELECT version_id, count(*), max(id) FROM violations WHERE id > ? "
                                        "GROUP BY version_id", (after_id,)):
        counts[vid] = n
        last = max(last, int(top))
    return counts, last


def table_batches(tables: Sequence[GameArrays]) -> list[TableBatch]:
    """The fit's input from :func:`done_game_arrays`: per table size, versions and ranks by seat
    and each game's duplicate set, one integer per distinct (round, deal seed) over all sizes,
    numbered in sorted order."""
    import numpy as np

    from harness.league.ratings_fit import TableBatch

    if not tables:
        return []
    round_ = np.concatenate([t.rounds for t in tables])
    seed = np.concatenate([t.seeds for t in tables])
    order = np.lexsort((seed, round_))
    new = np.ones(len(order), dtype=bool)
    new[1:] = (np.diff(round_[order]) != 0) | (np.diff(seed[order]) != 0)
    sets = np.empty(len(order), dtype=np.int64)
    sets[order] = np.cumsum(new) - 1
    bounds = np.cumsum([0] + [len(t.rounds) for t in tables])
    return [TableBatch(t.versions, t.ranks, sets[bounds[i]:bounds[i + 1]]) for i, t in enumerate(tables)]


def done_table_batches(store: LeagueStore) -> list[TableBatch]:
    """Every finished game as the fit's input (:func:`table_batches` of :func:`done_game_arrays`):
    one :class:`~harness.league.ratings_fit.TableBatch` per table size (smallest first, games in
    schedule order), version ids and ranks by seat, and the game's duplicate set, one integer per
    (round, deal seed). The table's fit reads this instead of one Python object per game."""
    return table_batches(done_game_arrays(store))


class ScheduleArrays(NamedTuple):
    """Every game of a store not dropped, in schedule order, as arrays (see :func:`schedule_arrays`)."""

    seq: np.ndarray  # (games,) int64
    round: np.ndarray  # (games,) int64
    tagged: np.ndarray  # (games,) bool: the game's id starts with the prefix asked for
    done: np.ndarray  # (games,) bool: finished, its seats recorded
    players: np.ndarray  # (games,) int64: its seats (a game's seats follow the previous game's)
    versions: np.ndarray  # (seats,) int64: version ids by seat, game after game (every game)
    ranks: np.ndarray  # (seats,) int64: rank by seat (-1 in a game not done)


def schedule_arrays(store: LeagueStore, id_prefix: str) -> ScheduleArrays:
    """The store's schedule log as arrays: every game not dropped (pending or done), in schedule
    order, with its seats' versions and, once done, ranks; ``tagged`` marks the games whose id
    starts with ``id_prefix`` (a schedule's own games).

    What :meth:`~harness.league.store.LeagueStore.schedule_log` gives one game at a time, read as
    :func:`done_table_batches` reads the finished games: in one read transaction, the seats of
    finished games scanned in their key order with each seat packed into one integer by SQL and
    flattened by ``np.fromiter``; only the games not finished (a few rounds at most) have their
    seats parsed from their JSON ``versions``."""
    import numpy as np

    cursor = store.db.cursor()
    with read_snapshot(store):
        # one integer per row where it fits: the rows' count, not their width, is what reading costs
        games = np.fromiter(chain.from_iterable(cursor.execute(
            "SELECT seq, (round << 3) | ((substr(id, 1, ?) = ?) << 2) | ((status = 'done') << 1) FROM games "
            "WHERE status != 'dropped' ORDER BY seq", (len(id_prefix), id_prefix))), dtype=np.int64).reshape(-1, 2)
        flags = games[:, 1] & 7
        games = np.column_stack([games[:, 0], games[:, 1] >> 3, flags >> 2, (flags >> 1) & 1])
        # a seat as game seq << 32 | version id << 16 | rank << 8 | seat when seqs are below 2^31 and
        # ids below 2^16 (always, but for a store of tens of thousands of versions: then two columns)
        small = cursor.execute("SELECT (SELECT coalesce(max(id), 0) FROM versions) < 65536 AND "
                               "(SELECT coalesce(max(seq), 0) FROM games) < 2147483648").fetchone()[0]
        if small:
            packed = np.fromiter(chain.from_iterable(cursor.execute(
                "SELECT (game_seq << 32) | (version_id << 16) | (ifnull(rank, 255) << 8) | seat FROM seats "
                "ORDER BY game_seq, seat")), dtype=np.int64)
            seat_game, seat_version = packed >> 32, (packed >> 16) & 0xFFFF
        else:
            both = np.fromiter(chain.from_iterable(cursor.execute(
                "SELECT game_seq, version_id, (ifnull(rank, 255) << 8) | seat FROM seats ORDER BY game_seq, seat")),
                dtype=np.int64).reshape(-1, 3)
            seat_game, seat_version, packed = both[:, 0], both[:, 1], both[:, 2]
        game = np.minimum(np.searchsorted(games[:, 0], seat_game), max(len(games) - 1, 0))
        if len(games):
            mine = (games[game, 0] == seat_game) & (games[game, 3] == 1)  # finished games' seats only
            packed, game, seat_version = packed[mine], game[mine], seat_version[mine]
        count = np.bincount(game, minlength=len(games))
        done = (games[:, 3] == 1) & (count > 0)
        # the games not finished (or, never in practice, finished without seats): their planned seats
        rest = games[~done, 0].tolist()
        planned: dict[int, list[int]] = {}
        for i in range(0, len(rest), 900):
            chunk = rest[i:i + 900]
            planned.update((s, json.loads(v or "[]")) for s, v in cursor.execute(
                f"SELECT seq, versions FROM games WHERE seq IN ({_marks(chunk)})", chunk))
    players = count.astype(np.int64)
    players[~done] = [len(planned[s]) for s in rest]
    starts = np.cumsum(players) - players
    versions = np.empty(int(players.sum()), dtype=np.int64)
    ranks = np.full(versions.size, -1, dtype=np.int64)
    at = starts[game] + (packed & 255)  # a seat's place: its game's first + its seat
    versions[at] = seat_version
    ranks[at] = (packed >> 8) & 255
    if rest:
        open_players = players[~done]
        ends = np.cumsum(open_players)
        within = np.arange(int(ends[-1]), dtype=np.int64) - np.repeat(ends - open_players, open_players)
        versions[np.repeat(starts[~done], open_players) + within] = list(chain.from_iterable(planned[s] for s in rest))
    return ScheduleArrays(games[:, 0], games[:, 1], games[:, 2] == 1, done, players, versions, ranks)


def _tuples(store: LeagueStore, sql: str, args: Sequence[object] = ()) -> sqlite3.Cursor:
    """A cursor over ``sql``'s rows (plain tuples: the store's connection has no row factory), to be made into typed rows."""
    return store.db.execute(sql, args)


def done_games(store: LeagueStore) -> list[GameRow]:
    """The finished games in schedule order: seq, id, round, seed, players, ended_by, decisions, seconds.

    The game rows themselves are small (~100 bytes); read their seats and logs one game at a time."""
    return [GameRow(*r) for r in _tuples(store, f"SELECT {GAME_COLUMNS} FROM games WHERE status = 'done' ORDER BY seq")]


def latest_games(store: LeagueStore, limit: int, version_id: int | None = None) -> list[GamePage]:
    """The last ``limit`` finished games (of ``version_id``, if given), latest first."""
    if version_id is None:
        return [GamePage(*r) for r in _tuples(store, "SELECT seq, id, round, ended_by, finished_at FROM games "
                                                     "WHERE status = 'done' ORDER BY seq DESC LIMIT ?", (limit,))]
    return [GamePage(*r) for r in _tuples(
        store, "SELECT g.seq, g.id, g.round, g.ended_by, g.finished_at FROM games g JOIN seats s ON s.game_seq = g.seq "
        "WHERE g.status = 'done' AND s.version_id = ? ORDER BY g.seq DESC LIMIT ?", (version_id, limit))]


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


def done_games_page(store: LeagueStore, limit: int, before: int | None = None) -> list[GamePage]:
    """Finished games latest first, ``limit`` of them before seq ``before``: seq, id, round, ended_by, finished_at."""
    sql = "SELECT seq, id, round, ended_by, finished_at FROM games WHERE status = 'done'"
    args: list[object] = []
    if before is not None:
        sql += " AND seq < ?"
        args.append(before)
    return [GamePage(*r) for r in _tuples(store, sql + " ORDER BY seq DESC LIMIT ?", [*args, limit])]


def games_by_seq(store: LeagueStore, seqs: Sequence[int]) -> list[GamePage]:
    """The games ``seqs``, latest first: seq, id, round, ended_by, finished_at."""
    if not seqs:
        return []
    return [GamePage(*r) for r in _tuples(store, f"SELECT seq, id, round, ended_by, finished_at FROM games WHERE seq IN "
                                                 f"({_marks(seqs)}) ORDER BY seq DESC", list(seqs))]


def latest_seqs_of_versions(store: LeagueStore, version_ids: Sequence[int], limit: int) -> list[int]:
    """The last ``limit`` finished games with a seat of one of ``version_ids`` (seqs, latest first)."""
    if not version_ids:
        return []
    return [r[0] for r in store.db.execute(f"SELECT DISTINCT game_seq FROM seats WHERE version_id IN "
                                           f"({_marks(version_ids)}) ORDER BY game_seq DESC LIMIT ?",
                                           [*version_ids, limit])]


def violations_of_versions(store: LeagueStore, version_ids: Sequence[int], limit: int) -> list[ViolationRow]:
    """The last ``limit`` violations of ``version_ids``, latest first."""
    if not version_ids:
        return []
    return [ViolationRow(*r) for r in _tuples(
        store, f"SELECT x.id, x.decision, x.seat, x.kind, x.detail, g.id AS game_id, g.seed, b.name, v.version "
        f"FROM violations x JOIN games g ON g.seq = x.game_seq JOIN versions v ON v.id = x.version_id "
        f"JOIN bots b ON b.id = v.bot_id "
        f"WHERE x.version_id IN ({_marks(version_ids)}) ORDER BY x.id DESC LIMIT ?", [*version_ids, limit])]


def pair_ranks(store: LeagueStore, a_ids: Sequence[int], b_ids: Sequence[int]) -> list[tuple[int, int, int]]:
    """``(seq, rank of a, rank of b)`` of every finished game with a seat of ``a_ids`` and one of ``b_ids``, latest first."""
    if not a_ids or not b_ids:
        return []
    return [(r[0], r[1], r[2]) for r in store.db.execute(
        f"SELECT a.game_seq, a.rank, b.rank FROM seats a JOIN seats b ON b.game_seq = a.game_seq "
        f"WHERE a.version_id IN ({_marks(a_ids)}) AND b.version_id IN ({_marks(b_ids)}) ORDER BY a.game_seq DESC",
        [*a_ids, *b_ids])]


def pairs_ahead(store: LeagueStore, version_ids: Sequence[int]) -> list[tuple[int, int, int, int]]:
    """``(version a, version b, games a finished ahead of b, games they shared)`` for every ordered
    pair of ``version_ids`` that shared a game (any state: an unfinished seat has no rank)."""
    if not version_ids:
        return []
    return [(int(r[0]), int(r[1]), int(r[2] or 0), int(r[3])) for r in store.db.execute(
        f"SELECT a.version_id, b.version_id, sum(a.rank < b.rank), count(*) FROM seats a JOIN seats b "
        f"ON b.game_seq = a.game_seq AND b.seat != a.seat WHERE a.version_id IN ({_marks(version_ids)}) "
        f"AND b.version_id IN ({_marks(version_ids)}) GROUP BY a.version_id, b.version_id",
        [*version_ids, *version_ids])]


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
        # summed by SQLite per version (a row per seat read into Python cost ~0.1 s per 10,000 games)
        for vid, n, w, r, f in store.db.execute(f"SELECT version_id, count(*), sum(rank = 0), sum(rank), "
                                                f"sum(forfeited) FROM seats WHERE game_seq IN ({_marks(chunk)}) "
                                                f"GROUP BY version_id", chunk):
            t = totals.setdefault(vid, [0, 0, 0, 0, 0])
            t[0] += n
            t[1] += w or 0
            t[2] += r or 0
            t[3] += f or 0
        found.update(seq for (seq,) in store.db.execute(f"SELECT DISTINCT game_seq FROM seats WHERE game_seq IN "
                                                        f"({_marks(chunk)})", chunk))
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


def pending_count(store: LeagueStore) -> int:
    """The games still to play."""
    return int(store.db.execute("SELECT count(*) FROM games WHERE status = 'pending'").fetchone()[0])


def done_count_upto(store: LeagueStore, seq: int) -> int:
    """The finished games at or below ``seq``."""
    return int(store.db.execute("SELECT count(*) FROM games WHERE status = 'done' AND seq <= ?",
                                (seq,)).fetchone()[0])


def done_count_after(store: LeagueStore, seq: int) -> int:
    """How many finished games have a seq above ``seq`` (0: every finished game)."""
    return int(store.db.execute("SELECT count(*) FROM games WHERE status = 'done' AND seq > ?", (seq,)).fetchone()[0])


def first_pending_seq(store: LeagueStore) -> int | None:
    """The lowest seq of a game not played yet (None: none is pending)."""
    row = store.db.execute("SELECT min(seq) FROM games WHERE status = 'pending'").fetchone()
    return None if row[0] is None else int(row[0])


def latest_violations(store: LeagueStore, limit: int, version_id: int | None = None) -> list[ViolationRow]:
    """The last ``limit`` violations (of ``version_id``, if given), latest first."""
    sql = ("SELECT x.id, x.decision, x.seat, x.kind, x.detail, g.id AS game_id, g.seed, b.name, v.version "
           "FROM violations x JOIN games g ON g.seq = x.game_seq "
           "LEFT JOIN versions v ON v.id = x.version_id LEFT JOIN bots b ON b.id = v.bot_id")
    if version_id is None:
        return [ViolationRow(*r) for r in _tuples(store, sql + " ORDER BY x.id DESC LIMIT ?", (limit,))]
    return [ViolationRow(*r) for r in _tuples(store, sql + " WHERE x.version_id = ? ORDER BY x.id DESC LIMIT ?",
                                              (version_id, limit))]


def seats_of_games(store: LeagueStore, seqs: Sequence[int]) -> dict[int, list[GameSeatRow]]:
    """The seats of the finished games ``seqs`` (one query per 900 games, where
    :meth:`LeagueStore.game_seats` takes one per game): seq -> [seat, rank, score, forfeited,
    name, version, version_id by seat]."""
    out: dict[int, list[GameSeatRow]] = {}
    for i in range(0, len(seqs), 900):
        chunk = list(seqs[i:i + 900])
        for row in map(GameSeatRow._make, _tuples(
                store, f"SELECT s.game_seq, s.seat, s.rank, s.score, s.forfeited, b.name, v.version, v.id AS version_id "
                f"FROM seats s JOIN versions v ON v.id = s.version_id JOIN bots b ON b.id = v.bot_id "
                f"WHERE s.game_seq IN ({_marks(chunk)}) ORDER BY s.game_seq, s.seat", chunk)):
            out.setdefault(row.game_seq, []).append(row)
    return out


class PairGame(NamedTuple):
    """A finished game two versions played together: its id, when, each one's rank (0 = first)
    and how many seats the table had."""

    id: str
    finished_at: str | None
    rank_a: int
    rank_b: int
    seats: int


def pair_games(store: LeagueStore, a: int, b: int, *, min_seats: int = 3, limit: int = 12) -> list[PairGame]:
    """The latest finished games where versions ``a`` and ``b`` sat together at a table of at
    least ``min_seats`` seats (what a collusion report shows beside a flagged pair), newest first."""
    cursor = store.db.execute(
        "SELECT g.id, g.finished_at, sa.rank, sb.rank, (SELECT count(*) FROM seats WHERE game_seq = g.seq) AS n "
        "FROM games g JOIN seats sa ON sa.game_seq = g.seq AND sa.version_id = ? "
        "JOIN seats sb ON sb.game_seq = g.seq AND sb.version_id = ? WHERE g.status = 'done' AND "
        "(SELECT count(*) FROM seats WHERE game_seq = g.seq) >= ? ORDER BY g.seq DESC LIMIT ?",
        (a, b, min_seats, limit))
    return [PairGame(*row) for row in cursor]
