"""How sure is the table? Intervals, head-to-head and seat bias from the store.

Every interval here is clustered by **duplicate set**, never by single game: the games of one
set share a deal (the same seed, every seat order of the same bots), so their outcomes are
correlated, and treating them one by one would make the intervals wrong (too narrow when the
deal's luck lands on one bot in every game, too wide when the seat orders cancel it). A set is
the games of one round and one deal between the same bot versions.

The games come as numpy arrays per table size (:func:`load_arrays`, one query) and stay arrays:
sets are numbered by sorting (round, seed, sorted versions), and the per-set sums a statistic
needs (per set and bot, per set and pair of bots, per set and seat) are ``np.bincount`` over the
games' seats. A bot plays in few of a large league's sets, so these sums are sparse: at 1,000
bots and 1,000,000 games, 500,000 entries where a sets x bots matrix has 167 million cells.

Two interval methods, both of the ratio sum(x) / sum(n) over sets (mean score = score per game):

- the **percentile bootstrap** over sets, while a league has at most ``MAX_BOOTSTRAP_SETS``
  (10,000) sets: 1,000 resamples (multinomial weights; past 2,000 sets, Poisson(1) weights, the
  standard large-sample equivalent, far cheaper to draw) multiplied through the sparse per-set
  sums, so it costs resamples x entries. Its numbers are the former dense bootstrap's (the same
  weights from the same seed; tests compare them with a per-game reference);
- past that, the **delta method** (linearised, cluster-robust): variance sum over sets of (x_s -
  r n_s)^2 / (sum n)^2, the Poisson bootstrap's own variance to first order, hence its
  large-sample limit; it costs one pass over the entries and draws nothing.

Measured (2 shared cores, load ~1, in memory): at 10,000 sets of 1,000 bots the bootstrap of
mean score and rank takes 0.9 s, the delta method 0.1 s; at 1,000,000 games (166,667 sets) the
delta method takes 0.9 s (bot intervals), 1.9 s (head to head, 315,861 pairs, 1.3 s of it
building the output's dicts) and 0.4 s (seat bias) (bench/table.py; docs/performance.md). The two
methods agree where a bot has many sets: on 5,000 sets of 40 bots (375 sets per bot) the
endpoints differ by at most 6% of the interval's width (median 1.5%, the bootstrap's own noise
at 2,000 resamples); at 30 sets per bot (10,000 sets of 1,000 bots) by at most 15% (median 3%).
A head-to-head pair sharing only a few sets gets a rough interval from either (with one set,
none at all: [x, x]); at 1,000 bots most pairs share one or two deals.

The table's mu, its interval, its order and P(>next) are not here: they come from one model
fitted in the league stage (:func:`harness.league.ratings_fit.fit_table`).

All functions return plain data (dicts, lists, floats) that the table, ``harness h2h``, the
HTML report and JSON outputs share. Ranks are 1-based here (1 = first), as people read them.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from harness.league import queries
from harness.league.queries import GameArrays
from harness.league.store import LeagueStore

__all__ = ["GameRow", "MAX_BOOTSTRAP_SETS", "Played", "as_arrays", "bot_intervals", "duplicate_sets", "head_to_head",
           "load_arrays", "load_games", "seat_bias"]

BOOTSTRAP = 1000
MAX_BOOTSTRAP_SETS = 10_000  # past it (method "auto"), the delta method: see the module's text
Z95 = 1.959963984540054
_CHUNK = 100  # resamples per matrix product
_PAIR_CHUNK = 2000  # pairs per head-to-head bootstrap product (resamples x pairs floats)


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


#: finished games as the statistics take them: :func:`load_arrays`' arrays per table size
#: (fast), or :class:`GameRow` objects in schedule order (small leagues, tests)
Played = Sequence[GameRow] | Sequence[GameArrays]


def duplicate_sets(games: Iterable[GameRow]) -> list[list[GameRow]]:
    """Games grouped by duplicate set: same round, same deal, same bot versions."""
    sets: dict[tuple[Any, ...], list[GameRow]] = {}
    for g in games:
        sets.setdefault((g.round, g.seed, frozenset(g.versions)), []).append(g)
    return list(sets.values())


def load_arrays(store: LeagueStore) -> list[GameArrays]:
    """Every finished game as arrays, one :class:`~harness.league.queries.GameArrays` per table
    size: what the statistics below read fastest (one query, no Python object per game)."""
    return queries.done_game_arrays(store)


def as_arrays(games: Played) -> list[GameArrays]:
    """``games`` as arrays per table size: :func:`load_arrays`' output as it is, or
    :class:`GameRow` objects (schedule order: their position in the sequence) converted."""
    if not games:
        return []
    if isinstance(games[0], GameArrays):
        return [g for g in games if isinstance(g, GameArrays)]
    by_size: dict[int, list[tuple[int, GameRow]]] = {}
    for position, g in enumerate(games):
        assert isinstance(g, GameRow)
        by_size.setdefault(g.players, []).append((position, g))
    out = []
    for size in sorted(by_size):
        rows = by_size[size]

        def seats(field: str, dtype: type, rows: list[tuple[int, GameRow]] = rows, size: int = size) -> np.ndarray:
            return np.fromiter(chain.from_iterable(getattr(g, field) for _, g in rows), dtype=dtype,
                               count=len(rows) * size).reshape(-1, size)

        def per_game(values: Iterable[int]) -> np.ndarray:
            return np.fromiter(values, dtype=np.int64)

        out.append(GameArrays(seats("versions", np.int64), seats("ranks", np.int64), seats("scores", np.float64),
                              per_game(p for p, _ in rows), per_game(g.round for _, g in rows),
                              per_game(g.seed for _, g in rows)))
    return out


@dataclass
class _Sets:
    """The duplicate sets of the games of every table size: per table, each game's set, numbered
    over all tables (``ids``) and within its table (``local``), both in order of first appearance
    in the schedule (the order in which :func:`duplicate_sets` lists them)."""

    tables: list[GameArrays]
    ids: list[np.ndarray]
    local: list[np.ndarray]
    local_count: list[int]
    count: int


#: each table's duplicate sets, computed once per arrays object (the index asks for several statistics)
_TABLE_SETS: weakref.WeakKeyDictionary[GameArrays, tuple[np.ndarray, np.ndarray]] = weakref.WeakKeyDictionary()


def _table_sets(t: GameArrays) -> tuple[np.ndarray, np.ndarray]:
    """One table's sets, one integer per (round, deal seed, sorted bot versions) by sorting, no
    Python loop over games: each game's set, numbered in order of first appearance, and the
    sets' first seqs (ascending)."""
    cached = _TABLE_SETS.get(t)
    if cached is not None:
        return cached
    if not len(t.seqs):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = np.column_stack([t.rounds, t.seeds, np.sort(t.versions, axis=1)])
    order = np.lexsort(key.T[::-1])  # stable: within a set, schedule order
    ordered = key[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    sorted_id = np.cumsum(new) - 1
    first = t.seqs[order[new]]  # each set's first game (seqs ascend within a table)
    by_first = np.empty(len(first), dtype=np.int64)
    by_first[np.argsort(first, kind="stable")] = np.arange(len(first))
    ids = np.empty(len(order), dtype=np.int64)
    ids[order] = by_first[sorted_id]
    _TABLE_SETS[t] = (ids, np.sort(first))
    return _TABLE_SETS[t]


def _duplicate_set_ids(tables: list[GameArrays]) -> _Sets:
    """The duplicate sets of every table, numbered within each table and over all of them."""
    local, firsts = zip(*(_table_sets(t) for t in tables)) if tables else ((), ())
    counts = [len(f) for f in firsts]
    everything = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    rank = np.empty(len(everything), dtype=np.int64)
    rank[np.argsort(everything, kind="stable")] = np.arange(len(everything))
    offsets = np.cumsum([0, *counts])
    numbered = [rank[offsets[i] + ids] for i, ids in enumerate(local)]
    return _Sets(tables, numbered, list(local), counts, int(offsets[-1]))


def _bootstrapped(method: str, sets: int) -> bool:
    if method not in ("auto", "bootstrap", "delta"):
        raise ValueError(f"unknown interval method {method!r} (known: auto, bootstrap, delta)")
    return method == "bootstrap" or (method == "auto" and sets <= MAX_BOOTSTRAP_SETS)


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


def _ratio_bootstrap(numerators: Any, denominators: Any, n_sets: int, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap distribution of sum(num)/sum(den) over sets: (resamples, columns). The matrices
    are columns x sets, dense or sparse (a sparse product costs its entries, not its cells)."""
    out = []
    for w in _weights(n_sets, resamples, seed):
        with np.errstate(invalid="ignore", divide="ignore"):
            if isinstance(numerators, np.ndarray):  # w @ M.T: a transposed view BLAS takes as it is
                out.append((w @ numerators.T) / (w @ denominators.T))
            else:
                out.append(np.asarray(numerators @ w.T).T / np.asarray(denominators @ w.T).T)
    return np.vstack(out) if out else np.empty((0, numerators.shape[0]))


def _ci(samples: np.ndarray) -> list[float | None]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return [None, None]
    low, high = np.percentile(finite, [2.5, 97.5])
    return [float(low), float(high)]


def _percentile_cis(samples: np.ndarray) -> list[list[float | None]]:
    """The 95% percentile interval of each column of bootstrap ``samples``, NaN resamples dropped."""
    finite = np.isfinite(samples).all(axis=0)
    out: list[list[float | None]] = [[None, None]] * samples.shape[1]
    if finite.any() and samples.shape[0]:
        low, high = np.percentile(samples[:, finite], [2.5, 97.5], axis=0)
        for column, lo, hi in zip(np.flatnonzero(finite).tolist(), low.tolist(), high.tolist()):
            out[column] = [lo, hi]
    for column in np.flatnonzero(~finite).tolist():
        out[column] = _ci(samples[:, column])
    return out


def _delta_cis(estimate: np.ndarray, column: np.ndarray, numerator: np.ndarray, denominator: np.ndarray,
               columns: int) -> list[list[float | None]]:
    """The cluster-robust (linearised) 95% interval of each ratio ``estimate[c] = sum num / sum
    den`` from its per-set sums (entry ``i``: set sums of ``column[i]``): the variance
    sum_s (num_s - estimate * den_s)^2 / (sum den)^2, the Poisson bootstrap's own variance to
    first order."""
    residual = numerator - estimate[column] * denominator
    total = np.bincount(column, weights=denominator, minlength=columns)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = Z95 * np.sqrt(np.bincount(column, weights=residual ** 2, minlength=columns)) / total
    return [[lo, hi] for lo, hi in zip((estimate - half).tolist(), (estimate + half).tolist())]


def _sums(keys: np.ndarray, *values: np.ndarray) -> tuple[np.ndarray, ...]:
    """Distinct ``keys`` (sorted) and, per key, the sum of each of ``values``."""
    distinct, at = np.unique(keys, return_inverse=True)
    return (distinct, *(np.bincount(at, weights=v, minlength=len(distinct)) for v in values))


def _by_set(grouped: _Sets) -> Iterable[tuple[np.ndarray, np.ndarray, int, tuple[np.ndarray, ...]]]:
    """Per table: each game's set within it, each of its sets' number over all tables,
    the number of its sets, and the games' versions, ranks and scores with the seats of each game
    ordered by version. Every game of a set seats the same versions, so a seat's place in that
    order names the same bot in every game of its set: sums per (set, place) are per (set, bot),
    by ``np.bincount``, without sorting the games' seats."""
    for t, local, n_local, ids in zip(grouped.tables, grouped.local, grouped.local_count, grouped.ids):
        order = np.argsort(t.versions, axis=1, kind="stable")
        seats = tuple(np.take_along_axis(x, order, axis=1) for x in (t.versions, t.ranks, t.scores))
        number = np.empty(n_local, dtype=np.int64)
        number[local] = ids
        yield local, number, n_local, seats


def _per_set_and_place(local: np.ndarray, n_local: int, places: int, *values: np.ndarray) -> list[np.ndarray]:
    """Per (set, place) in set-major order: the sum of each of ``values`` (games x places)."""
    at = (local[:, None] * places + np.arange(places)).ravel()
    return [np.bincount(at, weights=v.ravel().astype(np.float64), minlength=n_local * places) for v in values]


def bot_intervals(games: Played, resamples: int = BOOTSTRAP, seed: int = 0,
                  method: str = "auto") -> dict[int, dict[str, Any]]:
    """Per bot version: games, mean score and mean rank (1 = first), each with a 95% interval
    clustered by duplicate set (``method``: auto, bootstrap or delta; see the module's text)."""
    grouped = _duplicate_set_ids(as_arrays(games))
    if not grouped.count:
        return {}
    parts: list[tuple[np.ndarray, ...]] = []
    for local, number, n_local, (versions, ranks, scores) in _by_set(grouped):
        size = versions.shape[1]
        bot = np.empty((n_local, size), dtype=np.int64)
        bot[local] = versions  # each set's bots, by place
        sums = _per_set_and_place(local, n_local, size, scores, ranks + 1, np.ones_like(ranks))
        parts.append((np.repeat(number, size), bot.ravel(), *sums))
    set_of, version, score_e, rank_e, count_e = (np.concatenate(column) for column in zip(*parts))
    bots, col = np.unique(version, return_inverse=True)
    k = len(bots)
    # per (set, bot): the sums of score and of rank (1 = first), and the games (a bot seated twice
    # in a game fills two places of its set: summed here)
    cells, score, rank, count = _sums(set_of * k + col, score_e, rank_e, count_e)
    cell_set, cell_bot = cells // k, cells % k
    games_of = np.bincount(cell_bot, weights=count, minlength=k)
    mean_score = np.bincount(cell_bot, weights=score, minlength=k) / games_of
    mean_rank = np.bincount(cell_bot, weights=rank, minlength=k) / games_of
    if _bootstrapped(method, grouped.count):
        from scipy import sparse  # here: only the bootstrap needs it

        def matrix(values: np.ndarray) -> Any:
            return sparse.csr_matrix((values, (cell_bot, cell_set)), shape=(k, grouped.count))

        n = matrix(count)
        score_ci = _percentile_cis(_ratio_bootstrap(matrix(score), n, grouped.count, resamples, seed))
        rank_ci = _percentile_cis(_ratio_bootstrap(matrix(rank), n, grouped.count, resamples, seed + 1))
    else:
        score_ci = _delta_cis(mean_score, cell_bot, score, count, k)
        rank_ci = _delta_cis(mean_rank, cell_bot, rank, count, k)
    return {v: {"games": n, "mean_score": s, "mean_score_ci": sc, "mean_rank": r, "mean_rank_ci": rc}
            for v, n, s, sc, r, rc in zip(bots.tolist(), games_of.astype(np.int64).tolist(), mean_score.tolist(),
                                          score_ci, mean_rank.tolist(), rank_ci)}


def _pair_entries(grouped: _Sets, among: Collection[int] | None) -> tuple[np.ndarray, ...]:
    """For every two places of every set (two bots of its games), as arrays: the lower version
    id a, the higher b, the set, and over the set's games the sums of a's score minus b's, of
    a's wins over b (ahead 1, level 1/2) and the games."""
    parts: list[tuple[np.ndarray, ...]] = []
    wanted = None if among is None else np.fromiter(among, dtype=np.int64)
    for local, number, n_local, (versions, ranks, scores) in _by_set(grouped):
        places = list(itertools.combinations(range(versions.shape[1]), 2))
        first, second = [i for i, _ in places], [j for _, j in places]
        a, b = versions[:, first], versions[:, second]  # a <= b: the seats are ordered by version
        ra, rb = ranks[:, first], ranks[:, second]
        win = np.where(ra < rb, 1.0, np.where(ra == rb, 0.5, 0.0))
        diff, together, won = _per_set_and_place(local, n_local, len(places), scores[:, first] - scores[:, second],
                                                 (a != b).astype(np.float64), win)
        set_a, set_b = np.empty((n_local, len(places)), dtype=np.int64), np.empty((n_local, len(places)), dtype=np.int64)
        set_a[local], set_b[local] = a, b
        keep = together > 0  # not a bot against itself
        if wanted is not None:
            keep &= np.isin(set_a.ravel(), wanted) & np.isin(set_b.ravel(), wanted)
        parts.append((set_a.ravel()[keep], set_b.ravel()[keep], np.repeat(number, len(places))[keep], diff[keep],
                      won[keep], together[keep]))
    if not parts:
        return tuple(np.zeros(0) for _ in range(6))
    return tuple(np.concatenate(column) for column in zip(*parts))


def head_to_head(games: Played, resamples: int = BOOTSTRAP, seed: int = 0, method: str = "auto",
                 among: Collection[int] | None = None) -> list[dict[str, Any]]:
    """Every pair that met (both in ``among``, if given), a < b: games together, a's share won
    against b (ahead of it: 1, level: 0.5), and a's mean score difference with its 95% interval
    clustered by duplicate set, on the deals they shared. The interval's method (``method``:
    auto, bootstrap or delta) depends on the whole league's sets, not on ``among``: a pair's
    numbers are the same in the full list and in a part of it."""
    grouped = _duplicate_set_ids(as_arrays(games))
    a, b, set_of, diff, win, count = _pair_entries(grouped, among)
    if not len(a):
        return []
    span = int(max(a.max(), b.max())) + 1
    pairs, pair = np.unique(a.astype(np.int64) * span + b.astype(np.int64), return_inverse=True)
    together = np.bincount(pair, weights=count)
    won = np.bincount(pair, weights=win)
    mean_diff = np.bincount(pair, weights=diff) / together
    # per (pair, set), sorted by pair then by set: the sums of the score difference and the games
    cells, cell_diff, cell_count = _sums(pair * max(1, grouped.count) + set_of.astype(np.int64), diff, count)
    cell_pair = cells // max(1, grouped.count)
    if _bootstrapped(method, grouped.count):
        cis = _pair_bootstrap(cell_pair, cell_diff, cell_count, len(pairs), resamples, seed)
    else:
        cis = _delta_cis(mean_diff, cell_pair, cell_diff, cell_count, len(pairs))
    return [{"a": int(key // span), "b": int(key % span), "games": n, "a_won_share": w / n, "score_diff": d,
             "score_diff_ci": ci}
            for key, n, w, d, ci in zip(pairs.tolist(), together.astype(np.int64).tolist(), won.tolist(),
                                        mean_diff.tolist(), cis)]


def _pair_bootstrap(cell_pair: np.ndarray, diff: np.ndarray, count: np.ndarray, n_pairs: int, resamples: int,
                    seed: int) -> list[list[float | None]]:
    """Each pair's percentile bootstrap over its own shared sets, with the weights a pair of k
    sets always draws (the generator seeded with ``seed``): pairs with the same k share one
    weight matrix, so every pair costs one matrix product, no Python loop over pairs."""
    per_pair = np.bincount(cell_pair, minlength=n_pairs)
    start = np.concatenate([[0], np.cumsum(per_pair)[:-1]])
    out: list[list[float | None]] = [[None, None]] * n_pairs
    for k in np.unique(per_pair).tolist():
        weights = np.vstack(list(_weights(k, resamples, seed)))
        mine = np.flatnonzero(per_pair == k)
        for chunk in range(0, len(mine), _PAIR_CHUNK):
            part = mine[chunk:chunk + _PAIR_CHUNK]
            at = start[part][None, :] + np.arange(k)[:, None]  # k x pairs: each pair's sets in order
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = (weights @ diff[at]) / (weights @ count[at])
            for p, ci in zip(part.tolist(), _percentile_cis(boot)):
                out[p] = ci
    return out


def seat_bias(games: Played, resamples: int = BOOTSTRAP, seed: int = 0,
              method: str = "auto") -> dict[int, list[dict[str, Any]]]:
    """Per table size: each seat position's win rate (first place, shared or not) with its 95%
    interval clustered by duplicate set. With duplicate deals every bot sits in every seat
    equally often, so a seat whose interval excludes 1/players favours or handicaps whoever sits
    there."""
    grouped = _duplicate_set_ids(as_arrays(games))
    out: dict[int, list[dict[str, Any]]] = {}
    for t, local, n_sets in zip(grouped.tables, grouped.local, grouped.local_count):
        size = t.versions.shape[1]
        # per (set, seat): first places and games, a dense sets x seats matrix
        at = (local[:, None] * size + np.arange(size)).ravel()
        wins = np.bincount(at, weights=(t.ranks == 0).ravel().astype(np.float64), minlength=n_sets * size)
        count = np.bincount(at, minlength=n_sets * size).astype(np.float64)
        rate = wins.reshape(-1, size).sum(axis=0) / count.reshape(-1, size).sum(axis=0)
        if _bootstrapped(method, n_sets):
            cis = _percentile_cis(_ratio_bootstrap(wins.reshape(-1, size).T, count.reshape(-1, size).T, n_sets,
                                                   resamples, seed))
        else:
            cis = _delta_cis(rate, np.tile(np.arange(size), n_sets), wins, count, size)
        seats = count.reshape(-1, size).sum(axis=0).astype(np.int64).tolist()
        out[size] = [{"seat": seat, "games": seats[seat], "win_rate": float(rate[seat]), "win_rate_ci": cis[seat]}
                     for seat in range(size)]
    return out
