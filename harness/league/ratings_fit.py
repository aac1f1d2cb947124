"""The table's fit: TrueSkill's model fitted to all games at once, intervals that hold when
games come in duplicate sets, and P(>next) from the same fit. Entry point: :func:`fit_table`.

**The model** is TrueSkill's with a seat effect: each bot version has a skill mu; in a game
each player performs at its skill plus its seat position's effect g (one per seat per table
size, summing to 0) plus N(0, beta^2) noise, and the ranking orders the performances. Under
it, for any two players at a table, whatever the other seats, P(a finishes ahead of b) =
Phi((mu_a + g_a - mu_b - g_b) / (sqrt(2) beta)) exactly. The likelihood used is the
**pairwise composite likelihood** of the whole ranking: the product of that probability over
*every* pair of seats of every game (3 pairs at 3 seats, 6 at 4; a shared place counts half
each way). Its estimating equations are exactly unbiased under the model (each factor is a
true marginal); the dependence between the pairs of one game, and between the games of one
duplicate set, is what the sandwich variance accounts for (composite likelihood with Godambe's
information: Lindsay 1988; Varin, Reid and Firth 2011). The full Gaussian rank likelihood
needs an orthant probability per game and was not affordable at 1,000,000 games. Rejected,
measured (bench/ratings.py): the comparisons of adjacent places (not marginals of the model:
coverage 31% at 1,536 3-seat games); Plackett-Luce (no fixed conversion to TrueSkill's scale,
coverage 76-82% at 1,536 games with 3 and 4 seats). The machinery (aggregation, Newton steps,
per-set scores) is in :mod:`harness.league.ratings_model`.

**What mu is relative to.** The skills have a common prior N(mu0, tau^2) (mu0 the league's
``rating.mu``); the results measure only differences, so the mean of the table's bots' mu is
mu0 exactly, and mu - mu0 is a bot's skill relative to the mean of the bots in this table.
The interval is about that relative skill (the covariance is taken relative to the mean).

**The prior's spread tau is estimated from the field** (empirical Bayes), not fixed at the
config's sigma: a fixed N(25, (25/3)^2) shrank the extremes of a widely spread field (coverage
83-89%) and, in a close field, let adjacent differences look surer than they were (P(>next)
0.747 claimed, 0.701 observed). tau maximises the Laplace approximation of the marginal
likelihood, by EM: tau^2 <- mean over bots of (mu_i - mu0)^2 + Var(mu_i | results), each step a
refit from the last (stops at a change under 1%; at most :data:`EM_STEPS`). Bounded to [beta /
10, 3 sigma]: below beta / 10 no league the harness runs can tell bots apart anyway, and the
bound keeps Newton's steps well conditioned when every game was level; above 3 sigma the prior
no longer matters, and a field where one bot won everything would otherwise drive tau up
without end. Alternatives considered: the method of moments (var of unshrunk estimates minus
their mean sampling variance) needs the unshrunk fit, infinite for a bot that always won; a
fixed config value cannot fit both the close and the wide fields the cells measure.

**The data's weight against the prior.** A composite likelihood is not the data's likelihood:
with duplicate sets its curvature H understates the information (the deal's luck cancels
within a set; the sets' score variance M is smaller than H), without them it overstates it.
Weighed against a prior as it is, it shrinks mu towards mu0 too much (or too little). The
log-likelihood is therefore weighted by w = tr(H) / tr(M) (the magnitude adjustment of Pauli,
Ribatet and Varin 2011; bounded to [0.2, 5]), i.e. the prior's precision is divided by w. The
maximum without a prior does not depend on w. That w is the field's; each bot's own is the
field's dependence carried to its own results' margins (:mod:`harness.league.ratings_local`:
a one-sided record's results hardly depend within a set, and its weight is nearly 1).

**The intervals.** The covariance is the cluster-robust sandwich with the duplicate sets as
clusters, A^-1 (M + P/w) A^-1 with A = H + P/w, P the prior's precision, M the sum over sets of
the outer product of each set's score: it holds whatever the dependence within a set, needs no
refit, and a direction no game measures keeps the prior's width. **Small-sample factor per
bot**: a bot's variance rests on its own sets G_i, not on all sets: its sigma is scaled by
:func:`bot_factors` (sqrt(G_i / (G_i - 1)) times Student's t over 1.96, the t's degrees of
freedom those of the bot's variance shrunk towards the field's, below: at least G_i - 1), the
covariance by that factor on each side; a single set in the whole league keeps the model's own
(Laplace) covariance.

**A bot's own variance, shrunk.** The sandwich reads each bot's variance from its own sets'
scores, and where its results hardly varied (a bot that won nearly every set, at the ends of a
sparse field) those scores are all small and alike: its variance reads smaller than the field's
(its dispersion, below, well under 1) exactly where the table claims most. Each bot's
dispersion d_i is therefore shrunk towards the field's 1 with the weight of
:data:`DISPERSION_PRIOR_SETS` sets, (G_i d_i + 4) / (G_i + 4), and its sigma scaled up by the
square root of that over d_i when it is larger (never down: a noisy bot is the check's, below).
At 100 bots with about 10 two-seat sets each, P(>next) claimed 0.741 where 0.638 happened
without it (174 pairs), 0.740 -> 0.703 with it (158 pairs).

**The t's degrees of freedom are the shrunk variance's** (:func:`shrunk_degrees`). The variance
the interval uses is a_i v_i + (1 - a_i) v_f, a_i = G_i / (G_i + 4): the bot's own estimate
v_i (G_i - 1 degrees of freedom) and the field's v_f (F = sum of the bots' sets - sets - (k -
1): a set of n bots gives n - 1 free scores, the skills' fit takes k - 1). The field's pools
the bots' own, the bot's among them, so Cov(v_i, v_f) = Var(v_f) (as for any average and one of
its parts), and Satterthwaite's rule (the variance of the combination matched to a scaled
chi-square's) gives 1 / (a_i^2 / (G_i - 1) + (1 - a_i^2) / F). The t with G_i - 1 alone
ignored the field's part: 4 bots in the same 4 sets of 4 seats got sqrt(4/3) t(3) / 1.96 = 1.87
and covered 98.1-98.7%; with 6 degrees of freedom, 1.44, 95.8-96.1% (1,000 leagues,
bench/ratings.py part 5). With two bots the field's estimate is the bot's own, and this gives
G_i - 1; where the variance is the bot's own (its dispersion above the field's, kept unshrunk)
it is at least as wide as the shrunk variance's interval with these degrees of freedom. A bot
in fewer than two sets keeps the two-set factor.

**The spread's own uncertainty.** The spread tau is estimated, from k bots; plugged in as if
known, a tau estimated too small shrinks every bot to the mean with a small sigma. The
covariance gains g g' Var(tau^2) (Kass and Steffey's first-order correction, g = d mu^ /
d tau^2; :func:`harness.league.ratings_local.spread_uncertainty`).

**The consistency check.** Under the model each bot's score variance over its sets, relative
to its information, is the field's (their ratio M_ii / H_ii over tr M / tr H is its
*dispersion*, about chi2(G_i - 1) / (G_i - 1)). A bot whose dispersion is above that
distribution's 99.9th percentile (one bot in a thousand by chance) is flagged: its results are
noisier than the model allows (a bot whose play varies from game to game more than the others':
its luck does not cancel within a set). An honest bot's expected dispersion is not exactly the
field's: the deal's luck ties a set's games together less for a bot far from its opponents, so
the ends of a field read up to ~1.3x noisier, enough in a long league to flag honest bots (2.5%
of them at two seats and 12% at three, 1,536 sets a bot). A bot the field's check would flag is
therefore held to what an honest bot in its place shows, its own sets replayed under the fit
(:mod:`harness.league.ratings_dispersion`, where the swapped games give the deal's share of the
noise); its dispersion is then relative to that. Its mu is then compressed towards the mean (the model
reads its noisy results as a smaller skill difference), which its variance does not show, so its
sigma is widened by sqrt(dispersion) on top of its small-sample factor; ``TableFit.noisy`` and
``TableFit.widened`` name it, and the table says so.

**Each bot's own noise.** When the field shows a spread of performance noises beyond chance,
each bot gets its own noise beta_i (shrunk towards beta by an empirical-Bayes prior on log
beta_i, unless its own estimate stands out beyond chance), the pairs' scale is sqrt(beta_a^2 +
beta_b^2), and the uncertainty of the noises goes into the skills' covariance
(:mod:`harness.league.ratings_noise`); otherwise every bot keeps beta. A noise is read from the
slope of the bot's results and, where its sets were played in every seat order, from the
correlation of its swapped games (:mod:`harness.league.ratings_swaps`) and, at tables of three or
more, from the orders of three players in one game (:mod:`harness.league.ratings_triples`).
``TableFit.noise`` holds each bot's beta_i / beta when it was fitted.

**P(>next)** is the fit's probability that a bot's skill exceeds the next one's, Phi(d / sd)
with d the difference of their mu and sd from the same covariance; the order is by mu, so no
adjacent pair shows less than 0.5. Where either bot's record is one-sided (its results alone
have no maximum), d is moved by what the exact posterior along the two says beyond the normal
(``TableFit.shifts``, :func:`harness.league.ratings_local.exact_shift`; just under 0.5 shows 0.5).

**The plain fit** (``plain=True``: the config's prior, no seat effect, weight 1) is what the
rating history computes on every prefix (:func:`fit_skills`, from each pair's totals alone).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import chdtri, ndtr

from harness.league import ratings_local
from harness.league.ratings_dispersion import Expect, expectation
from harness.league.ratings_factors import bot_factors, shrunk_degrees, small_sample_factor
from harness.league.ratings_model import (
    Hessian,
    Pairs,
    Point,
    TableBatch,
    fit_skills,
    last_point,
    maximise,
    meat,
    pairs_of,
    seat_pair_scores,
    seat_positions,
    seed,
)
from harness.league.ratings_noise import SWAP_MAX_ENTRIES, Noise, entry_scale, fit_noise, noise_covariance
from harness.league.ratings_swaps import Swaps, swaps_of
from harness.league.ratings_triples import Triples, triples_of

__all__ = ["MeatAt", "Model", "TableBatch", "TableFit", "Warm", "batches_from_games", "bot_factors", "fit_arrays",
           "fit_batches", "fit_model", "fit_pairs", "fit_ratings", "fit_skills", "fit_table", "shrunk_degrees",
           "small_sample_factor", "table_fit"]

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
    prior_sd: float = 25 / 3  # the skills' spread, estimated from the field
    data_weight: float = 1.0  # the composite likelihood's weight against the prior
    seat_effects: dict[int, list[float]] = field(default_factory=dict)  # table size -> each seat's effect
    sets_of: dict[int, int] = field(default_factory=dict)  # each version's duplicate sets
    noisy: dict[int, float] = field(default_factory=dict)  # flagged version -> its dispersion
    widened: dict[int, float] = field(default_factory=dict)  # flagged version -> its sigma's whole factor
    noise: dict[int, float] = field(default_factory=dict)  # version -> its fitted noise beta_i / beta (if any differs)
    shifts: dict[tuple[int, int], float] = field(default_factory=dict)  # (a, b) -> ratings_local.exact_shift
    weights: dict[int, float] = field(default_factory=dict)  # version -> its own data weight (ratings_local)

    def interval(self, version: int) -> tuple[float, float]:
        """The 95% interval of ``version``'s mu."""
        m, s = self.mu[version], self.sigma[version]
        return m - 1.96 * s, m + 1.96 * s

    def p_better(self, a: int, b: int) -> float:
        """P(skill of a > skill of b) under the fit."""
        i, j = self.index[a], self.index[b]
        var = self.covariance[i, i] + self.covariance[j, j] - 2 * self.covariance[i, j]
        d = self.mu[a] - self.mu[b] + self.shifts.get((a, b), 0.0) - self.shifts.get((b, a), 0.0)
        if var <= 1e-18:
            return 1.0 if d > 0 else 0.0 if d < 0 else 0.5
        return float(ndtr(d / math.sqrt(var)))


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


#: the prior's spread is estimated within [beta / 10, 3 sigma] (see the module's text)
TAU_LOW, TAU_HIGH = 0.1, 3.0
#: the data's weight against the prior is kept within these (see the module's text)
WEIGHT_LOW, WEIGHT_HIGH = 0.2, 5.0
#: the EM's posterior variances exactly (a dense factorisation) up to this many bots
EXACT_TRACE_BOTS = 1500
#: EM steps of the prior's spread at most (it stops at a change under 1%)
EM_STEPS = 12
#: a bot's dispersion is shrunk towards the field's (1) with this many sets' weight before its
#: variance is read from it, upwards only (see the module's text); 0: off
DISPERSION_PRIOR_SETS = 4.0
#: a quick fit tests the noises' spread again once the pairs of seats grew by this share since
NOISE_RETEST = 0.01
#: a bot is flagged when its dispersion's chance under the model is below this (one in a thousand)
NOISY_P = 0.001


@dataclass
class Model:
    """The fit on bot indices 0..k-1, as :func:`fit_model` returns it: skills, the covariance
    relative to the mean (95% interval: mu +- 1.96 sqrt(diagonal)), the number of duplicate
    sets and each bot's, the prior's fitted spread, the data's weight against the prior, the
    seat effects per table size, each bot's dispersion and interval factor, the flagged bots."""

    skills: np.ndarray
    covariance: np.ndarray
    sets: int
    sets_per_bot: np.ndarray
    prior_sd: float
    weight: float
    seat_effects: dict[int, list[float]]
    dispersion: np.ndarray
    factor: np.ndarray
    noisy: np.ndarray
    warm: Warm | None = None  # where a later fit of more of the same games starts (fit_pairs)
    noise: np.ndarray | None = None  # each bot's fitted noise beta_i / beta (None: every bot at beta)
    shifts: dict[tuple[int, int], float] = field(default_factory=dict)  # (i, j) -> ratings_local.exact_shift
    weights: np.ndarray | None = None  # each bot's own data weight against the prior (None: the field's)
    #: a quick fit's test of the noises' spread left for later (fit_pairs' ``defer_test``): the test
    #: (True: still no noise to fit) and the pairs of seats it tests
    noise_test: tuple[Callable[[], bool], float] | None = None


def _relative_to_mean(covariance: np.ndarray) -> np.ndarray:
    """C V C with C = I - 11'/k, in O(k^2): a shift of every skill together changes no result."""
    if covariance.shape[0] < 2:
        return covariance
    row = covariance.mean(axis=1, keepdims=True)
    centred: np.ndarray = covariance - row - row.T + covariance.mean()
    return centred


def _prior_sd(skills: np.ndarray, inverse_trace: float, weight: float, mu: float, low: float, high: float) -> float:
    """One EM step of the skills' spread: the mean over bots of E[(skill - mu)^2 | results]
    under the Laplace approximation, (mu_i - mu)^2 plus its posterior variance."""
    k = skills.size
    tau2 = (float(np.sum((skills - mu) ** 2)) + inverse_trace / weight) / k
    return float(min(max(math.sqrt(tau2), low), high))


@dataclass
class Warm:
    """Where a fit starts when it is started from an earlier one (:func:`fit_pairs`), on the same
    bot indices (a bot new since starts at mu): the earlier fit's first maximum (under the
    configured prior, where the data's weight is measured) and its last (skills, seat effects)
    with its prior's spread. The earlier fit of most of the same games is near the answer:
    Newton's method needs a step or two, the prior's spread one EM step."""

    first_skills: np.ndarray
    first_seat: np.ndarray
    skills: np.ndarray
    seat: np.ndarray
    prior_sd: float
    weight: float = 1.0  # the data's weight the earlier fit measured
    quick: bool = False  # keep the earlier weight and spread unless the spread's EM step moves it 1%
    noises: bool = False  # the earlier fit fitted each bot's own noise (a quick fit then fits every step)
    #: the earlier fit under each bot's own weight: (its skills, the weights), where a quick fit starts
    local: tuple[np.ndarray, np.ndarray] | None = None
    tested: float = 0.0  # the pairs of seats when the noises' spread was last tested (a quick fit tests again at 1% more)
    #: the entries' terms at (skills, seat) (:class:`~harness.league.ratings_model.Point`): a quick fit
    #: on the same entries (a live fit's keep their index) starts there, computing only the new ones
    point: Point | None = None
    #: the same under each bot's own weight (a live fit's localised maximum starts there)
    local_point: Point | None = None


#: the sandwich's meat at (skills, seat effects, the pairs' scale: one number or one per entry):
#: (the matrix, the number of sets, each bot's sets)
MeatAt = Callable[[np.ndarray, np.ndarray, "float | np.ndarray"], tuple[np.ndarray, int, np.ndarray]]


def fit_model(batches: Sequence[TableBatch], k: int, *, mu: float = 25.0, sigma: float = 25 / 3,
              beta: float = 25 / 6, iterations: int = 30, plain: bool = False) -> Model:
    """The fit of the module's text on bot indices 0..k-1. ``plain``: the maximum under the
    configured prior alone (no seat effects, no estimated spread, the data's weight 1), what
    the rating history computes on every prefix (:func:`fit_skills`); its intervals are the same
    sandwich with each bot's own small-sample factor."""
    pairs = pairs_of(batches, k)
    swaps = None if plain else _swaps(batches, pairs)
    # the orders of three (ratings_triples); a league past the swaps' limit has many bots, each met
    # by opponents spread enough for the slope
    triples = None if plain or pairs.pa.size > 2 * SWAP_MAX_ENTRIES else triples_of(batches, k)

    def meat_at(skills: np.ndarray, seat: np.ndarray, scales: float | np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
        return meat(batches, seat_pair_scores(pairs, skills, seat, scales), k)

    return fit_pairs(pairs, k, meat_at, seat_positions(batches), mu=mu, sigma=sigma, beta=beta,
                     iterations=iterations, plain=plain, swaps=swaps, triples=triples, batches=batches)



def _swaps(batches: Sequence[TableBatch], pairs: Pairs) -> Swaps | None:
    """The swapped games of ``batches`` (:mod:`harness.league.ratings_swaps`), from each seat pair
    in :class:`Pairs`' order: its entry, its duplicate set, a's result."""
    if not batches or pairs.which.size == 0 or pairs.pa.size > 2 * SWAP_MAX_ENTRIES:
        return None  # (at most half the entries are swap entries: past the reading's limit, not built)
    sets = np.concatenate([batch.sets for batch in batches for i in range(batch.versions.shape[1])
                           for _ in range(i + 1, batch.versions.shape[1])])
    valid = pairs.sign != 0  # a version against itself
    wins = np.where(pairs.sign > 0, pairs.result, 1.0 - pairs.result)
    return swaps_of(pairs, pairs.which[valid], sets[valid], wins[valid])


def fit_pairs(pairs: Pairs, k: int, meat_at: MeatAt, sizes: dict[int, int], *, mu: float = 25.0,
              sigma: float = 25 / 3, beta: float = 25 / 6, iterations: int = 30, plain: bool = False,
              warm: Warm | None = None, swaps: Swaps | None = None, triples: Triples | None = None,
              batches: Sequence[TableBatch] | None = None, defer_test: bool = False,
              hessian: Hessian | None = None, parallel: bool = False) -> Model:
    """:func:`fit_model` on games already aggregated (``pairs``, ``meat_at``; ``sizes``: each table
    size's first seat effect), from scratch or, with ``warm``, from an earlier fit: every step is
    the same, each maximisation started where the earlier fit's ended, the prior's spread at the
    earlier one (its EM steps stop as from scratch, at a change under 1%). ``batches``: the games
    themselves, which the consistency check replays (without them, and past the swaps' limit,
    each bot is held to the field's dispersion). ``defer_test``: a quick fit leaves its test of the
    noises' spread on the model (``noise_test``), for the caller to run when nothing waits on it.
    ``hessian``: the Hessian's pattern of an earlier fit (:meth:`Hessian.on`). ``parallel``: a quick
    fit finds its two maxima on two threads (:func:`ratings_local.localise_ahead`)."""
    scale = math.sqrt(2.0) * beta
    hessian = Hessian(pairs, k) if hessian is None else hessian.on(pairs, k)
    expect = None if plain else expectation(batches, swaps, sizes, k, beta)
    seat_precision = None if plain else 1.0 / sigma**2
    if warm is not None and warm.quick and not plain:
        quick = _quick_fit(pairs, hessian, k, meat_at, sizes, warm, mu, sigma, beta, iterations, swaps, triples,
                           expect, defer_test, parallel)
        if quick is not None:
            return quick
    if warm is None:
        skills, seat = np.full(k, float(mu)), np.zeros(max(pairs.seats, 1))
    else:
        skills, seat = warm.first_skills.copy(), warm.first_seat.copy()
    skills, seat, second = maximise(pairs, hessian, skills, seat, mu, 1.0 / sigma**2, scale, iterations,
                                    seat_precision=seat_precision, tolerance=1e-4 if plain else 1e-3)
    first = (skills.copy(), seat.copy())
    weight, tau = 1.0, sigma
    if plain:
        return _covariance(meat_at, sizes, pairs, hessian, skills, seat, second, 1.0 / sigma**2, weight, tau,
                           scale, k, first)
    meat_matrix, n_sets, _ = meat_at(skills, seat, scale)
    information = hessian.diagonal(second)
    if n_sets >= 2 and k >= 2 and np.trace(meat_matrix) > 0:
        weight = float(min(max(information.sum() / np.trace(meat_matrix), WEIGHT_LOW), WEIGHT_HIGH))
    em = n_sets >= 2 and k >= 3
    if warm is not None:
        skills, seat, tau = warm.skills.copy(), warm.seat.copy(), warm.prior_sd
    for _ in range(EM_STEPS if em else 0):
        precision = 1.0 / (tau**2 * weight)
        skills, seat, second = maximise(pairs, hessian, skills, seat, mu, precision, scale, iterations,
                                        seat_precision=seat_precision, tolerance=1e-3)
        inverse_trace = hessian.inverse_trace(second, precision, EXACT_TRACE_BOTS)
        new = _prior_sd(skills, inverse_trace, weight, mu, TAU_LOW * beta, TAU_HIGH * sigma)
        settled, tau = abs(new - tau) < 0.01 * tau, new
        if settled:
            break
    precision = 1.0 / (tau**2 * weight)
    skills, seat, second = maximise(pairs, hessian, skills, seat, mu, precision, scale, iterations,
                                    seat_precision=seat_precision)
    point = last_point(pairs)
    noisy = fit_noise(pairs, hessian, skills, seat, mu, precision, scale, weight, iterations, seat_precision,
                      swaps, triples) if em else None
    if noisy is None:
        return _covariance(meat_at, sizes, pairs, hessian, skills, seat, second, precision, weight, tau, scale, k,
                           first, prior_mean=mu if em else None, expect=expect, seat_precision=seat_precision,
                           point=point)
    skills, seat, second, noise = noisy
    return _covariance(meat_at, sizes, pairs, hessian, skills, seat, second, precision, weight, tau, scale, k, first,
                       noise, prior_mean=mu, expect=expect, seat_precision=seat_precision)


def _quick_fit(pairs: Pairs, hessian: Hessian, k: int, meat_at: MeatAt, sizes: dict[int, int], warm: Warm, mu: float,
               sigma: float, beta: float, iterations: int, swaps: Swaps | None, triples: Triples | None,
               expect: Expect | None = None, defer: bool = False, parallel: bool = False) -> Model | None:
    """:func:`_quick_steps`; ``parallel``: the maximum under each bot's own weight is started on
    another thread first, where it can be (:func:`ratings_local.localise_ahead`)."""
    ahead = None
    if parallel and not warm.noises and k >= 3 and warm.local is not None and ratings_local.LOCAL_WEIGHTS:
        ahead = ratings_local.localise_ahead(pairs, hessian, warm.local, warm.local_point, mu, warm.prior_sd,
                                             warm.weight, math.sqrt(2.0) * beta, 1.0 / sigma**2, WEIGHT_LOW,
                                             WEIGHT_HIGH)
    try:
        return _quick_steps(pairs, hessian, k, meat_at, sizes, warm, mu, sigma, beta, iterations, swaps, triples,
                            expect, defer, ahead)
    finally:
        if ahead is not None:
            futures.wait([ahead])  # (it works on the memo of pairs: done before anything else does)


def _quick_steps(pairs: Pairs, hessian: Hessian, k: int, meat_at: MeatAt, sizes: dict[int, int], warm: Warm,
                 mu: float, sigma: float, beta: float, iterations: int, swaps: Swaps | None, triples: Triples | None,
                 expect: Expect | None, defer: bool, ahead: Future[ratings_local.Localised] | None) -> Model | None:
    """The fit of a few more games than ``warm``'s: the maximum under the earlier fit's prior
    spread and data weight, from its skills, kept when one EM step moves the spread less than
    1% (the stopping rule of the EM from scratch, whose answer is within that of the fixed point
    too) and when the fit from scratch would keep the common beta too (neither the earlier fit
    nor this one's test of the noises' spread fits each bot's own noise: the quick fit does not
    fit noises, so where they are fitted every step is; that test is run again once the pairs of
    seats grew :data:`NOISE_RETEST` since it last ran; ``defer``: left to the caller, on the
    model); else None (the caller fits every step). Each bot's own weight is the earlier fit's,
    its skills' maximum started from that fit's."""
    if warm.noises:
        return None
    scale = math.sqrt(2.0) * beta
    precision = 1.0 / (warm.prior_sd**2 * warm.weight)
    field = pairs if ahead is None else dataclasses.replace(pairs, memo=[])  # (pairs' memo is ahead's)
    if warm.point is not None:
        seed(field, warm.point)  # (refused for entries numbered otherwise)
    # stopping at a step under 1e-3 (the EM's own): Newton converging quadratically, the error is
    # then ~1e-6, and from the earlier maximum one step or two get there
    skills, seat, second = maximise(field, hessian, warm.skills.copy(), warm.seat.copy(), mu, precision, scale,
                                    iterations, seat_precision=1.0 / sigma**2, tolerance=1e-3, near=True)
    point, deferred = last_point(field), None
    if ahead is not None:  # (scipy's LAPACK calls below hold the GIL: they would stall its numpy work)
        futures.wait([ahead])
    if k >= 3:
        new = _prior_sd(skills, hessian.inverse_trace(second, precision, EXACT_TRACE_BOTS), warm.weight, mu,
                        TAU_LOW * beta, TAU_HIGH * sigma)
        if abs(new - warm.prior_sd) >= 0.01 * warm.prior_sd:
            return None
        seen = float(pairs.count.sum())
        if seen >= (1.0 + NOISE_RETEST) * warm.tested:
            def test(at: np.ndarray = skills, seat_at: np.ndarray = seat) -> bool:
                return fit_noise(field, hessian, at, seat_at, mu, precision, scale, warm.weight, iterations,
                                 1.0 / sigma**2, swaps, triples) is None
            if defer:
                deferred = (test, seen)
            elif not test():
                return None
            else:
                warm = dataclasses.replace(warm, tested=seen)
    model = _covariance(meat_at, sizes, pairs, hessian, skills, seat, second, precision, warm.weight, warm.prior_sd,
                        scale, k, (warm.first_skills, warm.first_seat), prior_mean=mu if k >= 3 else None,
                        expect=expect, seat_precision=1.0 / sigma**2, warm=warm, point=point, ahead=ahead)
    return dataclasses.replace(model, noise_test=deferred) if deferred else model


def _covariance(meat_at: MeatAt, sizes: dict[int, int], pairs: Pairs, hessian: Hessian, skills: np.ndarray,
                seat: np.ndarray, second: np.ndarray, precision: float, weight: float, tau: float, scale: float,
                k: int, first: tuple[np.ndarray, np.ndarray], noise: Noise | None = None,
                prior_mean: float | None = None, expect: Expect | None = None,
                seat_precision: float | None = None, warm: Warm | None = None, point: Point | None = None,
                ahead: Future[ratings_local.Localised] | None = None) -> Model:
    """The sandwich at the fit, plus what the bots' fitted noises' uncertainty adds (if any)
    and, with ``prior_mean`` (the prior's spread was estimated), what the spread's uncertainty
    adds; scaled per bot (its own sets, its dispersion; a bot's dispersion against what
    ``expect`` says an honest bot in its place shows, where given). With ``prior_mean``, first
    the fit under each bot's own weight against the prior (:mod:`harness.league.ratings_local`)."""
    scales = scale if noise is None else entry_scale(pairs, noise.lam, scale)
    field_weight, weights, at_field = weight, np.full(k, weight), (skills, seat)  # a later fit starts at the field's
    local_point = None
    shifts: dict[tuple[int, int], float] = {}
    if prior_mean is not None and k >= 3 and ratings_local.LOCAL_WEIGHTS:
        skills, seat, second, precisions, weights, shifts = ahead.result() if ahead is not None else \
            ratings_local.localise(
                pairs, hessian, skills, seat, prior_mean, tau, weight, scales, seat_precision, WEIGHT_LOW, WEIGHT_HIGH,
                None if warm is None or warm.local is None else ratings_local.moved(warm.local, warm.skills, skills),
                None if warm is None else warm.local_point)
        local_point = last_point(pairs)  # (there: the exact pairs and the recentring compute no terms)
    else:
        precisions = np.full(k, precision)
    factor = cho_factor(hessian.at(second, precisions).toarray())
    meat_matrix, n_sets, per_bot = meat_at(skills, seat, scales)
    information = hessian.diagonal(second)
    dispersion = np.ones(k)
    noisy = np.zeros(k, dtype=bool)
    if n_sets >= 2:
        # each bot's score variance against the model's information, relative to the field's
        ratio = np.diag(meat_matrix) / np.maximum(information, 1e-300)
        field = np.trace(meat_matrix) / max(information.sum(), 1e-300)
        dispersion = ratio / field if field > 0 else dispersion
        df = np.maximum(per_bot - 1, 1)
        bound = chdtri(df, NOISY_P) / df  # chi2's upper quantile (scipy.stats costs ~0.4 s to import)
        noisy = (per_bot >= 3) & (dispersion > bound)
        if expect is not None and noisy.any():  # only those the field's check would flag are replayed
            dispersion = dispersion / expect(np.flatnonzero(noisy), skills, seat)
            noisy &= dispersion > bound
        matrix = meat_matrix + np.diag(precisions / weights)
        covariance = cho_solve(factor, cho_solve(factor, matrix).T)
        if noise is not None:
            covariance = covariance + noise_covariance(pairs, skills, seat, noise, scale, factor)
        if prior_mean is not None and k >= 3:
            covariance = covariance + ratings_local.spread_uncertainty(factor, skills, prior_mean, tau, weights, information)
    else:  # one set says nothing about the variance between sets: the model's own (Laplace) covariance
        covariance = cho_solve(factor, np.eye(k))
    per = bot_factors(per_bot, shrunk_degrees(per_bot, n_sets, DISPERSION_PRIOR_SETS)) if n_sets >= 2 else np.ones(k)
    per = np.where(noisy, per * np.sqrt(np.maximum(dispersion, 1.0)), per)
    if n_sets >= 2 and DISPERSION_PRIOR_SETS > 0:
        shrunk = (per_bot * dispersion + DISPERSION_PRIOR_SETS) / (per_bot + DISPERSION_PRIOR_SETS)
        per = per * np.sqrt(np.maximum(1.0, shrunk / np.maximum(dispersion, 1e-12)))
    covariance = _relative_to_mean(covariance) * np.outer(per, per)
    effects = {n: [float(x) for x in seat[b:b + n]] for n, b in sizes.items()}
    return Model(skills, covariance, n_sets, per_bot, tau, field_weight, effects, dispersion, per, noisy,
                 Warm(first[0], first[1], *at_field, tau, field_weight, noises=noise is not None,
                      local=(skills, weights), tested=float(pairs.count.sum()) if warm is None else warm.tested,
                      point=point, local_point=local_point),
                 None if noise is None else np.exp(noise.lam), shifts, weights)


def fit_arrays(batches: Sequence[TableBatch], k: int, *, mu: float = 25.0, sigma: float = 25 / 3,
               beta: float = 25 / 6, iterations: int = 30) -> tuple[np.ndarray, np.ndarray, int]:
    """The fit on bot indices 0..k-1: (mu (k,), robust covariance relative to the mean (k x k),
    number of duplicate sets); :func:`fit_model` for everything else the fit found. The
    covariance includes each bot's small-sample factor (:func:`bot_factors`), so that mu +-
    1.96 sigma is the 95% interval whatever the number of sets."""
    model = fit_model(batches, k, mu=mu, sigma=sigma, beta=beta, iterations=iterations)
    return model.skills, model.covariance, model.sets


def fit_table(games: Iterable[tuple[Sequence[int], Sequence[int], Hashable]], *, mu: float = 25.0,
              sigma: float = 25 / 3, beta: float = 25 / 6, plain: bool = False) -> TableFit:
    """The table's fit over ``games`` given as (version ids by seat, ranks by seat with 0 =
    first, the game's duplicate set: any hashable key shared by the games of one deal).
    Every version that played gets a rating; the same games in any order give the same fit."""
    return fit_batches(batches_from_games(games), mu=mu, sigma=sigma, beta=beta, plain=plain)


def fit_batches(batches: Sequence[TableBatch], *, mu: float = 25.0, sigma: float = 25 / 3,
                beta: float = 25 / 6, plain: bool = False) -> TableFit:
    """:func:`fit_table` on games already in arrays (no Python loop over games); ``plain``: see
    :func:`fit_model`."""
    batches = [b for b in batches if len(b.versions)]
    if not batches:
        return TableFit({}, {}, [], [], 0, 0, np.zeros((0, 0)), {})
    ids = np.unique(np.concatenate([b.versions.ravel() for b in batches]))
    indexed = [TableBatch(np.searchsorted(ids, b.versions), b.ranks, b.sets) for b in batches]
    model = fit_model(indexed, int(ids.size), mu=mu, sigma=sigma, beta=beta, plain=plain)
    return table_fit(model, ids, sum(len(b.sets) for b in batches))


def table_fit(model: Model, ids: np.ndarray, games: int) -> TableFit:
    """The :class:`TableFit` of ``model``, a fit on bot indices: bot i is version ``ids[i]``."""
    skills, covariance = model.skills, model.covariance
    sigmas = np.sqrt(np.clip(np.diag(covariance), 1e-18, None))
    versions = [int(v) for v in ids]
    order_idx = np.lexsort((ids, -skills))  # by mu, then by version id
    index = {v: i for i, v in enumerate(versions)}
    fit = TableFit(mu=dict(zip(versions, skills.tolist())), sigma=dict(zip(versions, sigmas.tolist())),
                   order=[versions[i] for i in order_idx], p_next=[], games=games,
                   sets=model.sets, covariance=covariance, index=index, prior_sd=model.prior_sd,
                   data_weight=model.weight, seat_effects=model.seat_effects,
                   sets_of=dict(zip(versions, model.sets_per_bot.tolist())),
                   noisy={versions[i]: float(model.dispersion[i]) for i in np.flatnonzero(model.noisy)},
                   widened={versions[i]: float(model.factor[i]) for i in np.flatnonzero(model.noisy)},
                   noise={} if model.noise is None else dict(zip(versions, model.noise.tolist())),
                   shifts={(versions[i], versions[j]): x for (i, j), x in model.shifts.items()},
                   weights={} if model.weights is None else dict(zip(versions, model.weights.tolist())))
    # sorted by mu, a row claims at least a tie (an exact one-sided pair's may be just under: docs/ratings.md)
    fit.p_next = [max(0.5, fit.p_better(a, b)) for a, b in zip(fit.order, fit.order[1:])]
    return fit


def fit_ratings(games: Iterable[tuple[Sequence[int], Sequence[int]]], *, mu: float, sigma: float, beta: float
                ) -> dict[int, tuple[float, float]]:
    """Bot version -> (mu, sigma) of the plain fit (:func:`fit_model`: the configured prior, no
    seat effects) over ``games`` given as (version ids by seat, ranks by seat), each game its
    own set (for callers without duplicate sets, e.g. rating history)."""
    fit = fit_table(((v, r, i) for i, (v, r) in enumerate(games)), mu=mu, sigma=sigma, beta=beta, plain=True)
    return {v: (fit.mu[v], fit.sigma[v]) for v in fit.mu}
