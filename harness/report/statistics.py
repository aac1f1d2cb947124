"""How sure is the table? Intervals, head-to-head and seat bias from the store.

Every interval here is a percentile bootstrap over **duplicate sets**, never over single games:
the games of one set share a deal (the same seed, every seat order of the same bots), so their
outcomes are correlated, and resampling them one by one would make the intervals too narrow.
A set is the games of one round and one deal between the same bot versions. Resampling is
vectorised with numpy: per-set sums are multiplied by multinomial weights (B resamples, in
chunks so that memory stays ~50 MB for 100,000 games; past 2,000 sets, Poisson(1) weights, the
standard large-sample equivalent that is far cheaper to draw), so 1,000 resamples of a
100,000-game league take about a second.

The table's mu, its interval, its order and P(>next) are not here: they come from one model
fitted in the league stage (:func:`harness.league.ratings_fit.fit_table`).

All functions return plain data (dicts, lists, floats) that the table, ``harness h2h``, the
HTML report and JSON outputs share. Ranks are 1-based here (1 = first), as people read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.league import queries
from harness.league.store import LeagueStore

__all__ = ["GameRow", "bot_intervals", "duplicate_sets", "head_to_head", "load_games",
           "seat_bias"]

BOOTSTRAP = 1000
_CHUNK = 100  # resamples per matrix product


@dataclass(frozen=True)
class GameRow:
    """A finished game: where it sits in the schedule and, by seat, who played, rank (0 = first), score."""

    seq: int
    round: int
    seed: int
    versions: tuple[int, ...]
    ranks: tuple[int, ...]
    scores: tuple[float, ...]

    @property
    def players(self) -> int:
        return len(self.versions)


def load_games(store: LeagueStore) -> list[GameRow]:
    """Every finished game in schedule order (one query)."""
    games: list[GameRow] = []
    current: list[Any] = []
    for seq, round_, seed, version, rank, score in queries.done_seats(store):
        if current and current[0] != seq:
            games.append(_row(current))
            current = []
        if not current:
            current = [seq, round_, seed, [], [], []]
        current[3].append(version)
        current[4].append(rank)
        current[5].append(float(score or 0))
    if current:
        games.append(_row(current))
    return games


def _row(c: list[Any]) -> GameRow:
    return GameRow(c[0], c[1], c[2], tuple(c[3]), tuple(c[4]), tuple(c[5]))


def duplicate_sets(games: Iterable[GameRow]) -> list[list[GameRow]]:
    """Games grouped by duplicate set: same round, same deal, same bot versions."""
    sets: dict[tuple[Any, ...], list[GameRow]] = {}
    for g in games:
        sets.setdefault((g.round, g.seed, frozenset(g.versions)), []).append(g)
    return list(sets.values())


def _weights(n_sets: int, resamples: int, seed: int) -> Iterable[np.ndarray]:
    """Multinomial bootstrap weights, ``resamples`` x ``n_sets``, in chunks."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < resamples:
        k = min(_CHUNK, resamples - done)
        if n_sets > 2000:  # the Poisson bootstrap: the same in the limit, and ~50x cheaper to draw
            yield rng.poisson(1.0, size=(k, n_sets)).astype(np.float64)
        else:
            yield rng.multinomial(n_sets, np.full(n_sets, 1.0 / n_sets), size=k).astype(np.float64)
        done += k


def _ratio_bootstrap(numerators: np.ndarray, denominators: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap distribution of sum(num)/sum(den) over sets: (resamples, columns)."""
    out = []
    for w in _weights(numerators.shape[0], resamples, seed):
        with np.errstate(invalid="ignore", divide="ignore"):
            out.append((w @ numerators) / (w @ denominators))
    return np.vstack(out) if out else np.empty((0, numerators.shape[1]))


def _ci(samples: np.ndarray) -> list[float | None]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return [None, None]
    low, high = np.percentile(finite, [2.5, 97.5])
    return [float(low), float(high)]


def bot_intervals(games: Sequence[GameRow], resamples: int = BOOTSTRAP, seed: int = 0) -> dict[int, dict[str, Any]]:
    """Per bot version: games, mean score and mean rank (1 = first), each with a 95% interval."""
    sets = duplicate_sets(games)
    bots = sorted({v for g in games for v in g.versions})
    if not sets or not bots:
        return {}
    col = {v: i for i, v in enumerate(bots)}
    score = np.zeros((len(sets), len(bots)))
    rank = np.zeros((len(sets), len(bots)))
    count = np.zeros((len(sets), len(bots)))
    for s, group in enumerate(sets):
        for g in group:
            for v, r, sc in zip(g.versions, g.ranks, g.scores):
                score[s, col[v]] += sc
                rank[s, col[v]] += r + 1
                count[s, col[v]] += 1
    boot_score = _ratio_bootstrap(score, count, resamples, seed)
    boot_rank = _ratio_bootstrap(rank, count, resamples, seed + 1)
    out = {}
    totals = count.sum(axis=0)
    for v, i in col.items():
        n = float(totals[i])
        out[v] = {"games": int(n), "mean_score": float(score[:, i].sum() / n), "mean_score_ci": _ci(boot_score[:, i]),
                  "mean_rank": float(rank[:, i].sum() / n), "mean_rank_ci": _ci(boot_rank[:, i])}
    return out


def _pairs(sets: Sequence[Sequence[GameRow]]) -> dict[tuple[int, int], dict[str, Any]]:
    """For every pair (a, b) with a < b that met, in one pass over the games: per shared set the
    sums of (b's rank - a's rank), of (a's score - b's score) and the games, plus a's wins over b
    (ahead 1, level 1/2). O(games x seats^2), whatever the number of bots."""
    acc: dict[tuple[int, int], dict[str, Any]] = {}
    for index, group in enumerate(sets):
        for g in group:
            n = len(g.versions)
            for i in range(n):
                for j in range(n):
                    a, b = g.versions[i], g.versions[j]
                    if a >= b:
                        continue
                    entry = acc.setdefault((a, b), {"sets": {}, "wins": 0.0, "games": 0})
                    row = entry["sets"].setdefault(index, [0.0, 0.0, 0.0])
                    row[0] += g.ranks[j] - g.ranks[i]
                    row[1] += g.scores[i] - g.scores[j]
                    row[2] += 1
                    entry["wins"] += 1.0 if g.ranks[i] < g.ranks[j] else 0.5 if g.ranks[i] == g.ranks[j] else 0.0
                    entry["games"] += 1
    for entry in acc.values():
        rows = np.array(list(entry.pop("sets").values()))
        entry["rank_diff"], entry["score_diff"], entry["count"] = rows[:, 0], rows[:, 1], rows[:, 2]
    return acc


def head_to_head(games: Sequence[GameRow], resamples: int = BOOTSTRAP, seed: int = 0) -> list[dict[str, Any]]:
    """Every pair that met: games together, the share won against the other (ahead of it: 1,
    level: 0.5), and the mean score difference with its 95% interval, on the deals they shared."""
    out = []
    for (a, b), entry in sorted(_pairs(duplicate_sets(games)).items()):
        n = entry["games"]
        boot = _ratio_bootstrap(entry["score_diff"][:, None], entry["count"][:, None], resamples, seed)[:, 0]
        out.append({"a": a, "b": b, "games": n, "a_won_share": entry["wins"] / n,
                    "score_diff": float(entry["score_diff"].sum() / n), "score_diff_ci": _ci(boot)})
    return out


def seat_bias(games: Sequence[GameRow], resamples: int = BOOTSTRAP, seed: int = 0) -> dict[int, list[dict[str, Any]]]:
    """Per table size: each seat position's win rate (first place, shared or not) with its 95%
    interval. With duplicate deals every bot sits in every seat equally often, so a seat whose
    interval excludes 1/players favours or handicaps whoever sits there."""
    out: dict[int, list[dict[str, Any]]] = {}
    for size in sorted({g.players for g in games}):
        sets = duplicate_sets(g for g in games if g.players == size)
        wins = np.zeros((len(sets), size))
        count = np.zeros((len(sets), size))
        for s, group in enumerate(sets):
            for g in group:
                for seat, r in enumerate(g.ranks):
                    wins[s, seat] += r == 0
                    count[s, seat] += 1
        boot = _ratio_bootstrap(wins, count, resamples, seed)
        out[size] = [{"seat": seat, "games": int(count[:, seat].sum()),
                      "win_rate": float(wins[:, seat].sum() / count[:, seat].sum()), "win_rate_ci": _ci(boot[:, seat])}
                     for seat in range(size)]
    return out
