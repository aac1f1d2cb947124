"""The head-to-head matrix of the leaderboard's top teams: for each pair, how often the row's team
finished ahead of the column's in the games they played together (every version of each).

One query over the seats of the top teams' versions (an index range per version, joined on the
game), so its cost grows with the games those few teams played, not with the whole ladder: 11 ms
at 200,000 games (1,000 teams), ~5x that at 1,000,000, more under load; so the matrix is kept
for :data:`MATRIX_TTL` seconds per set of teams (:func:`cached_matrix`), not made per visitor.
"""

from __future__ import annotations

import threading
import time

from harness.contest.ladder_reads import LadderReader
from harness.league import queries

__all__ = ["h2h_matrix", "cached_matrix", "MATRIX_TEAMS", "MATRIX_TTL"]

#: teams in the matrix: the leaderboard's best (a larger matrix does not fit a page)
MATRIX_TEAMS = 10
#: how long a matrix is shown before it is made again (the ladder adds games every second)
MATRIX_TTL = 60.0
_CACHE: dict[tuple[str, tuple[str, ...]], tuple[float, dict[tuple[str, str], dict[str, int]]]] = {}
_LOCK = threading.Lock()


def h2h_matrix(reader: LadderReader, teams: list[str]) -> dict[tuple[str, str], dict[str, int]]:
    """``{(a, b): {"ahead": n, "games": m}}`` for every ordered pair of ``teams`` that met."""
    store = reader.store()
    team_of: dict[int, str] = {}
    for team in teams:
        for vid in reader.version_ids(team):
            team_of[vid] = team
    if store is None or not team_of:
        return {}
    cells: dict[tuple[str, str], dict[str, int]] = {}
    for va, vb, ahead, games in queries.pairs_ahead(store, list(team_of)):
        a, b = team_of[va], team_of[vb]
        if a == b:
            continue
        cell = cells.setdefault((a, b), {"ahead": 0, "games": 0})
        cell["ahead"] += ahead
        cell["games"] += games
    return cells


def cached_matrix(reader: LadderReader, teams: list[str]) -> dict[tuple[str, str], dict[str, int]]:
    """:func:`h2h_matrix`, made again once it is :data:`MATRIX_TTL` seconds old or the teams changed."""
    key = (str(reader.path), tuple(teams))
    now = time.monotonic()
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit[0] > now:
        return hit[1]
    matrix = h2h_matrix(reader, teams)
    with _LOCK:
        if len(_CACHE) > 64:  # sets of teams that went by
            _CACHE.clear()
        _CACHE[key] = (now + MATRIX_TTL, matrix)
    return matrix
