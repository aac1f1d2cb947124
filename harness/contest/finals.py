"""The finals: a round robin of the leaderboard's top teams that plays until their order is settled.

:func:`play_finals` freezes uploads, takes the top ``top`` teams of the leaderboard (its order is
``harness table``'s batch fit, :mod:`.board_fit`; disabled teams are passed over), and plays
their current versions in a league of their own (``DIR/finals/``): ``rounds`` rounds first,
then ``rounds`` more at a time until every finalist is above the next with probability at least
``confidence`` (P(>next) of the batch fit of the finals' games), or the finals have played
``max_games`` games. Then it writes ``finals/result.json`` (the order, each finalist's mu, sigma,
P(>next) and probability of being champion, whether the order was settled or the budget ran
out) and the HTML report, and the site shows the result at ``/finals``.

The probability of being champion is that of the finalist's skill being the highest, with each
skill drawn from the fit's normal (mu, sigma), independently (the fit's correlations between
finalists are left out), over :data:`DRAWS` draws.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.contest.config import ContestConfig
from harness.contest.db import ContestDB
from harness.contest.ladder import leaderboard_rows, league_data, table_sizes, write_config
from harness.contest.rows import RosterEntry

__all__ = ["play_finals", "champion_probabilities", "RESULT", "DRAWS", "read_result"]

RESULT = "result.json"
DRAWS = 20000


def champion_probabilities(mu: list[float], sigma: list[float], draws: int = DRAWS, seed: int = 0) -> list[float]:
    """P(each skill is the highest), skills drawn from independent normals."""
    import numpy as np

    rng = np.random.default_rng(seed)
    samples = rng.normal(np.asarray(mu), np.asarray(sigma), size=(draws, len(mu)))
    wins = np.bincount(samples.argmax(axis=1), minlength=len(mu))
    return [float(w) / draws for w in wins]


def _table(league: Any) -> list[Any]:
    from harness.league.store import LeagueStore
    from harness.report.tables import league_table

    with LeagueStore(league.store, create=False) as store:
        return league_table(store, league, current_only=True)


def _settled(rows: list[Any], confidence: float) -> bool:
    return all(r.p_better is not None and r.p_better >= confidence for r in rows[:-1])


def play_finals(cfg: ContestConfig, db: ContestDB, top: int, rounds: int, *, confidence: float = 0.95,
                max_games: int | None = None, progress: bool = True, dask: str | None = None,
                echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Play the finals (see the module docstring); return what ``result.json`` holds."""
    from harness.league.config import games_per_round
    from harness.league.runner import RunOptions, run_league
    from harness.report.html import write_report

    board = [r for r in leaderboard_rows(db) if r["version"] is not None and not r["disabled"]][:top]
    if len(board) < 2 or not table_sizes(cfg, len(board)):
        raise ValueError(f"the finals need at least {max(2, min(cfg.players))} teams with a checked version; "
                         f"there are {len(board)} (uploads stay open)")
    db.set_meta("frozen", "1")  # from here on the site refuses uploads
    echo("finalists: " + ", ".join(f"{r['rank']}. {r['team']}@{r['version']}" for r in board))
    roster = [RosterEntry(r["team"], r["submission_id"], r["runtime"]) for r in board]
    folder = cfg.root / "finals"
    folder.mkdir(exist_ok=True)
    sizes = table_sizes(cfg, len(board))
    per_round = games_per_round(len(board), sizes)
    budget = max_games if max_games is not None else 10 * rounds * per_round
    played, planned = 0, rounds
    while True:
        data = league_data(cfg, roster, name=f"{cfg.name}-finals", rounds=planned, store="finals.sqlite")
        league = write_config(folder / "finals.yaml", data)
        played += run_league(league, progress=progress,
                             options=RunOptions(dask=dask, max_games=budget - played)).played
        rows = _table(league)
        settled = _settled(rows, confidence)
        games = sum(r.games for r in rows) // max(1, min(sizes))
        echo(f"after {planned} rounds ({games} games): " + ", ".join(
            f"{r.bot} {r.mu:.2f}" + (f" (P>next {r.p_better:.2f})" if r.p_better is not None else "") for r in rows))
        if settled or played >= budget:
            break
        planned += rounds
    result = _result(rows, confidence, settled, played, budget, planned)
    (folder / RESULT).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    written = write_report(league, folder / "report")
    echo(f"finals report: {written['dir']}/index.html")
    echo(("the order is settled: every finalist above the next with probability >= "
          f"{confidence:.2f}") if settled else
         f"the game budget ({budget} games) ran out before the order was settled at {confidence:.2f}")
    return result


def _result(rows: list[Any], confidence: float, settled: bool, played: int, budget: int,
            rounds: int) -> dict[str, Any]:
    champion = champion_probabilities([r.mu for r in rows], [r.sigma for r in rows])
    return {"confidence": confidence, "settled": settled, "stopped": "settled" if settled else "budget",
            "games": played, "max_games": budget, "rounds": rounds, "finished_at": time.time(),
            "finalists": [{"rank": r.rank, "team": r.bot, "version": r.version, "mu": r.mu, "sigma": r.sigma,
                           "p_better": r.p_better, "p_champion": p, "games": r.games, "wins": r.wins,
                           "mean_rank": r.mean_rank} for r, p in zip(rows, champion)]}


def read_result(root: Path) -> dict[str, Any] | None:
    """The finals' ``result.json``, or None before the finals have finished."""
    try:
        data = json.loads((root / "finals" / RESULT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
