"""The adaptive schedule's matchmaker (pure, no store): which duplicate sets to play next, from the results.

A league of hundreds of bots cannot play its round robin (200 Epizodiak bots: 7,880,400 games a
round), so an adaptive league plays *rounds* chosen as results come in. A round has one table
size (the sizes take turns, so every bot gets the same mix) and seats every active bot in
exactly one duplicate set (one deal in every seat order): games stay balanced by construction,
and seats too (a set plays every seat order). When the bots do not divide into tables, the
most-played sit out. Who sits with whom:

- *What teaches the ratings.* The active bots are sorted by one draw of their skills from the
  posterior of the order-free batch fit (Thompson sampling; the joint Gaussian, so two bots
  whose order is settled by many games rarely swap even when both are uncertain against the
  rest) and consecutive bots share a table, from an offset that changes every round. Bots that
  are close and whose order is uncertain meet; bots whose order is known stop meeting.
  Incremental TrueSkill would not do: one independent Gaussian per bot forgets what close games
  taught, and choosing near opponents from it gains little (docs/leagues.md, bench/matchmaking.py).
- *The whole table.* A share of the rounds (``wide_share``) is drawn uniformly at random, so the
  top meets the rest and the fit's scale is tied across the table.
- *A new version plays first.* A bot behind the league (games below the active median by more
  than two sets of the largest table) plays several sets in each round, up to half of the round's other bots, each
  against opponents taken at evenly spread places of the sorted table (not only its
  neighbours), until it has caught up. Its opponents play that set instead of a regular one, so
  they stay balanced. Measured (bench/matchmaking.py): a newcomer's first 200 games within the
  league's first ~150 sets after it arrived (tables of 2, 200 bots).

Deterministic: a round depends only on the league seed, the round's number, the active bots
(in arrival order), the sets scheduled before it and the results of the rounds up to
``lag`` rounds before it, which is what lets a killed runner choose the same games again
(:class:`Matchmaker` is rebuilt from the store's games, read as arrays:
:meth:`Matchmaker.note_games`, :meth:`Matchmaker.record_games`). Random draws come from numpy's PCG64
seeded with a hash of (seed, round), the same on every machine.

Speed (bench/matchmaking.py part 3): planning a round of 1,000 active bots takes a few
milliseconds; the fit it samples from is refreshed once per round (or more rarely: ``refit_growth``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.special import log_ndtr, ndtr

__all__ = ["MatchParams", "Matchmaker", "SkillFit", "fit_skills", "adjacent_confidence", "round_rng"]


@dataclass(frozen=True)
class MatchParams:
    """How the matchmaker chooses; the defaults are what ``schedule: {kind: adaptive}`` uses."""

    #: share of the rounds drawn uniformly over the whole table
    wide_share: float = 0.2
    #: a bot behind the league takes at most this share of a round's other bots as opponents
    newcomer_share: float = 0.5
    #: rounds whose results are not yet used when choosing a round (1: the previous round is
    #: known; the runner uses 2, so one round plays while the next is chosen)
    lag: int = 2
    #: refresh the fit only when the number of rounds grows by this factor (0: every round)
    refit_growth: float = 0.0


@dataclass(frozen=True)
class SkillFit:
    """The order-free fit over bots ``0..n-1``: means and the Cholesky factor of the posterior precision."""

    mu: np.ndarray
    chol: np.ndarray  # upper-triangular U with U^T U = precision

    def covariance(self) -> np.ndarray:
        n = self.mu.size
        inv_u = solve_triangular(self.chol, np.eye(n), lower=False)
        return np.asarray(inv_u @ inv_u.T)


def fit_skills(wins: np.ndarray, *, mu: float, sigma: float, beta: float, iterations: int = 50) -> SkillFit:
    """TrueSkill's model fitted to all games at once, from counts: ``wins[i, j]`` is how often bot
    i finished ahead of bot j at a table (every pair of seats of every game; a shared place counts
    1/2 each way), the table's pairwise composite likelihood (the order-free fit of
    :mod:`harness.league.ratings_fit`; fed the comparisons of adjacent places instead, this is
    exactly that module's earlier fit; fed every pair, as here, its mu is the table's, which
    tests/test_matchmaking.py checks). The likelihood
    depends on the games only through these counts, so the cost does not grow with the games:
    one Newton step is a few passes over the (bots x bots) counts and a Cholesky solve. The
    posterior's spread is the Laplace one (the inverse Hessian), enough to draw pairings from.

    This is the one place the matchmaker reads skills from: a better whole-table model plugs in here.
    """
    n = wins.shape[0]
    scale = math.sqrt(2.0) * beta
    skills = np.full(n, float(mu))
    played = wins > 0
    w = np.where(played, wins, 0.0)
    prior = 1.0 / sigma**2
    for _ in range(iterations):
        z = (skills[:, None] - skills[None, :]) / scale
        ratio = np.where(played, np.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) - log_ndtr(z)), 0.0)
        pull = w * ratio / scale
        grad = -(skills - mu) * prior + pull.sum(axis=1) - pull.sum(axis=0)
        curvature = w * ratio * (z + ratio) / scale**2
        sym = curvature + curvature.T
        hessian = -sym
        hessian[np.diag_indices(n)] = sym.sum(axis=1) + prior
        step = cho_solve(cho_factor(hessian, lower=False, check_finite=False), grad, check_finite=False)
        skills += step
        if float(np.max(np.abs(step), initial=0.0)) < 1e-7:
            break
    # the factor at the optimum (the last step was tiny: the curvature there is the one used)
    z = (skills[:, None] - skills[None, :]) / scale
    ratio = np.where(played, np.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) - log_ndtr(z)), 0.0)
    curvature = w * ratio * (z + ratio) / scale**2
    sym = curvature + curvature.T
    hessian = -sym
    hessian[np.diag_indices(n)] = sym.sum(axis=1) + prior
    chol = np.linalg.cholesky(hessian).T if n else np.zeros((0, 0))
    return SkillFit(mu=skills, chol=chol)


def adjacent_confidence(fit: SkillFit, order: Sequence[int]) -> list[float]:
    """P(bot ahead of the next one in ``order``) for each adjacent pair, from the fit's joint posterior."""
    if len(order) < 2:
        return []
    idx = np.asarray(order)
    a, b = idx[:-1], idx[1:]
    # Var(a - b) = d^T P^-1 d = |U^-T d|^2 (P = U^T U): one triangular solve per pair, not the whole
    # covariance (an n^3 inverse: 0.28 s at 1,000 bots, bench/resume.py)
    d = np.zeros((fit.mu.size, a.size))
    d[a, np.arange(a.size)] += 1.0
    d[b, np.arange(a.size)] -= 1.0
    var = np.square(solve_triangular(fit.chol, d, trans="T", lower=False)).sum(axis=0)
    diff = fit.mu[a] - fit.mu[b]
    return [float(p) for p in ndtr(diff / np.sqrt(np.clip(var, 1e-12, None)))]


def round_rng(seed: int, round_: int, purpose: str = "round") -> np.random.Generator:
    """The random stream of one round: a hash of the league seed and the round's number."""
    digest = hashlib.sha256(f"{purpose}:{seed}:{round_}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "big")))


class Matchmaker:
    """The matchmaker's state, built from events in order: bots arriving (:meth:`add_bot`), leaving
    (:meth:`retire`), rounds scheduled (:meth:`plan_round`, or :meth:`note_set` when rebuilt
    from a store) and results (:meth:`record`). Version ids are the league's; internally each bot
    is an index in arrival order.
    """

    def __init__(self, seed: int, sizes: Sequence[int], *, mu: float = 25.0, sigma: float = 25.0 / 3,
                 beta: float = 25.0 / 6, params: MatchParams = MatchParams()) -> None:
        self.seed = seed
        self.sizes = tuple(sizes)
        self.mu, self.sigma, self.beta = mu, sigma, beta
        self.params = params
        self.ids: list[int] = []  # arrival order
        self.index: dict[int, int] = {}
        self.active: list[bool] = []
        cap = 16
        self.games = np.zeros(cap, dtype=np.int64)  # scheduled games (pending or done) per bot
        self.by_size = np.zeros((cap, len(self.sizes)), dtype=np.int64)
        self.wins = np.zeros((cap, cap))  # wins[i, j]: i placed directly ahead of j
        self.rounds = 0  # rounds planned
        self.results = 0
        self._pending: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}  # not in self.wins yet
        self._seen_upto = -1  # rounds whose results are in self.wins
        self._fit: SkillFit | None = None
        self._fit_key: tuple[int, int] | None = None

    # -- events --------------------------------------------------------------------------

    def add_bot(self, version_id: int) -> None:
        """A version arrives (or comes back after a retirement); arrival order is the call order."""
        if version_id in self.index:
            self.active[self.index[version_id]] = True
            return
        i = len(self.ids)
        self.ids.append(version_id)
        self.index[version_id] = i
        self.active.append(True)
        if i >= self.games.size:
            cap = 2 * self.games.size
            self.games = np.concatenate([self.games, np.zeros(cap - self.games.size, dtype=np.int64)])
            self.by_size = np.concatenate([self.by_size, np.zeros((cap - self.by_size.shape[0], len(self.sizes)),
                                                                  dtype=np.int64)])
            wins = np.zeros((cap, cap))
            wins[: self.wins.shape[0], : self.wins.shape[1]] = self.wins
            self.wins = wins
        self._fit_key = None

    def retire(self, version_id: int) -> None:
        """A version stops being chosen; its games stay in the fit."""
        if version_id in self.index:
            self.active[self.index[version_id]] = False

    def set_roster(self, version_ids: Iterable[int]) -> None:
        """Make exactly ``version_ids`` active (new ones arrive in the order given)."""
        wanted = list(version_ids)
        keep = set(wanted)
        for v in self.ids:
            if v not in keep:
                self.retire(v)
        for v in wanted:
            self.add_bot(v)

    def note_set(self, round_: int, versions: Sequence[int], games: int | None = None) -> None:
        """Count a scheduled set (``games`` of its seat orders; default all) of ``round_``."""
        k = len(versions)
        g = math.factorial(k) if games is None else games
        idx = [self.index[v] for v in versions]
        self.games[idx] += g
        self.by_size[idx, self.sizes.index(k)] += g
        self.rounds = max(self.rounds, round_ + 1)

    def note_games(self, seats: np.ndarray, players: np.ndarray, last_round: int) -> None:
        """Count scheduled games in bulk, one each (as :meth:`note_set` with ``games=1`` per game):
        ``seats`` the bot *indices* of every seat of every game, game after game, ``players`` each
        game's seats; rounds up to ``last_round`` are then planned."""
        if not len(players):
            return
        size_of_seat = np.repeat(players, players)
        for k in np.unique(players).tolist():
            column = self.sizes.index(k)  # a size the league does not play: ValueError, as note_set
            mine = seats[size_of_seat == k]
            self.by_size[:, column] += np.bincount(mine, minlength=self.games.size)
        self.games += np.bincount(seats, minlength=self.games.size)
        self.rounds = max(self.rounds, last_round + 1)

    def unnote_games(self, versions: Sequence[int], games: int) -> None:
        """Take back ``games`` scheduled games of a set that will not be played (dropped)."""
        idx = [self.index[v] for v in versions]
        self.games[idx] -= games
        self.by_size[idx, self.sizes.index(len(versions))] -= games

    def record(self, round_: int, versions: Sequence[int], ranks: Sequence[int]) -> None:
        """A finished game of ``round_``: its versions by seat and their ranks (0 = first).

        Taken as the comparison of every pair of its seats, as the table's fit reads a game (the
        pairwise composite likelihood: each pair's probability is a true marginal of TrueSkill's
        model, which the comparisons of adjacent places are not)."""
        order = sorted(range(len(versions)), key=lambda s: ranks[s])
        winners: list[int] = []
        losers: list[int] = []
        weights: list[float] = []
        for i, s in enumerate(order):
            for t in order[i + 1:]:
                self._compare(versions, ranks, s, t, winners, losers, weights)
        self.record_comparisons(round_, np.array(winners, dtype=np.int64), np.array(losers, dtype=np.int64),
                                np.array(weights))
        self.results += 1

    def record_games(self, round_: int, seats: np.ndarray, ranks: np.ndarray) -> None:
        """Finished games of ``round_`` in bulk, one table size: by seat, the bot *indices*
        ``seats[g]`` and ranks ``ranks[g]``; the same comparisons as one :meth:`record` call per
        game (the counts they add up to are sums of halves: exact in any order)."""
        if not len(seats):
            return
        winners: list[np.ndarray] = []
        losers: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        k = seats.shape[1]
        for s in range(k):
            for t in range(s + 1, k):
                a, b, ra, rb = seats[:, s], seats[:, t], ranks[:, s], ranks[:, t]
                tie = ra == rb
                ahead = (ra < rb)[~tie]
                a_, b_ = a[~tie], b[~tie]
                ties = int(tie.sum())
                winners += [np.where(ahead, a_, b_), a[tie], b[tie]]
                losers += [np.where(ahead, b_, a_), b[tie], a[tie]]
                weights += [np.ones(a_.size), np.full(ties, 0.5), np.full(ties, 0.5)]
        self.record_comparisons(round_, np.concatenate(winners), np.concatenate(losers), np.concatenate(weights))
        self.results += len(seats)

    def _compare(self, versions: Sequence[int], ranks: Sequence[int], s: int, t: int, winners: list[int],
                 losers: list[int], weights: list[float]) -> None:
        """Seat ``s`` (placed ahead of or level with seat ``t``) against ``t``."""
        a, b = self.index[versions[s]], self.index[versions[t]]
        if ranks[s] == ranks[t]:
            winners += [a, b]
            losers += [b, a]
            weights += [0.5, 0.5]
        else:
            winners.append(a)
            losers.append(b)
            weights.append(1.0)

    def record_comparisons(self, round_: int, winners: np.ndarray, losers: np.ndarray, weights: np.ndarray) -> None:
        """Results of ``round_`` in bulk, as comparisons between bot *indices* (winner placed ahead of
        loser at one table, with weight 1, or 1/2 each way for a shared place)."""
        self._pending.setdefault(round_, []).append((winners, losers, weights))

    # -- choosing ------------------------------------------------------------------------

    def _absorb(self, upto: int) -> None:
        """Add the results of rounds up to ``upto`` to the counts (a sum of halves: exact in any order)."""
        parts = [part for r in sorted(k for k in self._pending if k <= upto) for part in self._pending.pop(r)]
        if parts:
            winners, losers, weights = (np.concatenate([p[i] for p in parts]) for i in range(3))
            np.add.at(self.wins, (winners, losers), weights)
        self._seen_upto = max(self._seen_upto, upto)

    def _fit_point(self, round_: int) -> int:
        """The last round whose results the fit used for ``round_`` covers (deterministic in ``round_``)."""
        visible = round_ - self.params.lag
        growth = self.params.refit_growth
        if growth <= 0 or visible < 8:
            return visible
        # the grid 8 (1 + growth)^i, never below 8: the points never go back as rounds go on
        step = math.log1p(growth)
        return max(8, min(visible, int(8 * math.exp(math.floor(math.log(visible / 8) / step + 1e-9) * step))))

    def fit(self, round_: int | None = None) -> SkillFit:
        """The order-free fit over every bot so far, from the results visible to ``round_`` (default: all recorded)."""
        upto = self._fit_point(self.rounds if round_ is None else round_) if round_ is not None else 1 << 62
        n = len(self.ids)
        key = (upto, n)
        if self._fit is None or self._fit_key != key:
            if upto > self._seen_upto:
                self._absorb(upto)
            self._fit = fit_skills(self.wins[:n, :n], mu=self.mu, sigma=self.sigma, beta=self.beta)
            self._fit_key = key
        return self._fit

    def plan_round(self) -> list[tuple[int, ...]]:
        """The next round's sets (version ids, in the seat order of each set's first game); counted as scheduled."""
        (sets,) = self.plan_rounds(1)
        ids = self.ids
        return [tuple(ids[i] for i in row) for row in sets.tolist()]

    def rounds_on_this_fit(self) -> int:
        """How many rounds from the next one are chosen from the same fit (at least 1)."""
        r = self.rounds
        point = self._fit_point(r)
        count = 1
        while self._fit_point(r + count) == point and count < 1 << 20:
            count += 1
        return count

    def plan_rounds(self, count: int) -> list[np.ndarray]:
        """The next ``count`` rounds, each an array (sets x size) of bot indices (``self.ids[i]`` is
        the version); counted as scheduled. The same sets as ``count`` calls of :meth:`plan_round`;
        the skill draws of rounds that share a fit are made in one solve."""
        active = np.flatnonzero(np.asarray(self.active, dtype=bool))
        plans: list[tuple[int, np.random.Generator, bool, np.ndarray | None]] = []
        for r in range(self.rounds, self.rounds + count):
            rng = round_rng(self.seed, r)
            wide = bool(rng.random() < self.params.wide_share) or active.size <= max(self.sizes)
            plans.append((r, rng, wide, None if wide else rng.standard_normal(len(self.ids))))
        draws: dict[int, np.ndarray] = {}
        by_fit: dict[int, list[int]] = {}
        for i, (r, _, wide, _) in enumerate(plans):
            if not wide:
                by_fit.setdefault(self._fit_point(r), []).append(i)
        for _point, members in sorted(by_fit.items()):
            fit = self.fit(plans[members[0]][0])
            z = np.stack([plans[i][3] for i in members], axis=1)  # type: ignore[misc]
            keys = (fit.mu[:, None] + solve_triangular(fit.chol, z, lower=False)).T
            for row, i in zip(keys, members):
                draws[i] = row
        games = self.games[active]
        even = not (games + self._slack() < np.median(games)).any() if active.size else True
        if even and all(active.size % self.sizes[r % len(self.sizes)] == 0 for r, *_ in plans):
            return self._plan_even(active, plans, draws)
        out = []
        for i, (r, rng, wide, _) in enumerate(plans):
            size = self.sizes[r % len(self.sizes)]
            sets = np.zeros((0, size), dtype=np.int64)
            if active.size >= size:
                keys = rng.random(len(self.ids)) if wide else draws[i]
                sets = self._sets(active, size, keys, rng)
            self._count(sets)
            self.rounds = r + 1
            out.append(sets)
        return out

    def _count(self, sets: np.ndarray) -> None:
        if sets.size:
            g = math.factorial(sets.shape[1])
            np.add.at(self.games, sets.ravel(), g)
            np.add.at(self.by_size[:, self.sizes.index(sets.shape[1])], sets.ravel(), g)

    def _plan_even(self, active: np.ndarray, plans: list[tuple[int, np.random.Generator, bool, np.ndarray | None]],
                   draws: dict[int, np.ndarray]) -> list[np.ndarray]:
        """:meth:`plan_rounds` when no bot is behind and every bot has a table in every round: the
        same sets (the same draws in the same order), sorted for all rounds at once."""
        keys = np.empty((len(plans), active.size))
        offsets = np.empty(len(plans), dtype=np.int64)
        for i, (r, rng, wide, _) in enumerate(plans):
            keys[i] = rng.random(len(self.ids))[active] if wide else draws[i][active]
            offsets[i] = rng.integers(self.sizes[r % len(self.sizes)])
        ordered = active[np.argsort(-keys, axis=1, kind="stable")]
        rolled = np.take_along_axis(ordered, (np.arange(active.size)[None, :] + offsets[:, None]) % active.size, axis=1)
        out = []
        for i, (r, *_) in enumerate(plans):
            size = self.sizes[r % len(self.sizes)]
            out.append(rolled[i].reshape(-1, size) if active.size >= size else np.zeros((0, size), dtype=np.int64))
            self.rounds = r + 1
        for size in self.sizes:
            rounds = sum(1 for r, *_ in plans if self.sizes[r % len(self.sizes)] == size)
            if rounds and active.size >= size:
                self.games[active] += rounds * math.factorial(size)
                self.by_size[active, self.sizes.index(size)] += rounds * math.factorial(size)
        return out

    def _sets(self, active: np.ndarray, k: int, keys: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        games = self.games[active]
        median = float(np.median(games))
        behind_mask = games + self._slack() < median
        behind = active[behind_mask]
        ordered = active[~behind_mask]
        ordered = ordered[np.argsort(-keys[ordered], kind="stable")]
        catch_up = np.zeros((0, k), dtype=np.int64)
        if behind.size and ordered.size >= k - 1:
            catch_up, ordered = self._catch_up(behind, ordered, k, median, rng)
        # the regular bots: the most-played sit out when they do not divide into tables
        extra = ordered.size % k
        if extra:
            tiebreak = rng.random(ordered.size)
            at_size = self.by_size[ordered, self.sizes.index(k)]
            out = np.lexsort((tiebreak, -at_size, -self.games[ordered]))[:extra]
            keep = np.ones(ordered.size, dtype=bool)
            keep[out] = False
            ordered = ordered[keep]
        if ordered.size:
            ordered = np.roll(ordered, -int(rng.integers(k)))  # the offset: neighbours change tables
        return np.concatenate([catch_up, ordered.reshape(-1, k)])

    def _slack(self) -> int:
        """How far below the median a bot may be before it is *behind*: two sets of the largest
        table (sitting out a round must not make a bot a newcomer)."""
        return 2 * math.factorial(max(self.sizes))

    def _catch_up(self, behind: np.ndarray, ordered: np.ndarray, k: int, median: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Sets for the bots ``behind`` the league, against opponents at evenly spread places of
        ``ordered`` (the regular bots, best first); returns them and the regular bots left."""
        per_set = math.factorial(k)
        budget = max(int(self.params.newcomer_share * ordered.size) // (k - 1), 1)
        need = np.ceil((median - self.games[behind]) / per_set).astype(np.int64)
        order_b = np.argsort(self.games[behind], kind="stable")  # the furthest behind first
        share = np.zeros(behind.size, dtype=np.int64)
        left = max(budget, behind.size)
        while left > 0 and (share < need).any():
            for j in order_b:
                if share[j] < need[j] and left > 0:
                    share[j] += 1
                    left -= 1
        n_sets = min(int(share.sum()), ordered.size // (k - 1))
        slots = n_sets * (k - 1)
        # slots at evenly spread places (random phase); set t takes slots t, t + n_sets, ...
        where = np.floor((np.arange(slots) + rng.random()) * ordered.size / slots).astype(np.int64)
        taken = ordered[where]
        # owners take turns, so each one's sets spread from the top of the table to the bottom
        owners = [int(j) for p in range(int(share.max())) for j in order_b if share[j] > p][:n_sets]
        sets = np.empty((n_sets, k), dtype=np.int64)
        sets[:, 0] = behind[owners]
        for c in range(k - 1):
            sets[:, c + 1] = taken[c * n_sets:(c + 1) * n_sets]
        keep = np.ones(ordered.size, dtype=bool)
        keep[where] = False
        return sets, ordered[keep]
