"""What the contest's pages read from the ladder's league store, each read bounded.

Every read (its SQL in :mod:`harness.league.queries`) is answered from an index and returns at
most a page of rows (latest games by ``games_status``, a team's games by ``seats_stats``, its
violations by ``violations_version``), so a page costs the same at 1,000 games as at 1,000,000. The ladder's bot names are team names,
its versions ``s<submission id>`` (:mod:`harness.contest.ladder`).

Authorization is the caller's: these functions answer for whoever asks; the pages check that the
team asking owns what it asks for (:mod:`harness.contest.pages`).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from harness.league import queries
from harness.league.store import LeagueStore, StoreError
from harness.league.store_rows import GamePage, GameRow, SeatRow
from harness.report.replay_data import game_replay
from harness.report.tables import move_number, request_id_of

__all__ = ["LadderReader", "redact_replay"]

PAGE = 50


def redact_replay(data: dict[str, Any], seats_shown: set[int] | None) -> dict[str, Any]:
    """A replay with only what ``seats_shown`` may see (None: the public): the spectator's
    positions of a finished game, and of the seats shown only, their observations, what they
    wrote to stderr, and their violations (the caller passes only theirs)."""
    shown = seats_shown or set()
    keep: set[str] = set()
    for frame in data["frames"]:
        views = frame.get("views") or []
        keep.update(str(ref) for s, ref in enumerate(views) if ref is not None and s in shown)
        frame["views"] = [ref if s in shown else None for s, ref in enumerate(views)]
        if "stderr" in frame and frame.get("seat") not in shown:
            frame["stderr"] = ""  # a bot's stderr is its team's alone
        frame["violations"] = [v for v in frame.get("violations") or [] if v.get("seat") in shown]
    data["observations"] = {k: v for k, v in (data.get("observations") or {}).items() if k in keep}
    return data


class LadderReader:
    """Reads the ladder's store at ``path`` (one connection per thread, opened on first use)."""

    def __init__(self, path: Path, game: str, options: dict[str, Any]) -> None:
        self.path = path
        self.game_name = game
        self.options = options
        self._local = threading.local()

    def store(self) -> LeagueStore | None:
        store = getattr(self._local, "store", None)
        if store is None:
            if not self.path.exists():
                return None
            try:
                store = LeagueStore(self.path, create=False)
            except StoreError:
                return None
            self._local.store = store
        return store

    def version_ids(self, team: str) -> list[int]:
        """Every ladder version of ``team``."""
        store = self.store()
        return queries.versions_of_bot(store, team) if store is not None else []

    def _with_seats(self, rows: list[GamePage]) -> list[dict[str, Any]]:
        store = self.store()
        out = []
        for r in rows:
            seats = store.game_seats(r.seq) if store is not None else []
            out.append({"id": r.id, "seq": r.seq, "round": r.round, "ended_by": r.ended_by,
                        "finished_at": r.finished_at,
                        "seats": [{"seat": s.seat, "team": s.name, "version": s.version, "rank": s.rank,
                                   "score": s.score, "forfeited": bool(s.forfeited)} for s in seats]})
        return out

    def latest_games(self, limit: int = PAGE, before: int | None = None) -> list[dict[str, Any]]:
        """Finished games, newest first (``before``: a seq, for the next page)."""
        store = self.store()
        return self._with_seats(queries.done_games_page(store, limit, before)) if store is not None else []

    def team_games(self, team: str, limit: int = PAGE) -> list[dict[str, Any]]:
        """The latest finished games with a seat of ``team``, newest first."""
        store = self.store()
        if store is None:
            return []
        seqs = queries.latest_seqs_of_versions(store, self.version_ids(team), limit)
        return self._with_seats(queries.games_by_seq(store, seqs))

    def team_violations(self, team: str, limit: int = PAGE) -> list[dict[str, Any]]:
        store = self.store()
        if store is None:
            return []
        rows = queries.violations_of_versions(store, self.version_ids(team), limit)
        return [{"id": r.id, "move": move_number(r.decision), "seat": r.seat, "kind": r.kind,
                 "detail": r.detail, "game_id": r.game_id, "version": r.version} for r in rows]

    def violation(self, violation_id: int) -> dict[str, Any] | None:
        """One violation in full, with the team (bot name) it belongs to."""
        store = self.store()
        found = store.violation(violation_id) if store is not None else None
        if found is None:
            return None
        row, record = found
        return {"id": row.id, "team": row.name, "version": row.version, "seat": row.seat,
                "kind": row.kind, "detail": row.detail, "decision": row.decision, "game_id": row.game_id,
                "bot": f"{row.name}@{row.version}", "move": move_number(row.decision),
                "request_id": request_id_of(record), "request": record.get("request", ""),
                "received": record.get("received", ""), "stderr_tail": record.get("stderr_tail", "")}

    def game(self, game_id: str) -> tuple[GameRow, list[SeatRow]] | None:
        """(games row, seats) of a game, finished or not."""
        store = self.store()
        row = store.game(game_id) if store is not None else None
        if store is None or row is None:
            return None
        return row, store.game_seats(row.seq)

    def replay(self, game_id: str, seats_shown: set[int] | None) -> dict[str, Any] | None:
        """The replay of a finished game: the spectator's (``seats_shown`` None: no seat's
        observations, no violations) or one team's (only its seats' observations and violations)."""
        from harness.games import get_game

        store = self.store()
        found = self.game(game_id)
        if store is None or found is None:
            return None
        row, seats = found
        if row.status != "done":
            return None
        violations = [v for v in store.violations(game_seq=row.seq) if seats_shown and v.seat in seats_shown]
        data = game_replay(get_game(self.game_name), self.options, row, seats, store.game_log(row.seq), violations)
        return redact_replay(data, seats_shown)

    def head_to_head(self, team_a: str, team_b: str, limit: int = 20) -> dict[str, Any]:
        """Games between two teams: counts of who finished ahead, and the latest games."""
        store = self.store()
        if store is None:
            return {"games": 0, "a_ahead": 0, "b_ahead": 0, "level": 0, "latest": []}
        rows = queries.pair_ranks(store, self.version_ids(team_a), self.version_ids(team_b))
        a_ahead = sum(1 for r in rows if r[1] < r[2])
        b_ahead = sum(1 for r in rows if r[1] > r[2])
        latest = self._with_seats(queries.games_by_seq(store, [r[0] for r in rows[:limit]]))
        return {"games": len(rows), "a_ahead": a_ahead, "b_ahead": b_ahead, "level": len(rows) - a_ahead - b_ahead,
                "latest": latest}
