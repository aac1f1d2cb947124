"""The in-process bots of graded strength that bench/matchmaking.py part 5 plays on the real engines."""

from __future__ import annotations

import importlib.util
import itertools
import random
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.games import get_game
from harness.league.ratings_fit import fit_table
from harness.league.schedule_adaptive import table_fit_answer

REPO = Path(__file__).resolve().parent.parent


def _bench_module():
    spec = importlib.util.spec_from_file_location("greedy_mix", REPO / "bench" / "greedy_mix.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["greedy_mix"] = module
    spec.loader.exec_module(module)
    return module


greedy_mix = _bench_module()


@pytest.mark.parametrize("game,players", [("crisps", 2), ("dominoes", 2), ("dominoes", 3), ("epizodiak", 3)])
def test_a_greedy_bot_plays_the_reference_choice_whatever_its_random_stream(game: str, players: int) -> None:
    """p = 1 at every seat: the game is the greedy bots' game, the same whatever the rng (a policy
    that drew a random move would show it); and the same as a loop that calls the bot's choose."""
    engine = get_game(game)
    choose = greedy_mix.load_greedy(game)
    state = engine.new_state(players, 11)
    while not state.is_terminal():
        legal = state.legal_actions()
        got = choose(state.observation(state.current_player), legal)
        state.apply(legal[got] if isinstance(got, int) else got)
    expected = state.result()["ranking"]
    for seed in range(3):
        assert greedy_mix.play_game(game, 11, [1.0] * players, random.Random(seed)) == expected


def test_random_play_depends_on_the_random_stream_and_is_reproducible() -> None:
    rankings = {tuple(greedy_mix.play_game("epizodiak", 5, [0.0, 0.0, 0.0], random.Random(s))) for s in range(12)}
    assert len(rankings) > 1
    assert greedy_mix.play_game("crisps", 3, [0.3, 0.6], random.Random(9)) == \
        greedy_mix.play_game("crisps", 3, [0.3, 0.6], random.Random(9))


def test_greedy_beats_random_in_dominoes() -> None:
    """The premise of a graded field, on a sample: p = 1 ahead of p = 0 in most games
    (measured 0.93 over 300 games; a fixed seed, so the test is deterministic)."""
    rng = random.Random(1)
    ahead = games = 0
    for deal in range(15):
        for seats, ranking in greedy_mix.play_set("dominoes", deal, [1.0, 0.0], rng):
            ahead += ranking[seats.index(0)] < ranking[seats.index(1)]
            games += 1
    assert games == 30 and ahead >= 20


def test_a_field_records_every_seat_order_of_a_set_and_every_pair_of_seats() -> None:
    field = greedy_mix.Field("epizodiak", [1.0, 0.5, 0.0, 0.2], seed="t")
    games = field.play([3, 0, 2])
    games += field.play([1, 2, 3])
    assert [g[0] for g in games[:6]] == [tuple([3, 0, 2][i] for i in p) for p in itertools.permutations(range(3))]
    assert field.sets == [0] * 6 + [1] * 6
    assert field.versions == [g[0] for g in games] and field.ranks == [g[1] for g in games]
    wins = np.array(field.wins)
    assert wins.sum() == 12 * 3  # three pairs of seats per game, a shared place half each way
    # the counts agree with the games: bot 2 against bot 3
    ahead = sum((r[s.index(2)] < r[s.index(3)]) + 0.5 * (r[s.index(2)] == r[s.index(3)]) for s, r in games)
    assert wins[2, 3] == ahead and wins[2, 3] + wins[3, 2] == 12


def test_the_until_answer_reads_the_top_of_the_active_versions() -> None:
    """table_fit_answer (what stops an adaptive league, and what the bench applies): the lowest
    P(>next) along the fit's order among active versions, the top K and the next one."""
    rng = random.Random(4)
    games = []
    for s in range(300):  # bot 1 far ahead of 2, 2 far ahead of 3, 3 barely ahead of 4
        a, b = rng.sample([1, 2, 3, 4], 2)
        p = {(1, 2): 0.95, (2, 3): 0.95, (3, 4): 0.55}
        lo, hi = min(a, b), max(a, b)
        win = rng.random() < (p.get((lo, hi)) or 0.99)
        games.append(((lo, hi), (0, 1) if win else (1, 0), s))
    fit = fit_table(games)
    answer = table_fit_answer(fit, [1, 2, 3, 4], top=2)
    pairs = [(1, 2), (2, 3)]
    probs = [fit.p_better(a, b) for a, b in pairs]
    assert answer.top == [1, 2] and answer.pair == pairs[probs.index(min(probs))]
    assert answer.confidence == pytest.approx(min(probs))
    worst = table_fit_answer(fit, [1, 2, 3, 4], top=3)
    assert fit.order[:2] == [1, 2] and set(fit.order[2:]) == {3, 4}
    assert worst.pair == tuple(fit.order[2:4]) and worst.confidence < answer.confidence  # the close pair
    without_two = table_fit_answer(fit, [1, 3, 4], top=1)  # 2 is retired: 1's next is the fit's third
    assert without_two.pair == (1, fit.order[2]) and without_two.top == [1]
    assert without_two.confidence == pytest.approx(fit.p_better(1, fit.order[2]))
