"""The rows the league store and its queries hand out, typed: one ``NamedTuple`` per shape read.

A caller reads a column as an attribute (``row.seq``), which mypy checks and a template reads
the same way (``row.seq`` in Jinja); the reads make them from plain tuples (the store's
connection has no row factory: no read hands out a ``sqlite3.Row``, which would also cost more
per row than its values). The fields are in the order of each read's ``SELECT``: a change to one
changes the other in the same commit.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["GameRow", "SeatRow", "GameSeatRow", "ViolationRow", "StoredViolation", "HistoryEntry", "GamePage"]


class GameRow(NamedTuple):
    """A game as its row in the ``games`` table keeps it (``versions``: JSON list of version ids by seat)."""

    seq: int
    id: str
    round: int
    players: int
    seed: int
    status: str
    ended_by: str | None
    decisions: int | None
    seconds: float | None
    finished_at: str | None
    versions: str | None


#: the games table's columns in :class:`GameRow`'s order, for the reads that make one
GAME_COLUMNS = ", ".join(GameRow._fields)


class SeatRow(NamedTuple):
    """A seat of a game: rank, score and forfeited are None until the game is done."""

    seat: int
    rank: int | None
    score: float | None
    forfeited: int | None
    name: str
    version: str
    version_id: int


class GameSeatRow(NamedTuple):
    """A seat of a finished game (ranked) with its game's seq (what a read of many games' seats
    gives before grouping them)."""

    game_seq: int
    seat: int
    rank: int
    score: float | None
    forfeited: int | None
    name: str
    version: str
    version_id: int


class ViolationRow(NamedTuple):
    """A violation as a list shows it (the store's, the report's latest, a team's), with its game's
    id and deal seed and the bot's name and version (None when no version was charged)."""

    id: int
    decision: int | None
    seat: int | None
    kind: str
    detail: str
    game_id: str
    seed: int
    name: str | None
    version: str | None


class StoredViolation(NamedTuple):
    """One violation whole: its row, its full record as JSON, and what replays it (game seq and
    seed, the version's command and directory)."""

    id: int
    decision: int | None
    seat: int | None
    kind: str
    detail: str
    record: str
    game_seq: int
    game_id: str
    seed: int
    name: str | None
    version: str | None
    command: str | None
    cwd: str | None


class HistoryEntry(NamedTuple):
    """A cached prefix of the rating history: games, the last seq fitted, and the packed arrays."""

    games: int
    last_seq: int
    mu: bytes | None
    totals: bytes | None




class GamePage(NamedTuple):
    """A finished game as a list or a page of games shows it, with when it finished."""

    seq: int
    id: str
    round: int
    ended_by: str | None
    finished_at: str | None
