"""The match's SPRT on the exact multinomial likelihood: hand-computed maximum-likelihood
distributions, agreement with fishtest's ``LLR_logistic`` (re-implemented here straight from
its formulas), streaks, 3- and 4-seat sets, and the error rates in simulation."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from harness.report.sprt import SprtParams, constrained_mle, expected_score, llr, llr_bounds, multinomial


def fishtest_llr(pentanomial: list[int], elo0: float, elo1: float) -> float:
    """fishtest's LLR_logistic written from its formulas: empty cells get 1e-3, the values are
    i/4, each hypothesis' distribution is the empirical one reweighted by 1 / (1 + x (a - s))
    with x the root (brentq) of the secular equation, and the LLR is N sum f ln(p1 / p0)."""
    counts = [c if c else 1e-3 for c in pentanomial]
    n = sum(counts)
    freqs = [c / n for c in counts]
    values = [i / 4 for i in range(5)]

    def mle(s: float) -> list[float]:
        a = [v - s for v in values]
        x = brentq(lambda x: sum(f * d / (1 + x * d) for f, d in zip(freqs, a)), -1 / max(a) + 1e-9,
                   -1 / min(a) - 1e-9, xtol=1e-14)
        return [f / (1 + x * d) for f, d in zip(freqs, a)]

    p0, p1 = mle(1 / (1 + 10 ** (-elo0 / 400))), mle(1 / (1 + 10 ** (-elo1 / 400)))
    return n * sum(f * math.log(b / a) for f, a, b in zip(freqs, p0, p1))


def scores_of(pentanomial: list[int]) -> list[float]:
    return [i / 4 for i, c in enumerate(pentanomial) for _ in range(c)]


def test_the_constrained_mle_by_hand():
    # two values: the only distribution with mean 0.5 is (0.5, 0.5); x solves 0.3 / (1 - x/2) = 0.5: 0.8
    assert constrained_mle([0.0, 1.0], [0.3, 0.7], 0.5) == pytest.approx([0.5, 0.5])
    # three values, f = (0.2, 0.5, 0.3), s = 0.5: 0.3 (1 - x/2) = 0.2 (1 + x/2) gives x = 0.4,
    # p = (0.2 / 0.8, 0.5, 0.3 / 1.2) = (0.25, 0.5, 0.25)
    assert constrained_mle([0.0, 0.5, 1.0], [0.2, 0.5, 0.3], 0.5) == pytest.approx([0.25, 0.5, 0.25])
    # already at the mean: the observed frequencies themselves (x = 0)
    assert constrained_mle([0.0, 0.5, 1.0], [0.25, 0.5, 0.25], 0.5) == pytest.approx([0.25, 0.5, 0.25])


def test_the_multinomial_keeps_fishtest_s_anchors_at_any_table_size():
    assert multinomial([1.0, 1.0, 0.5]) == ([0.0, 0.25, 0.5, 0.75, 1.0], [1e-3, 1e-3, 1.0, 1e-3, 2.0])
    values, counts = multinomial([11 / 12, 1 / 12 + 10 / 12])  # the same value computed two ways: one cell
    assert values == pytest.approx([0.0, 0.25, 0.5, 0.75, 11 / 12, 1.0]) and counts[4] == 2.0


def test_llr_by_hand_on_a_two_valued_record():
    """Only 0 and 1 observed, 6 and 4 times, H0 at 0.5: the anchors 1/4, 1/2, 3/4 hold 1e-3 each;
    computed with them dropped (their share is 3e-3 of 10 sets) the LLR is 10 sum f ln(p1/p0)
    with two-point distributions p = (1 - s, s): 6 ln((1 - s1)/(1 - s0)) + 4 ln(s1/s0)."""
    s0, s1 = 0.5, expected_score(100)
    by_hand = 6 * math.log((1 - s1) / (1 - s0)) + 4 * math.log(s1 / s0)
    assert llr([0.0] * 6 + [1.0] * 4, SprtParams(elo0=0, elo1=100)) == pytest.approx(by_hand, abs=0.01)
    # s1 = 1 / (1 + 10^-0.25) = 0.6401: 6 ln(0.3599 / 0.5) + 4 ln(0.6401 / 0.5) = -1.972 + 0.988
    assert by_hand == pytest.approx(-0.984, abs=1e-3)


def test_a_streak_is_not_a_decision():
    """Ten sets of two wins: fishtest's LLR_logistic gives 0.56 for elo0=0, elo1=20 (the normal
    approximation with a pseudo-set gave 3.21 and stopped the match there)."""
    params = SprtParams(elo0=0, elo1=20)
    assert fishtest_llr([0, 0, 0, 0, 10], 0, 20) == pytest.approx(0.559, abs=0.001)
    assert llr([1.0] * 10, params) == pytest.approx(fishtest_llr([0, 0, 0, 0, 10], 0, 20), rel=1e-6)
    assert llr([1.0] * 10, params) < llr_bounds(params)[1]
    assert llr([0.0] * 10, params) < 0
    # a streak decides only once long enough: somewhere between 10 and 200 sets
    assert llr([1.0] * 200, params) >= llr_bounds(params)[1]


@pytest.mark.parametrize("counts", [[5, 20, 50, 20, 5], [4, 18, 50, 22, 6], [3, 15, 48, 26, 8], [10, 22, 36, 22, 10],
                                    [8, 40, 104, 44, 12], [2, 10, 30, 40, 18], [0, 0, 3, 9, 13], [1, 0, 0, 0, 0]])
def test_two_seats_is_fishtest_s_llr_logistic(counts):
    for elo0, elo1 in ((0, 10), (-5, 5), (0, 20), (-20, 20)):
        assert llr(scores_of(counts), SprtParams(elo0=elo0, elo1=elo1)) == pytest.approx(
            fishtest_llr(counts, elo0, elo1), rel=1e-6, abs=1e-9)


def test_within_one_percent_of_fishtest_at_the_90th_percentile_from_25_sets():
    rng = random.Random(3)
    params = SprtParams(elo0=0, elo1=10)
    for sets in (25, 50):
        diffs = []
        for _ in range(200):
            elo = rng.choice((-10, 0, 5, 10, 20))
            win = expected_score(elo)
            counts = [0] * 5
            for _ in range(sets):
                first = rng.random() < win
                second = first if rng.random() < 0.3 else rng.random() < win
                counts[2 * (first + second)] += 1
            ours, theirs = llr(scores_of(counts), params), fishtest_llr(counts, 0, 10)
            diffs.append(abs(ours - theirs) / max(abs(theirs), 1.0))
        assert sorted(diffs)[int(0.9 * len(diffs))] <= 0.01


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=40), st.floats(-30, 30), st.floats(1, 40))
def test_properties_at_three_seats(twelfths, elo0, width):
    """Sets of 6 games (scores k/12): the MLEs are distributions with the hypotheses' means; the
    LLR is antisymmetric in the hypotheses; mirroring every score (A and B swapped) mirrors the
    hypotheses. (Raising one set's score can lower the LLR a little: the multinomial's cells
    are the values observed, so a set moved onto an anchor changes the support.)"""
    scores = [k / 12 for k in twelfths]
    params, swapped = SprtParams(elo0=elo0, elo1=elo0 + width), SprtParams(elo0=elo0 + width, elo1=elo0)
    values, counts = multinomial(scores)
    freqs = [c / sum(counts) for c in counts]
    for s in (expected_score(params.elo0), expected_score(params.elo1)):
        p = constrained_mle(values, freqs, s)
        assert sum(p) == pytest.approx(1.0, abs=1e-9) and min(p) > 0
        assert sum(a * q for a, q in zip(values, p)) == pytest.approx(s, abs=1e-9)
    value = llr(scores, params)
    assert llr(scores, swapped) == pytest.approx(-value, abs=1e-7)
    mirrored = SprtParams(elo0=-params.elo1, elo1=-params.elo0)
    assert llr([1 - x for x in scores], mirrored) == pytest.approx(-value, rel=1e-6, abs=1e-7)


def test_the_mle_is_the_best_distribution_with_that_mean():
    """Any other distribution on the same values with the same mean has a lower likelihood."""
    rng = random.Random(5)
    values, counts = multinomial([1 / 12, 5 / 12, 7 / 12, 7 / 12, 1.0, 11 / 12, 0.5])
    freqs = [c / sum(counts) for c in counts]
    best = constrained_mle(values, freqs, 0.55)
    top = sum(f * math.log(p) for f, p in zip(freqs, best))
    for _ in range(200):  # move mass along a direction that keeps the sum and the mean
        i, j, k = rng.sample(range(len(values)), 3)
        # d_i + d_j + d_k = 0 and a_i d_i + a_j d_j + a_k d_k = 0
        d_i = 1.0
        d_j = -(values[k] - values[i]) / (values[k] - values[j])
        d_k = -d_i - d_j
        eps = rng.uniform(-1, 1) * 0.5 * min(best[i], best[j], best[k]) / max(1.0, abs(d_j), abs(d_k))
        other = list(best)
        other[i] += eps * d_i
        other[j] += eps * d_j
        other[k] += eps * d_k
        assert sum(f * math.log(p) for f, p in zip(freqs, other)) <= top + 1e-12


def _run(rng: random.Random, elo: float, params: SprtParams, limit: int) -> str:
    """One simulated match: sets of two correlated games at a true Elo difference ``elo``."""
    lower, upper = llr_bounds(params)
    win = expected_score(elo)
    scores: list[float] = []
    for _ in range(limit):
        first = rng.random() < win
        second = first if rng.random() < 0.3 else rng.random() < win
        scores.append((first + second) / 2)
        value = llr(scores, params)
        if value >= upper:
            return "H1"
        if value <= lower:
            return "H0"
    return "none"


def test_error_rates_in_simulation():
    """At elo0 H1 is accepted at most about alpha of the time; at elo1, H0 at most about beta
    (alpha = beta = 0.05, 300 matches each: the bound 0.05 plus 2.5 standard errors, 0.082)."""
    rng = random.Random(11)
    params = SprtParams(elo0=0, elo1=100)
    at_h0 = [_run(rng, 0, params, 400) for _ in range(300)]
    at_h1 = [_run(rng, 100, params, 400) for _ in range(300)]
    assert at_h0.count("none") + at_h1.count("none") <= 3  # it decides
    assert at_h0.count("H1") / 300 <= 0.082 and at_h1.count("H0") / 300 <= 0.082
    assert at_h0.count("H0") / 300 >= 0.9 and at_h1.count("H1") / 300 >= 0.9
