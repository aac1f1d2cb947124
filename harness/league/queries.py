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

from harness.league.store import LeagueStore

__all__ = ["done_games", "done_seats", "finished_rounds", "games_of_version", "latest_games", "scheduled_seating",
           "violation_count", "versions_of_bot", "version_labels", "done_games_page", "games_by_seq",
           "latest_seqs_of_versions", "violations_of_versions", "pair_ranks", "seat_totals"]


def done_seats(store: LeagueStore) -> Iterator[tuple[int, int, int, int, int, float | None]]:
    """Every seat of every finished game in schedule order (one query):
    ``(seq, round, seed, version_id, rank, score)``, seats of one game together, by seat."""
    yield from store.db.execute(
        "SELECT g.seq, g.round, g.seed, s.version_id, s.rank, s.score FROM games g JOIN seats s "
        "ON s.game_seq = g.seq WHERE g.status = 'done' ORDER BY g.seq, s.seat")


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
