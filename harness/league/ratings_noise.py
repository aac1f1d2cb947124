"""Each bot's own performance noise in the table's fit (:mod:`harness.league.ratings_fit`).

TrueSkill's model gives every player the same noise beta. A bot whose play varies more (beta_i
= beta e^lambda_i, lambda_i > 0) is then misread: P(it finishes ahead of b) = Phi(d /
sqrt(beta_i^2 + beta_b^2)) is closer to 1/2 than the common beta explains, so its skill
difference is compressed towards the mean (0.63 of the truth at twice the noise), and through
the games against it the other bots' a little (0.87): the intervals then miss the truth far more
often than 5%, which no variance can show (it is a bias).

**The fit.** Each bot gets lambda_i with a common prior N(0, omega^2), and P(a ahead of b) uses
the scale sqrt(beta_a^2 + beta_b^2) per pair. omega^2 is estimated from the field (empirical
Bayes, by moments), once the field shows a spread of noises beyond chance (the sum of
lambda^_i^2 / v_i above the 95th percentile of chi-square with one degree per bot; otherwise
every bot keeps the common beta, so an honest field is fitted as before in 95% of leagues):
each bot's one-step unshrunk estimate lambda^_i (the composite likelihood's
score over its expected information I_i, the skills held) has a sampling variance v_i = 1 / (w
I_i) (w the data's weight, as for the skills); omega^2 = max(0, mean(lambda^_i^2 - v_i)), and each
lambda_i is shrunk to lambda^_i omega^2 / (omega^2 + v_i). In a field of honest bots the
estimates scatter as their variance predicts, omega^2 is 0 or small, and every lambda_i is
shrunk to (nearly) 0: the fit is the common-beta fit. Alternating with the skills' refit,
:data:`NOISE_ROUNDS` rounds.

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

import numpy as np
from scipy.linalg import cho_solve
from scipy.special import chdtri

from .ratings_model import Hessian, Pairs, maximise, pair_terms

__all__ = ["NOISE_ROUNDS", "Noise", "entry_scale", "fit_noise", "noise_covariance"]

#: rounds of (noises, then skills) at most
NOISE_ROUNDS = 4
#: a noise multiplier is kept within e^+-LAMBDA_BOUND (0.25x to 4x beta)
LAMBDA_BOUND = math.log(4.0)
#: a bot whose lambda's sampling variance is above this (its results tell its noise within less
#: than a factor e) keeps beta and does not enter the spread: in a close field no bot's does
MAX_VARIANCE = 0.25
#: the noises are fitted only when their spread is beyond chance at this level (chi-square test)
NOISE_P = 0.05


class Noise:
    """The fitted noises: ``lam`` (each bot's log beta_i / beta, shrunk), ``omega2`` (their
    prior's variance), ``info`` (each bot's expected information about its lambda),
    ``weight`` (the data's weight)."""

    def __init__(self, lam: np.ndarray, omega2: float, info: np.ndarray, weight: float) -> None:
        self.lam, self.omega2, self.info, self.weight = lam, omega2, info, weight

    def posterior_variance(self) -> np.ndarray:
        """V_i = 1 / (w I_i + 1 / omega^2) for a bot whose noise was fitted above beta, 0 for a
        bot kept at beta (the floor) and wherever omega^2 is 0."""
        if self.omega2 <= 0:
            return np.zeros_like(self.lam)
        return np.where(self.lam > 0, 1.0 / (self.weight * self.info + 1.0 / self.omega2), 0.0)


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


def fit_noise(pairs: Pairs, hessian: Hessian, skills: np.ndarray, seat: np.ndarray, mu: float, precision: float,
              scale: float, weight: float, iterations: int, seat_precision: float | None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Noise] | None:
    """The skills, seat effects, each entry's -d2/dx2 and the noises of the module's text,
    from the common-beta fit (``skills``, ``seat``); None when the field shows no spread of
    noises (omega^2 = 0 in the first round: the common-beta fit stands)."""
    k = skills.size
    lam = np.zeros(k)
    noise: Noise | None = None
    second = np.empty(0)
    for _ in range(NOISE_ROUNDS):
        grad, info = _score_info(pairs, skills, seat, lam, scale, k)
        var = 1.0 / (weight * np.maximum(info, 1e-300))
        usable = var < MAX_VARIANCE
        if usable.sum() < 3:
            return None
        raw = np.where(usable, lam + grad / np.maximum(info, 1e-300), 0.0)
        if noise is None and float(np.sum(raw[usable] ** 2 / var[usable])) <= chdtri(int(usable.sum()), NOISE_P):
            return None  # no spread of noises beyond chance: the common beta stands
        omega2 = _spread(raw[usable], var[usable])
        if omega2 <= 0.0:
            if noise is None:
                return None
            lam = np.zeros(k)
        else:  # only ever noisier than beta: the config's beta is every bot's floor
            lam = np.clip(np.where(usable, raw * omega2 / (omega2 + var), 0.0), 0.0, LAMBDA_BOUND)
        skills, seat, second = maximise(pairs, hessian, skills, seat, mu, precision, entry_scale(pairs, lam, scale),
                                        iterations, seat_precision=seat_precision, tolerance=1e-3)
        noise = Noise(lam, omega2, info, weight)
        if omega2 <= 0.0:
            break
    assert noise is not None
    _, noise.info = _score_info(pairs, skills, seat, noise.lam, scale, k)
    return skills, seat, second, noise


def noise_covariance(pairs: Pairs, skills: np.ndarray, seat: np.ndarray, noise: Noise, scale: float,
                     factor: tuple[np.ndarray, bool]) -> np.ndarray:
    """J diag(V) J' (module text): what the noises' uncertainty adds to the skills' covariance.
    ``factor``: the Cholesky factor of the skills' information A."""
    k = skills.size
    v = noise.posterior_variance()
    if not np.any(v > 0):
        return np.zeros((k, k))
    s, _, _, weight, dz = _slopes(pairs, skills, seat, noise.lam, scale)
    # expected cross information of mu_c and lambda_d: sum of weight * dz/dmu_c * dz/dlambda_d
    cross = np.zeros(k * k)
    for mu_of, sign in ((pairs.pa, 1.0), (pairs.pb, -1.0)):
        for lam_of, part in ((pairs.pa, dz[0]), (pairs.pb, dz[1])):
            cross += np.bincount(mu_of * k + lam_of, weights=sign * weight * part / s, minlength=k * k)
    jacobian = -cho_solve(factor, cross.reshape(k, k))
    return np.asarray((jacobian * v) @ jacobian.T)
