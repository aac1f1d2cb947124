"""Each bot's own performance noise in the table's fit (:mod:`harness.league.ratings_fit`).

TrueSkill's model gives every player the same noise beta. A bot whose play varies more (beta_i
= beta e^lambda_i, lambda_i > 0) is then misread: P(it finishes ahead of b) = Phi(d /
sqrt(beta_i^2 + beta_b^2)) is closer to 1/2 than the common beta explains, so its skill
difference is compressed towards the mean (0.63 of the truth at twice the noise), and through
the games against it the other bots' a little (0.87): the intervals then miss the truth far more
often than 5%, which no variance can show (it is a bias).

**The fit.** Each bot gets lambda_i with a common prior N(0, omega^2), and P(a ahead of b) uses
the scale sqrt(beta_a^2 + beta_b^2) per pair. omega^2 is estimated from the field (empirical
Bayes, by moments), once the field shows a spread of noises beyond chance (the test below;
otherwise every bot keeps the common beta, so an honest field is fitted as before in at least
95% of leagues): each bot's one-step unshrunk estimate lambda^_i (the composite likelihood's
score over its expected information I_i, the skills held) has a sampling variance v_i = 1 / (w
I_i) (w the data's weight, as for the skills); omega^2 = max(0, mean(lambda^_i^2 - v_i)), and each
lambda_i is shrunk to lambda^_i omega^2 / (omega^2 + v_i). In a field of honest bots the
estimates scatter as their variance predicts, omega^2 is 0 or small, and every lambda_i is
shrunk to (nearly) 0: the fit is the common-beta fit. Alternating with the skills' refit,
:data:`NOISE_ROUNDS` rounds.

**Three readings, and a bot that stands out.** lambda^_i is read from the slope with the
*efficient* information (its skill free to move with its noise; with the skills held at the
common-beta fit a noisy bot's compressed skill explains most of its results, and the slope
claimed a standard error of 0.12 where the truth was 0.69 away); where its sets were played in
every seat order, from the correlation of its swapped games (:mod:`harness.league.ratings_swaps`);
at tables of three or more, from the orders of three players in one game
(:mod:`harness.league.ratings_triples`: a noisy bot lands at the ends more often), the three
weighed by their precisions. The last two tell the noises only relative to each other: each
bot's is read against the median of the others' (:func:`~harness.league.ratings_triples.
others_median`), with that median's variance added to its own.

**The test.** Its statistics are the largest z_i = lambda^_i / sqrt(v_i) (one noisy bot among
honest ones) and the sum of the positive z_i's squares (a spread over many bots; only noisier
than beta counts, beta being the floor), each against its 97.5th percentile under the model
(:data:`NOISE_P` in all), drawn (:func:`null_draws`) as the readings are made: each reading's
estimates from their variances under the model, the others' median taken away, weighed with the
slope's. The z are neither independent nor N(0, 1) (the median taken away, and v_i the larger of
the model's and the variance over sets): Bonferroni's bound and the chi-square read as if they
were fired in 7-16.5% of honest leagues, or 0-1.5% with the median's variance added, where this
fires in 0-3% (bench/ratings_cells). A bot whose own z is beyond the largest's bound keeps its
estimate unshrunk (shrunk towards a field's spread that one bot makes small, it stayed
compressed), with its sampling variance as its noise's uncertainty.

**What it does to the interval.** lambda_i is weakly measured (it is told by how steeply the
bot's results follow its opponents' skills: at 4 bots spread beta/2 with 64 sets its
standard error is about 0.4, against log 2 = 0.69 for twice the noise), so its uncertainty
goes into the skills': with J = d mu^ / d lambda = -A^-1 C (A the skills' information, C the
expected cross information of skills and noises), the covariance gains J diag(V) J', V_i =
1 / (w I_i + 1 / omega^2) the posterior variance of lambda_i. A bot with an estimated noise
has its interval widened by its own noise's uncertainty (and the others a little: its noise
moves every mu relative to the mean); a bot kept at the common beta adds nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .ratings_model import Hessian, Pairs, maximise, pair_terms
from .ratings_swaps import Swaps, luck_share, margins, swap_score_info, swap_sets
from .ratings_triples import Triples, median_contrast_variance, others_median, triple_reading

__all__ = ["NOISE_ROUNDS", "Noise", "entry_scale", "fit_noise", "noise_covariance"]

#: rounds of (noises, then skills) at most
NOISE_ROUNDS = 4
#: a noise multiplier is kept within e^+-LAMBDA_BOUND (0.25x to 4x beta)
LAMBDA_BOUND = math.log(4.0)
#: a bot whose lambda's sampling variance is above this (its results tell its noise within less
#: than a factor e) keeps beta and does not enter the spread: in a close field no bot's does
MAX_VARIANCE = 0.25
#: rounds of (the deal's share, each bot's unshrunk noise) before the noises are tested
LUCK_ROUNDS = 2
#: each bot's information about its noise allows for its skill's moving with it up to this many bots
EFFICIENT_BOTS = 1500
#: the swapped games are read in a league with at most this many swap entries (pairs of bots and
#: their seat positions): the reading is ~30 passes over them with a bivariate normal each (0.1 s
#: at this size), and a league past it has many bots, each met by opponents spread enough for
#: the slope (at 1,000 bots and 100,000 games it tripled the fit's time)
SWAP_MAX_ENTRIES = 20_000
#: a bot's swapped games are read when they come from at least this many duplicate sets
SWAP_MIN_SETS = 8
#: the noises are fitted only when their spread is beyond chance at this level (chi-square test)
NOISE_P = 0.05
#: draws of the test's null distribution (:func:`null_draws`): its 97.5th percentiles to ~0.003
NULL_DRAWS = 4000
NULL_SEED = 20261126


class Noise:
    """The fitted noises: ``lam`` (each bot's log beta_i / beta, shrunk), ``omega2`` (their
    prior's variance), ``var`` (each bot's lambda's sampling variance), ``luck`` (the deal's
    share of the common noise read from the swapped games, when there were any)."""

    def __init__(self, lam: np.ndarray, omega2: float, var: np.ndarray, luck: float | None = None,
                 standout: np.ndarray | None = None) -> None:
        self.lam, self.omega2, self.var, self.luck = lam, omega2, var, luck
        self.standout = np.zeros(lam.size, dtype=bool) if standout is None else standout

    def posterior_variance(self) -> np.ndarray:
        """V_i = 1 / (1 / v_i + 1 / omega^2) for a bot whose noise was fitted above beta and shrunk,
        v_i for one kept unshrunk (its own estimate beyond chance), 0 for a bot kept at beta (the
        floor)."""
        var = np.maximum(self.var, 1e-300)
        shrunk = 1.0 / (1.0 / var + 1.0 / self.omega2) if self.omega2 > 0 else np.zeros_like(self.lam)
        return np.where(self.lam > 0, np.where(self.standout, var, shrunk), 0.0)


def entry_scale(pairs: Pairs, lam: np.ndarray, scale: float) -> np.ndarray:
    """Each entry's sqrt(beta_a^2 + beta_b^2), ``scale`` = sqrt(2) beta at lambda = 0."""
    scales: np.ndarray = scale * np.sqrt(0.5 * (np.exp(2 * lam[pairs.pa]) + np.exp(2 * lam[pairs.pb])))
    return scales


def _slopes(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, lam: np.ndarray, scale: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per entry: the scale s, z, the score d/dx of the entry's total, each entry's expected
    information weight count * phi^2 / (Phi(z) Phi(-z)), and (dz/dlambda_a, dz/dlambda_b)
    stacked."""
    s = entry_scale(pairs, lam, scale)
    z = (skills[pairs.pa] - skills[pairs.pb] + seat[pairs.sa] - seat[pairs.sb]) / s
    _, up, down, first = pair_terms(pairs, skills, seat, s, 1)
    beta2 = 0.5 * scale**2
    dz = np.stack([-z * beta2 * np.exp(2 * lam[pairs.pa]) / s**2, -z * beta2 * np.exp(2 * lam[pairs.pb]) / s**2])
    return s, z, first, pairs.count * up * down, dz


def _score_info(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, lam: np.ndarray, scale: float, k: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Each bot's score d(log-likelihood)/d lambda_i and expected information, the skills held."""
    s, _, first, weight, dz = _slopes(pairs, skills, seat, lam, scale)
    # d loglik / dz = first * s (first is d/dx, x = z s)
    grad = (np.bincount(pairs.pa, weights=first * s * dz[0], minlength=k)
            + np.bincount(pairs.pb, weights=first * s * dz[1], minlength=k))
    info = (np.bincount(pairs.pa, weights=weight * dz[0] ** 2, minlength=k)
            + np.bincount(pairs.pb, weights=weight * dz[1] ** 2, minlength=k))
    return grad, info


def _spread(raw: np.ndarray, var: np.ndarray) -> float:
    """omega^2, the maximum of the marginal likelihood of raw_i ~ N(0, omega^2 + var_i): the
    fixed point of omega^2 = sum w_i^2 (raw_i^2 - var_i) / sum w_i^2, w_i = 1 / (omega^2 +
    var_i), so that a bot whose noise is barely measured weighs little (the plain mean of raw^2
    - var let one such bot set the spread)."""
    omega2 = max(0.0, float(np.mean(raw**2 - var)))
    for _ in range(50):
        w2 = 1.0 / (omega2 + var) ** 2
        new = max(0.0, float(np.sum(w2 * (raw**2 - var)) / np.sum(w2)))
        if abs(new - omega2) < 1e-6 * max(omega2, 1e-6):
            return new
        omega2 = new
    return omega2


def swap_reading(swaps: Swaps, skills: np.ndarray, seat: np.ndarray, scale: float, fitted: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray, np.ndarray]:
    """From the swapped games at the fit (``skills``, ``seat``, fitted with the noises ``fitted``,
    default the common beta): each bot's unshrunk lambda^_i, its sampling
    variance (over its sets with the CR1 factor G / (G - 1), at least the inverse information),
    whether it is read (at least :data:`SWAP_MIN_SETS` sets with a swap, an estimate inside the
    bounds), and the deal's share of the noise; :data:`LUCK_ROUNDS` rounds of (the share, then
    each bot's Fisher step). Both are read together: read at the common beta, a noisy bot's
    less correlated games would pull the share down and make the others look steadier than
    beta, and one step from 0 falls short of a large lambda. Also each bot's own variance before
    the median is taken away under the model (the inverse information: what the test's null
    distribution is drawn from), and whether it was measured."""
    k = skills.size
    z = margins(swaps, skills, seat, np.zeros(k) if fitted is None else fitted, scale)
    lam = np.zeros(k)
    luck = 0.0
    grad = info = variance = np.zeros(k)
    for _ in range(LUCK_ROUNDS):
        luck = luck_share(swaps, z, lam)
        grad, info, variance = swap_score_info(swaps, z, lam, luck, k)
        lam = np.clip(lam + np.where(info > 1e-9, grad / np.maximum(info, 1e-300), 0.0), -LAMBDA_BOUND, LAMBDA_BOUND)
        # the correlations tell each bot's noise only relative to the others' (the deal's share
        # and every noise scaled together give the same): the median bot is the common beta
        lam = lam - float(np.median(lam[info > 1e-9])) if np.any(info > 1e-9) else lam
    sets = swap_sets(swaps, k)
    measured = info > 1e-9
    safe = np.where(measured, info, 1.0)
    cr1 = sets / np.maximum(sets - 1.0, 1.0)
    read = measured & (sets >= SWAP_MIN_SETS) & (np.abs(lam) < LAMBDA_BOUND - 1e-9)
    # each bot's read against the others' median, its variance with the median's added
    lam = lam - others_median(lam, measured)
    own = np.where(measured, np.maximum(variance * cr1 / safe**2, 1.0 / safe), 0.0)
    var = median_contrast_variance(own, measured)
    return lam, np.where(measured, var, np.inf), read, luck, np.where(measured, 1.0 / safe, 0.0), measured


@dataclass
class Reading:
    """The readings of each bot's noise beyond the slope, combined: ``raw`` (lambda^), ``var`` its
    variance, ``read`` (some reading has it), ``luck`` (the deal's share, from the swaps); and
    per reading (``parts``) each bot's variance under the model (every bot at beta) before the
    median was taken away, whether it
    was measured (in the median), whether it is read and its variance after: what the test's
    null distribution is drawn from (:func:`null_draws`)."""

    raw: np.ndarray
    var: np.ndarray
    read: np.ndarray
    luck: float | None
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]


def readings(swaps: Swaps | None, triples: Triples | None, skills: np.ndarray, seat: np.ndarray, scale: float
             ) -> Reading | None:
    """The swapped games' reading (:func:`swap_reading`) and the triples'
    (:func:`~harness.league.ratings_triples.triple_reading`) at the common-beta fit, weighed by
    their precisions where a bot has both (two nearly independent readings: a correlation between
    the games of a set, and one within a game)."""
    swap = None if swaps is None or swaps.pa.size > SWAP_MAX_ENTRIES else swap_reading(swaps, skills, seat, scale)
    triple = None if triples is None else triple_reading(triples, skills, seat, scale / math.sqrt(2.0), LAMBDA_BOUND)
    parts = ([] if swap is None else [(swap[0], swap[1], swap[2], swap[4], swap[5])]) + \
        ([] if triple is None else [triple])
    if not parts:
        return None
    k = skills.size
    precision, weighted = np.zeros(k), np.zeros(k)
    for lam, var, read, _, _ in parts:
        ok = read & (var > 0) & np.isfinite(var)
        precision += np.where(ok, 1.0 / np.where(ok, var, 1.0), 0.0)
        weighted += np.where(ok, lam / np.where(ok, var, 1.0), 0.0)
    safe = np.where(precision > 0, precision, 1.0)
    return Reading(weighted / safe, np.where(precision > 0, 1.0 / safe, np.inf), precision > 0,
                   None if swap is None else swap[3],
                   [(own, measured, read & (var > 0) & np.isfinite(var), var) for _, var, read, own, measured in parts])


def _estimates(pairs: Pairs, hessian: Hessian, reading: Reading | None,
               skills: np.ndarray, seat: np.ndarray, lam: np.ndarray, scale: float, weight: float, precision: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each bot's unshrunk lambda^_i and its sampling variance v_i: one step from ``lam`` along
    the slope of its results (variance 1 / (w I_i)), weighed with its other readings
    (:func:`readings`) where it has them: nearly independent readings (the slope is the
    marginals', the swaps' a correlation between games given the marginals, the triples' one
    within a game). Also the slope's own variance."""
    k = skills.size
    grad, info = _score_info(pairs, skills, seat, lam, scale, k)
    info = _efficient_info(pairs, hessian, skills, seat, lam, scale, precision, info)
    raw = lam + grad / np.maximum(info, 1e-300)
    var = 1.0 / (weight * np.maximum(info, 1e-300))
    if reading is None:
        return raw, var, var
    s_raw, s_var, read = reading.raw, np.where(reading.read, reading.var, 1.0), reading.read
    both = 1.0 / var + np.where(read, 1.0 / s_var, 0.0)
    return (raw / var + np.where(read, s_raw / s_var, 0.0)) / both, 1.0 / both, var


def null_draws(reading: Reading | None, slope_var: np.ndarray, var: np.ndarray, usable: np.ndarray
               ) -> np.ndarray:
    """:data:`NULL_DRAWS` draws of the usable bots' z = lambda^ / sqrt(v) when every bot plays at
    beta: each reading's estimates drawn from their variances under that model (v itself is the
    larger of that and the variance over sets, so the z are narrower than N(0, 1)), each bot's
    others' median taken away (as the readings do), weighed with the slope's as the estimates
    are (a fixed seed: the same games give the same fit); without a reading, independent
    normals (the module's text says why the test needs them)."""
    rng = np.random.default_rng(NULL_SEED)
    k = var.size
    total = rng.normal(size=(NULL_DRAWS, k)) / np.sqrt(slope_var)
    for own, measured, read, part_var in ([] if reading is None else reading.parts):
        drawn = rng.normal(size=(NULL_DRAWS, k)) * np.sqrt(np.where(measured, own, 0.0))
        drawn = drawn - others_median(drawn, measured)
        total += np.where(read, drawn / np.where(read, part_var, 1.0), 0.0)
    z: np.ndarray = (total * np.sqrt(var))[:, usable]
    return z


def _bounds(null: np.ndarray, n: int) -> tuple[float, float]:
    """The bounds on the largest z and on the sum of the positive z's squares, each at half of
    :data:`NOISE_P`, from the null's draws."""
    return (float(np.quantile(null.max(axis=1), 1 - NOISE_P / 2)),
            float(np.quantile(np.sum(np.maximum(null, 0.0) ** 2, axis=1), 1 - NOISE_P / 2)))


def _beyond_chance(raw: np.ndarray, var: np.ndarray, bounds: tuple[float, float]) -> bool:
    """Whether the bots' noises spread beyond chance, at :data:`NOISE_P` in all: the sum of the
    positive z's squares (a spread over many bots; only noisier than beta, which is the floor: a
    bot read steadier than beta is never fitted so, and counted both ways, such bots made the
    test fire in 18 of 188 honest close fields) or the largest z (one bot noisier than the rest:
    the sum's many terms dilute it), each against its bound (:func:`_bounds`) at half the level."""
    z = raw / np.sqrt(var)
    return bool(float(np.max(z)) > bounds[0] or float(np.sum(np.maximum(z, 0.0) ** 2)) > bounds[1])


def fit_noise(pairs: Pairs, hessian: Hessian, skills: np.ndarray, seat: np.ndarray, mu: float, precision: float,
              scale: float, weight: float, iterations: int, seat_precision: float | None, swaps: Swaps | None = None,
              triples: Triples | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, Noise] | None:
    """The skills, seat effects, each entry's -d2/dx2 and the noises of the module's text,
    from the common-beta fit (``skills``, ``seat``); None when the field shows no spread of
    noises (omega^2 = 0 in the first round: the common-beta fit stands). ``swaps``: the
    league's swapped games, when its sets were played in every seat order; ``triples``: its games'
    orders of three (tables of three or more)."""
    k = skills.size
    lam = np.zeros(k)
    noise: Noise | None = None
    second = np.empty(0)
    reading = readings(swaps, triples, skills, seat, scale)
    luck = None if reading is None else reading.luck
    for _ in range(NOISE_ROUNDS):
        raw, var, slope_var = _estimates(pairs, hessian, reading, skills, seat, lam, scale, weight, precision)
        usable = var < MAX_VARIANCE
        if usable.sum() < 3:
            return None
        raw = np.where(usable, raw, 0.0)
        bounds = _bounds(null_draws(reading, slope_var, var, usable), int(usable.sum()))
        if noise is None and not _beyond_chance(raw[usable], var[usable], bounds):
            return None  # no spread of noises beyond chance: the common beta stands
        omega2 = _spread(raw[usable], var[usable])
        # a bot whose own estimate is beyond chance (the bound on the largest z, the test's) keeps it
        # unshrunk: one noisy bot among honest ones makes the field's spread small, and shrunk
        # towards it the bot would stay compressed; the others are shrunk as the module says
        standout = usable & (raw / np.sqrt(var) > bounds[0])
        if omega2 <= 0.0 and not standout.any():
            if noise is None:
                return None
            lam = np.zeros(k)
        else:  # only ever noisier than beta: the config's beta is every bot's floor
            shrunk = raw * omega2 / (omega2 + var) if omega2 > 0 else np.zeros(k)
            lam = np.clip(np.where(standout, raw, np.where(usable, shrunk, 0.0)), 0.0, LAMBDA_BOUND)
        skills, seat, second = maximise(pairs, hessian, skills, seat, mu, precision, entry_scale(pairs, lam, scale),
                                        iterations, seat_precision=seat_precision, tolerance=1e-3)
        noise = Noise(lam, omega2, var, luck, standout)
        if not np.any(lam > 0):
            break
    assert noise is not None
    _, noise.var, _ = _estimates(pairs, hessian, reading, skills, seat, noise.lam, scale, weight, precision)
    return skills, seat, second, noise


def _cross(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, lam: np.ndarray, scale: float) -> np.ndarray:
    """The expected cross information of the skills and the noises, (k x k): mu_c by lambda_d,
    the sum of weight * dz/dmu_c * dz/dlambda_d over the entries."""
    k = skills.size
    s, _, _, weight, dz = _slopes(pairs, skills, seat, lam, scale)
    cross = np.zeros(k * k)
    for mu_of, sign in ((pairs.pa, 1.0), (pairs.pb, -1.0)):
        for lam_of, part in ((pairs.pa, dz[0]), (pairs.pb, dz[1])):
            cross += np.bincount(mu_of * k + lam_of, weights=sign * weight * part / s, minlength=k * k)
    return cross.reshape(k, k)


def _efficient_info(pairs: Pairs, hessian: Hessian, skills: np.ndarray, seat: np.ndarray, lam: np.ndarray,
                    scale: float, precision: float, info: np.ndarray) -> np.ndarray:
    """Each bot's information about its lambda once its skill is free to move with it, I_i -
    c_i' A^-1 c_i (c the cross information, A the skills' posterior information): a noisier bot
    reads, skills held, as one whose skill is closer to the others', so its results' slope with
    the skills held at the common-beta fit says less than I_i (and one step from 0 falls
    short). Only up to :data:`EFFICIENT_BOTS` bots (a dense factorisation); past that I_i."""
    k = skills.size
    if k > EFFICIENT_BOTS:
        return info
    _, _, _, both = pair_terms(pairs, skills, seat, entry_scale(pairs, lam, scale), 2)
    cross = _cross(pairs, skills, seat, lam, scale)
    solved = cho_solve(cho_factor(hessian.at(both[1], precision).toarray()), cross)
    efficient: np.ndarray = np.maximum(info - np.einsum("ij,ij->j", cross, solved), 0.05 * info)
    return efficient


def noise_covariance(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, noise: Noise, scale: float,
                     factor: tuple[np.ndarray, bool]) -> np.ndarray:
    """J diag(V) J' (module text): what the noises' uncertainty adds to the skills' covariance.
    ``factor``: the Cholesky factor of the skills' information A."""
    k = skills.size
    v = noise.posterior_variance()
    if not np.any(v > 0):
        return np.zeros((k, k))
    jacobian = -cho_solve(factor, _cross(pairs, skills, seat, noise.lam, scale))
    return np.asarray((jacobian * v) @ jacobian.T)
