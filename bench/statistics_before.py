"""The statistics as they were before they read arrays, kept for bench/table.py to measure
against: one Python object per game (``statistics.load_games``), duplicate sets grouped in
Python, dense sets x bots matrices for the bootstrap, and a Python loop and a bootstrap per pair
of bots for the head to head. Same meaning and outputs as :mod:`harness.report.statistics`
(tests/test_statistics_arrays.py compares the new functions with a reference of these)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from harness.report.statistics import GameRow, duplicate_sets

BOOTSTRAP = 1000
_CHUNK = 100


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
