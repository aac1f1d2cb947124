"""Each bot's own weight against the prior and P(>next) from the exact posterior where a bot's
record is one-sided (harness/league/ratings_local.py): scenarios from explicit results checked
against brute-force numerical integration, and properties of the weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import dblquad
from scipy.special import log_ndtr, ndtr, ndtri
from scipy.stats import multivariate_normal

from harness.league.ratings_fit import fit_table
from harness.league.ratings_local import _expected_information, bot_weights, dependence, localise_ahead, one_sided
from harness.league.ratings_model import TableBatch, pairs_of

MU, SIGMA, BETA = 25.0, 25 / 3, 25 / 6


def two_seat_sets(meetings: list[tuple[int, int, int]]) -> list[tuple[list[int], list[int], int]]:
    """Duplicate two-seat sets: (a, b, how many of the set's two games a won), a first in seat
    0 then in seat 1 (a split set: a won the first)."""
    games: list[tuple[list[int], list[int], int]] = []
    for key, (a, b, won) in enumerate(meetings):
        first, second = won >= 1, won == 2
        games.append(([a, b], [0, 1] if first else [1, 0], key))
        games.append(([b, a], [1, 0] if second else [0, 1], key))
    return games


#: bot 0 won every game, against bot 1 (which won most of its others) too; bots 1-5 mixed
ONE_SIDED = [(0, 1, 2), (0, 2, 2), (0, 3, 2), (0, 4, 2), (0, 5, 2), (0, 2, 2),
             (1, 2, 2), (1, 3, 1), (1, 4, 2), (1, 5, 2), (2, 3, 1), (2, 4, 0), (2, 5, 1),
             (3, 4, 1), (3, 5, 2), (4, 5, 1), (1, 2, 1), (3, 4, 0), (2, 5, 2), (4, 5, 1)]


#: bot 0 won its only three sets, against bots 2 and 3; bot 1, strong, lost one set to bot 2
CLOSE = [(0, 2, 2), (0, 3, 2), (0, 4, 2), (1, 2, 2), (1, 3, 2), (1, 4, 2), (1, 5, 2), (1, 2, 1), (2, 3, 1),
         (2, 4, 1), (3, 4, 1), (2, 5, 2), (3, 5, 1), (4, 5, 1), (1, 3, 2), (1, 4, 2)]


#: bot 5 lost every game, to each of the others four times; bots 0-4 mixed, three times as many
#: sets: the results outweigh the prior, so the pair's normal is the likelihood's curvature
BOTTOM = [(x, 5, 2) for x in range(5)] * 2 + [(0, 1, 1), (0, 2, 2), (0, 3, 1), (0, 4, 2), (1, 2, 1), (1, 3, 2),
                                              (1, 4, 1), (2, 3, 1), (2, 4, 2), (3, 4, 1)] * 3


@pytest.mark.parametrize("meetings", [ONE_SIDED, CLOSE, BOTTOM], ids=["one-sided", "close", "bottom"])
def test_a_bot_that_won_everything_gets_the_exact_posterior_s_p_next(meetings):
    """The pair (the bot that won every game, the next) gets P(>next) from the exact posterior
    along the two bots, the others held at the fit: the test integrates that posterior itself
    (the composite likelihood of every game either bot played, each bot's prior N(mu0 + the
    table's shift, tau^2 w_i)) and carries it to the table's standard deviation as the fit
    does, Phi(Phi^-1(P exact) sd_normal / sd_table). The old fit had no such pair probability
    (the normal at the maximum, under the field's weight). A bot that lost every game, at the
    bottom, gets the last pair's the same way."""
    fit = fit_table(two_seat_sets(meetings), mu=MU, sigma=SIGMA, beta=BETA)
    sided = 5 if meetings is BOTTOM else 0
    a, b = (0, 1) if meetings is ONE_SIDED else (fit.order[-2], 5) if meetings is BOTTOM else (fit.order[0], fit.order[1])
    assert sided in (a, b) and fit.order.index(b) == fit.order.index(a) + 1
    ids = sorted(fit.mu)
    tau2 = fit.prior_sd ** 2
    precision = {v: 1.0 / (tau2 * fit.weights[v]) for v in ids}
    # the maximum's frame: the fit recentres its mu on mu0; at the maximum sum P_i (x_i - mu0) = 0
    delta = sum(precision[v] * (MU - fit.mu[v]) for v in ids) / sum(precision.values())
    x = {v: fit.mu[v] + delta for v in ids}
    g = fit.seat_effects[2]
    scale = math.sqrt(2) * BETA
    games = two_seat_sets(meetings)

    def log_density(xa: float, xb: float) -> float:
        at = {**x, a: xa, b: xb}
        total = -0.5 * precision[a] * (xa - MU) ** 2 - 0.5 * precision[b] * (xb - MU) ** 2
        for (s0, s1), ranks, _ in games:
            if a in (s0, s1) or b in (s0, s1):
                z = (at[s0] + g[0] - at[s1] - g[1]) / scale
                total += float(log_ndtr(z if ranks[0] < ranks[1] else -z))
        return total

    peak = log_density(x[a], x[b])
    wide = 40.0
    ahead = dblquad(lambda xb, xa: math.exp(log_density(xa, xb) - peak), x[a] - wide, x[a] + wide,
                    lambda xa: x[b] - wide, lambda xa: min(xa, x[b] + wide), epsabs=1e-10, epsrel=1e-7)[0]
    total = dblquad(lambda xb, xa: math.exp(log_density(xa, xb) - peak), x[a] - wide, x[a] + wide,
                    lambda xa: x[b] - wide, lambda xa: x[b] + wide, epsabs=1e-10, epsrel=1e-7)[0]
    exact = ahead / total
    # the normal approximation at the maximum: the log-density's curvature there (finite differences)
    h = 1e-3
    faa = (log_density(x[a] + h, x[b]) - 2 * peak + log_density(x[a] - h, x[b])) / h**2
    fbb = (log_density(x[a], x[b] + h) - 2 * peak + log_density(x[a], x[b] - h)) / h**2
    fab = (log_density(x[a] + h, x[b] + h) - log_density(x[a] + h, x[b] - h)
           - log_density(x[a] - h, x[b] + h) + log_density(x[a] - h, x[b] - h)) / (4 * h**2)
    cov = np.linalg.inv(-np.array([[faa, fab], [fab, fbb]]))
    sd_normal = math.sqrt(cov[0, 0] + cov[1, 1] - 2 * cov[0, 1])
    if meetings is ONE_SIDED:  # a one-sided likelihood: the exact is surer
        assert exact > float(ndtr((x[a] - x[b]) / sd_normal))
    i, j = fit.index[a], fit.index[b]
    sd_table = math.sqrt(fit.covariance[i, i] + fit.covariance[j, j] - 2 * fit.covariance[i, j])
    expected = float(ndtr(float(ndtri(exact)) * sd_normal / sd_table))
    assert abs(fit.p_better(a, b) - expected) < 0.003
    assert abs(fit.p_next[fit.order.index(a)] - expected) < 0.003
    # the one-sided bot's own weight is nearer 1 than the field's (its results hardly depend within a set)
    assert abs(fit.weights[sided] - 1.0) < abs(fit.data_weight - 1.0)
    assert sum(fit.mu.values()) / len(fit.mu) == pytest.approx(MU, abs=1e-9)  # relative to the table's mean


def test_dependence_is_the_correlation_of_two_probit_results():
    """c(z; rho) against the bivariate normal's orthant by numerical integration (scipy)."""
    for z in (0.0, 0.7, 1.5, -2.2, 3.0):
        for rho in (-0.52, -0.2, 0.3, 0.8):
            joint = multivariate_normal.cdf([z, z], mean=[0, 0], cov=[[1, rho], [rho, 1]], abseps=1e-10,
                                            releps=1e-8)
            p = float(ndtr(z))
            assert abs(float(dependence(np.array([z]), rho)[0]) - (joint - p * p) / (p * (1 - p))) < 2e-4


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.4, 3.0), st.floats(0.3, 4.0))
def test_a_bot_s_weight_moves_towards_one_as_its_results_grow_one_sided(seed, weight, far):
    """Every weight is within the bounds; among equal bots each keeps the field's weight; a bot
    whose opponents are all far from it gets a weight nearer 1 than the field's, and the farther
    the nearer."""
    rng = np.random.default_rng(seed)
    k = 6
    versions = np.array([[i, j] for i in range(k) for j in range(k) if i != j] * 2)
    ranks = np.argsort(np.argsort(rng.random(versions.shape), axis=1), axis=1)
    batch = TableBatch(versions, ranks, np.arange(len(versions)) // 2)
    pairs = pairs_of([batch], k)
    seat = np.zeros(pairs.seats)
    equal = bot_weights(pairs, np.full(k, MU), seat, math.sqrt(2) * BETA, weight, k, 0.2, 5.0)
    assert np.allclose(equal, weight, rtol=1e-6)
    skills = np.full(k, MU)
    weights = []
    for gap in (far, 2 * far):
        skills[0] = MU + gap * BETA
        w = bot_weights(pairs, skills, seat, math.sqrt(2) * BETA, weight, k, 0.2, 5.0)
        assert np.all((w >= 0.2) & (w <= 5.0))
        weights.append(w[0])
    assert abs(weights[0] - 1.0) <= abs(weight - 1.0) + 1e-9
    assert abs(weights[1] - 1.0) <= abs(weights[0] - 1.0) + 1e-9
    if far >= 1.0 and weight >= 1.2:  # a beta or more from all its opponents, where sets say more: clearly nearer
        assert abs(weights[0] - 1.0) < 0.9 * abs(weight - 1.0)


def test_a_pair_the_exact_posterior_puts_just_under_a_tie_shows_a_tie():
    """Sorted by mu, a row claims at least a tie with the next: where a one-sided pair's exact
    posterior moves the pair's probability under 0.5, the table shows 0.5 and ``p_better`` keeps
    the number (each way round)."""
    from test_ratings_model import BETA, league

    from harness.league.ratings_fit import fit_model, table_fit

    batch = league(np.random.default_rng(5), 25 + np.array([-1.0, 0.0, 0.2, 1.0]) * BETA, 3, 30)
    model = fit_model([batch], 4)
    top, second = (int(i) for i in np.argsort(-model.skills)[:2])
    gap = float(model.skills[top] - model.skills[second])
    model.shifts = {(top, second): -gap - 0.5}  # the exact posterior's word: the second is likelier better
    fit = table_fit(model, np.arange(4), len(batch.sets))
    assert fit.order[:2] == [top, second] and fit.p_next[0] == 0.5
    assert fit.p_better(top, second) < 0.5
    assert fit.p_better(second, top) == pytest.approx(1 - fit.p_better(top, second))
    assert all(p >= 0.5 for p in fit.p_next)


def test_one_sided_records_and_a_result_s_expected_information():
    """A bot ahead in every pair of seats it played, or behind in every one, is one-sided; a bot
    with one result the other way, or none, is not. A probit result's expected information is
    phi(z)^2 / (Phi(z) Phi(-z))."""
    meetings = [(0, 1, 2), (0, 2, 2), (1, 2, 1), (3, 1, 0), (3, 2, 0), (4, 1, 2), (4, 2, 1)]
    sets = two_seat_sets(meetings)
    batch = TableBatch(np.array([v for v, _, _ in sets]), np.array([r for _, r, _ in sets]),
                       np.array([key for _, _, key in sets]))
    got = one_sided(pairs_of([batch], 6), 6)
    assert got.tolist() == [True, False, False, True, False, False]  # 5 played nothing
    for z in (0.0, 0.8, -1.7, 4.0):
        phi = math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
        want = phi**2 / (float(ndtr(z)) * float(ndtr(-z)))
        assert float(_expected_information(np.array([z]))[0]) == pytest.approx(want, rel=1e-9)


def test_a_bot_s_margins_include_the_seat_effects_of_each_entry():
    """bot_weights reads each entry's margin with its seats' effects: a chain of three bots, each
    pair met in one seat order, weighs the same as the chain whose skills carry those effects
    (every margin the same), and differently from the margins with the effects' sign flipped."""
    from harness.league.ratings_model import Pairs

    e = np.empty(0)
    pa, pb = np.array([0, 1]), np.array([1, 2])
    pairs = Pairs(e, e, e, pa, pb, np.array([0, 0]), np.array([1, 1]), np.array([3.0, 1.0]), np.array([4.0, 4.0]),
                  np.array([0, 1]), pa, pb, 2)
    scale, seat = math.sqrt(2) * BETA, np.array([1.5 * BETA, -1.5 * BETA])
    skills = np.array([MU - 2.5 * BETA, MU, MU + 0.2 * BETA])
    gap = seat[0] - seat[1]
    folded = np.array([skills[0] + 2 * gap, skills[1] + gap, skills[2]])  # s0 - s1 + gap, s1 - s2 + gap
    with_seats = bot_weights(pairs, skills, seat, scale, 1.6, 3, 0.2, 5.0)
    np.testing.assert_allclose(with_seats, bot_weights(pairs, folded, np.zeros(2), scale, 1.6, 3, 0.2, 5.0),
                               rtol=1e-9)
    flipped = np.array([skills[0] - 2 * gap, skills[1] - gap, skills[2]])
    assert np.max(np.abs(with_seats - bot_weights(pairs, flipped, np.zeros(2), scale, 1.6, 3, 0.2, 5.0))) > 0.05


def test_a_single_result_is_one_sided_unless_it_was_a_draw():
    """A bot with one result that was not a draw has no finite maximum of its own; a draw has one."""
    from harness.league.ratings_model import Pairs

    e = np.empty(0)
    pa, pb = np.array([0, 2]), np.array([1, 3])
    pairs = Pairs(e, e, e, pa, pb, np.zeros(2, np.int64), np.ones(2, np.int64), np.array([1.0, 0.5]),
                  np.array([1.0, 1.0]), np.array([0, 1]), pa, pb, 2)
    assert one_sided(pairs, 5).tolist() == [True, True, False, False, False]


def test_a_quick_fit_keeps_the_earlier_bots_weights_and_gives_a_new_bot_the_field_s():
    """localise from an earlier fit (``earlier``): the earlier bots keep their own weights (and
    start at their earlier skills), a bot new since gets the field's weight; each bot's prior
    precision is 1 / (tau^2 w_i)."""
    from harness.league.ratings_local import localise
    from harness.league.ratings_model import Hessian

    rng = np.random.default_rng(8)
    versions = np.array([[i, j] for i in range(5) for j in range(5) if i != j] * 3)
    ranks = np.argsort(np.argsort(rng.random(versions.shape), axis=1), axis=1)
    pairs = pairs_of([TableBatch(versions, ranks, np.arange(len(versions)) // 2)], 5)
    earlier = (np.array([MU + 1.0, MU - 0.5, MU, MU + 0.3]), np.array([1.1, 1.7, 0.9, 1.3]))
    tau, field = 3.0, 1.45
    _, _, _, precision, weights, _ = localise(pairs, Hessian(pairs, 5), np.full(5, MU), np.zeros(pairs.seats), MU,
                                              tau, field, math.sqrt(2) * BETA, 1 / SIGMA**2, 0.2, 5.0, earlier)
    np.testing.assert_allclose(weights, [1.1, 1.7, 0.9, 1.3, field])
    np.testing.assert_allclose(precision, 1.0 / (tau**2 * weights))


def test_the_spread_s_uncertainty_is_g_g_transposed_times_the_variance_of_tau_squared():
    """spread_uncertainty against its formula computed here with a dense inverse: g = A^-1 ((mu^ -
    mu0) / w) / tau^4, Var(tau^2) = 2 / sum 1 / (tau^2 + v_i)^2, v_i = 1 / (w_i H_ii)."""
    from scipy.linalg import cho_factor

    from harness.league.ratings_local import spread_uncertainty

    rng = np.random.default_rng(9)
    k = 5
    root = rng.normal(size=(k, k))
    matrix = root @ root.T + k * np.eye(k)
    skills, tau = MU + rng.normal(0, 3, k), 2.7
    weights, information = rng.uniform(0.8, 1.8, k), rng.uniform(0.5, 4.0, k)
    got = spread_uncertainty(cho_factor(matrix), skills, MU, tau, weights, information)
    g = np.linalg.inv(matrix) @ ((skills - MU) / weights) / tau**4
    var = 2.0 / np.sum(1.0 / (tau**2 + 1.0 / (weights * information)) ** 2)
    np.testing.assert_allclose(got, np.outer(g, g) * var, rtol=1e-10)


def _live_fits(ahead: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, list[bool]]]:
    """A live fit (ratings_live.LiveFit) of 8 bots' three-seat sets, fitted again after each of
    three additions (the last with a bot new since), with its local maxima found on a thread of
    their own or not: each fit's table and whether a thread was started for it."""
    from test_ratings_model import league

    import harness.league.ratings_local as ratings_local
    from harness.league.queries import GameArrays
    from harness.league.ratings_live import LiveFit

    real = localise_ahead  # (this module's import: the function itself, whatever was patched before)
    started: list[bool] = []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        got = real(*args, **kwargs) if ahead else None
        started.append(got is not None)
        return got

    monkeypatch.setattr(ratings_local, "localise_ahead", counted)
    rng = np.random.default_rng(21)
    true = 25 + rng.normal(0, 1.5 * BETA, 9)
    live, fits, offset = LiveFit([3], mu=MU, sigma=SIGMA, beta=BETA), [], 0
    for sets, bots in ((400, 8), (6, 8), (6, 8), (6, 9)):
        batch = league(rng, true[:bots], 3, sets)
        g = len(batch.sets)
        live.add([GameArrays(batch.versions, batch.ranks, np.zeros(batch.ranks.shape), offset + np.arange(g),
                             np.zeros(g, np.int64), batch.sets + offset)])
        offset += g
        started.clear()
        fit = live.fit()
        fits.append((fit, list(started)))
    return fits


def test_a_live_fit_s_maxima_found_on_two_threads_are_the_maxima_found_on_one(monkeypatch):
    """A quick fit starts the maximum under each bot's own weight from the earlier fit's on a
    thread of its own (ratings_local.localise_ahead) while it finds the field's: the table is
    the one both found one after the other, to the last bit. No thread where the start needs the
    field's maximum: the first fit (from scratch) and a fit with a bot new since."""
    one = _live_fits(False, monkeypatch)
    two = _live_fits(True, monkeypatch)
    assert [s for _, s in two] == [[], [True], [True], [False]]
    for (a, _), (b, _) in zip(one, two):
        assert a.mu == b.mu and a.sigma == b.sigma  # type: ignore[attr-defined]
        assert np.array_equal(a.covariance, b.covariance)  # type: ignore[attr-defined]
