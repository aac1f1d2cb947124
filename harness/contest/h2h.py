"""The head-to-head matrix of the leaderboard's top teams: for each pair, how often the row's team
finished ahead of the column's in the games they played together (every version of each).

One query over the seats of the top teams' versions (an index range per version, joined on the
game), so its cost grows with the games those few teams played, not with the whole ladder.
"""

from __future__ import annotations

from typing import Any

from harness.contest.ladder_reads import LadderReader

__all__ = ["h2h_matrix", "MATRIX_TEAMS"]

#: teams in the matrix: the leaderboard's best (a larger matrix does not fit a page)
MATRIX_TEAMS = 10


def h2h_matrix(reader: LadderReader, teams: list[str]) -> dict[tuple[str, str], dict[str, int]]:
    """``{(a, b): {"ahead": n, "games": m}}`` for every ordered pair of ``teams`` that met."""
    store = reader.store()
    team_of: dict[int, str] = {}
    for team in teams:
        for vid in reader.version_ids(team):
            team_of[vid] = team
    if store is None or not team_of:
        return {}
    marks = ",".join("?" * len(team_of))
    cells: dict[tuple[str, str], dict[str, int]] = {}
    rows: Any = store.db.execute(
        f"SELECT a.version_id, b.version_id, sum(a.rank < b.rank), count(*) FROM seats a JOIN seats b "
        f"ON b.game_seq = a.game_seq AND b.seat != a.seat WHERE a.version_id IN ({marks}) AND b.version_id IN ({marks}) "
        f"GROUP BY a.version_id, b.version_id", [*team_of, *team_of])
    for va, vb, ahead, games in rows:
        a, b = team_of[va], team_of[vb]
        if a == b:
            continue
        cell = cells.setdefault((a, b), {"ahead": 0, "games": 0})
        cell["ahead"] += int(ahead or 0)
        cell["games"] += int(games)
    return cells
