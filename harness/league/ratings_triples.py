"""A bot's own performance noise read from the order of three players in one game
(:mod:`harness.league.ratings_noise` combines it with the slope of its results and its swapped
games, :mod:`harness.league.ratings_swaps`).

**Why.** At a table of three or more, the table's pairwise likelihood reads each pair of seats
on its own, and a pair's result tells a bot's noise only through the slope of its results
against its opponents' skills: among a few bots close together, barely (its swapped games give
a standard error of about 0.3 on log beta_i among 4 bots spread beta/2 with 64 sets, against
log 2 = 0.69 for twice the noise; the noise was found in 87 of 200 such leagues). The order of
three players in one game says more: performances are independent across the seats of a game,
so the three pairs' results are dependent through the players' noises, and a noisy bot lands
at the ends (first or last) more often and in the middle less: among three equal bots, a bot
with twice the noise finishes between the other two in 20.5% of games instead of 33.3%.

**The reading.** For every three seats of a game whose players finished in three different
places: P(x ahead of y ahead of z) = Phi2(z_xy, z_yz; rho), z_xy = (m_x - m_y) / sqrt(b_x^2 +
b_y^2) (m a skill plus its seat's effect, b_i = beta e^lambda_i) and rho = -b_y^2 /
sqrt((b_x^2 + b_y^2)(b_y^2 + b_z^2)). The estimating function is that triple's log-likelihood
*minus* the three pairs' (their marginals, the table's own likelihood): its expectation is 0
under the model (each is a true likelihood of its outcome), and what it measures is what the
three places say beyond the three pairs, so it is nearly independent of the slope (which the
pairs tell) and of the swapped games (a correlation between games, this one within a game).
The skills and seat effects are held at the fit; a bot's one-step estimate is its score over
the function's sensitivity (the triple's information minus its pairs'); its variance is the
larger of the cluster-robust one over duplicate sets (with the CR1 factor) and the model's own
(the function's expected square), over the sensitivity squared. The places tell the noises only
relative to each other (every noise scaled together leaves the correlations as they are), so each
bot's is read against the median of the others' (the median bot is the common beta). Three seats with a shared place, or a bot twice, are left
out (a tie is the game's, not the model's).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtr

from .ratings_model import TableBatch, compact, seat_positions
from .ratings_swaps import bvn

__all__ = ["TRIPLE_MAX_ENTRIES", "Triples", "median_contrast_variance", "others_median", "triple_reading", "triple_score_info", "triples_of"]

#: the triples are read in a league with at most this many entries (three bots and their seat
#: positions): a larger league has many bots, each met by opponents spread enough for the slope
TRIPLE_MAX_ENTRIES = 20_000
#: the derivatives' step on lambda (forward differences of smooth probabilities)
_STEP = 1e-5
#: the six orders of three positions, first to last
ORDERS = tuple(itertools.permutations(range(3)))
#: Fisher-scoring steps of the noises read (each from the last, the median bot set to the common beta)
ROUNDS = 4
#: no bot's noise moves by more than this in one step (a bot misfit by a noisy opponent's first
#: step would otherwise overshoot where its sensitivity is small)
MAX_STEP = 0.5
#: a bot's triples are read when they come from at least this many duplicate sets
MIN_SETS = 8


@dataclass
class Triples:
    """Every three seats (positions i < j < l of a table) of every game, aggregated: per entry the
    three bots ``bots`` (m x 3, in seat order), their seat positions ``seats`` (indices into the
    seat effects) and the count of each of the six orders ``counts`` (m x 6, :data:`ORDERS`);
    per (set, entry) row its set, entry and counts, for the variance over sets."""

    bots: np.ndarray
    seats: np.ndarray
    counts: np.ndarray
    row_set: np.ndarray
    row_entry: np.ndarray
    row_counts: np.ndarray


def triples_of(batches: Sequence[TableBatch], k: int, base: dict[int, int] | None = None) -> Triples | None:
    """The triples of ``batches`` (bots 0..k-1); None when there are none (two-seat tables only)
    or more than :data:`TRIPLE_MAX_ENTRIES` entries. ``base``: each table size's first seat
    effect (default :func:`~harness.league.ratings_model.seat_positions` of ``batches``)."""
    base = seat_positions(batches) if base is None else base
    seats_total = max(sum(base), 1)  # every seat position of every table size (the keys are the sizes)
    parts: list[tuple[np.ndarray, ...]] = []
    for batch in batches:
        n = batch.versions.shape[1]
        for i, j, h in itertools.combinations(range(n), 3):  # loops over seats only
            v = batch.versions[:, [i, j, h]]
            r = batch.ranks[:, [i, j, h]]
            keep = (r[:, 0] != r[:, 1]) & (r[:, 1] != r[:, 2]) & (r[:, 0] != r[:, 2]) & \
                (v[:, 0] != v[:, 1]) & (v[:, 1] != v[:, 2]) & (v[:, 0] != v[:, 2])
            first = np.argsort(r[keep], axis=1)
            code = _codes(first)
            parts.append((v[keep], np.broadcast_to(np.array([base[n] + i, base[n] + j, base[n] + h]),
                                                   (int(keep.sum()), 3)), code, batch.sets[keep]))
    if not parts or sum(p[0].shape[0] for p in parts) == 0:
        return None
    bots, seats, code, sets = (np.concatenate([p[c] for p in parts]) for c in range(4))
    key = ((bots[:, 0] * k + bots[:, 1]) * k + bots[:, 2]) * seats_total ** 3 + \
        (seats[:, 0] * seats_total + seats[:, 1]) * seats_total + seats[:, 2]
    entry, m = compact(key)
    if m > TRIPLE_MAX_ENTRIES:
        return None
    first_of = np.zeros(m, dtype=np.int64)
    first_of[entry] = np.arange(entry.size)
    counts = np.zeros((m, 6))
    np.add.at(counts, (entry, code), 1.0)
    set_label, _ = compact(np.asarray(sets, dtype=np.int64))
    row, rows = compact(set_label * m + entry)
    row_first = np.zeros(rows, dtype=np.int64)
    row_first[row] = np.arange(row.size)
    row_counts = np.zeros((rows, 6))
    np.add.at(row_counts, (row, code), 1.0)
    return Triples(bots[first_of], seats[first_of], counts, set_label[row_first], entry[row_first], row_counts)


def _codes(first: np.ndarray) -> np.ndarray:
    """Each row's order (the positions first to last) as its index in :data:`ORDERS`."""
    lookup = np.zeros(27, dtype=np.int64)
    for c, (x, y, z) in enumerate(ORDERS):
        lookup[x * 9 + y * 3 + z] = c
    return lookup[first[:, 0] * 9 + first[:, 1] * 3 + first[:, 2]] if first.size else np.zeros(0, dtype=np.int64)


def _orders(m: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(m x 6) the six orders' probabilities of three performances N(m_p, b_p^2), floored at 1e-12."""
    out = np.empty((m.shape[0], 6))
    for c, (x, y, z) in enumerate(ORDERS):
        sxy = np.sqrt(b[:, x] ** 2 + b[:, y] ** 2)
        syz = np.sqrt(b[:, y] ** 2 + b[:, z] ** 2)
        rho = np.maximum(-b[:, y] ** 2 / (sxy * syz), -0.999999)
        out[:, c] = bvn((m[:, x] - m[:, y]) / sxy, (m[:, y] - m[:, z]) / syz, rho)
    return np.maximum(out, 1e-12)


def _pairs_of_orders(m: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per entry the three pairs' probabilities of each order's pair results: (m x 6) the log of
    their product (the pairs' composite likelihood of that order) and (m x 3 x 2) each pair's two
    outcomes' probabilities (p ahead of q, q ahead of p)."""
    logs = np.zeros((m.shape[0], 6))
    outcome = np.empty((m.shape[0], 3, 2))
    for n, (p, q) in enumerate(((0, 1), (1, 2), (0, 2))):
        ahead = np.clip(ndtr((m[:, p] - m[:, q]) / np.sqrt(b[:, p] ** 2 + b[:, q] ** 2)), 1e-12, 1 - 1e-12)
        outcome[:, n, 0], outcome[:, n, 1] = ahead, 1.0 - ahead
        for c, o in enumerate(ORDERS):
            logs[:, c] += np.log(ahead if o.index(p) < o.index(q) else 1.0 - ahead)
    return logs, outcome


def _derivatives(triples: Triples, skills: np.ndarray, seat: np.ndarray, lam: np.ndarray, beta: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per entry: the six orders' probabilities (m x 6), the pairs' outcomes' probabilities (m x 3
    x 2), and per position p (stacked first): d log P(order) / d lambda_p (3 x m x 6), the pairs'
    outcomes' d/d lambda_p (3 x m x 3 x 2) and the estimating function's d/d lambda_p per order
    (3 x m x 6)."""
    m = skills[triples.bots] + seat[triples.seats]
    lam_e = lam[triples.bots]
    probs = _orders(m, beta * np.exp(lam_e))
    pair_logs, pair_out = _pairs_of_orders(m, beta * np.exp(lam_e))
    d_triple, d_out, g = np.empty((3,) + probs.shape), np.empty((3,) + pair_out.shape), np.empty((3,) + probs.shape)
    for p in range(3):
        shifted = lam_e.copy()
        shifted[:, p] += _STEP
        b = beta * np.exp(shifted)
        d_triple[p] = (np.log(_orders(m, b)) - np.log(probs)) / _STEP
        logs, out = _pairs_of_orders(m, b)
        d_out[p] = (out - pair_out) / _STEP
        g[p] = d_triple[p] - (logs - pair_logs) / _STEP
    return probs, pair_out, d_triple, d_out, g


def triple_score_info(triples: Triples, skills: np.ndarray, seat: np.ndarray, lam: np.ndarray, beta: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each bot's score of the estimating function of the module's text (d/d lambda_i of the
    triples' log-likelihood minus their pairs'), its sensitivity matrix (k x k: the expected
    -d score_i / d lambda_j, the triple's information minus its pairs'), the model's variance
    of the scores (k x k: their expected outer product) and their variance over duplicate sets
    (k x k: the sum over sets of the outer product of each set's scores)."""
    k = skills.size
    probs, pair_out, d_triple, d_out, g = _derivatives(triples, skills, seat, lam, beta)
    total = triples.counts.sum(axis=1)
    score = np.zeros(k)
    sens, square = np.zeros(k * k), np.zeros(k * k)
    for p in range(3):
        bots = triples.bots[:, p]
        score += np.bincount(bots, weights=np.sum(triples.counts * g[p], axis=1), minlength=k)
        for q in range(3):
            cell = bots * k + triples.bots[:, q]
            info = np.sum(probs * d_triple[p] * d_triple[q], axis=1) - np.sum(d_out[p] * d_out[q] / pair_out, axis=(1, 2))
            sens += np.bincount(cell, weights=total * info, minlength=k * k)
            square += np.bincount(cell, weights=total * np.sum(probs * g[p] * g[q], axis=1), minlength=k * k)
    # each set's scores: one row per set, one column per bot
    rows = np.concatenate([triples.row_set] * 3)
    cols = np.concatenate([triples.bots[triples.row_entry, p] for p in range(3)])
    vals = np.concatenate([np.sum(triples.row_counts * g[p][triples.row_entry], axis=1) for p in range(3)])
    per_set = sp.csr_matrix((vals, (rows, cols)), shape=(int(triples.row_set.max()) + 1, k))
    variance = np.asarray((per_set.T @ per_set).toarray())
    return score, sens.reshape(k, k), square.reshape(k, k), variance


def triple_sets(triples: Triples, k: int) -> np.ndarray:
    """Each bot's number of duplicate sets with a triple."""
    keys = np.concatenate([triples.row_set * k + triples.bots[triples.row_entry, p] for p in range(3)])
    return np.bincount(np.unique(keys) % k, minlength=k).astype(np.float64)


def _solve(sens: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """The inverse of the sensitivity among the bots ``measured`` (zero elsewhere), the direction
    of every noise scaled together held by a stiffness of the mean diagonal's size (the orders tell
    the noises only relative to each other; the median is set to the common beta after)."""
    k = sens.shape[0]
    idx = np.flatnonzero(measured)
    inverse = np.zeros((k, k))
    if idx.size == 0:
        return inverse
    sub = sens[np.ix_(idx, idx)]
    stiff = float(np.mean(np.diag(sub)))
    inverse[np.ix_(idx, idx)] = np.linalg.pinv(sub + stiff * np.ones_like(sub) / idx.size)
    return inverse


def others_median(lam: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Each bot's median of the *other* ``measured`` bots' lambdas (rows of a 2-D ``lam`` each on
    their own); a bot not measured gets the median of all measured. The readings tell the noises
    only relative to each other, and a bot's is read against this: against the median of all,
    one noisy bot among 4 was read against the middle of the other three and itself, above the
    others' centre (0.05-0.08 low, a third of its standard error, and its interval missed more)."""
    rows = np.atleast_2d(lam)
    idx = np.flatnonzero(measured)
    n = idx.size
    out = np.zeros_like(rows)
    if n == 0:
        return out.reshape(lam.shape)
    values = rows[:, idx]
    order = np.argsort(values, axis=1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(n)[None, :].repeat(rows.shape[0], axis=0), axis=1)
    out[:] = np.median(values, axis=1, keepdims=True)  # the bots not measured
    if n >= 2:
        rest = n - 1
        lo, hi = (rest - 1) // 2, rest // 2
        # the remaining values' j-th is the sorted j-th below the bot's rank, the (j + 1)-th above
        at_lo = np.take_along_axis(ordered, lo + (lo >= rank), axis=1)
        at_hi = np.take_along_axis(ordered, hi + (hi >= rank), axis=1)
        out[:, idx] = 0.5 * (at_lo + at_hi)
    return out.reshape(lam.shape)


def median_contrast_variance(own: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Each bot's variance of lambda_i minus the median of the other ``measured`` bots' lambdas
    (:func:`others_median`), from each bot's ``own`` variance: its own plus the median's, pi / 2
    times the others' mean variance over their number (the sample median's large-sample
    variance). Among 4 bots, leaving the median's out left a third of the variance of a noisy
    bot's estimate out."""
    n = int(np.count_nonzero(measured))
    if n < 2:
        return own.copy()
    total = float(np.sum(own[measured]))
    others = np.where(measured, (total - own) / (n - 1), total / n)
    spread: np.ndarray = own + math.pi / 2 * others / max(n - 1, 1)
    return spread


def triple_reading(triples: Triples, skills: np.ndarray, seat: np.ndarray, beta: float, bound: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each bot's unshrunk lambda^_i from the triples at the common-beta fit (``skills``, ``seat``),
    its sampling variance and whether it is read (at least :data:`MIN_SETS` sets with a triple, a
    positive sensitivity, an estimate inside +-``bound``): :data:`ROUNDS` Fisher-scoring steps on
    every bot's noise together (each bot's estimate moves its opponents' scores: a bot alone would
    answer for a noisy opponent's misfit), each step at most :data:`MAX_STEP`, the median bot read
    then set to 0; the last, each bot's read against the others' median (:func:`others_median`). The variance is the sandwich S^-1 Omega S^-1, Omega the larger of the
    cluster-robust (CR1) and the model's own variance of the scores, per bot; then each bot's own
    variance before the median is taken away and whether it was measured (in the median)."""
    k = skills.size
    lam = np.zeros(k)
    for _ in range(ROUNDS):
        score, sens, _, _ = triple_score_info(triples, skills, seat, lam, beta)
        measured = np.diag(sens) > 1e-9
        step = np.clip(_solve(sens, measured) @ score, -MAX_STEP, MAX_STEP)
        lam = np.clip(lam + step, -bound, bound)
        lam = lam - float(np.median(lam[measured])) if np.any(measured) else lam
    _, sens, square, variance = triple_score_info(triples, skills, seat, lam, beta)
    measured = np.diag(sens) > 1e-9
    lam = lam - others_median(lam, measured)
    inverse = _solve(sens, measured)
    sets = triple_sets(triples, k)
    cr1 = np.sqrt(sets / np.maximum(sets - 1.0, 1.0))
    robust, model = inverse @ variance @ inverse.T * np.outer(cr1, cr1), inverse @ square @ inverse.T
    own = np.maximum(np.diag(robust), np.diag(model))
    var = np.where(measured, median_contrast_variance(np.where(measured, own, 0.0), measured), np.inf)
    read = measured & (sets >= MIN_SETS) & (np.abs(lam) < bound - 1e-9) & (var > 0)
    own = np.where(measured, np.diag(model), 0.0)
    return lam, np.where(var > 0, var, np.inf), read, own, measured
