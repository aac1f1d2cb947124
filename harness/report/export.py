"""Results out of the store, as plain rows: for pandas, spreadsheets and one's own scripts.

Four tables, each a stream of flat dicts in schedule order, finished games only:

- ``games``: one row per game: id, round, seed, players, bots (``name@version`` by seat),
  ranking (0 = first, by seat), scores, ended_by, decisions, seconds.
- ``seats``: one row per seat of a game: game_id, round, seed, players (the table size), seat, bot, version, rank
  (0 = first), score, forfeited.
- ``violations``: the full record of each violation (its game, move, seat, bot, kind, detail,
  the exact request, what the bot sent, its stderr tail, the state snapshot).
- ``logs``: every game's referee log as the JSON lines ``harness play --log`` writes (a game
  header, every message and event, the result).

Rows are produced one game at a time (never the whole league in memory), so exporting a
100,000-game league streams.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from typing import Any

from harness.league.queries import done_games
from harness.league.store import LeagueStore

__all__ = ["TABLES", "export_rows", "to_csv_lines", "to_jsonl_lines"]

TABLES = ("games", "seats", "violations", "logs")


def export_rows(store: LeagueStore, table: str, game: str = "", options: dict[str, Any] | None = None
                ) -> Iterator[dict[str, Any]]:
    """The rows of ``table`` (one of :data:`TABLES`) as dicts, in schedule order."""
    if table == "games":
        for g in done_games(store):
            seats = store.game_seats(g.seq)
            yield {"game_id": g.id, "round": g.round, "seed": g.seed, "players": g.players,
                   "bots": [f"{s.name}@{s.version}" for s in seats], "ranking": [s.rank for s in seats],
                   "scores": [s.score for s in seats], "ended_by": g.ended_by, "decisions": g.decisions,
                   "seconds": g.seconds}
    elif table == "seats":
        for g in done_games(store):
            for s in store.game_seats(g.seq):
                yield {"game_id": g.id, "round": g.round, "seed": g.seed, "players": g.players, "seat": s.seat,
                       "bot": s.name, "version": s.version, "rank": s.rank, "score": s.score,
                       "forfeited": bool(s.forfeited)}
    elif table == "violations":
        for row in store.violations():
            found = store.violation(row.id)
            record: Mapping[str, Any] = found[1] if found else {}
            yield {"id": row.id, "game_id": row.game_id, "move": (row.decision + 1)
                   if isinstance(row.decision, int) else None, "seat": row.seat, "bot": row.name,
                   "version": row.version, "kind": row.kind, "detail": row.detail,
                   **{k: v for k, v in record.items() if k not in ("type", "kind", "detail", "seat", "bot",
                                                                   "game_id", "decision")}}
    elif table == "logs":
        for g in done_games(store):
            seats = store.game_seats(g.seq)
            yield {"type": "game", "game_id": g.id, "game": game, "options": options or {}, "seed": g.seed,
                   "bots": [s.name for s in seats]}
            for entry in store.game_log(g.seq) or []:
                yield {"game_id": g.id, **entry}
            yield {"type": "game_result", "game_id": g.id, "ranking": [s.rank for s in seats],
                   "scores": [s.score for s in seats], "ended_by": g.ended_by,
                   "forfeits": [s.seat for s in seats if s.forfeited], "decisions": g.decisions,
                   "seconds": g.seconds}
    else:
        raise ValueError(f"unknown table {table!r} (one of {', '.join(TABLES)})")


def to_jsonl_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    """One JSON object per line."""
    for row in rows:
        yield json.dumps(row, separators=(",", ":"), default=str)


def to_csv_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    """CSV with a header row (the first row's keys); lists and dicts are written as JSON text."""
    buffer = io.StringIO()
    writer: csv.DictWriter[str] | None = None
    for row in rows:
        flat = {k: json.dumps(v, separators=(",", ":")) if isinstance(v, (list, dict)) else v for k, v in row.items()}
        if writer is None:
            writer = csv.DictWriter(buffer, fieldnames=list(flat), extrasaction="ignore", lineterminator="\n")
            writer.writeheader()
        writer.writerow(flat)
        yield buffer.getvalue().rstrip("\n")
        buffer.seek(0)
        buffer.truncate()
