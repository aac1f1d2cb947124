"""Read-only queries on a league store for the reports, the statistics and matches.

With :mod:`harness.league.store` (which owns the schema, writing, and the reads the runner and
the command line need) this module holds every SQL statement of the harness: a schema change
touches these two files. Each function returns rows (``sqlite3.Row``, addressable by column
name) or plain values; none writes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator

from harness.league.store import LeagueStore

__all__ = ["done_games", "done_seats", "finished_rounds", "games_of_version", "latest_games", "scheduled_seating",
           "violation_count"]


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
