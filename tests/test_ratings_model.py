"""The table's fit beyond TrueSkill's plain model: each bot's own small-sample factor, the
prior's spread estimated from the field, a seat effect per table size, the per-bot consistency
check; on leagues drawn from the model with known truth (small sizes: the bench measures the
rates at scale, bench/ratings_cells.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import t as student

from harness.league.ratings_fit import TableBatch, bot_factors, fit_batches, fit_model, shrunk_degrees

BETA = 25 / 6


def league(rng: np.random.Generator, true: np.ndarray, seats: int, sets: int, *, edge: float = 0.0,
           noisy: dict[int, float] | None = None, luck: float = 3.0, weights: np.ndarray | None = None) -> TableBatch:
    """``sets`` duplicate sets of random tables (bots drawn with probabilities ``weights``), every
    seat order; a seat's luck N(0, luck^2) shared by the set; ``edge`` added to the first seat;
    ``noisy``: bot -> its performance noise in beta."""
    k = true.size
    tables = [rng.choice(k, seats, replace=False, p=weights) for _ in range(sets)]
    perms = np.array(list(itertools.permutations(range(seats))))
    versions = np.concatenate([t[perms] for t in tables])
    set_of = np.repeat(np.arange(sets), len(perms))
    noise = np.full(k, BETA)
    for bot, times in (noisy or {}).items():
        noise[bot] = times * BETA
    rest = np.sqrt(noise[versions] ** 2 - luck ** 2)
    perf = true[versions] + rng.normal(0, luck, (sets, seats))[set_of] + rng.normal(0, 1, versions.shape) * rest
    perf[:, 0] += edge
    ranks = np.argsort(np.argsort(-perf, axis=1), axis=1)
    return TableBatch(versions, ranks, set_of)


def test_each_bot_s_factor_rests_on_its_own_sets():
    # sqrt(G / (G - 1)) t(G - 1) / 1.96: at 10 sets sqrt(10/9) 2.262 / 1.96 = 1.2166
    assert bot_factors(np.array([10]))[0] == pytest.approx(math.sqrt(10 / 9) * 2.2622 / 1.96, abs=1e-3)
    assert bot_factors(np.array([4]))[0] == pytest.approx(math.sqrt(4 / 3) * student.ppf(0.975, 3) / 1.959964)
    factors = bot_factors(np.array([1, 2, 3, 5, 10, 40, 400]))
    assert factors[0] == factors[1] and all(np.diff(factors[1:]) < 0) and factors[-1] == pytest.approx(1.0, abs=0.01)  # fewer own sets: wider
    # in a fit: bot 0 plays in few sets (drawn rarely), the others in many: its factor is larger
    rng = np.random.default_rng(1)
    weights = np.array([0.02] + [0.98 / 9] * 9)
    batch = league(rng, 25 + rng.normal(0, BETA / 2, 10), 2, 300, weights=weights)
    model = fit_model([batch], 10)
    assert model.sets_per_bot[0] < 20 < min(model.sets_per_bot[1:])
    assert model.factor[0] > max(model.factor[1:])
    # its own sets' factor (the t's degrees of freedom those of its shrunk variance), times the
    # dispersion's shrinkage towards the field's (upwards only)
    g, d = model.sets_per_bot[0], model.dispersion[0]
    shrunk = math.sqrt(max(1.0, (g * d + 4) / (g + 4) / d))
    degrees = shrunk_degrees(model.sets_per_bot, model.sets, 4.0)
    assert model.factor[0] == pytest.approx(bot_factors(model.sets_per_bot[:1], degrees[:1])[0] * shrunk)


def test_mu_is_relative_to_the_mean_of_the_table_s_bots():
    rng = np.random.default_rng(2)
    fit = fit_batches([league(rng, 25 + rng.normal(0, BETA, 6), 3, 30)])
    assert sum(fit.mu.values()) / 6 == pytest.approx(25.0, abs=1e-6)


@pytest.mark.parametrize("spread", [0.25, 2.0])
def test_the_prior_s_spread_is_estimated_from_the_field(spread):
    rng = np.random.default_rng(3)
    true = 25 + rng.normal(0, spread * BETA, 30)
    model = fit_model([league(rng, true, 2, 600)], 30)
    truth = float(np.std(true))
    assert 0.6 * truth < model.prior_sd < 1.5 * truth, (model.prior_sd, truth)


def test_the_prior_s_spread_stays_within_its_bounds():
    # every game level: no spread is measured; what remains is the results' own noise (the
    # marginal likelihood cannot tell a spread below it from none), within the bounds
    versions = np.array([[0, 1], [1, 0], [1, 2], [2, 1], [0, 2], [2, 0]] * 5)
    level = TableBatch(versions, np.zeros_like(versions), np.repeat(np.arange(15), 2))
    assert BETA / 10 <= fit_model([level], 3).prior_sd < BETA / 4
    more = TableBatch(np.tile(versions, (10, 1)), np.zeros((300, 2), dtype=np.int64), np.repeat(np.arange(150), 2))
    assert BETA / 10 <= fit_model([more], 3).prior_sd < fit_model([level], 3).prior_sd
    # bot 0 always wins by far: the spread is large but bounded by 3 sigma
    ranks = np.where(versions == 0, 0, np.where(versions == 1, 1, 1))
    ranks[(versions[:, 0] == 2) & (versions[:, 1] == 1)] = [0, 1]
    ranks[(versions[:, 0] == 1) & (versions[:, 1] == 2)] = [1, 0]
    assert fit_model([TableBatch(versions, ranks, np.repeat(np.arange(15), 2))], 3).prior_sd <= 3 * 25 / 3 + 1e-9


def _slope(fitted: np.ndarray, true: np.ndarray) -> float:
    x, y = true - true.mean(), fitted - fitted.mean()
    return float(np.dot(x, y) / np.dot(x, x))


def test_a_seat_effect_is_fitted_and_keeps_the_mu_differences():
    """A first seat worth +beta at 3 seats: the fit finds it (each table size's effects sum to
    0: +2/3 beta for the first, -1/3 for the others), and the mu differences keep their scale;
    the plain model (no seat effect) compresses them."""
    rng = np.random.default_rng(4)
    slopes, plain_slopes, firsts = [], [], []
    for _ in range(6):
        true = 25 + rng.normal(0, BETA, 6)
        batch = league(rng, true, 3, 120, edge=BETA)
        fit = fit_batches([batch])
        plain = fit_batches([batch], plain=True)
        slopes.append(_slope(np.array([fit.mu[b] for b in range(6)]), true))
        plain_slopes.append(_slope(np.array([plain.mu[b] for b in range(6)]), true))
        firsts.append(fit.seat_effects[3][0])
        assert sum(fit.seat_effects[3]) == pytest.approx(0.0, abs=1e-6)
    assert 2 / 3 * BETA * 0.8 < np.mean(firsts) < 2 / 3 * BETA * 1.2
    assert 0.92 < np.mean(slopes) < 1.08 and np.mean(plain_slopes) < 0.92


def test_a_noisy_bot_is_flagged_and_its_interval_widened():
    rng = np.random.default_rng(5)
    true = 25 + rng.normal(0, BETA / 2, 5)
    fit = fit_batches([league(rng, true, 3, 200, noisy={0: 3.0})])
    assert set(fit.noisy) == {0} and fit.noisy[0] > 1.5
    sets = np.array([fit.sets_of[v] for v in sorted(fit.sets_of)])
    own = bot_factors(sets, shrunk_degrees(sets, fit.sets, 4.0))[0]
    assert fit.widened[0] == pytest.approx(own * math.sqrt(fit.noisy[0]))
    # the same league without the noisy bot's noise: nobody is flagged
    quiet = fit_batches([league(np.random.default_rng(5), true, 3, 200)])
    assert quiet.noisy == {} and quiet.widened == {}


def test_coverage_and_calibration_in_a_small_sparse_field():
    """30 bots with about 10 sets each, 20 leagues (600 intervals): the 95% intervals cover
    the truth (relative to the mean) 90-99% of the time; P(>next) in 0.5-0.7 is not confident
    beyond what happens (observed >= claimed - 0.1)."""
    rng = np.random.default_rng(6)
    covered = total = 0
    claimed, right = [], []
    for _ in range(20):
        true = 25 + rng.normal(0, BETA / 2, 30)
        fit = fit_batches([league(rng, true, 3, 100)])
        truth = true - true.mean() + 25
        for bot in range(30):
            low, high = fit.interval(bot)
            covered += low <= truth[bot] <= high
            total += 1
        for a, b, p in zip(fit.order, fit.order[1:], fit.p_next):
            claimed.append(p)
            right.append(true[a] > true[b])
    assert 0.90 <= covered / total <= 0.99, covered / total
    low = [(c, r) for c, r in zip(claimed, right) if c < 0.7]
    assert np.mean([r for _, r in low]) >= np.mean([c for c, _ in low]) - 0.1


def test_the_table_says_which_bot_was_flagged():
    from harness.report.tables import TableRow, format_table

    rows = [TableRow(rank=1, bot="a", version="1", current=True, mu=26.0, sigma=0.5, rating=24.5, games=60, wins=30,
                     mean_rank=1.4, violations=0),
            TableRow(rank=2, bot="b", version="1", current=True, mu=24.0, sigma=0.9, rating=21.3, games=60, wins=20,
                     mean_rank=1.6, violations=0, noisy=2.4, widened=1.6)]
    for fmt in ("table", "md"):
        text = format_table(rows, fmt)
        assert "+-1.76*" in text and "+-0.98*" not in text
        assert "* b@1: results noisier than the model allows" in text and "sigma x1.60" in text
        assert "a@1: results noisier" not in text
    assert '"noisy": 2.4' in format_table(rows, "json")
    # a bot whose fitted noise is well above beta is named too; one near beta is not
    rows[0].noise, rows[1].noise, rows[1].noisy = 1.1, 1.8, None
    text = format_table(rows, "table")
    assert "* b@1: plays noisier than the others (fitted performance noise 1.80x beta" in text and "+-1.76*" in text
    assert "a@1:" not in text and "+-0.98*" not in text and "results noisier" not in text


def test_past_the_exact_trace_the_spread_comes_from_each_bot_s_own_information(monkeypatch):
    """Past EXACT_TRACE_BOTS the EM's posterior variances are each bot's inverse information
    (its opponents' uncertainty left out): in a field where every bot met many, the same spread."""
    import harness.league.ratings_fit as ratings_fit

    rng = np.random.default_rng(7)
    batch = league(rng, 25 + rng.normal(0, BETA, 40), 2, 2000)
    exact = fit_model([batch], 40).prior_sd
    monkeypatch.setattr(ratings_fit, "EXACT_TRACE_BOTS", 0)
    approximate = fit_model([batch], 40).prior_sd
    assert approximate != exact and approximate == pytest.approx(exact, rel=0.05)


def test_the_interval_is_mu_plus_or_minus_1_96_sigma():
    """The table's 95% interval (docs/ratings.md) is mu +- 1.96 sigma, for every bot."""
    rng = np.random.default_rng(21)
    fit = fit_batches([league(rng, 25 + rng.normal(0, BETA, 6), 3, 30)])
    for v in fit.mu:
        low, high = fit.interval(v)
        assert (low + high) / 2 == pytest.approx(fit.mu[v])
        assert high - low == pytest.approx(2 * 1.96 * fit.sigma[v])


@pytest.mark.parametrize("k", [2, 3])
def test_two_sets_already_measure_the_data_s_weight_and_one_does_not(k):
    """The data's weight against the prior (the sandwich's information over its meat) is measured
    from two duplicate sets on, for two bots or more; a single set says nothing about the
    variance between sets, so its weight stays 1."""
    rng = np.random.default_rng(22)
    true = 25 + rng.normal(0, BETA, k)
    batch = league(rng, true, 2, 2 * k, edge=3.0)
    two = np.isin(batch.sets, np.unique(batch.sets)[:2])
    assert fit_model([TableBatch(batch.versions[two], batch.ranks[two], batch.sets[two])], k).weight != 1.0
    one = batch.sets == batch.sets[0]
    assert fit_model([TableBatch(batch.versions[one], batch.ranks[one], batch.sets[one])], k).weight == 1.0


def _quick_fit_of(batches: list[TableBatch], k: int, earlier) -> object:  # type: ignore[no-untyped-def]
    """The fit of ``batches`` started from ``earlier`` (a fit of fewer of the same games) as the
    live table makes it (ratings_live.LiveFit): quick, keeping the earlier spread if it holds."""
    import dataclasses

    import harness.league.ratings_fit as ratings_fit
    from harness.league.ratings_model import meat, pairs_of, seat_pair_scores, seat_positions

    pairs = pairs_of(batches, k)

    def meat_at(skills, seat, scales):  # type: ignore[no-untyped-def]
        return meat(batches, seat_pair_scores(pairs, skills, seat, scales), k)

    return ratings_fit.fit_pairs(pairs, k, meat_at, seat_positions(batches),
                                 warm=dataclasses.replace(earlier.warm, quick=True),
                                 swaps=ratings_fit._swaps(batches, pairs))


def test_a_quick_fit_from_an_earlier_one_agrees_with_the_fit_from_scratch():
    """The live table fits a few more games from its last fit, keeping the prior's spread and
    the data's weight when one EM step moves the spread under 1% (ratings_fit._quick_fit). Its
    seat effects and skills are those of the fit from scratch (the same prior on each seat's
    effect, sd sigma); with three bots or more, a spread that moves is estimated again, not
    kept."""
    rng = np.random.default_rng(1)
    true = 25 + rng.normal(0, BETA, 2)
    first, more = league(rng, true, 2, 4, edge=6.0), league(rng, true, 2, 4, edge=6.0)
    quick, scratch = _quick_fit_of([first, more], 2, fit_model([first], 2)), fit_model([first, more], 2)
    assert quick.seat_effects[2][0] == pytest.approx(scratch.seat_effects[2][0], rel=1e-3)
    assert quick.skills == pytest.approx(scratch.skills, abs=1e-3)
    # three bots, an earlier fit of 3 sets: 40 more move the spread, which is fitted again
    rng = np.random.default_rng(2)
    true = 25 + rng.normal(0, BETA, 3)
    first, more = league(rng, true, 2, 3, edge=6.0), league(rng, true, 2, 40, edge=6.0)
    earlier = fit_model([first], 3)
    quick, scratch = _quick_fit_of([first, more], 3, earlier), fit_model([first, more], 3)
    assert abs(scratch.prior_sd - earlier.prior_sd) > 0.2 * earlier.prior_sd
    assert quick.prior_sd == pytest.approx(scratch.prior_sd, rel=0.05)


def test_a_quick_fit_of_no_new_games_stays_at_the_earlier_fit():
    """The earlier fit is the maximum under its own prior precision 1 / (spread^2 weight): the
    quick fit of the same games, started there, stays there, the spread kept (2 bots: the
    prior's sd sigma; 3 and 4: the fitted spread). Few sets, so the prior weighs."""
    for k, sets in ((2, 2), (3, 3), (4, 6)):
        rng = np.random.default_rng(5)
        true = 25 + rng.normal(0, BETA, k)
        first = league(rng, true, 2, sets, edge=2.0)
        earlier = fit_model([first], k)
        quick = _quick_fit_of([first], k, earlier)
        assert quick.prior_sd == earlier.prior_sd, k
        assert quick.skills == pytest.approx(earlier.skills, abs=1e-3), k
        # and its covariance, the spread's own uncertainty included from 3 bots on
        assert quick.covariance == pytest.approx(earlier.covariance, rel=1e-2, abs=1e-4), k


def _all_or_nothing_sets(true: np.ndarray, firsts: list[bool]) -> TableBatch:
    """Duplicate sets of 4-seat tables (every seat order) where bot 0 is first in every game of a
    set or last in every game of it (``firsts``), the others ranked by their true skill."""
    perms = np.array(list(itertools.permutations(range(4))))
    versions, ranks = [], []
    for s, first in enumerate(firsts):
        table = np.array([0, *(1 + (np.arange(3) + 3 * s) % (true.size - 1))])
        for row in table[perms]:
            others = sorted((j for j in range(4) if row[j] != 0), key=lambda j: -true[row[j]])
            seats = [int(np.flatnonzero(row == 0)[0]), *others] if first else [*others, int(np.flatnonzero(row == 0)[0])]
            rank = np.empty(4, dtype=np.int64)
            rank[seats] = np.arange(4)
            versions.append(row)
            ranks.append(rank)
    return TableBatch(np.array(versions), np.array(ranks), np.repeat(1000 + np.arange(len(firsts)), len(perms)))


def test_a_bot_is_flagged_from_its_third_set_on():
    """The consistency check needs a bot's own sets to show its dispersion: a bot that wins every
    game of one set and loses every game of the next (its luck does not cancel within a set) is
    flagged in its third set, and not in two, where its dispersion is as far above the 99.9th
    percentile (docs/ratings.md "The consistency check")."""
    rng = np.random.default_rng(31)
    true = 25 + rng.normal(0, BETA / 2, 8)
    field = league(rng, true, 4, 40)
    kept = ~(field.versions == 0).any(axis=1)  # bot 0 plays only its own sets
    field = TableBatch(field.versions[kept], field.ranks[kept], field.sets[kept])
    three = fit_batches([field, _all_or_nothing_sets(true, [True, False, True])])
    assert three.sets_of[0] == 3 and set(three.noisy) == {0} and three.noisy[0] > 10
    two = fit_model([field, _all_or_nothing_sets(true, [True, False])], 8)
    assert two.sets_per_bot[0] == 2 and two.dispersion[0] > 10.83 and not two.noisy.any()  # chi2(1)'s 99.9%: 10.83


def test_a_fit_of_no_games_leaves_every_bot_at_the_prior():
    """fit_model / fit_arrays on bot indices with no game yet: every mu at the prior's mean, a
    finite covariance, no set (what a caller with bots but no results gets, not an error)."""
    from harness.league.ratings_fit import fit_arrays

    skills, covariance, sets = fit_arrays([], 3)
    assert skills.tolist() == [25.0, 25.0, 25.0] and sets == 0
    assert covariance.shape == (3, 3) and np.all(np.isfinite(covariance)) and np.all(np.diag(covariance) > 0)


@pytest.mark.parametrize("edge,sets", [(BETA, 120), (-4 * BETA, 10)])
def test_the_maximum_is_where_the_log_posterior_is_flat_in_every_skill_and_seat_effect(edge, sets):
    """Newton's method with step halving (ratings_model.maximise) stops at the maximum of the
    log-posterior: the likelihood of the seat pairs, a normal prior on each skill (sd sigma
    around mu) and on each seat effect (sd sigma around 0). Its numerical gradient there is 0,
    with 3-seat tables whose seat effects are not symmetric."""
    from harness.league.ratings_model import Hessian, maximise, pair_terms, pairs_of

    rng = np.random.default_rng(4)
    batch = league(rng, 25 + rng.normal(0, BETA, 6), 3, sets, edge=edge)
    pairs = pairs_of([batch], 6)
    precision, scale = 1 / (25 / 3) ** 2, math.sqrt(2) * BETA
    skills, seat, _ = maximise(pairs, Hessian(pairs, 6), np.full(6, 25.0), np.zeros(pairs.seats), 25.0, precision,
                               scale, 30, seat_precision=precision)
    assert abs(seat[0]) > 1.0  # the seat effect is there to be found

    def value(x: np.ndarray) -> float:
        s, g = x[:6], x[6:]
        return float(pair_terms(pairs, s, g, scale, 1)[0] - 0.5 * precision * (np.sum((s - 25.0) ** 2) + np.sum(g ** 2)))

    at = np.concatenate([skills, seat])
    for i in range(at.size):
        step = np.zeros(at.size)
        step[i] = 1e-5
        assert (value(at + step) - value(at - step)) / 2e-5 == pytest.approx(0.0, abs=1e-3), i


def test_the_t_has_the_degrees_of_freedom_of_the_shrunk_variance():
    """A bot's variance is its own sets' (G - 1 degrees of freedom) shrunk towards the field's
    with 4 sets' weight, so its t has Satterthwaite's 1 / (a^2 / (G - 1) + (1 - a^2) / F), a =
    G / (G + 4), F the field's degrees of freedom (sets of all bots less sets less k - 1)."""
    # 4 bots in the same 4 sets of 4 seats: F = 16 - 4 - 3 = 9, a = 1/2: 1 / (1/12 + 3/36) = 6
    assert shrunk_degrees(np.array([4, 4, 4, 4]), 4, 4.0) == pytest.approx([6.0] * 4)
    # 100 bots in 10 two-seat sets each (500 sets): F = 1000 - 500 - 99 = 401, a = 10/14
    a = 10 / 14
    assert shrunk_degrees(np.full(100, 10), 500, 4.0) == pytest.approx(1 / (a * a / 9 + (1 - a * a) / 401))
    # two bots: the field's variance is the bot's own, nothing is added; no prior: G - 1; one set: G - 1
    assert shrunk_degrees(np.array([10, 10]), 10, 4.0) == pytest.approx([9.0, 9.0])
    assert shrunk_degrees(np.array([4, 4, 4, 4]), 4, 0.0) == pytest.approx([3.0] * 4)
    assert shrunk_degrees(np.array([1, 30, 30]), 31, 4.0)[0] == 1.0
    # in a fit: every bot of 4 plays all 4 sets of 4 seats: sqrt(4/3) t(6) / 1.96 = 1.4416, not t(3)'s 1.87
    rng = np.random.default_rng(8)
    model = fit_model([league(rng, 25 + rng.normal(0, BETA / 2, 4), 4, 4)], 4)
    d = model.dispersion
    shrink = np.sqrt(np.maximum(1.0, (4 * d + 4) / 8 / d))
    assert model.factor / shrink == pytest.approx([math.sqrt(4 / 3) * student.ppf(0.975, 6) / 1.959964] * 4)
    assert all(model.factor / shrink < 0.8 * bot_factors(np.array([4]))[0])  # 1.44 against 1.87


def test_coverage_with_four_sets_of_four_seats():
    """4 bots, 4 seats, 4 duplicate sets (96 games), 120 leagues: the 95% intervals cover the
    truth 93-97.5% of the time (with t's G - 1 = 3 degrees of freedom, 1.87 times sigma, they
    covered 98-99%: bench/ratings.py part 5)."""
    rng = np.random.default_rng(9)
    covered = 0
    for _ in range(120):
        true = 25 + rng.normal(0, BETA / 2, 4)
        fit = fit_batches([league(rng, true, 4, 4)])
        truth = true - true.mean() + 25
        covered += sum(fit.interval(b)[0] <= truth[b] <= fit.interval(b)[1] for b in range(4))
    assert 0.93 <= covered / 480 <= 0.975, covered / 480


def test_each_bots_sets_are_counted_in_sets_of_mixed_bots_too():
    """Sets whose games seat different bots (a set key shared by games of other tables, not the
    harness's duplicate sets) take the sparse path: still each bot's number of sets is the sets
    it played in, once each."""
    versions = np.array([[0, 1], [1, 0], [1, 2], [0, 1], [1, 0], [2, 3], [3, 2]])
    ranks = np.array([[0, 1], [1, 0], [0, 1], [1, 0], [0, 1], [0, 1], [1, 0]])
    sets = np.array([10, 10, 10, 11, 11, 12, 12])  # set 10 mixes tables {0, 1} and {1, 2}
    model = fit_model([TableBatch(versions, ranks, sets)], 4)
    assert model.sets == 3 and model.sets_per_bot.tolist() == [2, 2, 2, 1]


def test_the_spreads_em_stops_after_12_steps_when_it_never_settles(monkeypatch):
    """The prior's spread is refitted until a step changes it by under 1%, and at most 12 times:
    a spread that keeps jumping (scripted here, 3 and 6 in turn) stops the EM at its 12th step."""
    import harness.league.ratings_fit as ratings_fit

    steps: list[float] = []

    def jumping(*args, **kwargs):  # type: ignore[no-untyped-def]
        steps.append(3.0 if len(steps) % 2 else 6.0)
        return steps[-1]

    monkeypatch.setattr(ratings_fit, "_prior_sd", jumping)
    rng = np.random.default_rng(2)
    fit_model([league(rng, 25 + rng.normal(0, BETA, 4), 2, 12)], 4)
    assert len(steps) == 12


def _random_pairs(rng: np.random.Generator, n: int, k: int, seats: int = 3):  # type: ignore[no-untyped-def]
    """Entries of random bots, seats and results (a's total result and the count), some far apart."""
    from harness.league.ratings_model import Pairs

    pa, pb = rng.integers(0, k, n), rng.integers(0, k, n)
    wins = rng.integers(0, 4, n).astype(float)
    e = np.empty(0)
    return Pairs(e, e, e, pa, pb, rng.integers(0, seats, n), rng.integers(0, seats, n), wins,
                 wins + rng.integers(0, 4, n), np.zeros(n, dtype=np.int64), pa, pb, seats)


def test_a_kept_point_is_extended_by_the_new_entries_alone_and_counts_that_grew_are_read_anew(monkeypatch):
    """A live fit's entries keep their index and new ones are appended: the terms taken at its
    last maximum (ratings_model.Point) are reused for the old entries there, whatever their
    results became (they enter linearly), and only the new entries' are computed; the terms
    equal a computation from nothing. The likelihood sees skill differences only: the same
    skills shifted by a constant are the same point."""
    import dataclasses

    import harness.league.ratings_model as ratings_model
    from harness.league.ratings_model import last_point, pair_terms, seed

    rng = np.random.default_rng(11)
    k, n, m = 40, 3000, 2600
    pairs = _random_pairs(rng, n, k)
    skills, seat, scale = 25 + rng.normal(0, 12, k), np.array([0.4, 0.0, -0.4]), math.sqrt(2) * BETA
    keep = (np.maximum(pairs.pa, pairs.pb) < 30)[:m]
    pairs.pa[:m][~keep], pairs.pb[:m][~keep] = 0, 1  # an old entry involves old bots only
    old = dataclasses.replace(pairs, pa=pairs.pa[:m], pb=pairs.pb[:m], sa=pairs.sa[:m], sb=pairs.sb[:m],
                              wins=pairs.wins[:m] - 1.0 * (pairs.wins[:m] > 0), count=pairs.count[:m] - 1, memo=[])
    pair_terms(old, skills[:30], seat, scale, 2)  # bots 30.. appear in new entries only: at mu below
    point = last_point(old)
    assert point is not None and point.z.size == m
    sized: list[int] = []
    real = ratings_model._log_phis
    monkeypatch.setattr(ratings_model, "_log_phis", lambda z: (sized.append(z.size), real(z))[1])
    fresh = dataclasses.replace(pairs, memo=[])
    new_bots = np.where(np.arange(k) < 30, skills, 25.0)
    other = dataclasses.replace(pairs, pa=pairs.pa.copy(), memo=[])
    other.pa[5], other.pa[6] = other.pa[6], other.pa[5]  # entries numbered otherwise: refused
    assert not seed(other, point) and other.memo == []
    assert seed(dataclasses.replace(pairs, pa=pairs.pa.copy(), memo=[]), point)  # a copy: compared, the same
    assert seed(pairs, point)
    reused = pair_terms(pairs, new_bots, seat, scale, 2)
    assert sized == [n - m]
    whole = pair_terms(fresh, new_bots, seat, scale, 2)
    assert sized == [n - m, n]
    assert reused[0] == pytest.approx(whole[0], rel=1e-12)
    for got, want in zip(reused[1:], whole[1:]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)
    shifted = pair_terms(pairs, new_bots + 3.25, seat, scale, 2)  # the memo: no new computation
    assert sized == [n - m, n] and shifted[0] == reused[0]
    pair_terms(pairs, new_bots + np.linspace(0, 1e-6, k), seat, scale, 2)  # not a shift: computed
    assert sized == [n - m, n, n]


def test_a_start_near_the_maximum_stops_after_one_step_whose_square_is_under_the_tolerance():
    """maximise's ``near``: Newton's error after a step s is about K s^2 (K small), so from a
    start near the maximum one full step whose square is under the tolerance ends it, within
    that of the maximum; without ``near`` a second step confirms it. With the seat effects
    still moving the blocks' steps are not Newton's together: no early stop."""
    import harness.league.ratings_model as ratings_model
    from harness.league.ratings_model import Hessian, maximise, pairs_of

    rng = np.random.default_rng(4)
    batch = league(rng, 25 + rng.normal(0, BETA, 6), 3, 120)
    pairs = pairs_of([batch], 6)
    hessian, precision, scale = Hessian(pairs, 6), 1 / (25 / 3) ** 2, math.sqrt(2) * BETA
    best, seat, _ = maximise(pairs, hessian, np.full(6, 25.0), np.zeros(pairs.seats), 25.0, precision, scale, 30,
                             seat_precision=precision, tolerance=1e-10)
    start = best + np.array([0.02, -0.01, 0.0, 0.01, -0.02, 0.01])
    counted: list[int] = []
    real = ratings_model._point

    def point(*args):  # type: ignore[no-untyped-def]
        counted.append(1)
        return real(*args)

    ratings_model._point = point
    try:
        for near, evaluations in ((True, 2), (False, 3)):
            counted.clear()
            pairs.memo.clear()
            got, _, _ = maximise(pairs, hessian, start.copy(), seat.copy(), 25.0, precision, scale, 30,
                                 seat_precision=precision, tolerance=1e-3, near=near)
            assert len(counted) == evaluations, near
            assert np.max(np.abs(got - best)) < 1e-4
        counted.clear()
        pairs.memo.clear()
        maximise(pairs, hessian, start.copy(), seat + 0.05, 25.0, precision, scale, 30, seat_precision=precision,
                 tolerance=1e-3, near=True)
        assert len(counted) >= 3  # the seat effects moved 0.05: a second step
    finally:
        ratings_model._point = real


def test_a_hessian_pattern_is_reused_while_the_pairs_of_bots_stay_and_made_again_when_they_change():
    """Hessian.on: a live fit's entries grow while its pairs of bots keep their index: the
    pattern is reused (the same sort) and gives the matrix a new one gives; a new pair of bots
    or a new bot makes a new pattern."""
    import dataclasses

    from harness.league.ratings_model import Hessian

    rng = np.random.default_rng(12)
    pairs = _random_pairs(rng, 400, 12)
    pp = np.unique(np.stack([pairs.pa, pairs.pb], axis=1), axis=0)
    pairs = dataclasses.replace(pairs, pair=np.searchsorted(pp[:, 0] * 100 + pp[:, 1], pairs.pa * 100 + pairs.pb),
                                ppa=pp[:, 0], ppb=pp[:, 1], memo=[])
    first = dataclasses.replace(pairs, pa=pairs.pa[:300], pb=pairs.pb[:300], pair=pairs.pair[:300], memo=[])
    old = Hessian(first, 12)
    grown = old.on(pairs, 12)
    assert grown.order is old.order and grown.pairs is pairs
    second = rng.uniform(0.1, 1.0, 400)
    np.testing.assert_allclose(grown.at(second, 0.3).toarray(), Hessian(pairs, 12).at(second, 0.3).toarray())
    assert old.on(pairs, 13).order is not old.order  # a new bot
    more = dataclasses.replace(pairs, ppa=np.append(pp[:, 0], 0), ppb=np.append(pp[:, 1], 0), memo=[])
    assert old.on(more, 12).order is not old.order  # a new pair of bots
