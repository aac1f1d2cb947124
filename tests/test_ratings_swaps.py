"""A bot's own noise read from its duplicate sets' swapped games (harness/league/ratings_swaps.py
and its use in harness/league/ratings_noise.py): the bivariate normal, the swaps' counts, and
on leagues drawn from the model with known truth, a noisy bot among a few close ones found where
the slope of its results alone does not find it, and an honest field left at the common beta."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from test_ratings_model import BETA, league

import harness.league.ratings_fit as ratings_fit
import harness.league.ratings_noise as ratings_noise
from harness.league.ratings_fit import TableBatch, fit_batches
from harness.league.ratings_model import pairs_of
from harness.league.ratings_swaps import bvn, swaps_of


def test_the_bivariate_normal_matches_scipy_s():
    rng = np.random.default_rng(0)
    h, k, rho = rng.normal(0, 2, 60), rng.normal(0, 2, 60), rng.uniform(-0.95, 0.95, 60)
    h[:5] = 0.0  # the formula's division by h: the zeros are nudged
    got = bvn(h, k, rho)
    for i in range(60):
        want = multivariate_normal(mean=[0, 0], cov=[[1, rho[i]], [rho[i], 1]]).cdf([h[i], k[i]])
        assert got[i] == pytest.approx(want, abs=1e-5)


def test_the_swaps_count_each_pair_s_two_games_of_a_set():
    """Two sets of bots 0 and 1 at 2 seats, both seat orders: in set 0 bot 0 wins both games, in
    set 1 each wins as first seat (a split); a game of set 2 has no swapped partner."""
    versions = np.array([[0, 1], [1, 0], [0, 1], [1, 0], [0, 1]])
    ranks = np.array([[0, 1], [1, 0], [0, 1], [0, 1], [0, 1]])
    sets = np.array([0, 0, 1, 1, 2])
    batch = TableBatch(versions, ranks, sets)
    pairs = pairs_of([batch], 2)
    wins = np.where(pairs.sign > 0, pairs.result, 1.0 - pairs.result)
    swaps = swaps_of(pairs, pairs.which, sets, wins)
    assert swaps is not None and swaps.counts.shape == (1, 4)
    # (ahead in both, first only, second only, neither) for bot 0, from its first seat's game
    assert swaps.counts[0].tolist() == [1.0, 1.0, 0.0, 0.0]
    assert swaps.sets == 3 and sorted(swaps.row_set.tolist()) == [0, 1]


def _close_league(seed: int, noisy: dict[int, float] | None) -> tuple[np.ndarray, TableBatch]:
    rng = np.random.default_rng(seed)
    true = 25 + rng.normal(0, BETA / 2, 4)
    true[0] = 25 + 0.8 * BETA  # its compression shows, and the slope alone barely measures it
    return true, league(rng, true, 3, 64, noisy=noisy)


def test_a_noisy_bot_among_close_ones_is_found_by_its_swapped_games(monkeypatch):
    """Bot 0 at twice the noise among 4 bots spread beta/2 (64 sets): with the swaps read its
    noise is fitted well above the others' and its interval contains its skill; with the slope
    alone (the swaps' and the triples' readings switched off) its noise is not fitted and its interval misses."""
    true, batch = _close_league(7, {0: 2.0})
    fit = fit_batches([batch])
    truth = true - true.mean() + 25
    assert fit.noise and fit.noise[0] > 1.5 and max(fit.noise[b] for b in (1, 2, 3)) < 1.2
    low, high = fit.interval(0)
    assert low <= truth[0] <= high
    monkeypatch.setattr(ratings_noise, "SWAP_MAX_ENTRIES", 0)
    monkeypatch.setattr(ratings_fit, "triples_of", lambda *args: None)  # the orders of three find it too
    slope_only = fit_batches([batch])
    assert slope_only.noise.get(0, 1.0) < 1.2
    low, high = slope_only.interval(0)
    assert not low <= truth[0] <= high


def test_an_honest_close_field_keeps_the_common_beta():
    """The same leagues with every bot at beta: no noise is fitted."""
    for seed in (3, 4, 5):
        _, batch = _close_league(seed, None)
        assert all(abs(x - 1) < 0.1 for x in fit_batches([batch]).noise.values())


def test_a_bots_swap_variance_is_its_sets_variance_with_cr1_and_at_least_its_inverse_information(monkeypatch):
    """swap_reading's variance of each bot's lambda: the variance of its score over its sets
    times G / (G - 1), over its information squared, never under 1 / information; then the
    others' median's variance added (median_contrast_variance). Scripted scores, 10 sets each."""
    from harness.league.ratings_triples import median_contrast_variance

    k = 4
    info, variance = np.full(k, 2.0), np.array([3.0, 1.0, 12.5, 0.5])
    monkeypatch.setattr(ratings_noise, "margins", lambda *args: np.zeros(1))
    monkeypatch.setattr(ratings_noise, "luck_share", lambda *args: 0.0)
    monkeypatch.setattr(ratings_noise, "swap_score_info", lambda *args: (np.zeros(k), info, variance))
    monkeypatch.setattr(ratings_noise, "swap_sets", lambda *args: np.full(k, 10.0))
    _, var, _, _, inverse, measured = ratings_noise.swap_reading(None, np.zeros(k), np.zeros(1), 1.0)  # type: ignore[arg-type]
    own = np.array([3.0 * 10 / 9 / 4, 0.5, 12.5 * 10 / 9 / 4, 0.5])  # the sets' (CR1) or 1 / info, the larger
    assert measured.all() and inverse == pytest.approx(np.full(k, 0.5))
    assert var == pytest.approx(median_contrast_variance(own, measured))
