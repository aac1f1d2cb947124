"""What a team's pages read from the ladder's store to say why it loses, each read bounded.

- :func:`results_by_opponent`: over the team's latest :data:`RECENT` seats, for each opposing
  team how often it finished ahead, behind, level; and per table size games, wins, mean rank;
- :func:`filtered_games`: the team's latest games, filtered by result (won: first place), table
  size and opponent;
- :func:`grouped_violations`: the team's latest violations grouped by kind and message (numbers
  and asides in parentheses count as one: ``answered in 412 ms`` and ``in 380 ms`` are one group,
  as are ``... (nearest offered: Q, pass)`` and ``(nearest offered: pass)``), with how many and the
  newest example.

The team is whoever asks; the pages decide who may see what (public: results; own: games from its
seats and violations).
"""

from __future__ import annotations

import re
from typing import Any

from harness.contest import ladder_sql
from harness.contest.ladder_reads import LadderReader
from harness.league import queries

__all__ = ["RECENT", "results_by_opponent", "filtered_games", "grouped_violations"]

#: the latest games a team's statistics are computed over (a page costs the same after 1,000,000 games:
#: bench/contest.py, ~100 ms at 5,000 with 1,000 teams and 1,000,000 games at load 11)
RECENT = 2000
_NUMBER = re.compile(r"\d+(\.\d+)?")
_ASIDE = re.compile(r"\([^()]*\)")


def _marks(items: list[Any]) -> str:
    return ",".join("?" * len(items))


def results_by_opponent(reader: LadderReader, team: str) -> dict[str, Any]:
    """Per opponent and per table size, over the team's latest RECENT games; hardest opponents first."""
    store, ids = reader.store(), reader.version_ids(team)
    empty: dict[str, Any] = {"opponents": [], "sizes": [], "games": 0}
    if store is None or not ids:
        return empty
    rows = ladder_sql.opponent_seats(store, ids, RECENT)
    opponents: dict[str, list[int]] = {}
    sizes: dict[int, dict[int, int]] = {}
    for r in rows:
        if r.opponent != team:
            o = opponents.setdefault(r.opponent, [0, 0, 0, 0])
            o[0] += 1
            o[1 if r.rank < r.orank else 2 if r.rank > r.orank else 3] += 1
        sizes.setdefault(r.players, {})[r.game_seq] = r.rank
    order = sorted(opponents, key=lambda name: (-opponents[name][2] / opponents[name][0], -opponents[name][0], name))
    opp = [{"team": name, "games": g, "ahead": a, "behind": b, "level": lv, "behind_share": b / g}
           for name in order for g, a, b, lv in [opponents[name]]]
    by_size: list[dict[str, Any]] = [{"players": n, "games": len(ranks), "wins": sum(1 for k in ranks.values() if k == 0),
                "mean_rank": 1 + sum(ranks.values()) / len(ranks)} for n, ranks in sorted(sizes.items())]
    return {"opponents": opp, "sizes": by_size, "games": sum(int(s["games"]) for s in by_size)}


def filtered_games(reader: LadderReader, team: str, *, result: str | None = None, players: int | None = None,
                   opponent: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
    """The team's latest finished games matching the filters, newest first, each with ``won``
    (its seat finished first) and ``own_seats``."""
    store, ids = reader.store(), reader.version_ids(team)
    if store is None or not ids:
        return []
    seqs = ladder_sql.filtered_seqs(store, ids, result=result, players=players, opponent=opponent, limit=limit)
    games = reader._with_seats(queries.games_by_seq(store, seqs))
    for g in games:
        own = [s for s in g["seats"] if s["team"] == team]
        g["own_seats"] = [s["seat"] for s in own]
        g["won"] = any(s["rank"] == 0 for s in own)
        g["players"] = len(g["seats"])
    return games


def grouped_violations(reader: LadderReader, team: str, limit: int = 2000) -> list[dict[str, Any]]:
    """The team's latest ``limit`` violations grouped by kind and message, most frequent first:
    kind, message (numbers as ``#``), count, versions, and the newest (its id, game, detail)."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for v in reader.team_violations(team, limit):  # newest first
        key = (v["kind"], _ASIDE.sub("(...)", _NUMBER.sub("#", v["detail"] or "")))
        group = groups.get(key)
        if group is None:
            group = groups[key] = {"kind": key[0], "message": key[1], "count": 0, "versions": [], "newest": v}
        group["count"] += 1
        if v["version"] not in group["versions"]:
            group["versions"].append(v["version"])
    return sorted(groups.values(), key=lambda g: (-g["count"], -g["newest"]["id"]))
