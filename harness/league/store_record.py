"""The league store's recording path in SQL: which finished games are still pending, and their
results, seats and violations written in a few ``executemany`` statements.

:meth:`harness.league.store.LeagueStore.record_many` runs both inside one transaction, with the
logs and the caller's rating update.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.play.violations import Violation

__all__ = ["GameOutcome", "Recorded", "still_pending", "write_results"]


@dataclass
class GameOutcome:
    """What a finished game leaves in the store (built by the worker from the referee's GameRecord)."""

    game_id: str
    ranking: list[int]
    scores: list[Any]
    ended_by: str
    forfeits: list[int] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    log: bytes = b""  # compress_log() of the game's log lines
    decisions: int = 0
    seconds: float = 0.0


#: a game to record: its seq, its outcome, the version id at each seat
Recorded = tuple[int, GameOutcome, list[int]]


def still_pending(db: sqlite3.Connection, items: Sequence[tuple[int, GameOutcome]]) -> list[Recorded]:
    """The games of ``items`` whose row is still pending with the same id, each once, in the order
    given (status checked with one SELECT per 900 games)."""
    pending: dict[int, tuple[str, str]] = {}
    seqs = sorted({seq for seq, _ in items})
    for i in range(0, len(seqs), _IN_CHUNK):
        chunk = seqs[i:i + _IN_CHUNK]
        marks = ",".join("?" * len(chunk))
        pending.update((seq, (gid, versions)) for seq, gid, versions in db.execute(
            f"SELECT seq, id, versions FROM games WHERE status = 'pending' AND seq IN ({marks})", chunk))
    todo: list[Recorded] = []
    for seq, outcome in items:
        have = pending.get(seq)
        if have is not None and have[0] == outcome.game_id:
            del pending[seq]  # a second copy of the same game in this batch is skipped
            todo.append((seq, outcome, json.loads(have[1])))
    return todo


def write_results(db: sqlite3.Connection, todo: Sequence[Recorded], now: str) -> None:
    """Mark the games ``todo`` done at ``now`` and insert their seats and violations."""
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


#: SQLite's default limit on bound parameters is 32766; stay well below it per IN (...) query.
_IN_CHUNK = 900


def _at(versions: list[int], seat: Any) -> int | None:
    """The version at ``seat`` (None for a violation not tied to a seat)."""
    return versions[seat] if isinstance(seat, int) and 0 <= seat < len(versions) else None


def _score(score: Any) -> Any:
    return score if isinstance(score, (int, float)) and not isinstance(score, bool) else json.dumps(score)
