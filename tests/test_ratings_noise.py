"""Each bot's own performance noise in the table's fit (harness/league/ratings_noise.py), and
P(>next) against a Monte Carlo reference: on leagues drawn from the model with known truth."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from test_ratings_model import BETA, league

import harness.league.ratings_fit as ratings_fit
import harness.league.ratings_local as ratings_local
from harness.league import ratings_dispersion, ratings_live
from harness.league.queries import GameArrays
from harness.league.ratings_dispersion import REPLICATES, SETS, _replay, _sample_sets, expectation, expected_dispersion
from harness.league.ratings_fit import fit_batches
from harness.league.ratings_live import LiveFit
from harness.league.ratings_model import TableBatch, pairs_of
from harness.league.ratings_noise import NOISE_P, Reading, _beyond_chance, _bounds, null_draws
from harness.league.ratings_triples import median_contrast_variance, others_median


def _without_noise(monkeypatch: pytest.MonkeyPatch, batch: ratings_fit.TableBatch) -> ratings_fit.TableFit:
    """The same league fitted with every bot at the common beta (the noise step switched off)."""
    with monkeypatch.context() as patch:
        patch.setattr(ratings_fit, "fit_noise", lambda *args, **kwargs: None)
        return fit_batches([batch])


def test_an_overdispersed_bot_gets_its_own_noise_and_a_wider_interval(monkeypatch):
    """Bot 0 plays with three times the usual noise among 10 bots spread by beta: its fitted
    noise is well above the others', its mu is less compressed towards the mean than under a
    common beta, and its interval is widened more than any other bot's (theirs widen a little:
    the noisy bot's uncertain noise moves every mu relative to the mean); the honest bots'
    noises stay near 1."""
    rng = np.random.default_rng(11)
    true = 25 + rng.normal(0, BETA, 10)
    true[0] = 25 + 1.5 * BETA  # far enough from the mean for its compression to show
    batch = league(rng, true, 3, 600, noisy={0: 3.0})
    fit, common = fit_batches([batch]), _without_noise(monkeypatch, batch)
    assert fit.noise[0] > 1.6 and max(abs(fit.noise[b] - 1) for b in range(1, 10)) < 0.3
    truth = true[0] - true.mean()
    assert abs(fit.mu[0] - 25 - truth) < abs(common.mu[0] - 25 - truth)
    widened = [fit.sigma[b] / common.sigma[b] for b in range(10)]
    assert widened[0] > 1.15 and widened[0] > max(widened[1:])
    # what the noises' own uncertainty adds (J diag(V) J'): without it every interval is narrower,
    # the noisy bot's by far the most
    with monkeypatch.context() as patch:
        patch.setattr(ratings_fit, "noise_covariance", lambda pairs, skills, *rest: np.zeros((skills.size,) * 2))
        certain = fit_batches([batch])
    added = [fit.sigma[b] / certain.sigma[b] for b in range(10)]
    assert added[0] > 1.2 and min(added) > 1.0 and added[0] > max(added[1:])


def test_an_honest_field_keeps_the_common_beta(monkeypatch):
    """Ten bots with the same noise: the noises' spread is estimated at (or near) 0, so every
    bot's fitted noise is within 10% of beta and no interval moves by more than 3%."""
    for seed in (12, 13, 14):
        rng = np.random.default_rng(seed)
        batch = league(rng, 25 + rng.normal(0, BETA, 10), 3, 300)
        fit, common = fit_batches([batch]), _without_noise(monkeypatch, batch)
        assert all(abs(x - 1) < 0.1 for x in fit.noise.values())
        assert all(fit.sigma[b] == pytest.approx(common.sigma[b], rel=0.03) for b in range(10))


def test_p_better_is_the_probability_under_the_fit_s_normal(monkeypatch):
    """P(a > b) from the formula (with the covariance of the two mus) against the share of
    draws from N(mu, covariance) where a's skill exceeds b's, for every pair of a league where
    bots met unevenly (so the covariances matter)."""
    rng = np.random.default_rng(15)
    weights = np.linspace(1, 3, 8) / np.linspace(1, 3, 8).sum()
    fit = fit_batches([league(rng, 25 + rng.normal(0, BETA / 4, 8), 2, 120, weights=weights)])
    ids = sorted(fit.mu, key=lambda v: fit.index[v])
    draws = np.random.default_rng(16).multivariate_normal([fit.mu[v] for v in ids], fit.covariance, 200_000)
    covariances = [abs(fit.covariance[i, j]) for i in range(8) for j in range(8) if i != j]
    assert max(covariances) > 0.05 * min(np.diag(fit.covariance))  # not independent: the test asks its question
    for a in ids:
        for b in ids:
            if a != b:
                share = float(np.mean(draws[:, fit.index[a]] > draws[:, fit.index[b]]))
                assert fit.p_better(a, b) == pytest.approx(share, abs=0.005)


def test_a_one_sided_bot_s_variance_is_not_read_below_the_field_s(monkeypatch):
    """A bot far above a sparse field wins nearly every set: its sets' scores are small and
    alike, so its own dispersion reads well under 1. Its sigma is scaled by sqrt((G d + 4) /
    (G + 4) / d), never down: a bot whose dispersion is 1 or more keeps its variance; every bot's
    t then has the degrees of freedom of its shrunk variance, more than its own sets' G - 1."""
    rng = np.random.default_rng(17)
    true = 25 + rng.normal(0, BETA / 2, 30)
    true[0] = 25 + 3 * BETA
    batch = league(rng, true, 2, 150)
    shrunk = ratings_fit.fit_model([batch], 30)
    monkeypatch.setattr(ratings_fit, "DISPERSION_PRIOR_SETS", 0.0)
    plain = ratings_fit.fit_model([batch], 30)
    d, g = plain.dispersion, plain.sets_per_bot
    assert d[0] < 0.7
    # the t's degrees of freedom grow with the field's weight in the variance (shrunk_degrees)
    t_ratio = ratings_fit.bot_factors(g, ratings_fit.shrunk_degrees(g, plain.sets, 4.0)) / ratings_fit.bot_factors(g)
    assert all(t_ratio < 1)
    expected = np.sqrt(np.maximum(1.0, (g * d + 4) / (g + 4) / d))
    assert shrunk.factor == pytest.approx(plain.factor * expected * t_ratio, rel=1e-6)
    assert shrunk.factor[0] > 1.1 * plain.factor[0] * t_ratio[0]
    assert shrunk.factor[d >= 1] == pytest.approx(plain.factor[d >= 1] * t_ratio[d >= 1], rel=1e-12)


def test_the_spread_s_uncertainty_widens_most_the_bots_far_from_the_mean(monkeypatch):
    """The estimated spread's uncertainty (Kass and Steffey's correction) adds g g' Var(tau^2),
    g = d mu / d tau^2: nothing narrows, and the bots far from the mean (whose shrinkage depends
    most on tau) widen most; with a large field the spread is well measured and the addition small."""
    def widening(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        batch = league(rng, 25 + rng.normal(0, BETA / 3, k), 2, 8 * k)
        with_it = ratings_fit.fit_model([batch], k)
        with monkeypatch.context() as patch:
            patch.setattr(ratings_local, "spread_uncertainty", lambda factor, skills, *args: np.zeros((k, k)))
            without = ratings_fit.fit_model([batch], k)
        return np.diag(with_it.covariance) / np.diag(without.covariance), np.abs(with_it.skills - 25)

    ratio, distance = widening(6, 18)
    assert np.all(ratio >= 1 - 1e-9) and ratio.max() > 1.02
    assert np.argmax(ratio) == np.argmax(distance)
    large, _ = widening(60, 19)
    assert np.median(large - 1) < np.median(ratio - 1)


def test_honest_close_fields_where_the_former_test_fired_keep_the_common_beta():
    """Ten bots spread beta/4 at 2 seats, every bot at beta: these five leagues are ones where the
    former test (Bonferroni's bound and the chi-square, read as if each bot's z were N(0, 1) after
    the median bot was taken away) fitted noises (it fired in 25 of 160 such leagues, seeds
    100-259); its null distribution drawn as the readings are made fires in none of them."""
    for seed in (103, 105, 108, 118, 123):
        rng = np.random.default_rng(seed)
        batch = league(rng, 25 + rng.normal(0, BETA / 4, 10), 2, 200)
        assert fit_batches([batch]).noise == {}


def test_the_noise_test_fires_at_its_level_on_estimates_drawn_as_the_readings_make_them():
    """Estimates drawn as the model makes them (each bot's reading N(0, its variance), the others'
    median taken away, weighed with a slope reading): the test fires in at most NOISE_P of 2,000
    draws and in at least half of that (each of its two parts is at half the level); with one bot
    noisier by three of its standard errors, in most."""
    k = 6
    own = np.full(k, 0.04)
    measured = np.ones(k, dtype=bool)
    part_var = median_contrast_variance(own, measured)
    reading = Reading(np.zeros(k), np.zeros(k), measured, None, [(own, measured, measured, part_var)])
    slope_var = np.full(k, 1.0)
    var = 1.0 / (1.0 / slope_var + 1.0 / part_var)
    bounds = _bounds(null_draws(reading, slope_var, var, measured), k)
    rng = np.random.default_rng(5)

    def fires(shift: float) -> float:
        count = 0
        for _ in range(2000):
            e = rng.normal(0, np.sqrt(own))
            e[0] += shift
            lam = e - others_median(e, measured)
            raw = (rng.normal(0, np.sqrt(slope_var)) / slope_var + lam / part_var) * var
            count += _beyond_chance(raw, var, bounds)
        return count / 2000

    honest = fires(0.0)
    assert NOISE_P / 2 - 0.01 <= honest <= NOISE_P + 0.01
    assert fires(3 * math.sqrt(part_var[0])) > 0.6


def test_the_noises_spread_is_the_marginal_likelihoods_maximum_where_a_barely_measured_bot_weighs_little():
    """_spread: with equal variances the maximum is the plain mean of raw^2 - var; a bot whose
    noise is barely measured (a huge var) hardly moves it; none below 0."""
    from harness.league.ratings_noise import _spread

    raw, var = np.array([3.0, -3.0, 3.0, -3.0]), np.ones(4)
    assert _spread(raw, var) == pytest.approx(8.0, rel=1e-5)
    vague = _spread(np.append(raw, 40.0), np.append(var, 1e6))
    assert vague == pytest.approx(8.0, rel=0.01)
    assert _spread(np.array([0.5, -0.5]), np.ones(2)) == 0.0


def test_a_bots_efficient_information_never_falls_under_a_twentieth_of_its_own():
    """I_i - c_i' A^-1 c_i (the noise's information once the skill moves with it) is floored at
    0.05 I_i: where a bot's skill and noise are nearly confounded its noise's variance stays
    finite. The floor checked by giving each bot an own information just above what its skill's
    freedom takes away."""
    from harness.league.ratings_model import Hessian, pairs_of
    from harness.league.ratings_noise import _efficient_info, _score_info

    rng = np.random.default_rng(3)
    k = 4
    batch = league(rng, 25 + rng.normal(0, BETA, k), 3, 12)
    model = ratings_fit.fit_model([batch], k)
    pairs, scale = pairs_of([batch], k), math.sqrt(2.0) * BETA
    hessian, lam = Hessian(pairs, k), np.zeros(k)
    precision = 1.0 / (model.prior_sd ** 2 * model.warm.weight)
    seat = model.warm.seat
    _, info = _score_info(pairs, model.skills, seat, lam, scale, k)
    taken = info - _efficient_info(pairs, hessian, model.skills, seat, lam, scale, precision, info)
    assert np.all(taken > 0) and np.all(taken < info)  # the skills' freedom takes some, not all
    near = 1.01 * taken
    assert _efficient_info(pairs, hessian, model.skills, seat, lam, scale, precision, near) == pytest.approx(0.05 * near)


def _flagged(monkeypatch: pytest.MonkeyPatch, batch: ratings_fit.TableBatch, field_only: bool) -> set[int]:
    """The bots the consistency check flags; ``field_only``: each held to the field's dispersion
    (no replay of what an honest bot in its place shows)."""
    with monkeypatch.context() as patch:
        if field_only:
            patch.setattr(ratings_fit, "expectation", lambda *args: None)
        return set(fit_batches([batch]).noisy)


def test_honest_bots_at_the_ends_of_a_long_league_are_not_flagged_as_noisy(monkeypatch):
    """At three seats the deal's luck ties a set's games together less for a bot far from its
    opponents, so an honest bot at an end of the field reads ~1.3x the field's dispersion: held
    to the field's, the check flagged one in 4 of these 12 leagues (300 sets a bot, where its
    one-in-a-thousand bound is 1.27); held to what an honest bot in its place shows, replayed
    under the fit, none. A bot with twice the noise at that end is still flagged (11 of 12)."""
    true = 25 + np.array([-1.5, -0.3, 0.3, 1.5]) * BETA
    honest = [league(np.random.default_rng(seed), true, 3, 400) for seed in range(12)]
    assert sum(bool(_flagged(monkeypatch, batch, True)) for batch in honest) >= 3
    assert all(_flagged(monkeypatch, batch, False) == set() for batch in honest)
    noisy = [league(np.random.default_rng(seed), true, 3, 400, noisy={0: 2.0}) for seed in range(12)]
    assert sum(_flagged(monkeypatch, batch, False) == {0} for batch in noisy) >= 10


def test_an_honest_bot_s_expected_dispersion_grows_with_its_distance_from_the_field():
    """Replayed under the model with the deal's luck, the end bots' expected dispersion is above
    the middle ones' (and above 1, the field's); without luck (or sets of one game) every bot's
    is 1; the table sizes' seat effects line up whatever order the games come in."""
    true = 25 + np.array([-1.5, -0.3, 0.3, 1.5]) * BETA
    batch = league(np.random.default_rng(3), true, 3, 400)
    skills, seat = true - true.mean() + 25, np.zeros(5)
    base = {2: 0, 3: 2}  # a two-seat size with no games, first
    got = expected_dispersion([batch], base, 4, np.arange(4), skills, seat, BETA, 9 / BETA**2)
    assert min(got[0], got[3]) > 1.1 and max(got[1], got[2]) < 1.0
    assert np.array_equal(expected_dispersion([batch], base, 4, np.arange(4), skills, seat, BETA, None), np.ones(4))
    assert np.array_equal(expected_dispersion([batch], base, 4, np.arange(4), skills, seat, BETA, 0.0), np.ones(4))
    # only the bots asked for are replayed
    some = expected_dispersion([batch], base, 4, np.array([3]), skills, seat, BETA, 9 / BETA**2)
    assert some[3] == pytest.approx(got[3], rel=0.05) and np.array_equal(some[:3], np.ones(3))
    # the replays read the three-seat effects at 2..4: an effect of the two-seat size changes
    # nothing, the first of three seats' does
    def edged(position: int) -> np.ndarray:
        effects = np.zeros(5)
        effects[position] = BETA
        return expected_dispersion([batch], base, 4, np.arange(4), skills, effects, BETA, 9 / BETA**2)

    assert np.array_equal(edged(0), got) and not np.allclose(edged(2), got, rtol=0.02)


@pytest.mark.parametrize(("seats", "sets", "noise"), [(2, 1600, 3.0), (3, 400, 2.0)])
def test_the_live_fit_holds_each_bot_to_the_same_expected_dispersion(monkeypatch, seats, sets, noise):
    """``harness serve``'s kept fit replays the same games (two seats included) and flags the
    same bots, with the same dispersions, as the table's fit from scratch: none in an honest
    league (at three seats one whose end bot the field's check flagged), the noisy bot where
    there is one."""
    true = 25 + np.array([-1.5, -0.3, 0.3, 1.5]) * BETA
    for seed, noisy in ((3, None), ({2: 3, 3: 4}[seats], {0: noise})):
        batch = league(np.random.default_rng(seed), true, seats, sets, noisy=noisy)
        g = len(batch.sets)
        live = LiveFit([seats], mu=25.0, sigma=25 / 3, beta=BETA)
        live.add([GameArrays(batch.versions, batch.ranks, np.zeros(batch.ranks.shape), np.arange(g),
                             np.zeros(g, np.int64), batch.sets)])
        got, want = live.fit(), fit_batches([batch])
        assert set(want.noisy) == ({0} if noisy else set())
        assert got.noisy == pytest.approx(want.noisy, rel=1e-6)
        assert seats == 2 or noisy or _flagged(monkeypatch, batch, True)  # (the field's check flagged an end bot)


def test_a_bot_s_replayed_sets_are_its_own_whole_sets_at_most_sets_of_them():
    """The sets replayed for a bot hold it, each with all its games; a bot in fewer sets than
    :data:`SETS` has every one of them replayed, one in more exactly that many (distinct); the
    field's are drawn from every set."""
    true = 25 + np.array([-1.5, -0.3, 0.3, 1.5]) * BETA
    batch = league(np.random.default_rng(3), true, 3, 200)
    for bot in range(4):
        (rows,) = _sample_sets([batch], bot, np.random.default_rng(1))
        own = np.unique(batch.sets[(batch.versions == bot).any(axis=1)])
        chosen = np.unique(batch.sets[rows])
        assert (batch.versions[rows] == bot).any(axis=1).all()
        assert np.isin(chosen, own).all() and chosen.size == min(SETS, own.size) == SETS
        assert rows.size == 6 * chosen.size  # every seat order of each chosen set
    few = TableBatch(batch.versions[:6 * 40], batch.ranks[:6 * 40], batch.sets[:6 * 40])
    (rows,) = _sample_sets([few], None, np.random.default_rng(1))
    assert np.array_equal(rows, np.arange(6 * 40))  # 40 sets: all of them


def test_replayed_games_follow_the_seat_effects_of_their_size_and_share_each_set_s_deal():
    """Replays put each table size's seat effects where the fit keeps them (``base``), and each
    replayed set's games share one deal: with all the noise the deal's, the same seat wins
    every game of a set; with none of it, nothing ties them."""
    versions = np.array([list(p) for p in itertools.permutations(range(3))] * 2)
    batch = TableBatch(versions, np.zeros_like(versions), np.repeat([7, 9], 6))
    skills, base = np.full(3, 25.0), {2: 0, 3: 2}
    effects = np.array([-50.0, 50.0, 10 * BETA, 0.0, 0.0])  # the two-seat size's must change nothing
    rows = [np.zeros(0, np.int64), np.arange(12)]
    two = TableBatch(np.zeros((0, 2), np.int64), np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    _, replayed = _replay([two, batch], base, rows, skills, effects, BETA, 0.5, np.random.default_rng(2))
    assert replayed.versions.shape == (12 * REPLICATES, 3) and np.unique(replayed.sets).size == 2 * REPLICATES
    assert (replayed.ranks[:, 0] == 0).mean() > 0.99  # the first seat's +10 beta
    _, dealt = _replay([two, batch], base, rows, skills, np.zeros(5), BETA, 1.0 - 1e-9, np.random.default_rng(2))
    winner = np.argmin(dealt.ranks, axis=1)  # the seat that won
    assert all(np.unique(winner[dealt.sets == s]).size == 1 for s in np.unique(dealt.sets))
    _, own = _replay([two, batch], base, rows, skills, np.zeros(5), BETA, 0.0, np.random.default_rng(2))
    winner = np.argmin(own.ranks, axis=1)
    assert np.mean([np.unique(winner[own.sets == s]).size > 1 for s in np.unique(own.sets)]) > 0.9


def test_the_replay_is_offered_only_where_the_deal_s_share_can_be_read(monkeypatch):
    """With the games and their swapped pairs, within the swaps' limit; not without either, nor
    past the limit (the swaps' reading stops there too)."""
    batch = league(np.random.default_rng(3), 25 + np.array([-1.0, 0.0, 1.0]) * BETA, 2, 60)
    pairs = pairs_of([batch], 3)
    swaps = ratings_fit._swaps([batch], pairs)
    assert swaps is not None and swaps.pa.size > 0
    sizes = {2: 0}
    assert expectation([batch], swaps, sizes, 3, BETA) is not None
    assert expectation(None, swaps, sizes, 3, BETA) is None and expectation([batch], None, sizes, 3, BETA) is None
    monkeypatch.setattr(ratings_dispersion, "SWAP_MAX_ENTRIES", swaps.pa.size)
    assert expectation([batch], swaps, sizes, 3, BETA) is not None
    monkeypatch.setattr(ratings_dispersion, "SWAP_MAX_ENTRIES", swaps.pa.size - 1)
    assert expectation([batch], swaps, sizes, 3, BETA) is None
    empty = dataclasses.replace(swaps, pa=swaps.pa[:0])
    assert expectation([batch], empty, sizes, 3, 25 / 6) is None


def test_the_live_fit_keeps_its_games_only_while_the_swaps_are_read(monkeypatch):
    """Past the swaps' limit the kept games are dropped and no more are kept (the fit reads
    neither the triples nor the replays there); up to it, every game is kept."""
    batch = league(np.random.default_rng(3), 25 + np.array([-1.0, 0.0, 1.0, 0.5]) * BETA, 3, 40)
    entries = pairs_of([batch], 4).pa.size

    def fed(limit: int) -> LiveFit:
        monkeypatch.setattr(ratings_live, "SWAP_MAX_ENTRIES", limit)
        live = LiveFit([3], mu=25.0, sigma=25 / 3, beta=BETA)
        g = len(batch.sets)
        live.add([GameArrays(batch.versions, batch.ranks, np.zeros(batch.ranks.shape), np.arange(g),
                             np.zeros(g, np.int64), batch.sets)])
        live.fit()
        return live

    kept = fed(entries // 2 + entries % 2)  # 2 x the limit >= the entries: kept
    assert kept.keep_tables and sum(len(t[0]) for t in kept.tables[3]) == len(batch.sets)
    dropped = fed(entries // 2 - 1 + entries % 2)
    assert not dropped.keep_tables and dropped.tables == {}
    g = len(batch.sets)
    dropped.add([GameArrays(batch.versions, batch.ranks, np.zeros(batch.ranks.shape), np.arange(g) + g,
                            np.ones(g, np.int64), batch.sets)])
    assert dropped.tables == {}


def _feed(live: LiveFit, batch: TableBatch, first: int, last: int) -> None:
    """Add the sets ``first`` to ``last`` of a 3-seat ``batch`` (6 games a set) to ``live``."""
    rows = slice(6 * first, 6 * last)
    g = 6 * (last - first)
    live.add([GameArrays(batch.versions[rows], batch.ranks[rows], np.zeros((g, 3)), np.arange(6 * first, 6 * last),
                         np.zeros(g, np.int64), batch.sets[rows])])


def test_a_quick_fit_tests_the_noises_again_once_the_games_grew_a_percent(monkeypatch):
    """``harness serve``'s fit of a few more games keeps the earlier fit's verdict on the
    noises' spread until the pairs of seats grew by 1% since it was last tested (at 1,000,000
    games the test is half a refresh's time), then tests again; a fit of every step always does."""
    calls: list[int] = []
    real = ratings_fit.fit_noise

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ratings_fit, "fit_noise", counted)
    batch = league(np.random.default_rng(3), 25 + np.array([-1.0, -0.3, 0.3, 1.0]) * BETA, 3, 402)
    live = LiveFit([3], mu=25.0, sigma=25 / 3, beta=BETA)

    def add(first: int, last: int) -> int:
        _feed(live, batch, first, last)
        calls.clear()
        live.fit()
        return len(calls)

    assert add(0, 300) >= 1  # from scratch
    assert add(300, 301) == 0  # 0.3% more: the earlier verdict
    assert add(301, 302) == 0
    assert add(302, 305) == 1  # 1.7% more since it was tested: tested again
    assert add(305, 306) == 0


def test_a_deferred_noise_test_runs_after_the_fit_and_one_that_fails_makes_the_next_fit_whole(monkeypatch):
    """``harness serve`` shows a quick fit's page before its due test of the noises' spread
    (``defer_test``): the fit leaves the test, :meth:`LiveFit.test_noises` runs it once (a
    verdict that holds until 1% more pairs of seats), games added meanwhile void it (the next
    fit tests again), and a test that finds a spread to fit makes the next fit one of every step."""
    calls: list[int] = []
    real = ratings_fit.fit_noise
    verdict: dict[str, object] = {}

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return verdict["noise"] if "noise" in verdict else real(*args, **kwargs)

    monkeypatch.setattr(ratings_fit, "fit_noise", counted)
    batch = league(np.random.default_rng(3), 25 + np.array([-1.0, -0.3, 0.3, 1.0]) * BETA, 3, 420)
    live = LiveFit([3], mu=25.0, sigma=25 / 3, beta=BETA)

    def add(first: int, last: int, fit: bool = True) -> int:
        _feed(live, batch, first, last)
        calls.clear()
        if fit:
            live.fit(defer_test=True)
        return len(calls)

    assert add(0, 300) >= 1 and live.noise_test is None  # from scratch: tested as it fits
    assert add(300, 305) == 0 and live.noise_test is not None  # due, and left
    assert live.test_noises() is True and len(calls) == 1  # run once: still no spread to fit
    assert live.test_noises() is None and len(calls) == 1
    assert add(305, 306) == 0 and live.noise_test is None  # the verdict holds at 0.3% more
    assert add(306, 310) == 0 and live.noise_test is not None
    add(310, 311, fit=False)  # games since the fit: its test is void
    assert live.test_noises() is None and calls == []
    assert add(311, 312) == 0 and live.noise_test is not None  # and the next fit leaves it again
    verdict["noise"] = object()  # a test that finds a spread to fit
    assert live.test_noises() is False
    verdict.clear()
    assert add(312, 313) >= 1 and live.full_games == live.games  # every step, the noises' test in it


def test_a_quick_fit_computes_the_entries_terms_at_its_starts_for_new_entries_only_and_twice_whole(monkeypatch):
    """A live fit of a few more games starts both its maximisations where the last fit's ended
    (under the field's weight, and each bot's own), whose terms are kept (ratings_model.Point):
    there only the entries new since are computed; each then takes one Newton step (a start that
    near: ratings_model.maximise's ``near``), the entries computed whole. The two run on two
    threads (ratings_local.localise_ahead), so their computations are counted per thread."""
    import threading

    import harness.league.ratings_model as ratings_model

    per_thread: dict[str, list[int]] = {}
    real = ratings_model._log_phis
    monkeypatch.setattr(ratings_model, "_log_phis", lambda z: (
        per_thread.setdefault(threading.current_thread().name, []).append(z.size), real(z))[1])
    # a long league: one set more moves the maximum by ~2e-3, its seat effects by under 1e-3
    batch = league(np.random.default_rng(6), 25 + np.array([-1.0, -0.4, 0.0, 0.3, 1.0]) * BETA, 3, 2000)
    live = LiveFit([3], mu=25.0, sigma=25 / 3, beta=BETA)

    _feed(live, batch, 0, 1990)
    live.fit()
    entries = live.columns["pa"].size
    _feed(live, batch, 1990, 1991)
    per_thread.clear()
    live.fit(defer_test=True)
    new = live.columns["pa"].size - entries
    whole = live.columns["pa"].size
    assert sorted(per_thread.values()) == [[new, whole], [new, whole]], (new, per_thread)
