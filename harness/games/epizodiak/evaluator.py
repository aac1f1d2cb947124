"""What a tree search needs to know of Epizodiak (see :class:`harness.games.base.Evaluator`).

Epizodiak's rounds are long (~270 random moves), so its playouts differ from the other games':
epsilon-greedy moves (``EPSILON`` random, else the greedy bot's heuristic; ~180 moves a round),
a cutoff scored by :func:`estimate` (sets less ``HAND_WEIGHT`` a tile in hand), and a
progressive bias towards the heuristic's move in the tree. The measurements behind these
choices are in docs/bots.md.
"""

from __future__ import annotations

import random
from typing import Any

from ..base import Action, Evaluator

#: Share of random moves in the epsilon-greedy playouts.
EPSILON = 0.2
#: What a tile still in hand costs in :func:`estimate`, in points.
HAND_WEIGHT = 0.3


def greedy(state: Any, legal: list[Action]) -> int:
    """The index of the action ``bots/epizodiak_greedy.py`` would play (same one-move heuristic,
    same values), read from the engine state directly (hand counts, sizes, singles)."""
    seat = state.current_player
    h = state.hands[seat]
    size = state.sizes[seat]
    single = state.single
    best, best_value = 0, -1e9
    for i, action in enumerate(legal):
        kind = action["type"]
        if kind == "place":
            tiles = action["tiles"]
            if len(tiles) >= size:
                return i  # empties the hand
            value = 10.0 * len(tiles)
            for t in tiles:
                if single[t]:
                    value += 5.0
                elif h[t] >= 3:
                    value -= 40.0
                elif h[t] == 2:
                    value -= 6.0
        elif kind == "discard":
            if size == 3:
                return i
            value = 60.0
        elif kind == "contest":
            value = 70.0
        elif kind == "pickup":
            value = 45.0 if h[state.last_laid[2]] >= 2 else 3.0
        elif kind == "draw":
            value = 5.0
        elif kind == "pass":
            value = 0.5 if state.phase == "drawn" else 0.0
        else:
            value = -1.0
        if value > best_value:
            best, best_value = i, value
    return best


def playout(state: Any, legal: list[Action], rng: random.Random) -> int:
    """Epsilon-greedy playout move: with probability ``EPSILON`` a uniformly random action,
    else :func:`greedy`'s."""
    if rng.random() < EPSILON:
        return rng.randrange(len(legal))
    return greedy(state, legal)


def estimate(state: Any) -> list[float]:
    """Estimated points of each seat for the round in progress: its sets (each a point under the
    default scoring) less ``HAND_WEIGHT`` a tile still in hand (the +3 for emptying goes to the
    emptiest hand)."""
    return [len(state.sets[s]) - HAND_WEIGHT * state.sizes[s] for s in range(len(state.sizes))]


def _round(state: Any) -> int:
    return int(state.round)


EVALUATOR = Evaluator(horizon=_round, scale=2.0, playout=playout, prior=greedy, estimate=estimate)
