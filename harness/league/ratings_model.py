"""The likelihood machinery of the table's fit (:mod:`harness.league.ratings_fit`): every pair
of seats of every game aggregated once, the pairwise composite log-likelihood with a seat
effect per table size, its Newton maximisation, and the per-set scores of the sandwich.

**Aggregation.** A pair of seats of a game says: bot a, in seat position s of a table of n,
finished ahead of (1), level with (1/2) or behind (0) bot b in seat position t. Under
TrueSkill's model with a seat effect, P(a ahead of b) = Phi((mu_a + g_s - mu_b - g_t) /
(sqrt(2) beta)), g one value per seat position per table size. The data enter only through
each (pair of bots, seat positions) entry's count and total result, aggregated once with
``np.bincount``: a Newton step costs O(entries), at most n(n - 1) per pair of bots that met,
never O(games). No Python loop runs over games.

**Seat effects** g are fitted with the skills (alternating Newton steps: with duplicate sets
every bot sits in every seat equally often, so the two blocks are nearly orthogonal and the
alternation converges in a few steps) under a N(0, sigma^2) ridge, which also fixes the one
direction the results do not measure (adding a constant to every seat of a table size): at
the maximum each table size's g sums to 0. Left out, a first-seat advantage of +beta
compressed every mu difference (slope 0.85) and the 95% intervals covered half the truth.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.linalg import cho_factor
from scipy.linalg.lapack import dtrtri
from scipy.special import log_ndtr, ndtr

__all__ = ["Pairs", "Point", "TableBatch", "Hessian", "compact", "last_point", "maximise", "meat", "pair_terms", "pairs_of",
           "seat_pair_scores", "seed", "seat_positions", "fit_skills"]

#: (log-likelihood, up, down, d/dx of each entry's total; with ``need`` 2, d/dx and -d2/dx2 stacked)
Terms = tuple[float, np.ndarray, np.ndarray, np.ndarray]


@dataclass
class TableBatch:
    """Games of one table size as arrays: bot version ids by seat (G x n), ranks by seat (G x n,
    0 = first), and each game's duplicate set (G,), any integers (the same set in two batches is
    the same cluster)."""

    versions: np.ndarray
    ranks: np.ndarray
    sets: np.ndarray


@dataclass
class Pairs:
    """Every pair of seats of every game (seat pair (i, j), i < j, of each batch in turn, the
    games of the batch in order): its entry ``which`` (an index into the aggregated entries),
    seat i's result against seat j (1 ahead, 1/2 level, 0 behind) and ``sign`` (+1 if seat i
    holds the entry's bot a, -1 if b); per entry (a pair of bots a < b and their seat
    positions): ``pa``, ``pb``, the seat positions ``sa``, ``sb`` (indices into the seat
    effects), a's total result ``wins``, the ``count`` and the ``pair`` of bots it belongs to;
    per pair of bots, ``ppa`` and ``ppb``."""

    which: np.ndarray
    result: np.ndarray
    sign: np.ndarray
    pa: np.ndarray
    pb: np.ndarray
    sa: np.ndarray
    sb: np.ndarray
    wins: np.ndarray
    count: np.ndarray
    pair: np.ndarray
    ppa: np.ndarray
    ppb: np.ndarray
    seats: int  # the number of seat effects
    #: the last :func:`pair_terms` computed on these pairs: its :class:`Point`, and the terms for
    #: ``need`` (None: the point alone, as :func:`seed` leaves it)
    memo: list[tuple[Point, int, Terms | None]] = field(default_factory=list, repr=False, compare=False)


@dataclass(frozen=True)
class Point:
    """What each entry's terms are at one point, whatever its results: at ``skills`` (up to a
    shift common to every bot: the likelihood sees differences only), seat effects ``seat`` and
    ``scale``, for the first ``z.size`` entries: z, log Phi(z), log Phi(-z) and the Mills ratios
    up = phi/Phi(z), down = phi/Phi(-z). The results enter linearly (:func:`pair_terms`), so
    entries whose counts grew since keep their point. ``entries``: the entries' bots and seat
    positions it was taken on (``pa``, ``pb``, ``sa``, ``sb``: :func:`seed` checks them)."""

    skills: np.ndarray
    seat: np.ndarray
    scale: float | np.ndarray
    z: np.ndarray
    log_up: np.ndarray
    log_down: np.ndarray
    up: np.ndarray
    down: np.ndarray
    entries: tuple[np.ndarray, ...] = ()


def compact(values: np.ndarray, limit: int | None = None) -> tuple[np.ndarray, int]:
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


def seat_positions(batches: Sequence[TableBatch]) -> dict[int, int]:
    """Table size -> the index of its first seat's effect (sizes in the batches' order)."""
    base: dict[int, int] = {}
    total = 0
    for batch in batches:
        n = batch.versions.shape[1]
        if n not in base:
            base[n] = total
            total += n
    return base


def pairs_of(batches: Sequence[TableBatch], k: int) -> Pairs:
    """The aggregated pairs of seats of ``batches`` (bots 0..k-1)."""
    base = seat_positions(batches)
    seats = sum(base)  # every seat position of every table size
    parts: list[tuple[np.ndarray, ...]] = []
    for batch in batches:
        n = batch.versions.shape[1]
        for i in range(n):  # loops over seats only
            for j in range(i + 1, n):
                ri, rj = batch.ranks[:, i], batch.ranks[:, j]
                g = len(ri)
                parts.append((batch.versions[:, i], batch.versions[:, j],
                              np.where(ri < rj, 1.0, np.where(ri == rj, 0.5, 0.0)),
                              np.full(g, base[n] + i), np.full(g, base[n] + j)))
    if not parts:
        e = np.empty(0, dtype=np.int64)
        f = np.empty(0)
        return Pairs(e, f, f, e, e, e, e, f, f, e, e, e, max(seats, 1))
    vi, vj, result, si, sj = (np.concatenate([part[c] for part in parts]) for c in range(5))
    flip = vi > vj
    a, b = np.where(flip, vj, vi), np.where(flip, vi, vj)
    seat_a, seat_b = np.where(flip, sj, si), np.where(flip, si, sj)
    pair_label, n_pairs = compact(a * k + b)
    which, distinct = compact((pair_label * seats + seat_a) * seats + seat_b)
    first_of = np.zeros(distinct, dtype=np.int64)
    first_of[which] = np.arange(which.size)  # any seat pair of each entry
    first_pair = np.zeros(n_pairs, dtype=np.int64)
    first_pair[pair_label] = np.arange(pair_label.size)
    valid = (a != b).astype(np.float64)  # a version against itself says nothing about its skill
    wins = np.bincount(which, weights=np.where(flip, 1.0 - result, result) * valid, minlength=distinct)
    count = np.bincount(which, weights=valid, minlength=distinct)
    return Pairs(which, result, np.where(flip, -valid, valid), a[first_of], b[first_of], seat_a[first_of],
                 seat_b[first_of], wins, count, pair_label[first_of], a[first_pair], b[first_pair], seats)


def pair_terms(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, scale: float | np.ndarray, need: int
               ) -> Terms:
    """Per entry at ``skills`` and seat effects ``seat``: the composite log-likelihood, the Mills
    ratios up = phi/Phi(z) and down = phi/Phi(-z) (z = (mu_a + g_sa - mu_b - g_sb) / scale) and
    the gradient d/dx of each entry's total (x = z scale); with ``need`` 2 also -d2/dx2 (>= 0:
    log Phi is concave), stacked under the gradient. The last answer is kept on ``pairs``: a
    fit asks again at the point its maximisation ended (the sandwich's scores there), at 1,000,000
    games a quarter of a warm-started fit's time; a :class:`Point` kept for fewer entries (a live
    fit's last, :func:`seed`) is extended by the entries new since."""
    if pairs.memo:
        point, at_need, terms = pairs.memo[0]
        if terms is not None and at_need >= need and point.z.size == pairs.pa.size and _at(point, skills, seat, scale):
            return terms if need >= 2 or at_need < 2 else (terms[0], terms[1], terms[2], terms[3][0])
    point = _point(pairs, skills, seat, scale)
    terms = _combine(pairs, point, scale, need)
    pairs.memo[:] = [(point, need, terms)]
    return terms


def seed(pairs: Pairs, point: Point) -> bool:
    """Start ``pairs``' memo at ``point`` when it was taken on pairs whose entries are these pairs'
    first (a live fit's entries keep their index; new ones are appended): the next
    :func:`pair_terms` there computes only the entries new since. Whether it did (entries
    numbered otherwise, another league's, are refused)."""
    m = point.z.size
    if m > pairs.pa.size or len(point.entries) != 4:
        return False
    for kept, now in zip(point.entries, (pairs.pa, pairs.pb, pairs.sa, pairs.sb)):
        head = now[:m]
        # the same memory is the same entries (kept columns only grow); else compared whole
        same = kept.size == m and kept.__array_interface__["data"][0] == head.__array_interface__["data"][0] \
            and kept.strides == head.strides
        if not same and not np.array_equal(kept, head):
            return False
    pairs.memo[:] = [(point, 0, None)]
    return True


def last_point(pairs: Pairs) -> Point | None:
    """The :class:`Point` of the last :func:`pair_terms` on ``pairs`` (None before any)."""
    return pairs.memo[0][0] if pairs.memo else None


def _at(point: Point, skills: np.ndarray, seat: np.ndarray, scale: float | np.ndarray) -> bool:
    """Whether ``point`` was taken at ``skills`` (its bots', up to a common shift), ``seat`` and ``scale``."""
    m = point.skills.size
    if m > skills.size or not _same_scale(point.scale, scale) or not np.array_equal(point.seat, seat):
        return False
    if m == 0:
        return True
    shift = skills[:m] - point.skills
    # a shift's rounding is ~1e-15 of a skill; the terms then agree to about as much
    return bool(np.ptp(shift) <= 1e-12 * (1.0 + float(np.max(np.abs(point.skills)))))


def _same_scale(a: float | np.ndarray, b: float | np.ndarray) -> bool:
    """Whether two scales (one number, or one per entry) are the same."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    return a == b


def _point(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, scale: float | np.ndarray) -> Point:
    """The :class:`Point` at (skills, seat, scale) over every entry: the memo's, extended by the
    entries new since it was taken, when it was taken there (with one scale for every entry)."""
    kept = pairs.memo[0][0] if pairs.memo else None
    start = 0
    if kept is not None and not isinstance(scale, np.ndarray) and kept.z.size <= pairs.pa.size and \
            _at(kept, skills, seat, scale):
        start = kept.z.size
    per = scale[start:] if isinstance(scale, np.ndarray) else scale
    # in place where it can be: at 1,900,000 entries a fresh array's pages cost as much as the sum
    z = skills[pairs.pa[start:]]
    z -= skills[pairs.pb[start:]]
    z += seat[pairs.sa[start:]]
    z -= seat[pairs.sb[start:]]
    z /= per
    log_up, log_down = _log_phis(z)
    log_phi = z * z
    log_phi *= -0.5
    log_phi -= 0.5 * math.log(2 * math.pi)
    # computed stably in log space
    up = np.exp(log_phi - log_up)
    down = np.exp(np.subtract(log_phi, log_down, out=log_phi), out=log_phi)
    if start and kept is not None:
        z, log_up, log_down, up, down = (np.concatenate([old, new]) for old, new in (
            (kept.z, z), (kept.log_up, log_up), (kept.log_down, log_down), (kept.up, up), (kept.down, down)))
    return Point(skills.copy(), seat.copy(), scale, z, log_up, log_down, up, down,
                 (pairs.pa, pairs.pb, pairs.sa, pairs.sb))


def _combine(pairs: Pairs, p: Point, scale: float | np.ndarray, need: int) -> Terms:
    """The terms for ``need`` (:func:`pair_terms`) from the point and the entries' results."""
    losses = pairs.count - pairs.wins
    loglik = float(np.dot(pairs.wins, p.log_up) + np.dot(losses, p.log_down))
    ahead, behind = pairs.wins * p.up, np.multiply(losses, p.down, out=losses)
    if need == 1:
        first = ahead - behind
        first /= scale
        return loglik, p.up, p.down, first
    both = np.empty((2, ahead.size))
    first, second = both
    np.subtract(ahead, behind, out=first)
    first /= scale
    # wins up (z + up) + losses down (down - z), in place
    np.add(p.z, p.up, out=second)
    second *= ahead
    behind *= np.subtract(p.down, p.z, out=ahead)
    second += behind
    second /= scale**2
    return loglik, p.up, p.down, both


def _log_phis(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log Phi(z), log Phi(-z)): from one ``ndtr`` where |z| <= 5 (both tails then exceed
    2.8e-7, so the logs lose nothing), ``log_ndtr`` only in the far tails; a third of the
    cost of two ``log_ndtr`` calls, the likelihood's main cost at 1,000,000 games."""
    near = np.clip(z, -5.0, 5.0)
    far = near != z
    up = ndtr(near, out=near)
    # log(1 - up), not log1p(-up): its absolute error stays ~1e-16 (what the sums and the ratios
    # down = exp(log phi - log_down) need) and it is a third of log1p's cost
    log_down = np.subtract(1.0, up)
    log_up, log_down = np.log(up, out=up), np.log(log_down, out=log_down)
    if far.any():
        zf = z[far]
        log_up[far], log_down[far] = log_ndtr(zf), log_ndtr(-zf)
    return log_up, log_down


class Hessian:
    """-d2 (log-likelihood) / d mu2 plus a diagonal ``precision`` as a sparse (k x k) matrix,
    one entry per pair of bots that met: its pattern is built once, each Newton step only
    fills the values."""

    def __init__(self, pairs: Pairs, k: int) -> None:
        rows = np.concatenate([pairs.ppa, pairs.ppb, np.arange(k)])
        cols = np.concatenate([pairs.ppb, pairs.ppa, np.arange(k)])
        self.order = np.lexsort((cols, rows))
        self.indices = cols[self.order].astype(np.int32)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=k))]).astype(np.int32)
        self.pairs, self.k = pairs, k

    def on(self, pairs: Pairs, k: int) -> Hessian:
        """This pattern for ``pairs``, when they hold the same pairs of bots among as many bots (a
        live fit's entries grow, its pairs of bots keep their index and mostly stay: the sort of
        1,000,000 pattern entries is not made again); else a new one."""
        if k != self.k or pairs.ppa.size != self.pairs.ppa.size:
            return Hessian(pairs, k)
        same = copy.copy(self)
        same.pairs = pairs
        return same

    def per_pair(self, second: np.ndarray) -> np.ndarray:
        """Each pair of bots' -d2/dx2, summed over its entries."""
        return np.bincount(self.pairs.pair, weights=second, minlength=self.pairs.ppa.size)

    def diagonal(self, second: np.ndarray) -> np.ndarray:
        """The likelihood's part of the diagonal (each bot's information)."""
        per_pair, k = self.per_pair(second), self.k
        return np.bincount(self.pairs.ppa, weights=per_pair, minlength=k) + np.bincount(
            self.pairs.ppb, weights=per_pair, minlength=k)

    def at(self, second: np.ndarray, precision: float | np.ndarray) -> sp.csr_matrix:
        """The matrix for each entry's -d2/dx2 ``second``."""
        per_pair = self.per_pair(second)
        data = np.concatenate([-per_pair, -per_pair, self.diagonal(second) + precision])[self.order]
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.k, self.k))

    def inverse_trace(self, second: np.ndarray, precision: float, exact_bots: int) -> float:
        """The trace of the matrix's inverse (the sum of the skills' posterior variances, times
        the data's weight): exact by a dense Cholesky factorisation up to ``exact_bots`` bots (a
        fraction of a second at 1,000 on one core), past that the sum of the inverse diagonal (each
        bot's own information; it leaves out the uncertainty of its opponents, small when each bot
        met many)."""
        matrix = self.at(second, precision)
        if matrix.shape[0] <= exact_bots:
            factor = cho_factor(matrix.toarray(), lower=True)
            # the inverse of the triangular factor in place (LAPACK's trtri: a third of the work of
            # solving against the identity); its squares sum to the trace of the matrix's inverse
            inverse, info = dtrtri(np.tril(factor[0]), lower=1)
            if info != 0:
                raise np.linalg.LinAlgError(f"the factor is singular (trtri info {info})")
            return float(np.sum(inverse ** 2))
        return float(np.sum(1.0 / matrix.diagonal()))


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


def _seat_newton(pairs: Pairs, first: np.ndarray, second: np.ndarray, seat: np.ndarray,
                 seat_precision: float) -> np.ndarray:
    """The Newton step of the seat effects with the skills held (a small dense system)."""
    s = pairs.seats
    grad = (np.bincount(pairs.sa, weights=first, minlength=s) - np.bincount(pairs.sb, weights=first, minlength=s)
            - seat_precision * seat)
    cross = np.bincount(pairs.sa * s + pairs.sb, weights=second, minlength=s * s).reshape(s, s)
    hessian = np.diag(cross.sum(axis=1) + cross.sum(axis=0) + seat_precision) - cross - cross.T
    return np.asarray(np.linalg.solve(hessian, grad))


def maximise(pairs: Pairs, hessian: Hessian, skills: np.ndarray, seat: np.ndarray, mu: float,
             precision: float | np.ndarray, scale: float | np.ndarray, iterations: int, *,
             seat_precision: float | None = None, tolerance: float = 1e-4, near: bool = False
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Newton's method with step halving on the log-posterior from ``skills`` (and the seat
    effects ``seat``, fitted too unless ``seat_precision`` is None), until a step moves no
    value by ``tolerance``: (skills, seat effects, each entry's -d2/dx2 there). A start near
    the answer (the fit of a prefix of the same games, or under another prior) saves steps.
    ``precision``: the prior's, one number or one per bot. ``near``: also stop after a full step
    whose square is under ``tolerance``: Newton's error after a step s is about K s^2, K the
    third derivative of the log-likelihood over twice the second (of log Phi, over the scale):
    0.02-0.07 measured at 1,000 bots (a second step's size against the first's), so s^2 bounds
    it 15-50 times over, when the seat effects barely moved (the two blocks' steps are taken
    apart, each holding the other: a seat step's share of the skills' error is about its size).
    A live fit's start, the last maximum, is that near after a few more games: this saves its
    second evaluation."""
    k = skills.size
    fit_seats = seat_precision is not None and pairs.seats > 1 and pairs.pa.size > 0

    def evaluate(x: np.ndarray, g: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        loglik, _, _, both = pair_terms(pairs, x, g, scale, 2)
        value = loglik - 0.5 * float(np.sum(precision * (x - mu) ** 2))
        if fit_seats:
            value -= 0.5 * (seat_precision or 0.0) * float(np.sum(g ** 2))
        return value, both[0], both[1]

    def halve(x: np.ndarray, g: np.ndarray, dx: np.ndarray, dg: np.ndarray, current: float
              ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, np.ndarray, float]:
        t = 1.0
        while True:  # step halving: a full Newton step can overshoot for a bot that always wins
            value, first, second = evaluate(x + t * dx, g + t * dg)
            if value >= current - 1e-9 or t < 1e-4:
                return x + t * dx, g + t * dg, value, first, second, t
            t *= 0.5

    current, first, second = evaluate(skills, seat)
    for _ in range(iterations):
        grad = (np.bincount(pairs.pa, weights=first, minlength=k) - np.bincount(pairs.pb, weights=first, minlength=k)
                - precision * (skills - mu))
        step = _newton_step(hessian.at(second, precision), grad)
        # the seat effects' step at the same point (block Newton: with every seat order played the
        # two blocks are nearly orthogonal), so that a step costs one evaluation
        seat_step = (_seat_newton(pairs, first, second, seat, seat_precision or 0.0) if fit_seats
                     else np.zeros_like(seat))
        skills, seat, current, first, second, t = halve(skills, seat, step, seat_step, current)
        moved = float(np.max(np.abs(t * step))) if step.size else 0.0
        seat_moved = float(np.max(np.abs(t * seat_step)))
        # Newton converges quadratically: after a step of 1e-4 the error is ~1e-8 (mu is shown to 0.01)
        if max(moved, seat_moved) < tolerance or (near and t == 1.0 and moved * moved < tolerance
                                                  and seat_moved < tolerance):
            break
    return skills, seat, second


def seat_pair_scores(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
    """d/dx of each seat pair's log-likelihood term (x = mu(seat i) - mu(seat j)), in
    :class:`Pairs`' order: linear in the result, (r (up + down) - down) / scale for bot a
    (``scale``: one number, or one per entry)."""
    _, up, down, _ = pair_terms(pairs, skills, seat, scale, 1)
    oriented = np.where(pairs.sign > 0, pairs.result, 1.0 - pairs.result)
    per = scale[pairs.which] if isinstance(scale, np.ndarray) else scale
    scores: np.ndarray = pairs.sign * (oriented * (up + down)[pairs.which] - down[pairs.which]) / per
    return scores


def meat(batches: Sequence[TableBatch], seat_pair_score: np.ndarray, k: int) -> tuple[np.ndarray, int, np.ndarray]:
    """The sandwich's meat: the sum over duplicate sets of the outer product of each set's score
    (the gradient of its games' log-likelihood); the number of sets; and each bot's number of
    sets (what its own variance rests on). ``seat_pair_score``: :func:`seat_pair_scores`."""
    total = np.zeros(k * k)
    n_sets = 0
    per_bot = np.zeros(k, dtype=np.int64)
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
        labels, m = compact(batch.sets)
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
                    total += np.bincount(set_bots[:, c] * k + set_bots[:, d], weights=per_set[:, c] * per_set[:, d],
                                         minlength=k * k)
            distinct = np.ones(set_bots.shape, dtype=bool)  # each row sorted: a bot counts once per set
            distinct[:, 1:] = set_bots[:, 1:] != set_bots[:, :-1]
            per_bot += np.bincount(set_bots[distinct], minlength=k)
        else:  # sets of mixed bots (not the harness's duplicate sets): a sparse product
            matrix = sp.csr_matrix((scores.ravel(), (np.repeat(labels, n), bots.ravel())), shape=(m, k))
            total += (matrix.T @ matrix).toarray().ravel()
            per_bot += np.bincount(np.unique(np.repeat(labels, n) * k + bots.ravel()) % k, minlength=k)
    return total.reshape(k, k), n_sets, per_bot


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
    e, n = np.empty(0), np.empty(0, dtype=np.int64)
    pa, pb = np.asarray(pa, dtype=np.int64), np.asarray(pb, dtype=np.int64)
    zeros = np.zeros(pa.size, dtype=np.int64)
    pairs = Pairs(n, e, e, pa, pb, zeros, zeros, np.asarray(wins, dtype=np.float64),
                  np.asarray(count, dtype=np.float64), np.arange(pa.size), pa, pb, 1)
    skills = np.full(k, float(mu)) if start is None else np.array(start, dtype=np.float64)
    return maximise(pairs, Hessian(pairs, k), skills, np.zeros(1), mu, 1.0 / sigma**2, math.sqrt(2.0) * beta,
                    iterations, tolerance=tolerance)[0]
