"""A bot's own noise read from the order of three players in one game
(harness/league/ratings_triples.py and its use in harness/league/ratings_noise.py): the six
orders' probabilities, the triples' counts from explicit games, the estimating function's zero
expectation, and on leagues drawn from the model with known truth, a noisy bot among a few close
ones found where its slope and swapped games alone do not find it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_ratings_model import BETA, league

import harness.league.ratings_fit as ratings_fit
from harness.league.queries import GameArrays
from harness.league.ratings_fit import TableBatch, fit_batches
from harness.league.ratings_live import LiveFit
from harness.league.ratings_triples import (
    ORDERS,
    Triples,
    _orders,
    others_median,
    triple_reading,
    triple_score_info,
    triples_of,
)


def test_the_six_orders_are_a_distribution_that_matches_draws():
    rng = np.random.default_rng(0)
    m, b = rng.normal(0, 1.5, (5, 3)), np.exp(rng.normal(0, 0.4, (5, 3)))
    probs = _orders(m, b)
    assert probs.sum(axis=1) == pytest.approx(np.ones(5), abs=1e-6)
    draws = m[:, None, :] + rng.normal(0, 1, (5, 200_000, 3)) * b[:, None, :]
    first_to_last = np.argsort(-draws, axis=2)
    for c, order in enumerate(ORDERS):
        share = np.all(first_to_last == np.array(order), axis=2).mean(axis=1)
        assert share == pytest.approx(probs[:, c], abs=0.005)


def test_a_noisy_player_finishes_in_the_middle_less_often():
    """Three equal skills, the first player at twice the noise: it is between the other two with
    probability 2 (1/4 + asin(-0.8) / (2 pi)) = 0.205 (its two margins correlated by -4/5),
    against 1/3 for an equal player."""
    middle = [c for c, order in enumerate(ORDERS) if order[1] == 0]
    noisy = _orders(np.zeros((1, 3)), np.array([[2.0, 1.0, 1.0]]))[0, middle].sum()
    equal = _orders(np.zeros((1, 3)), np.ones((1, 3)))[0, middle].sum()
    assert noisy == pytest.approx(2 * (0.25 + math.asin(-0.8) / (2 * math.pi)), abs=1e-6)
    assert equal == pytest.approx(1 / 3, abs=1e-6)


def test_the_triples_count_each_game_s_orders_of_three():
    """A 3-seat game (ranks 2, 0, 1: the second seat first, then the third, then the first), a
    4-seat game with its four triples, and a 3-seat game with a shared place (left out)."""
    three = TableBatch(np.array([[0, 1, 2], [0, 1, 2]]), np.array([[2, 0, 1], [0, 0, 1]]), np.array([0, 1]))
    four = TableBatch(np.array([[3, 0, 1, 2]]), np.array([[0, 3, 1, 2]]), np.array([2]))
    triples = triples_of([three, four], 4)
    assert triples is not None and triples.counts.sum() == 1 + 4
    got = {(tuple(b), ORDERS[int(np.argmax(c))]) for b, c in zip(triples.bots.tolist(), triples.counts)}
    # bots in seat order, and the order of their positions first to last
    assert ((0, 1, 2), (1, 2, 0)) in got
    assert {((3, 0, 1), (0, 2, 1)), ((3, 0, 2), (0, 2, 1)), ((3, 1, 2), (0, 1, 2)), ((0, 1, 2), (1, 2, 0))} <= got
    assert triples_of([TableBatch(np.array([[0, 1]]), np.array([[0, 1]]), np.array([0]))], 2) is None


def test_the_estimating_function_has_zero_expectation_under_the_model():
    """Counts in exact proportion to the model's probabilities: every bot's score is 0 (the
    triple's likelihood and its pairs' are both true likelihoods); a bot's sensitivity is
    positive where the pairs tell little (close skills) and its noise moves the orders."""
    rng = np.random.default_rng(1)
    skills, lam = rng.normal(0, 2, 5), rng.normal(0, 0.3, 5)
    bots = np.array([rng.choice(5, 3, replace=False) for _ in range(12)])
    seats = np.tile(np.arange(3), (12, 1))
    seat = np.array([0.3, 0.0, -0.3])
    counts = 1000 * _orders(skills[bots] + seat[seats], 2.0 * np.exp(lam[bots]))
    triples = Triples(bots, seats, counts, np.arange(12), np.arange(12), counts)
    score, sens, _, _ = triple_score_info(triples, skills, seat, lam, 2.0)
    assert np.abs(score).max() < 1e-3 * np.abs(np.diag(sens)).max()
    _, sens, square, _ = triple_score_info(triples, np.zeros(5), np.zeros(3), np.zeros(5), 2.0)
    played = np.unique(bots)
    assert np.all(np.diag(sens)[played] > 0) and np.all(np.diag(square)[played] > 0)


def test_the_reading_measures_a_noisy_bot_relative_to_the_others():
    """Bot 0 at twice the noise among 4 close bots, 400 sets: its reading is within 3 standard
    errors of log 2, the others' within 3 of 0 (the median bot is the common beta)."""
    rng = np.random.default_rng(2)
    true = 25 + rng.normal(0, BETA / 2, 4)
    batch = league(rng, true, 3, 400, noisy={0: 2.0})
    triples = triples_of([batch], 4)
    assert triples is not None
    lam, var, read, _, _ = triple_reading(triples, true - true.mean(), np.zeros(3), BETA, math.log(4))
    assert read.all()
    assert abs(lam[0] - math.log(2)) < 3 * math.sqrt(var[0])
    assert np.all(np.abs(lam[1:]) < 3 * np.sqrt(var[1:]))
    assert lam[0] > 3 * math.sqrt(var[0])  # measured, not just allowed


def test_a_noisy_bot_among_close_ones_is_found_by_its_orders_of_three(monkeypatch):
    """Bot 0 at twice the noise among 4 bots spread beta/2 (64 sets of 3 seats): with the orders
    of three read its noise is fitted and its interval contains its skill; with its slope and
    swapped games alone (the triples switched off) its noise is not fitted and its interval
    misses."""
    rng = np.random.default_rng(22)
    true = 25 + rng.normal(0, BETA / 2, 4)
    true[0] = 25 + 0.8 * BETA
    batch = league(rng, true, 3, 64, noisy={0: 2.0})
    truth = true - true.mean() + 25
    fit = fit_batches([batch])
    assert fit.noise[0] > 1.5 and max(fit.noise[b] for b in (1, 2, 3)) < 1.2
    assert fit.interval(0)[0] <= truth[0] <= fit.interval(0)[1]
    monkeypatch.setattr(ratings_fit, "triples_of", lambda *args: None)
    without = fit_batches([batch])
    assert without.noise.get(0, 1.0) < 1.2
    assert not without.interval(0)[0] <= truth[0] <= without.interval(0)[1]


def test_the_live_fit_reads_the_orders_of_three_as_the_fit_from_scratch():
    """A league of 3-seat sets (bot 0 at twice the noise) and 2-seat sets, given to the live fit
    (harness serve's) in two parts: its first fit is fit_batches' of the same games, the noise
    fitted from the orders of three included (the seat effects' indices as the fit's: the 2-seat
    table's first)."""
    rng = np.random.default_rng(22)
    true = 25 + rng.normal(0, BETA / 2, 4)
    true[0] = 25 + 0.8 * BETA
    three = league(rng, true, 3, 64, noisy={0: 2.0})
    two = league(rng, true, 2, 20)
    two = TableBatch(two.versions, two.ranks, two.sets + 1000)
    want = fit_batches([two, three])
    assert want.noise and want.noise[0] > 1.5
    live = LiveFit([2, 3], mu=25.0, sigma=25 / 3, beta=BETA)
    parts = [(three, slice(0, 200)), (two, slice(None)), (three, slice(200, None))]
    live.add([GameArrays(b.versions[s], b.ranks[s], np.zeros(b.ranks[s].shape), np.arange(len(b.sets[s])),
                         np.zeros(len(b.sets[s]), dtype=np.int64), b.sets[s]) for b, s in parts])
    got = live.fit()
    assert got.noise == pytest.approx(want.noise, abs=1e-6)
    assert all(got.mu[v] == pytest.approx(want.mu[v], abs=1e-6) for v in want.mu)


def test_each_bot_is_read_against_the_median_of_the_others():
    """Brute force on random rows, a bot not measured against all measured; one noisy bot among 4
    is read against the middle of the other three (0), not of all four (0.05)."""
    rng = np.random.default_rng(3)
    for n in (2, 3, 4, 5, 8):
        x = rng.normal(size=(4, n + 1))
        measured = np.ones(n + 1, dtype=bool)
        measured[-1] = False
        want = [[np.median(np.delete(row[:n], i)) if i < n else np.median(row[:n]) for i in range(n + 1)] for row in x]
        assert others_median(x, measured) == pytest.approx(np.array(want))
    assert others_median(np.array([0.7, 0.0, 0.1, -0.1]), np.ones(4, dtype=bool))[0] == 0.0


def test_the_orders_likelihood_stays_finite_for_a_pair_the_model_calls_certain():
    """A pair 100 points apart (24 betas): its normal CDF is 1.0 in floating point, and each
    probability is clipped to [1e-12, 1 - 1e-12], so no order's log-likelihood is -inf and
    both outcomes keep a probability."""
    from harness.league.ratings_triples import _pairs_of_orders

    logs, outcome = _pairs_of_orders(np.array([[125.0, 25.0, 75.0]]), np.full((1, 3), BETA))
    assert np.isfinite(logs).all()
    assert outcome[0, 0, 0] == pytest.approx(1 - 1e-12, abs=1e-15) and outcome[0, 0, 1] == pytest.approx(1e-12, rel=1e-3)


def test_one_game_of_three_is_one_triple_and_tied_or_two_seat_games_none():
    """A single 3-seat game with three different ranks is one triple entry (its order counted
    once); a game with a tie, or 2-seat games only, give none."""
    from harness.league.ratings_triples import ORDERS, triple_sets, triples_of

    one = TableBatch(np.array([[2, 0, 1]]), np.array([[1, 2, 0]]), np.array([5]))
    triples = triples_of([one], 3)
    assert triples is not None and triples.bots.tolist() == [[2, 0, 1]] and triples.counts.sum() == 1
    assert ORDERS[int(np.flatnonzero(triples.counts[0])[0])] == (2, 0, 1)  # seat 2 first, then 0, then 1
    assert triple_sets(triples, 4).tolist() == [1.0, 1.0, 1.0, 0.0]  # each of its bots in one set, bot 3 in none
    tied = TableBatch(np.array([[2, 0, 1]]), np.array([[0, 0, 1]]), np.array([5]))
    pairs_only = TableBatch(np.array([[0, 1], [1, 0]]), np.array([[0, 1], [1, 0]]), np.array([5, 5]))
    assert triples_of([tied], 3) is None and triples_of([pairs_only], 2) is None


def test_the_orders_of_three_are_read_only_for_a_full_fit_of_a_league_within_the_swaps_limit(monkeypatch):
    """The rating history's plain fit never reads them, nor does a league past the swaps' limit
    (many bots, each met by opponents spread enough for the slope); a full fit within it does."""
    calls: list[int] = []
    real = ratings_fit.triples_of

    def spy(batches, k, *args):  # type: ignore[no-untyped-def]
        calls.append(k)
        return real(batches, k, *args)

    monkeypatch.setattr(ratings_fit, "triples_of", spy)
    rng = np.random.default_rng(4)
    batch = league(rng, 25 + rng.normal(0, BETA, 4), 3, 8)
    fit_batches([batch])
    assert calls == [4]
    fit_batches([batch], plain=True)
    assert calls == [4]
    monkeypatch.setattr(ratings_fit, "SWAP_MAX_ENTRIES", 10)  # this league's pairs are past it
    fit_batches([batch])
    assert calls == [4]
