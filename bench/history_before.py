"""The rating history as it was before harness/report/history.py, for bench/table.py's side by
side: 30 fits from scratch of shares of the games, from load_games' rows, nothing kept."""

from __future__ import annotations

from collections.abc import Sequence

from harness.league.ratings_fit import fit_ratings
from harness.report.statistics import GameRow


def rating_history(games: Sequence[GameRow], *, mu: float, sigma: float, beta: float,
                   points: int = 30) -> dict[int, list[tuple[int, float]]]:
    """Every bot's mu after each of ``points`` shares of the league's games, in schedule order."""
    out: dict[int, list[tuple[int, float]]] = {}
    if not games:
        return out
    marks = sorted({max(1, round(len(games) * k / points)) for k in range(1, points + 1)})
    for n in marks:
        for vid, (m, _s) in fit_ratings(((g.versions, g.ranks) for g in games[:n]), mu=mu, sigma=sigma,
                                        beta=beta).items():
            out.setdefault(vid, []).append((n, m))
    return out
