"""Each bot's own weight of its results against the prior, P(>next) from the exact posterior
where a bot's record is one-sided, and the prior spread's own uncertainty, for the table's fit
(:mod:`harness.league.ratings_fit`).

**Why.** The fit weighs the pairwise composite likelihood against the skills' prior with one
number for the whole field, w = tr(H) / tr(M) (the curvature over the duplicate sets' score
variance). With duplicate sets a pair's results within a set are dependent: at two seats the
two games of a set swap the seats, so the deal's luck enters them with opposite signs, and the
two results split more often than independent games would (the margins' correlation is -0.52
in ``bench/ratings_cells.py``'s leagues, the results' -0.35 between equal bots): a set says
more than its curvature claims, w is about 1.6. But that dependence is a property of the
*results*, and the correlation of two results whose latent margins correlate rho falls to 0
as the win probability moves away from 1/2 (Gaussian tails are independent: a bot that beats
its opponent nine times in ten wins both games of the set whatever the deal). A bot at the
end of a sparse field, which won (or lost) nearly all its games against bots it beats nine
times in ten, has results nearly independent within each set: its true weight is near 1, and
the field's 1.6 counted its one-sided record 1.6 times, so the prior held it too little and
its distance to the next bot was read too large. Measured (100 bots, 10 two-seat sets each,
the adjacent pairs claimed at 0.85 or more): the exact posterior of the composite likelihood
with the field's w gave P(>next) 0.913 on average, the exact posterior of the generating
model (each set's two results by the bivariate normal) 0.863, the table 0.887.

**What.** The field's dependence is carried to each bot's own results: each entry (a pair of
bots in given seats) at its fitted standardised margin z has a dependence factor 1 + c(z; rho),
c the correlation of two probit results with thresholds z and latent correlation rho,
c = (Phi2(-z, -z; rho) - Phi(-z)^2) / (Phi(z) Phi(-z)). One rho for the field is fitted so
that the information-weighted mean factor is the measured 1 / w (exact at two seats, where
an entry's dependence is its swapped game's; at more seats an effective rho for the set's
structure, with the same decay towards the tails). A bot's weight is then its entries'
expected information over their information times their factor, w_i = sum I_e / sum I_e (1 +
c_e) (I_e = count phi(z)^2 / (Phi(z) Phi(-z)), the probit's expected information; the factors
scaled so that their mean is exactly 1 / w where rho reaches its bound), bounded as the
field's; its prior precision is 1 / (tau^2 w_i). A bot among equals keeps about the
field's w; a bot whose results were one-sided gets nearly 1. The skills are refitted under
those precisions (from the fit's maximum: a step or two) and recentred on the prior's mean
(a heterogeneous prior pins a weighted mean; the results measure only differences, and the
table's mu stay relative to the mean of its bots).

**One-sided pairs.** A bot that finished ahead in every game (or behind) has no maximum of its
own: its posterior's near side falls faster than a normal's and its far side is the prior's,
so the normal at the maximum is not its posterior. For each adjacent pair of the order with
such a bot, :func:`exact_shift` integrates the posterior along the two bots (the others held
at the fit) and moves their difference so that the normal of the approximation's standard
deviation gives the exact P(a > b); the table keeps its own standard deviation (the sandwich,
the small-sample factors). For a bot that won everything the exact posterior is surer than the
normal: this moves P(>next) up, the weights above move it down.

**Measured** (``bench/ratings_cells.py``, side by side with ``--field-weight``; docs/ratings.md,
part 9): 100 bots with 10 two-seat sets each, 3,000 leagues, P(>next)'s 0.8-0.9 tenth 0.839 ->
0.800 observed before (839 pairs), 0.834 -> 0.834 now (410), its 0.9-1.0 tenth 0.926 -> 0.859
(114) before, 0.923 -> 0.968 (31) now; the sparse 3-seat cell, 10 close bots and the 4-bot grid
within 0.006 of before in every tenth, their coverage unchanged.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from scipy.linalg import cho_solve
from scipy.special import log_ndtr, ndtr, ndtri

from harness.league.ratings_model import Hessian, Pairs, Point, maximise, seed
from harness.league.ratings_swaps import bvn

__all__ = ["EXACT_PAIRS", "LOCAL_WEIGHTS", "Localised", "bot_weights", "dependence", "exact_shift", "localise",
           "localise_ahead", "moved", "one_sided", "spread_uncertainty"]

#: :func:`localise`'s answer: (skills, seat effects, -d2/dx2 per entry, precisions, weights, shifts)
Localised = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[tuple[int, int], float]]

#: whether each bot gets its own weight against the prior (False: the field's w for every bot)
LOCAL_WEIGHTS = True
#: whether an adjacent pair with a one-sided bot gets its P(>next) from the exact posterior along the two
EXACT_PAIRS = True
#: the grid of |z| on which the dependence is computed (beyond its end an entry's information is nil)
_GRID = np.linspace(0.0, 6.0, 61)


def dependence(z: np.ndarray, rho: float) -> np.ndarray:
    """c(z; rho): the correlation of two probit results 1{X > -z}, 1{Y > -z} whose latent
    margins (X, Y) are standard normal with correlation ``rho`` (symmetric in z; computed in
    the lower tail, where the difference is not a cancellation of numbers near 1)."""
    t = -np.abs(np.asarray(z, dtype=np.float64))
    low = ndtr(t)
    joint = bvn(t, t, np.full(t.shape, rho))
    return np.asarray((joint - low * low) / np.maximum(low * (1.0 - low), 1e-300))


def _expected_information(z: np.ndarray) -> np.ndarray:
    """phi(z)^2 / (Phi(z) Phi(-z)): a probit result's expected information, per unit of z^2."""
    return np.asarray(np.exp(-z * z - np.log(2 * np.pi) - log_ndtr(z) - log_ndtr(-z)))


def _field_rho(info: np.ndarray, target: float) -> float:
    """The rho whose information-weighted mean dependence over the grid's bins is ``target``
    (c is increasing in rho; bisection, clipped to the attainable range)."""
    lo, hi = -0.99, 0.99
    total = float(info.sum())
    for _ in range(24):  # to 1e-7: c moves by less
        mid = 0.5 * (lo + hi)
        if float(np.dot(info, dependence(_GRID, mid))) / total < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def bot_weights(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, scale: float | np.ndarray, weight: float,
                k: int, low: float, high: float) -> np.ndarray:
    """Each bot's weight against the prior (the module's text): the field's ``weight`` carried to
    its own entries' margins, within [``low``, ``high``]; a bot in no entry keeps ``weight``."""
    if pairs.pa.size == 0 or abs(weight - 1.0) < 1e-9:
        return np.full(k, weight)
    z = (skills[pairs.pa] - skills[pairs.pb] + seat[pairs.sa] - seat[pairs.sb]) / scale
    info = pairs.count * _expected_information(z) / np.square(scale)
    at = np.minimum(np.rint(np.abs(z) / _GRID[1]).astype(np.int64), _GRID.size - 1)
    binned = np.bincount(at, weights=info, minlength=_GRID.size)
    if binned.sum() <= 0:
        return np.full(k, weight)
    rho = _field_rho(binned, 1.0 / weight - 1.0)
    factor = 1.0 + np.interp(np.abs(z), _GRID, dependence(_GRID, rho))
    # exactly the field's mean factor, also where rho reached its bound (a field weight under 0.52)
    factor *= (1.0 / weight) * float(info.sum()) / float(np.dot(info, factor))
    own = np.bincount(pairs.pa, weights=info, minlength=k) + np.bincount(pairs.pb, weights=info, minlength=k)
    spread = (np.bincount(pairs.pa, weights=info * factor, minlength=k)
              + np.bincount(pairs.pb, weights=info * factor, minlength=k))
    weights = np.where(spread > 0, own / np.maximum(spread, 1e-300), weight)
    return np.clip(weights, low, high)


def one_sided(pairs: Pairs, k: int) -> np.ndarray:
    """Each bot: whether it finished ahead in every pair of seats it played, or behind in every
    one (its results alone have no finite maximum: the prior decides how far out it is)."""
    own = np.bincount(pairs.pa, weights=pairs.wins, minlength=k) + np.bincount(
        pairs.pb, weights=pairs.count - pairs.wins, minlength=k)
    total = np.bincount(pairs.pa, weights=pairs.count, minlength=k) + np.bincount(pairs.pb, weights=pairs.count,
                                                                                 minlength=k)
    return np.asarray((total > 0) & ((own <= 1e-9) | (own >= total - 1e-9)))


def exact_shift(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, scale: float | np.ndarray,
                precision: np.ndarray, mu: float, a: int, b: int, second: np.ndarray) -> float:
    """How far the exact posterior along bots a and b (the others held at the fit) moves their
    difference beyond its normal approximation at the maximum: m' - (mu_a - mu_b), with m' the
    difference whose normal, of the approximation's standard deviation, gives the exact
    posterior's P(a > b) (the midpoint rule on 121 x 121 points over +-8 standard deviations).
    ``second``: each entry's -d2/dx2 at the maximum (:func:`~harness.league.ratings_model.maximise`'s)."""
    mine = np.flatnonzero((pairs.pa == a) | (pairs.pb == a) | (pairs.pa == b) | (pairs.pb == b))
    pa, pb, wins, count = pairs.pa[mine], pairs.pb[mine], pairs.wins[mine], pairs.count[mine]
    s = scale[mine] if isinstance(scale, np.ndarray) else scale
    offset = seat[pairs.sa[mine]] - seat[pairs.sb[mine]]
    second = second[mine]
    both = ((pa == a) & (pb == b)) | ((pa == b) & (pb == a))
    h = np.array([[np.sum(second[(pa == a) | (pb == a)]) + precision[a], -np.sum(second[both])],
                  [-np.sum(second[both]), np.sum(second[(pa == b) | (pb == b)]) + precision[b]]])
    cov = np.linalg.inv(h)
    sd_diff = float(np.sqrt(max(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1], 1e-300)))
    # the difference's cells aligned on 0 (the midpoint rule then integrates the half-plane a > b
    # to second order), the other bot's skill beside it
    step = 16.0 * sd_diff / 120
    first = math.floor((skills[a] - skills[b]) / step) - 60
    diffs = (np.arange(first, first + 121) + 0.5) * step
    grid_d, grid_b = (g.ravel() for g in np.meshgrid(diffs, skills[b] + np.linspace(-8.0, 8.0, 121)
                                                     * np.sqrt(cov[1, 1]), indexing="ij"))
    grid_a = grid_d + grid_b

    def at(bot: np.ndarray) -> np.ndarray:
        return np.asarray(np.where(bot == a, grid_a[:, None], np.where(bot == b, grid_b[:, None], skills[bot][None, :])))

    zz = (at(pa) - at(pb) + offset) / s
    log_post = (log_ndtr(zz) @ wins + log_ndtr(-zz) @ (count - wins)
                - 0.5 * precision[a] * (grid_a - mu) ** 2 - 0.5 * precision[b] * (grid_b - mu) ** 2)
    density = np.exp(log_post - log_post.max())
    ahead = float(np.sum(density[grid_d > 0]) / np.sum(density))
    exact = float(np.clip(ahead, 1e-12, 1.0 - 1e-12))
    return sd_diff * float(ndtri(exact)) - float(skills[a] - skills[b])


def localise(pairs: Pairs, hessian: Hessian, skills: np.ndarray, seat: np.ndarray, mu: float, tau: float,
             weight: float, scale: float | np.ndarray, seat_precision: float | None, low: float, high: float,
             earlier: tuple[np.ndarray, np.ndarray] | None = None, start: Point | None = None) -> Localised:
    """The fit under each bot's own weight: (skills recentred on ``mu``, seat effects, each
    entry's -d2/dx2, each bot's prior precision 1 / (tau^2 w_i), the weights w_i, and for each
    adjacent pair of the order (by mu, then index) with a one-sided bot, :func:`exact_shift`).
    ``earlier``: an earlier fit's (skills, weights) of most of the same games (a quick fit): its
    weights are kept (a bot new since gets the field's) and its maximum is the start; ``start``:
    that maximum's :class:`~harness.league.ratings_model.Point` (of a live fit: entries keep their
    index), the start instead, where only the entries new since are computed."""
    k = skills.size
    if earlier is None:
        weights = bot_weights(pairs, skills, seat, scale, weight, k, low, high)
    else:
        weights = np.concatenate([earlier[1], np.full(k - earlier[1].size, weight)])
        at = earlier[0]
        if start is not None and seed(pairs, start):  # (refused for entries numbered otherwise)
            at, seat = start.skills, start.seat.copy()
        skills = np.concatenate([at, skills[at.size:]])
    precision = 1.0 / (tau**2 * weights)
    skills, seat, second = maximise(pairs, hessian, skills, seat, mu, precision, scale, 30,
                                    seat_precision=seat_precision, tolerance=1e-4 if earlier is None else 1e-3,
                                    near=earlier is not None)
    shifts: dict[tuple[int, int], float] = {}
    if EXACT_PAIRS:
        sided = one_sided(pairs, k)
        order = np.lexsort((np.arange(k), -skills))
        for a, b in zip(order[:-1].tolist(), order[1:].tolist()):
            if sided[a] or sided[b]:
                shifts[a, b] = exact_shift(pairs, skills, seat, scale, precision, mu, a, b, second)
    return skills - (skills.mean() - mu), seat, second, precision, weights, shifts


def moved(local: tuple[np.ndarray, np.ndarray], before: np.ndarray, now: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    """An earlier fit's (skills, weights) under each bot's own weight, its skills moved as the
    field-weight maximum moved since (``before`` -> ``now``): where this fit's will be."""
    m = local[0].size
    return local[0] + (now[:m] - before[:m]), local[1]


_ahead: list[ThreadPoolExecutor] = []
_ahead_lock = threading.Lock()


def localise_ahead(pairs: Pairs, hessian: Hessian, earlier: tuple[np.ndarray, np.ndarray], start: Point | None,
                   mu: float, tau: float, weight: float, scale: float, seat_precision: float, low: float,
                   high: float) -> Future[Localised] | None:
    """:func:`localise` from an earlier fit's maximum under each bot's own weight (``earlier``,
    ``start``: its skills and weights, its :class:`Point`), started on a thread of its own, so
    that a quick fit's maximum under the field's weight is found meanwhile (numpy's work on the
    entries releases the GIL: the two take ~0.6 of their time one after the other). It works on
    ``pairs``' memo, so the caller leaves that alone until it is done (the field's maximum on a
    copy). None where it cannot start before the field's maximum is known: a bot new since (its
    start is the field's) or no point kept for these pairs' entries."""
    k = hessian.k
    if start is None or earlier[0].size != k or start.skills.size != k or not seed(pairs, start):
        return None
    with _ahead_lock:
        if not _ahead:
            _ahead.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="tablebots-local-fit"))
    return _ahead[0].submit(localise, pairs, hessian, start.skills, start.seat.copy(), mu, tau, weight, scale,
                            seat_precision, low, high, earlier, start)


def spread_uncertainty(factor: tuple[np.ndarray, bool], skills: np.ndarray, mu: float, tau: float,
                       weight: float | np.ndarray, information: np.ndarray) -> np.ndarray:
    """g g' Var(tau^2): what the estimated spread's own uncertainty adds to the skills'
    covariance (Kass and Steffey 1989's first-order correction of empirical Bayes). g = d mu^ /
    d tau^2 = A^-1 ((mu^ - mu0) / w) / tau^4, from the maximum's condition; Var(tau^2) = 2 / sum
    1 / (tau^2 + v_i)^2 (the marginal likelihood's information, v_i = 1 / (w H_ii) each bot's
    sampling variance). Without it the plug-in spread made a close field of 10 bots look surer
    than it was: a spread estimated too small shrinks every bot to the mean with a small sigma.
    ``weight``: the data's, the field's or each bot's own."""
    g = cho_solve(factor, (skills - mu) / weight) / tau**4
    v = 1.0 / (weight * np.maximum(information, 1e-12))
    var_tau2 = 2.0 / float(np.sum(1.0 / (tau**2 + v) ** 2))
    return np.asarray(np.outer(g, g) * var_tau2)
