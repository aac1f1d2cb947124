"""The adaptive schedule's matchmaker: its rules as properties over many random leagues."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.league.ratings_fit import fit_ratings
from harness.league.schedule_matchmaker import Matchmaker, MatchParams, adjacent_confidence, fit_skills


def play(mm: Matchmaker, sets: list[tuple[int, ...]], skills: dict[int, float], rng: np.random.Generator,
         games: list | None = None) -> None:
    """Every seat order of each set, performances = skill + noise; recorded under the last round."""
    r = mm.rounds - 1
    for s in sets:
        for seats in itertools.permutations(s):
            perf = [skills[v] + rng.normal(0, 25 / 6) for v in seats]
            ranks = [sorted(perf, reverse=True).index(p) for p in perf]
            mm.record(r, seats, ranks)
            if games is not None:
                games.append((r, seats, ranks))


def league(seed: int, sizes: tuple[int, ...], n: int, rounds: int, *, lag: int = 1) -> tuple[Matchmaker, list]:
    rng = np.random.default_rng(seed)
    skills = {v: float(rng.normal(25, 25 / 3)) for v in range(n)}
    mm = Matchmaker(seed, sizes, params=MatchParams(lag=lag))
    for v in range(n):
        mm.add_bot(v)
    history = []
    for _ in range(rounds):
        sets = mm.plan_round()
        history.append(sets)
        play(mm, sets, skills, rng)
    return mm, history


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 25), sizes=st.sampled_from([(2,), (3,), (2, 3), (3, 4), (2, 4)]), seed=st.integers(0, 10**6))
def test_balance_games_seats_and_sizes(n: int, sizes: tuple[int, ...], seed: int) -> None:
    if n < max(sizes):
        sizes = tuple(k for k in sizes if k <= n) or (2,)
    mm, history = league(seed, sizes, n, rounds=80)
    games = mm.games[:n]
    seats = np.zeros((n, max(sizes)), dtype=np.int64)
    for sets in history:
        for s in sets:
            assert len(set(s)) == len(s), "a bot twice at one table"
            for perm in itertools.permutations(s):
                for seat, v in enumerate(perm):
                    seats[v, seat] += 1
    assert games.min() >= 100
    assert games.max() <= 1.25 * games.min(), games
    # every seat order of every set: each bot's games at each seat are its games over the table size
    per_seat = {k: mm.by_size[:n, i] // k for i, k in enumerate(sizes)}
    for v in range(n):
        for seat in range(max(sizes)):
            assert seats[v, seat] == sum(per_seat[k][v] for k in sizes if seat < k)
    # table sizes: every bot gets the same share of each size, within a round's worth of games
    for i, k in enumerate(sizes):
        share = mm.by_size[:n, i]
        assert share.max() - share.min() <= 2 * math.factorial(k) + 0.2 * share.max()


def test_rounds_are_deterministic_and_depend_on_the_seed() -> None:
    a, ha = league(11, (2, 3), 14, rounds=30)
    b, hb = league(11, (2, 3), 14, rounds=30)
    c, hc = league(12, (2, 3), 14, rounds=30)
    assert ha == hb
    assert ha != hc


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), n=st.integers(4, 16), cut=st.integers(1, 40),
       growth=st.sampled_from([0.0, 0.3]))
def test_rebuilt_from_the_same_events_it_chooses_the_same_rounds(seed: int, n: int, cut: int, growth: float) -> None:
    """Resumability: a matchmaker rebuilt from the store's events (bots in arrival order, the sets
    scheduled, the results in order) chooses what the one that never stopped chooses, and so
    does one planning several rounds at once."""
    rng = np.random.default_rng(seed)
    skills = {v: float(rng.normal(25, 25 / 3)) for v in range(n + 1)}
    params = MatchParams(lag=2, refit_growth=growth)
    mm = Matchmaker(seed, (2, 3), params=params)
    for v in range(n):
        mm.add_bot(v)
    scheduled: list[tuple[int, tuple[int, ...]]] = []
    games: list = []
    for r in range(cut):
        if r == cut // 2:
            mm.add_bot(n)  # a newcomer mid-way
        sets = mm.plan_round()
        scheduled += [(r, s) for s in sets]
        play(mm, sets, skills, rng, games)
    rebuilt = Matchmaker(seed, (2, 3), params=params)
    for v in range(n + 1):
        rebuilt.add_bot(v)
    for r, s in scheduled:
        rebuilt.note_set(r, s)
    for r, seats, ranks in games:
        rebuilt.record(r, seats, ranks)
    block = copy.deepcopy(mm)
    expected = [mm.plan_round() for _ in range(6)]
    assert [rebuilt.plan_round() for _ in range(6)] == expected
    assert [[tuple(block.ids[i] for i in row) for row in sets.tolist()] for sets in block.plan_rounds(6)] == expected


def test_results_of_the_last_lag_rounds_do_not_change_the_choice() -> None:
    """With lag 2, round r reads results of rounds up to r - 2 only: a runner may choose it while
    round r - 1 plays, and whatever order round r - 1's games finish in, r is the same."""
    mm, _ = league(5, (2,), 10, rounds=12, lag=2)
    other = copy.deepcopy(mm)
    (s0, *_) = mm.plan_round()  # round 12 while round 11's results are known to mm...
    other._pending.pop(11, None)  # ...and unknown to other
    assert other.plan_round()[0] == s0


def test_a_newcomer_plays_first_against_opponents_spread_over_the_table() -> None:
    rng = np.random.default_rng(3)
    n = 60
    skills = {v: float(rng.normal(25, 25 / 3)) for v in range(n + 1)}
    mm = Matchmaker(9, (2,), params=MatchParams(lag=1))
    for v in range(n):
        mm.add_bot(v)
    for _ in range(60):
        play(mm, mm.plan_round(), skills, rng)
    order = [mm.ids[i] for i in np.argsort(-mm.fit().mu)]
    mm.add_bot(n)
    sets = mm.plan_round()
    with_new = [s for s in sets if n in s]
    assert sets[: len(with_new)] == with_new, "the newcomer's sets come first in the round"
    assert len(with_new) >= n // 2 - 1
    ranks = sorted(order.index(next(v for v in s if v != n)) for s in with_new)
    assert ranks[0] < n // 10 and ranks[-1] > n - n // 10, "opponents from the top to the bottom of the table"
    # its first 100 games (50 sets of two) within the first ~100 sets of the league after it came
    before = sum(1 for s in sets[: sets.index(with_new[-1]) + 1])
    assert len(with_new) * 2 >= 58 and before <= len(with_new)
    # everyone else still plays exactly one set this round
    others = [v for s in sets for v in s if v != n]
    assert len(others) == len(set(others))


def test_a_retired_version_is_never_chosen_and_keeps_its_rating() -> None:
    mm, _ = league(8, (2, 3), 12, rounds=20)
    before = mm.fit().mu[mm.index[4]]
    mm.retire(4)
    for _ in range(10):
        assert all(4 not in s for s in mm.plan_round())
    assert mm.fit(mm.rounds).mu.size == 12
    assert abs(mm.fit(mm.rounds).mu[mm.index[4]] - before) < 5
    mm.set_roster([v for v in range(12) if v != 4] + [4])  # back again
    assert any(4 in s for s in mm.plan_round())


def test_more_newcomers_than_regular_seats_still_sit_each_bot_at_one_table_a_round() -> None:
    """5 newcomers join 7 bots at tables of 3: only 3 sets' worth of regular opponents exist (two
    seats each), so no more newcomer sets than that, and no bot at two tables of one round."""
    mm, _ = league(5, (3,), 7, rounds=6)
    for v in range(7, 12):
        mm.add_bot(v)
    for _ in range(3):
        sets = mm.plan_round()
        seated = [v for s in sets for v in s]
        assert len(seated) == len(set(seated)), sets
        assert all(len(s) == 3 for s in sets)


def test_a_league_whose_versions_are_all_retired_plans_empty_rounds() -> None:
    """Every version retired (a contest whose teams are all paused): no table, not one of a single
    version against itself, and nobody's games counted."""
    mm, _ = league(3, (2, 3), 6, rounds=4)
    games = mm.games.copy()
    mm.set_roster([])
    assert mm.plan_round() == []
    assert [s.shape for s in mm.plan_rounds(3)] == [(0, 3), (0, 2), (0, 3)]
    assert (mm.games == games).all()


def test_count_fit_is_the_order_free_fit_of_the_games() -> None:
    """On every pair of seats of every game the count fit's mu is exactly the table's fit of
    those games (ratings_fit: the same pairwise composite likelihood and prior); its sigma is
    the Laplace one, the table's the sandwich over duplicate sets, so only mu is compared."""
    rng = np.random.default_rng(1)
    games = []
    for _ in range(400):
        k = int(rng.integers(2, 5))
        versions = [int(v) for v in rng.choice(9, k, replace=False)]
        ranks = [int(r) for r in rng.integers(0, k, k)]  # ties included
        games.append((versions, ranks))
    reference = fit_ratings(games, mu=25, sigma=25 / 3, beta=25 / 6)
    mm = Matchmaker(0, (2, 3, 4))
    for v in range(9):
        mm.add_bot(v)
    for versions, ranks in games:
        order = sorted(range(len(versions)), key=lambda s: ranks[s])
        winners, losers, weights = [], [], []
        for i, s in enumerate(order):
            for t in order[i + 1:]:
                mm._compare(versions, ranks, s, t, winners, losers, weights)
        mm.record_comparisons(0, np.array(winners), np.array(losers), np.array(weights))
    fit = mm.fit()
    for v, (mu, _sigma) in reference.items():
        assert abs(fit.mu[mm.index[v]] - mu) < 1e-5


def test_adjacent_confidence_grows_with_games() -> None:
    wins = np.array([[0.0, 6.0], [4.0, 0.0]])
    few = adjacent_confidence(fit_skills(wins, mu=25, sigma=25 / 3, beta=25 / 6), [0, 1])[0]
    many = adjacent_confidence(fit_skills(wins * 100, mu=25, sigma=25 / 3, beta=25 / 6), [0, 1])[0]
    assert 0.5 < few < many < 1.0
    assert adjacent_confidence(fit_skills(wins.T * 100, mu=25, sigma=25 / 3, beta=25 / 6), [0, 1])[0] < 0.5


def test_a_game_counts_every_pair_of_seats() -> None:
    mm = Matchmaker(0, (4,))
    for v in range(4):
        mm.add_bot(v)
    mm.record(0, [3, 1, 0, 2], [1, 0, 3, 1])  # 1 first, 3 and 2 share second, 0 last
    mm.fit()
    expected = np.zeros((4, 4))
    for a, b in [(1, 3), (1, 2), (1, 0), (3, 0), (2, 0)]:
        expected[a, b] = 1
    expected[3, 2] = expected[2, 3] = 0.5
    assert (mm.wins[:4, :4] == expected).all()
