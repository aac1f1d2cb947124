"""The table's fit: TrueSkill's model fitted to all games at once, intervals that hold when
games come in duplicate sets, and P(>next) from the same fit. Entry point: :func:`fit_table`.

**The model** is TrueSkill's: each bot version has a skill mu (prior N(mu0, sigma^2), the
league's ``rating.mu`` and ``rating.sigma``); in a game each player performs at its skill plus
N(0, beta^2) noise and the ranking orders the performances. Under it, for any two players at
a table, whatever the other seats, P(a finishes ahead of b) = Phi((mu_a - mu_b) / (sqrt(2)
beta)) exactly. The likelihood used is the **pairwise composite likelihood** of the whole
ranking: the product of that probability over *every* pair of seats of every game (3 pairs at
3 seats, 6 at 4; a shared place counts half each way). Its estimating equations are exactly
unbiased under TrueSkill's model (each factor is a true marginal), and the dependence between
the pairs of one game, and between the games of one duplicate set, is what the sandwich
variance below accounts for (composite likelihood with Godambe's information: Lindsay 1988;
Varin, Reid and Firth 2011). The full Gaussian rank likelihood needs an orthant probability per
game and was not affordable at 1,000,000 games. Rejected, measured (bench/ratings.py): the
comparisons of adjacent places (each game's places 1-2, 2-3, ...) are
not marginals of the model, so its estimates shrank and coverage fell to 31% at 1,536
3-seat games; a Plackett-Luce fit (Gumbel noise instead of Gaussian) has no fixed conversion
to TrueSkill's scale (1.08-1.21 per beta depending on the table size and the spread of
skills) and its intervals covered 79-82% at 1,536 3-seat games and 76-79% at 4 seats on
TrueSkill-generated results (150 leagues each).

**The fit** maximises the log-posterior, which is concave, by Newton's method with step
halving. The data enter only through each pair of bots' games and total result, aggregated
once with ``np.bincount``, so a Newton step costs O(pairs of bots that met), not O(games); the
step is solved by preconditioned conjugate gradients on the sparse Hessian. No Python loop
runs over games. Measured at 1,000 bots: see docs/ratings.md (100,000 and 1,000,000 games).

**The intervals.** The games of a duplicate set share a deal, so they are not independent; the
Laplace covariance (the inverse Hessian) treats them as if they were, and is 1.4-1.9x too
wide at 3 seats. The covariance here is the cluster-robust sandwich with the sets as
clusters, H^-1 (M + P) H^-1: H the posterior's Hessian, M the sum over sets of the outer
product of each set's score (the gradient of its games' log-likelihood), P the prior's
precision (so a direction no game measures keeps the prior's width). It needs no refit,
unlike a bootstrap over sets. Small-sample rules: M is scaled by G/(G-1) for G sets, and the
interval uses Student's t with G-1 degrees of freedom (sigma is widened by t/1.96, so mu +-
1.96 sigma stays the 95% interval: 1.62x at 4 sets, 1.03x at 40); a single set cannot measure
the variance between sets, and keeps the model's own (Laplace) covariance. A shift of every skill together changes no result,
so the covariance is taken relative to the mean of the skills.

**P(>next)** is the fit's probability that a bot's skill exceeds the next one's, Phi(d / sd)
with d the difference of their mu and sd from the same covariance; the order is by mu, so no
adjacent pair shows less than 0.5.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.linalg import cho_factor, cho_solve
from scipy.special import log_ndtr, ndtr, stdtrit

__all__ = ["TableBatch", "TableFit", "batches_from_games", "fit_arrays", "fit_batches", "fit_ratings", "fit_skills",
           "fit_table"]

@dataclass
class TableBatch:
    """Games of one table size as arrays: bot version ids by seat (G x n), ranks by seat (G x n,
    0 = first), and each game's duplicate set (G,), any integers (the same set in two batches is
    the same cluster)."""

    versions: np.ndarray
    ranks: np.ndarray
    sets: np.ndarray


@dataclass
class TableFit:
    """The fit of a table: per bot version, mu and sigma (TrueSkill's units, sigma relative to
    the other bots), the 95% interval :meth:`interval`, the order (best first, by mu) and, along
    that order, P(>next). ``p_better(a, b)`` gives the same probability for any two bots."""

    mu: dict[int, float]
    sigma: dict[int, float]
    order: list[int]
    p_next: list[float]  # P(order[i] better than order[i + 1])
    games: int
    sets: int
    covariance: np.ndarray = field(repr=False)
    index: dict[int, int] = field(repr=False)

    def interval(self, version: int) -> tuple[float, float]:
        """The 95% interval of ``version``'s mu."""
        m, s = self.mu[version], self.sigma[version]
        return m - 1.96 * s, m + 1.96 * s

    def p_better(self, a: int, b: int) -> float:
        """P(skill of a > skill of b) under the fit."""
        i, j = self.index[a], self.index[b]
        var = self.covariance[i, i] + self.covariance[j, j] - 2 * self.covariance[i, j]
        d = self.mu[a] - self.mu[b]
        if var <= 1e-18:
            return 1.0 if d > 0 else 0.0 if d < 0 else 0.5
        return float(ndtr(d / math.sqrt(var)))


def small_sample_factor(sets: int) -> float:
    """How much wider than the normal's a 95% interval from ``sets`` clusters must be: Student's
    t with sets - 1 degrees of freedom over 1.96 (the usual small-sample rule for a
    cluster-robust variance: 1.62 at 4 sets, 1.03 at 40, 1.003 at 400)."""
    if sets < 2:
        return 1.0
    return float(stdtrit(sets - 1, 0.975) / 1.959963984540054)


def batches_from_games(games: Iterable[tuple[Sequence[int], Sequence[int], Hashable]]) -> list[TableBatch]:
    """(version ids by seat, ranks by seat, duplicate set key) -> one batch per table size (one
    pass in Python: callers that read arrays from the store can build the batches directly)."""
    by_size: dict[int, tuple[list[Sequence[int]], list[Sequence[int]], list[int]]] = {}
    keys: dict[Hashable, int] = {}
    for versions, ranks, key in games:
        batch = by_size.setdefault(len(versions), ([], [], []))
        batch[0].append(versions)
        batch[1].append(ranks)
        batch[2].append(keys.setdefault(key, len(keys)))
    return [TableBatch(np.asarray(b[0], dtype=np.int64), np.asarray(b[1], dtype=np.int64),
                       np.asarray(b[2], dtype=np.int64)) for _, b in sorted(by_size.items())]


@dataclass
class _Pairs:
    """Every pair of seats of every game (seat pair (i, j), i < j, of each batch in turn, the
    games of the batch in order): its pair of bots ``which`` (an index into the aggregated
    pairs), seat i's result against seat j (1 ahead, 1/2 level, 0 behind) and ``sign`` (+1 if
    seat i holds the pair's bot a, -1 if b); and per pair of bots a < b: a's total result
    ``wins`` and the games ``count``, which is all the Newton steps need: they cost O(pairs of
    bots), not O(games)."""

    which: np.ndarray
    result: np.ndarray
    sign: np.ndarray
    pa: np.ndarray
    pb: np.ndarray
    wins: np.ndarray
    count: np.ndarray


def _compact(values: np.ndarray, limit: int | None = None) -> tuple[np.ndarray, int]:
    """Integers -> (0..m-1 labels in the order of the values, m): by counting when the values
    are small (no sort), else by ``np.unique``."""
    if values.size == 0:
        return values, 0
    low, high = int(values.min()), int(values.max())
    span = high - low + 1
    if span <= (limit or 4 * values.size + 1_000_000):
        present = np.zeros(span, dtype=bool)
        present[values - low] = True
        labels = np.cumsum(present) - 1
        return labels[values - low], int(present.sum())
    uniques, inverse = np.unique(values, return_inverse=True)
    return inverse, int(uniques.size)


def _pairs(batches: Sequence[TableBatch], k: int) -> _Pairs:
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for batch in batches:
        n = batch.versions.shape[1]
        for i in range(n):  # loops over seats only
            for j in range(i + 1, n):
                ri, rj = batch.ranks[:, i], batch.ranks[:, j]
                vi, vj = batch.versions[:, i], batch.versions[:, j]
                parts.append((vi, vj, np.where(ri < rj, 1.0, np.where(ri == rj, 0.5, 0.0))))
    if not parts:
        e = np.empty(0, dtype=np.int64)
        return _Pairs(e, np.empty(0), np.empty(0), e, e, np.empty(0), np.empty(0))
    vi, vj, result = (np.concatenate([part[c] for part in parts]) for c in range(3))
    flip = vi > vj
    a, b = np.where(flip, vj, vi), np.where(flip, vi, vj)
    which, distinct = _compact(a * k + b)
    first_of = np.zeros(distinct, dtype=np.int64)
    first_of[which] = np.arange(which.size)  # any seat pair of each pair of bots
    valid = (a != b).astype(np.float64)  # a version against itself says nothing about its skill
    wins = np.bincount(which, weights=np.where(flip, 1.0 - result, result) * valid, minlength=distinct)
    count = np.bincount(which, weights=valid, minlength=distinct)
    return _Pairs(which, result, np.where(flip, -valid, valid), a[first_of], b[first_of], wins, count)


def _meat(batches: Sequence[TableBatch], seat_pair_score: np.ndarray, k: int) -> tuple[np.ndarray, int]:
    """The sandwich's meat: sum over duplicate sets of the outer product of each set's score (the
    gradient of its games' log-likelihood); and the number of sets. ``seat_pair_score``: d/dx
    of each seat pair's term, x = mu(seat i) - mu(seat j), in :class:`_Pairs`' order."""
    meat = np.zeros(k * k)
    n_sets = 0
    offset = 0
    for batch in batches:
        g, n = batch.versions.shape
        seat_score = np.zeros((g, n))
        for i in range(n):
            for j in range(i + 1, n):
                part = seat_pair_score[offset:offset + g]
                seat_score[:, i] += part
                seat_score[:, j] -= part
                offset += g
        labels, m = _compact(batch.sets)
        n_sets += m
        # the games of a set seat the same bots: sort each game's seats by bot, sum per set and bot
        by_bot = np.argsort(batch.versions, axis=1)
        bots = np.take_along_axis(batch.versions, by_bot, axis=1)
        scores = np.take_along_axis(seat_score, by_bot, axis=1)
        first = np.zeros(m, dtype=np.int64)
        first[labels] = np.arange(g)
        if np.array_equal(bots, bots[first[labels]]):
            per_set = np.stack([np.bincount(labels, weights=scores[:, c], minlength=m) for c in range(n)], axis=1)
            set_bots = bots[first]
            for c in range(n):
                for d in range(n):
                    meat += np.bincount(set_bots[:, c] * k + set_bots[:, d], weights=per_set[:, c] * per_set[:, d],
                                        minlength=k * k)
        else:  # sets of mixed bots (not the harness's duplicate sets): a sparse product
            matrix = sp.csr_matrix((scores.ravel(), (np.repeat(labels, n), bots.ravel())), shape=(m, k))
            meat += (matrix.T @ matrix).toarray().ravel()
    return meat.reshape(k, k), n_sets


def _pair_terms(pairs: _Pairs, skills: np.ndarray, scale: float, need: int
                ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Per pair of bots at ``skills``: the composite log-likelihood; with ``need`` >= 1 the Mills
    ratios up = phi/Phi(z) and down = phi/Phi(-z) (z = (mu_a - mu_b) / scale) and the gradient
    d/dx of each pair's total (x = mu_a - mu_b); with ``need`` >= 2 also -d2/dx2 (>= 0: log Phi
    is concave)."""
    z = (skills[pairs.pa] - skills[pairs.pb]) / scale
    log_up, log_down = log_ndtr(z), log_ndtr(-z)
    losses = pairs.count - pairs.wins
    loglik = float(np.dot(pairs.wins, log_up) + np.dot(losses, log_down))
    empty = np.empty(0)
    if need == 0:
        return loglik, empty, empty, empty
    log_phi = -0.5 * z * z - 0.5 * math.log(2 * math.pi)
    up, down = np.exp(log_phi - log_up), np.exp(log_phi - log_down)  # computed stably in log space
    first = (pairs.wins * up - losses * down) / scale
    if need == 1:
        return loglik, up, down, first
    second = (pairs.wins * up * (z + up) + losses * down * (down - z)) / scale**2
    return loglik, up, down, np.stack([first, second])


class _Hessian:
    """-d2 log-posterior / d mu2 as a sparse (k x k) matrix, one entry per pair of bots that met:
    its pattern is built once, each Newton step only fills the values."""

    def __init__(self, pairs: _Pairs, k: int, precision: float) -> None:
        rows = np.concatenate([pairs.pa, pairs.pb, np.arange(k)])
        cols = np.concatenate([pairs.pb, pairs.pa, np.arange(k)])
        self.order = np.lexsort((cols, rows))
        self.indices = cols[self.order].astype(np.int32)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=k))]).astype(np.int32)
        self.pairs, self.k, self.precision = pairs, k, precision

    def at(self, second: np.ndarray) -> sp.csr_matrix:
        """The matrix for each pair's -d2/dx2 ``second``."""
        pa, pb, k = self.pairs.pa, self.pairs.pb, self.k
        diagonal = np.bincount(pa, weights=second, minlength=k) + np.bincount(pb, weights=second, minlength=k)
        data = np.concatenate([-second, -second, diagonal + self.precision])[self.order]
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(k, k))


def _newton_step(hessian: sp.csr_matrix, grad: np.ndarray) -> np.ndarray:
    """Solve hessian @ step = grad: conjugate gradients with a diagonal preconditioner (the
    Hessian is positive definite; a dense factorisation of a 1,000-bot table cost 0.04-0.35 s
    per step on this shared machine, CG on the sparse matrix a few ms)."""
    if hessian.shape[0] <= 64:
        return np.linalg.solve(hessian.toarray(), grad)
    inverse_diagonal = 1.0 / hessian.diagonal()
    preconditioner = spla.LinearOperator(hessian.shape, matvec=lambda x: inverse_diagonal * x)
    step, _info = spla.cg(hessian, grad, rtol=1e-10, atol=0.0, maxiter=1000, M=preconditioner)
    return np.asarray(step)


def _maximise(pairs: _Pairs, hessian: _Hessian, skills: np.ndarray, mu: float, precision: float, scale: float,
              iterations: int, tolerance: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method with step halving on the log-posterior from ``skills``, until a step
    moves no mu by ``tolerance``: (the maximum, each pair's -d2/dx2 there). A start near the
    answer (the fit of a prefix of the same games) saves steps."""
    k = skills.size

    def evaluate(x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        loglik, _, _, both = _pair_terms(pairs, x, scale, 2)
        return loglik - 0.5 * precision * float(np.sum((x - mu) ** 2)), both[0], both[1]

    current, first, second = evaluate(skills)
    for _ in range(iterations):
        grad = (np.bincount(pairs.pa, weights=first, minlength=k) - np.bincount(pairs.pb, weights=first, minlength=k)
                - precision * (skills - mu))
        step = _newton_step(hessian.at(second), grad)
        t = 1.0
        while True:  # step halving: a full Newton step can overshoot for a bot that always wins
            trial = skills + t * step
            value, trial_first, trial_second = evaluate(trial)
            if value >= current - 1e-9 or t < 1e-4:
                break
            t *= 0.5
        skills, current, first, second = trial, value, trial_first, trial_second
        # Newton converges quadratically: after a step of 1e-4 the error is ~1e-8 (mu is shown to 0.01)
        if float(np.max(np.abs(t * step))) < tolerance:
            break
    return skills, second


def fit_arrays(batches: Sequence[TableBatch], k: int, *, mu: float = 25.0, sigma: float = 25 / 3,
               beta: float = 25 / 6, iterations: int = 30) -> tuple[np.ndarray, np.ndarray, int]:
    """The fit on bot indices 0..k-1: (mu (k,), robust covariance relative to the mean (k x k),
    number of duplicate sets). The covariance is scaled by :func:`small_sample_factor` squared,
    so that mu +- 1.96 sigma is the 95% interval whatever the number of sets."""
    pairs = _pairs(batches, k)
    scale = math.sqrt(2.0) * beta
    precision = 1.0 / sigma**2
    hessian = _Hessian(pairs, k, precision)
    skills, second = _maximise(pairs, hessian, np.full(k, float(mu)), mu, precision, scale, iterations)
    factor = cho_factor(hessian.at(second).toarray())
    _, up, down, _ = _pair_terms(pairs, skills, scale, 1)
    # a seat pair's gradient is linear in its result: (r (up + down) - down) / scale for bot a
    oriented = np.where(pairs.sign > 0, pairs.result, 1.0 - pairs.result)
    seat_pair_score = pairs.sign * (oriented * (up + down)[pairs.which] - down[pairs.which]) / scale
    meat, n_sets = _meat(batches, seat_pair_score, k)
    if n_sets > 1:
        meat *= n_sets / (n_sets - 1)
    meat[np.diag_indices(k)] += precision  # the prior, as a pseudo-observation
    if n_sets >= 2:
        covariance = cho_solve(factor, cho_solve(factor, meat).T)
    else:  # one set says nothing about the variance between sets: the model's own (Laplace) covariance
        covariance = cho_solve(factor, np.eye(k))
    if k > 1:  # relative to the mean: C V C with C = I - 11'/k, in O(k^2)
        row = covariance.mean(axis=1, keepdims=True)
        covariance = covariance - row - row.T + covariance.mean()
    return skills, covariance * small_sample_factor(n_sets) ** 2, n_sets


def fit_table(games: Iterable[tuple[Sequence[int], Sequence[int], Hashable]], *, mu: float = 25.0,
              sigma: float = 25 / 3, beta: float = 25 / 6) -> TableFit:
    """The table's fit over ``games`` given as (version ids by seat, ranks by seat with 0 =
    first, the game's duplicate set: any hashable key shared by the games of one deal).
    Every version that played gets a rating; the same games in any order give the same fit."""
    return fit_batches(batches_from_games(games), mu=mu, sigma=sigma, beta=beta)


def fit_batches(batches: Sequence[TableBatch], *, mu: float = 25.0, sigma: float = 25 / 3,
                beta: float = 25 / 6) -> TableFit:
    """:func:`fit_table` on games already in arrays (no Python loop over games)."""
    batches = [b for b in batches if len(b.versions)]
    if not batches:
        return TableFit({}, {}, [], [], 0, 0, np.zeros((0, 0)), {})
    ids = np.unique(np.concatenate([b.versions.ravel() for b in batches]))
    indexed = [TableBatch(np.searchsorted(ids, b.versions), b.ranks, b.sets) for b in batches]
    skills, covariance, n_sets = fit_arrays(indexed, int(ids.size), mu=mu, sigma=sigma, beta=beta)
    sigmas = np.sqrt(np.clip(np.diag(covariance), 1e-18, None))
    versions = [int(v) for v in ids]
    order_idx = np.lexsort((ids, -skills))  # by mu, then by version id
    index = {v: i for i, v in enumerate(versions)}
    fit = TableFit(mu=dict(zip(versions, skills.tolist())), sigma=dict(zip(versions, sigmas.tolist())),
                   order=[versions[i] for i in order_idx], p_next=[], games=sum(len(b.sets) for b in batches),
                   sets=n_sets, covariance=covariance, index=index)
    fit.p_next = [fit.p_better(a, b) for a, b in zip(fit.order, fit.order[1:])]
    return fit


def fit_ratings(games: Iterable[tuple[Sequence[int], Sequence[int]]], *, mu: float, sigma: float, beta: float
                ) -> dict[int, tuple[float, float]]:
    """Bot version -> (mu, sigma) of the fit over ``games`` given as (version ids by seat, ranks
    by seat), each game its own set (for callers without duplicate sets, e.g. rating history)."""
    fit = fit_table(((v, r, i) for i, (v, r) in enumerate(games)), mu=mu, sigma=sigma, beta=beta)
    return {v: (fit.mu[v], fit.sigma[v]) for v in fit.mu}


def fit_skills(pa: np.ndarray, pb: np.ndarray, wins: np.ndarray, count: np.ndarray, k: int, *, mu: float,
               sigma: float, beta: float, start: np.ndarray | None = None, iterations: int = 30,
               tolerance: float = 1e-4) -> np.ndarray:
    """The fit's mu alone (no covariance) on bot indices 0..k-1 from each pair of bots' totals:
    bot ``pa[i]`` met ``pb[i]`` (``pa[i] < pb[i]``) in ``count[i]`` seat pairs and its result
    against it was ``wins[i]`` (1 ahead, 1/2 level). These totals are all the maximum depends
    on, so a caller can keep them as games come in (the rating history does). ``start``: where
    Newton's method starts (default: every bot at ``mu``); a previous fit of fewer games cuts
    the steps. ``tolerance``: it stops after a step that moves no mu by as much (the error is
    then about the step squared, Newton converging quadratically). A bot in no pair keeps ``mu``."""
    e = np.empty(0)
    pairs = _Pairs(np.empty(0, dtype=np.int64), e, e, np.asarray(pa, dtype=np.int64), np.asarray(pb, dtype=np.int64),
                   np.asarray(wins, dtype=np.float64), np.asarray(count, dtype=np.float64))
    precision = 1.0 / sigma**2
    skills = np.full(k, float(mu)) if start is None else np.array(start, dtype=np.float64)
    return _maximise(pairs, _Hessian(pairs, k, precision), skills, mu, precision, math.sqrt(2.0) * beta,
                     iterations, tolerance)[0]
