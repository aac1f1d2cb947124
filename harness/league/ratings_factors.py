"""Each bot's small-sample factor on its sigma, from its own duplicate sets, for the table's fit
(:mod:`harness.league.ratings_fit`, whose text says why)."""

from __future__ import annotations

import numpy as np
from scipy.special import stdtrit

__all__ = ["bot_factors", "shrunk_degrees", "small_sample_factor"]


def small_sample_factor(sets: int) -> float:
    """How much wider than the normal's a 95% interval from ``sets`` clusters must be: Student's
    t with sets - 1 degrees of freedom over 1.96 (the usual small-sample rule for a
    cluster-robust variance: 1.62 at 4 sets, 1.03 at 40, 1.003 at 400). The fit itself uses
    :func:`bot_factors`, from each bot's own sets."""
    if sets < 2:
        return 1.0
    return float(stdtrit(sets - 1, 0.975) / 1.959963984540054)


def bot_factors(sets_per_bot: np.ndarray, degrees: np.ndarray | None = None) -> np.ndarray:
    """Each bot's small-sample factor on its sigma, from its own sets G: sqrt(G / (G - 1)) (the
    cluster-robust variance's usual CR1 correction) times Student's t over 1.96, with G - 1
    degrees of freedom (1.22 at 10 sets, 1.05 at 40) or ``degrees`` where more (the fit's:
    :func:`shrunk_degrees`); a bot in a single set gets the factor of two (9.2 with G - 1: one
    set cannot measure the variance between sets), so fewer sets never narrow."""
    g = np.maximum(np.asarray(sets_per_bot, dtype=np.float64), 2.0)
    df = g - 1.0 if degrees is None else np.maximum(degrees, g - 1.0)
    factors: np.ndarray = np.sqrt(g / (g - 1.0)) * stdtrit(df, 0.975) / 1.959963984540054
    return factors


def shrunk_degrees(sets_per_bot: np.ndarray, sets: int, prior_sets: float = 4.0) -> np.ndarray:
    """Each bot's degrees of freedom for its small-sample t: those of its variance as the fit
    reads it, its own sets' estimate (G_i - 1 degrees of freedom) shrunk towards the field's
    with the weight of ``prior_sets`` sets (a_i = G_i / (G_i + prior_sets) on its own), by
    Satterthwaite's rule: 1 / (a_i^2 / (G_i - 1) + (1 - a_i^2) / F). F, the field's degrees of
    freedom, is the sum over bots of their sets less the number of sets and the bots' number
    less one (a set of n bots gives n - 1 independent scores; the skills' fit takes k - 1); the
    field's estimate pools the bots' own, the bot's among them, so its covariance with the bot's
    own is its own variance (the 1 - a_i^2). With two bots the field's estimate is the bot's own
    and this gives G_i - 1; a bot in fewer than two sets keeps G_i - 1."""
    g = np.asarray(sets_per_bot, dtype=np.float64)
    own = np.maximum(g - 1.0, 1.0)
    if prior_sets <= 0:
        return own
    field = np.maximum(float(g.sum()) - sets - (g.size - 1), own)
    a = g / (g + prior_sets)
    degrees: np.ndarray = np.where(g >= 2, 1.0 / (a**2 / own + (1.0 - a**2) / field), own)
    return degrees
