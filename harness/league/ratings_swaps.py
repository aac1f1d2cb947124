"""A bot's own performance noise read from its duplicate sets' swapped games
(:mod:`harness.league.ratings_noise` combines it with the slope of its results).

**Why.** A bot noisier than the others is told, from the pairs' results alone, only by how
steeply its results follow its opponents' skills: among a few bots close together that slope is
barely measured (a standard error of 0.25-0.45 on log beta_i among 4 bots spread beta/2 with 64
sets, against log 2 = 0.69 for twice the noise), and the bot stays compressed towards the mean.
A duplicate set says more. Its games deal the same cards in every seat order, so two games of a
set in which bots a and b have swapped seats share the deal's luck with opposite signs: with a
performance = skill + the seat's luck (the deal's, N(0, l^2), shared by the set) + the bot's own
noise (fresh in every game, N(0, eta_i^2)), a's margins over b in the two games are correlated
by rho_ab = -2 l^2 / (beta_a^2 + beta_b^2), beta_i^2 = l^2 + eta_i^2. The pairs whose results
split between the two games are the deal's doing; a noisy bot's games split less often, because
its own noise, not the deal, decides more of them. The correlation is measured by every pair
of swapped games, whatever the skills' spread.

**The model.** P(a ahead in both) = Phi2(z1, z2; rho) with z1, z2 the margins of the two games
over their scale sqrt(beta_a^2 + beta_b^2) (seat effects included), and the other three
outcomes from it and the margins; beta_i = beta e^lambda_i, rho_ab = -2 r / (e^(2 lambda_a) +
e^(2 lambda_b)), r = l^2 / beta^2 the deal's share of the common noise, one for the league,
estimated from all the swaps with the lambdas held. This composite likelihood of swapped pairs
holds every pair of seats of every fully permuted set once (its marginals are the table's own
likelihood) plus their correlation. A bot's score for lambda_i at lambda_i = its current value
gives its one-step estimate; its variance is the cluster-robust one over duplicate sets (at
least the inverse information). Assumed: a noisier bot has more noise of its own, not more of
the deal's (a bot whose results follow the deal more reads as no noisier than beta: the floor).
Games without their swapped partner (a set not played in every seat order) add nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, owens_t

from .ratings_model import Pairs, compact

__all__ = ["Swaps", "bvn", "luck_share", "margins", "swap_score_info", "swap_sets", "swaps_of"]

#: the derivatives' step on lambda (forward differences of smooth probabilities)
_STEP = 1e-5
#: the deal's share r of the common noise is estimated within [0, R_HIGH]
R_HIGH = 0.95


@dataclass
class Swaps:
    """Swapped pairs of games: per swap entry (a < b, a in seat position ``sa`` of the first game and
    ``sb`` of the second, b the other way round) the counts of (a ahead in both, first only,
    second only, neither), ``counts`` (m x 4); and per (set, swap entry) row, its set label,
    entry and counts, for the variance over sets."""

    pa: np.ndarray
    pb: np.ndarray
    sa: np.ndarray
    sb: np.ndarray
    counts: np.ndarray
    row_set: np.ndarray
    row_entry: np.ndarray
    row_counts: np.ndarray
    sets: int


def swaps_of(pairs: Pairs, entry_of_cell: np.ndarray, set_of_cell: np.ndarray, win_of_cell: np.ndarray
             ) -> Swaps | None:
    """The swaps of every seat pair ``cell`` (its entry in ``pairs``, its duplicate set, a's result
    1, 1/2 or 0); None when no pair of games is swapped."""
    keep = pairs.count[entry_of_cell] > 0
    entry_of_cell, set_of_cell, win_of_cell = entry_of_cell[keep], set_of_cell[keep], win_of_cell[keep]
    if entry_of_cell.size == 0:
        return None
    entries, seats = pairs.pa.size, max(pairs.seats, 1)
    sets, n_sets = compact(np.asarray(set_of_cell, dtype=np.int64))
    labels, m = compact(sets * entries + entry_of_cell)
    rows_n = np.bincount(labels, minlength=m)
    rows_w = np.bincount(labels, weights=win_of_cell, minlength=m)
    first = np.zeros(m, dtype=np.int64)
    first[labels] = np.arange(labels.size)
    row_entry, row_set = entry_of_cell[first], sets[first]
    # each entry's partner: the same pair of bots with their seat positions swapped
    key = (pairs.pair * seats + pairs.sa) * seats + pairs.sb
    partner_key = (pairs.pair * seats + pairs.sb) * seats + pairs.sa
    order = np.argsort(key)
    at = np.minimum(np.searchsorted(key[order], partner_key), entries - 1)
    partner = np.where(key[order][at] == partner_key, order[at], -1)
    # a row's partner row: the same set, the partner entry
    canonical = (pairs.sa[row_entry] < pairs.sb[row_entry]) & (partner[row_entry] >= 0)
    row_key = row_set * entries + row_entry
    by_key = np.argsort(row_key)
    want = row_set * entries + np.maximum(partner[row_entry], 0)
    hit = np.minimum(np.searchsorted(row_key[by_key], want), m - 1)
    found = canonical & (row_key[by_key][hit] == want)
    one, two = np.flatnonzero(found), by_key[hit[found]]
    if one.size == 0:
        return None
    n1, w1, n2, w2 = rows_n[one], rows_w[one], rows_n[two], rows_w[two]
    counts = np.stack([w1 * w2, w1 * (n2 - w2), (n1 - w1) * w2, (n1 - w1) * (n2 - w2)], axis=1)
    swap_entry, m_swaps = compact(row_entry[one])
    per_entry = np.stack([np.bincount(swap_entry, weights=counts[:, c], minlength=m_swaps) for c in range(4)], axis=1)
    head = np.zeros(m_swaps, dtype=np.int64)
    head[swap_entry] = row_entry[one]
    return Swaps(pairs.pa[head], pairs.pb[head], pairs.sa[head], pairs.sb[head], per_entry, row_set[one], swap_entry,
                 counts, n_sets)


def bvn(h: np.ndarray, k: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Phi2(h, k; rho), the bivariate normal's lower orthant, by Owen's T (vectorised)."""
    h = np.where(np.abs(h) < 1e-10, 1e-10, h)
    k = np.where(np.abs(k) < 1e-10, 1e-10, k)
    root = np.sqrt(1.0 - rho * rho)
    a_h = (k - rho * h) / (h * root)
    a_k = (h - rho * k) / (k * root)
    delta = np.where(h * k > 0, 0.0, 0.5)
    p: np.ndarray = 0.5 * ndtr(h) + 0.5 * ndtr(k) - owens_t(h, a_h) - owens_t(k, a_k) - delta
    return p


def _probabilities(swaps: Swaps, z: tuple[np.ndarray, np.ndarray], la: np.ndarray, lb: np.ndarray, r: float
                   ) -> np.ndarray:
    """Per swap entry the four outcomes' probabilities (m x 4), floored at 1e-12: the two games'
    margins ``z`` as the skills were fitted, their correlation from the lambdas ``la``, ``lb`` of
    each entry's bots a and b and the deal's share ``r``."""
    z1, z2 = z
    both = bvn(z1, z2, np.maximum(-2.0 * r / (np.exp(2 * la) + np.exp(2 * lb)), -0.999))
    p1, p2 = ndtr(z1), ndtr(z2)
    probs: np.ndarray = np.maximum(np.stack([both, p1 - both, p2 - both, 1.0 - p1 - p2 + both], axis=1), 1e-12)
    return probs


def margins(swaps: Swaps, skills: np.ndarray, seat: np.ndarray, lam: np.ndarray, scale: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """Each swap entry's two margins over their scale at the fit (skills, seat effects and the
    noises ``lam`` the skills were fitted with): the marginals stay the table's own likelihood,
    and the lambdas being read move only the correlation."""
    s = scale * np.sqrt(0.5 * (np.exp(2 * lam[swaps.pa]) + np.exp(2 * lam[swaps.pb])))
    d = skills[swaps.pa] - skills[swaps.pb]
    edge = seat[swaps.sa] - seat[swaps.sb]
    return (d + edge) / s, (d - edge) / s


def _loglik(swaps: Swaps, z: tuple[np.ndarray, np.ndarray], lam: np.ndarray, r: float) -> float:
    probs = _probabilities(swaps, z, lam[swaps.pa], lam[swaps.pb], r)
    return float(np.sum(swaps.counts * np.log(probs)))


def luck_share(swaps: Swaps, z: tuple[np.ndarray, np.ndarray], lam: np.ndarray) -> float:
    """r, the deal's share of the common noise, maximising the swaps' likelihood with the rest
    held (golden-section search on [0, R_HIGH]: the likelihood is smooth and one-peaked in r)."""
    low, high = 0.0, R_HIGH
    golden = (5.0**0.5 - 1.0) / 2.0
    x1, x2 = high - golden * (high - low), low + golden * (high - low)
    f1, f2 = (_loglik(swaps, z, lam, x) for x in (x1, x2))
    for _ in range(12):  # the bracket shrinks to 3e-3 of its width
        if f1 < f2:
            low, x1, f1 = x1, x2, f2
            x2 = low + golden * (high - low)
            f2 = _loglik(swaps, z, lam, x2)
        else:
            high, x2, f2 = x2, x1, f1
            x1 = high - golden * (high - low)
            f1 = _loglik(swaps, z, lam, x1)
    return float(0.5 * (low + high))


def swap_score_info(swaps: Swaps, z: tuple[np.ndarray, np.ndarray], lam: np.ndarray, r: float, k: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each bot's score d(log-likelihood)/d lambda_i over the swaps, its expected information,
    and its score's variance over duplicate sets (the sum over sets of its set's score squared)."""
    la, lb = lam[swaps.pa], lam[swaps.pb]
    probs = _probabilities(swaps, z, la, lb, r)
    score, info = np.zeros(k), np.zeros(k)
    total = swaps.counts.sum(axis=1)
    keys, values = [], []
    for bots, shifted in ((swaps.pa, _probabilities(swaps, z, la + _STEP, lb, r)),
                          (swaps.pb, _probabilities(swaps, z, la, lb + _STEP, r))):
        dp = (shifted - probs) / _STEP
        per_outcome = dp / probs  # d log p_c / d lambda
        score += np.bincount(bots, weights=np.sum(swaps.counts * per_outcome, axis=1), minlength=k)
        info += np.bincount(bots, weights=total * np.sum(dp * dp / probs, axis=1), minlength=k)
        keys.append(swaps.row_set * k + bots[swaps.row_entry])
        values.append(np.sum(swaps.row_counts * per_outcome[swaps.row_entry], axis=1))
    key = np.concatenate(keys)
    labels, m = compact(key)
    sums = np.bincount(labels, weights=np.concatenate(values), minlength=m)
    first = np.zeros(m, dtype=np.int64)
    first[labels] = np.arange(labels.size)
    variance = np.bincount(key[first] % k, weights=sums * sums, minlength=k)
    return score, info, variance


def swap_sets(swaps: Swaps, k: int) -> np.ndarray:
    """Each bot's number of duplicate sets with a swapped pair of games."""
    keys = np.concatenate([swaps.row_set * k + swaps.pa[swaps.row_entry], swaps.row_set * k + swaps.pb[swaps.row_entry]])
    distinct = np.unique(keys)
    return np.bincount(distinct % k, minlength=k).astype(np.float64)
