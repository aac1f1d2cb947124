"""The contest's read-only statements on the ladder's league store (``ladder.sqlite``): the
team pages' statistics (:mod:`.team_reads`), the organizer's list of violations
(:mod:`.organizer`) and the game counts of ``harness contest status`` (:mod:`.status`).
Each read is bounded; results are named tuples or plain values, never ``sqlite3.Row``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

from harness.league.store import LeagueStore

__all__ = ["OpponentSeat", "LadderViolation", "opponent_seats", "filtered_seqs", "latest_violations",
           "game_counts"]


class OpponentSeat(NamedTuple):
    """A seat of the team's in a game, beside one opposing seat: the game, both ranks, the table's
    size and the opposing team."""

    game_seq: int
    rank: int
    players: int
    orank: int
    opponent: str


class LadderViolation(NamedTuple):
    """A violation as the organizer's list shows it."""

    id: int
    kind: str
    detail: str | None
    decision: str | None
    game_id: str
    finished_at: str | None
    team: str
    version: str


def _marks(items: Sequence[object]) -> str:
    return ",".join("?" * len(items))


def opponent_seats(store: LeagueStore, ids: Sequence[int], recent: int) -> list[OpponentSeat]:
    """Over the latest ``recent`` games of versions ``ids``: each of their seats beside each opposing seat."""
    return [OpponentSeat(*r) for r in store.db.execute(
        f"SELECT s.game_seq, s.rank, g.players, o.rank AS orank, ob.name AS opponent FROM seats s "
        f"JOIN games g ON g.seq = s.game_seq JOIN seats o ON o.game_seq = s.game_seq AND o.seat != s.seat "
        f"JOIN versions ov ON ov.id = o.version_id JOIN bots ob ON ob.id = ov.bot_id "
        f"WHERE s.version_id IN ({_marks(ids)}) AND s.game_seq IN (SELECT game_seq FROM seats WHERE version_id IN "
        f"({_marks(ids)}) ORDER BY game_seq DESC LIMIT ?)", [*ids, *ids, recent])]


def filtered_seqs(store: LeagueStore, ids: Sequence[int], *, result: str | None, players: int | None,
                  opponent: str | None, limit: int) -> list[int]:
    """The latest games of versions ``ids``, newest first, filtered by result (``won``: a seat of
    theirs finished first; ``lost``: one did not), table size and opposing team."""
    where: list[str] = [f"s.version_id IN ({_marks(ids)})"]
    args: list[object] = list(ids)
    if result == "won":
        where.append("s.rank = 0")
    elif result == "lost":
        where.append("s.rank > 0")
    if players:
        where.append("g.players = ?")
        args.append(players)
    if opponent:
        where.append("EXISTS (SELECT 1 FROM seats o JOIN versions ov ON ov.id = o.version_id JOIN bots ob ON "
                     "ob.id = ov.bot_id WHERE o.game_seq = s.game_seq AND o.seat != s.seat AND ob.name = ?)")
        args.append(opponent)
    return [int(r[0]) for r in store.db.execute(
        f"SELECT DISTINCT s.game_seq FROM seats s JOIN games g ON g.seq = s.game_seq WHERE {' AND '.join(where)} "
        f"ORDER BY s.game_seq DESC LIMIT ?", [*args, limit])]


def latest_violations(store: LeagueStore, limit: int) -> list[LadderViolation]:
    """The ladder's latest ``limit`` violations, newest first, with their game and team."""
    return [LadderViolation(*r) for r in store.db.execute(
        "SELECT v.id, v.kind, v.detail, v.decision, g.id AS game_id, g.finished_at, b.name AS team, ve.version "
        "FROM violations v JOIN games g ON g.seq = v.game_seq JOIN versions ve ON ve.id = v.version_id "
        "JOIN bots b ON b.id = ve.bot_id ORDER BY v.id DESC LIMIT ?", (limit,))]


def game_counts(db: sqlite3.Connection, cutoff: str) -> dict[str, int]:
    """Games done, pending, and done since ``cutoff`` (an ISO time) on a connection to the store."""
    count = {s: int(db.execute("SELECT count(*) FROM games WHERE status = ?", (s,)).fetchone()[0])
             for s in ("done", "pending")}
    # newest first along the status index, stopping at the cutoff
    last = db.execute("SELECT count(*) FROM (SELECT finished_at FROM games WHERE status = 'done' "
                      "ORDER BY seq DESC LIMIT 200000) WHERE finished_at >= ?", (cutoff,)).fetchone()[0]
    return {"done": count["done"], "pending": count["pending"], "last_hour": int(last)}
