"""The writer's bulk path: record many finished games (and their rating updates) in one transaction.

:meth:`harness.league.store.LeagueStore.record` costs one SELECT and four or five statements per
game; recording a batch as a handful of ``executemany`` statements over all its games (status
checked once with one SELECT, seats, violations and logs each in one statement) and rating the
batch with one write of the changed ratings is what lets one writer keep up with many machines
(bench/scale.py measures games a second recorded). Each game is still recorded whole and only
while its row is pending, so a game delivered twice (Dask's at-least-once) is recorded once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from harness.league.store import GameOutcome, LeagueStore, _now, _score

__all__ = ["record_many"]

#: SQLite's default limit on bound parameters is 32766; stay well below it per IN (...) query.
_CHUNK = 900


def record_many(store: LeagueStore, items: Sequence[tuple[int, GameOutcome]]) -> list[int]:
    """Record the games ``(seq, outcome)`` that are still pending; return their seqs, in order given.

    Runs in the caller's transaction if there is one (with the rating update), else in its own.
    A seq given twice, a game no longer pending, or an id that does not match is skipped.
    """
    if not items:
        return []
    db = store.db
    with store.transaction():
        pending: dict[int, str] = {}
        seqs = sorted({seq for seq, _ in items})
        for i in range(0, len(seqs), _CHUNK):
            chunk = seqs[i:i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            pending.update(db.execute(f"SELECT seq, id FROM games WHERE status = 'pending' AND seq IN ({marks})",
                                      chunk).fetchall())
        todo: list[tuple[int, GameOutcome]] = []
        for seq, outcome in items:
            if pending.get(seq) == outcome.game_id:
                del pending[seq]  # a second copy of the same game in this batch is skipped
                todo.append((seq, outcome))
        if not todo:
            return []
        now = _now()
        db.executemany("UPDATE games SET status = 'done', ended_by = ?, decisions = ?, seconds = ?, finished_at = ? "
                       "WHERE seq = ?", [(o.ended_by, o.decisions, o.seconds, now, seq) for seq, o in todo])
        db.executemany("UPDATE seats SET rank = ?, score = ?, forfeited = ? WHERE game_seq = ? AND seat = ?",
                       [(rank, _score(score), int(seat in o.forfeits), seq, seat)
                        for seq, o in todo for seat, (rank, score) in enumerate(zip(o.ranking, o.scores))])
        with_violations = [(seq, o) for seq, o in todo if o.violations]
        if with_violations:
            version_at: dict[tuple[int, int], int] = {}
            for seq, _ in with_violations:
                for seat, vid in db.execute("SELECT seat, version_id FROM seats WHERE game_seq = ?", (seq,)):
                    version_at[(seq, seat)] = vid
            db.executemany(
                "INSERT INTO violations (game_seq, decision, seat, version_id, kind, detail, record) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(seq, v.get("decision"), v.get("seat"), version_at.get((seq, v.get("seat"))),  # type: ignore[arg-type]
                  str(v.get("kind", "?")), str(v.get("detail", "")), json.dumps(v, default=str))
                 for seq, o in with_violations for v in o.violations])
        db.executemany("INSERT INTO logs (game_seq, data) VALUES (?, ?)", [(seq, o.log) for seq, o in todo if o.log])
    return [seq for seq, _ in todo]

