"""In-process bots of graded strength on the real engines: greedy with probability p, random otherwise.

A bot here is a policy, not a process: at each of its decisions it plays the greedy reference
choice of ``bots/<game>_greedy.py`` (the same ``choose`` function the bot process calls, loaded
from its file) with probability ``p`` and a uniformly random legal action otherwise (a forced
move is played without asking either). A field whose ``p`` is graded has a known true order,
higher p stronger, which bench/matchmaking.py part 5 checks on a sample before it relies on it.

Deals are not cached: ``Game.new_state`` costs 0.03-0.06 ms against 1.3-2 ms for the game it
starts (measured: 270-1,520 games/s per core depending on the game and p), so replaying a set's
deal from its seed is already ~3% of its cost. Outcomes cannot be cached: every pair of bots
plays its own decisions.
"""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from harness.games import Game, get_game

BOTS = Path(__file__).resolve().parent.parent / "bots"

#: (observation, legal actions) -> the greedy choice: an action, or its index in the legal actions
Choose = Callable[[dict[str, Any], list[dict[str, Any]]], Any]


@cache
def load_greedy(game: str) -> Choose:
    """The ``choose`` function of ``bots/<game>_greedy.py`` (a stdlib-only script, loaded from its file)."""
    spec = importlib.util.spec_from_file_location(f"{game}_greedy", BOTS / f"{game}_greedy.py")
    if spec is None or spec.loader is None:
        raise FileNotFoundError(BOTS / f"{game}_greedy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    choose: Choose = module.choose
    return choose


def play_game(game: Game | str, seed: int, greedy: Sequence[float], rng: random.Random) -> list[int]:
    """One game on the deal ``seed``, seat i playing greedy with probability ``greedy[i]`` at each of
    its decisions (uniformly random otherwise); the ranking by seat (0 = first, shared on a tie)."""
    engine = get_game(game) if isinstance(game, str) else game
    choose = load_greedy(engine.name)
    state = engine.new_state(len(greedy), seed)
    while not state.is_terminal():
        seat = state.current_player
        assert seat is not None
        legal = state.legal_actions()
        if len(legal) == 1:
            action = legal[0]
        elif rng.random() < greedy[seat]:
            got = choose(state.observation(seat), legal)
            action = legal[got] if isinstance(got, int) else got
        else:
            action = legal[rng.randrange(len(legal))]
        state.apply(action)
    return list(state.result()["ranking"])


def play_set(game: Game | str, seed: int, greedy: Sequence[float], rng: random.Random
             ) -> list[tuple[tuple[int, ...], list[int]]]:
    """A duplicate set: the deal ``seed`` in every seat order of the bots 0..k-1 whose greedy
    rates are ``greedy``; (bots by seat, ranking by seat) per game."""
    from itertools import permutations

    out = []
    for seats in permutations(range(len(greedy))):
        out.append((seats, play_game(game, seed, [greedy[b] for b in seats], rng)))
    return out


class Field:
    """A league's results on the real engines: bots 0..n-1 of greedy rates ``greedy``; each set
    played is added to ``wins`` (wins[a, b]: a placed ahead of b at a table, every pair of seats,
    a shared place 1/2 each way, as the table's fit reads a game) and to the games kept for the
    table's fit (bots by seat, ranks by seat, the set's number)."""

    def __init__(self, game: str, greedy: Sequence[float], seed: int | str) -> None:
        self.engine = get_game(game)
        self.greedy = list(greedy)
        n = len(self.greedy)
        self.wins = [[0.0] * n for _ in range(n)]
        self.rng = random.Random(seed)
        self.versions: list[tuple[int, ...]] = []
        self.ranks: list[list[int]] = []
        self.sets: list[int] = []
        self.n_sets = 0

    def play(self, members: Sequence[int]) -> list[tuple[tuple[int, ...], list[int]]]:
        """One duplicate set of the bots ``members`` on a fresh deal: (bots by seat, ranking by seat) per game."""
        deal = self.rng.randrange(2**31)
        out = []
        for order, ranking in play_set(self.engine, deal, [self.greedy[m] for m in members], self.rng):
            seats = tuple(members[i] for i in order)
            out.append((seats, ranking))
            self.versions.append(seats)
            self.ranks.append(ranking)
            self.sets.append(self.n_sets)
            for i, a in enumerate(seats):
                for j in range(i + 1, len(seats)):
                    b = seats[j]
                    if ranking[i] < ranking[j]:
                        self.wins[a][b] += 1.0
                    elif ranking[j] < ranking[i]:
                        self.wins[b][a] += 1.0
                    else:
                        self.wins[a][b] += 0.5
                        self.wins[b][a] += 0.5
        self.n_sets += 1
        return out
