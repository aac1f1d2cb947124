"""Single-observer information-set Monte Carlo tree search (SO-ISMCTS, Cowling et al. 2012).

One tree for the deciding seat's information set; each iteration draws a determinization with
the game's ``resample_from_infostate``, walks the tree choosing among the children legal in
that determinization by UCB1 with availability counts, adds one node, plays uniformly random
moves and backs up each node's reward for the seat that moved into it. Decisions with a single
legal action are applied without a node, as the referee does.

Playouts stop at the end of the current deal, hand or round (``HORIZONS``) and score each seat
by the logistic of its points gained there less the best other seat's gain; a playout that
ends the game scores by rank (``(players - 1 - rank) / (players - 1)``). Measured
(bench/strength.py, 50 iterations against the greedy bots): with playouts to the end of the
game ISMCTS lost at Crisps (11 of 36 games) and drew at Dominoes (a 200-point game is ten
hands of noise after the move being judged); stopping at the horizon gave 0.60 and 0.56, and
200 iterations 0.85 and 0.73 (docs/bots.md).

Design choice: the search works on engine states directly (a fresh determinization per
iteration, so no state copies and no JSON inside the loop); actions are keyed by a small
hashable form. Speed per game: bench/ismcts.py, figures in docs/bots.md.
"""

from __future__ import annotations

import importlib
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.games import Game, State

Action = dict[str, Any]
Key = tuple[Any, ...]


def action_key(action: Action) -> Key:
    """A hashable form of an action (lists become tuples), equal for equal actions."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in action.items()))


@dataclass
class Node:
    """A tree node: the action that led here, who played it, and the statistics of that edge."""

    player: int = -1
    visits: int = 0
    available: int = 0
    reward: float = 0.0
    children: dict[Key, Node] = field(default_factory=dict)


@dataclass
class SearchResult:
    """The chosen action, how many iterations were run and the root's visit counts."""

    action: Action
    iterations: int
    visits: dict[Key, int]


def rewards(state: State, players: int) -> list[float]:
    """Each seat's reward in ``[0, 1]`` for a terminal ``state``: 1 for first place, 0 for last."""
    ranking = state.result()["ranking"]
    if players == 1:
        return [1.0]
    return [(players - 1 - r) / (players - 1) for r in ranking]


def _hand_number(state: Any) -> int:
    return int(state.hand_number)


def _deal(state: Any) -> int:
    return int(state.deal)


def _round(state: Any) -> int:
    return int(state.round)


#: Games whose playouts stop at the end of the current hand: the seat's key of the hand, and the
#: score difference worth one logistic unit. Measured: with full playouts to the 200-point target
#: the Dominoes bot lost to greedy (2 of 11 games at 50 iterations): the few points a move
#: decides drown in the noise of the ten hands after it.
HORIZONS: dict[str, tuple[Callable[[Any], int], float]] = {
    "dominoes": (_hand_number, 15.0),
    "crisps": (_deal, 0.5),
    "epizodiak": (_round, 2.0),
}


def score_rewards(state: Any, base: Sequence[int], players: int, scale: float) -> list[float]:
    """Each seat's reward in ``(0, 1)``: logistic of its points gained since ``base`` less the best
    gain of another seat (gains, not totals: a seat far behind still tells good moves from bad)."""
    scores = [s - b for s, b in zip(state.scores, base)]
    out = []
    for i in range(players):
        best_other = max(scores[j] for j in range(players) if j != i)
        out.append(1.0 / (1.0 + math.exp(-(scores[i] - best_other) / scale)))
    return out


def search(game: Game, options: Mapping[str, Any], observation: Mapping[str, Any],
           events: Sequence[Mapping[str, Any]], actions: Sequence[Action], players: int,
           rng: random.Random, iterations: int | None = None, deadline: float | None = None,
           exploration: float = 0.7) -> SearchResult:
    """Run ISMCTS for the seat of ``observation`` and return the most visited of ``actions``.

    Stops after ``iterations`` iterations or at the monotonic time ``deadline``, whichever
    comes first (at least one iteration; give at least one of the two).
    """
    if iterations is None and deadline is None:
        raise ValueError("give iterations or a deadline")
    opts = game.validate_options(options)
    try:  # the sampler directly, options checked once (Game.resample_from_infostate checks per call)
        resample = importlib.import_module(f"harness.games.{game.name}_sample").resample
    except ModuleNotFoundError:
        raise NotImplementedError(f"{game.name} has no sampler (harness/games/{game.name}_sample.py)") from None
    root = Node()
    offered = {action_key(a): a for a in actions}
    horizon = HORIZONS.get(game.name)
    done = 0
    while True:
        if iterations is not None and done >= iterations:
            break
        if deadline is not None and done and time.monotonic() >= deadline:
            break
        state = resample(opts, observation, events, rng)
        _iterate(state, root, players, rng, exploration, horizon)
        done += 1
    visits = {k: c.visits for k, c in root.children.items() if k in offered}
    best = max(visits, key=lambda k: (visits[k], root.children[k].reward)) if visits else next(iter(offered))
    return SearchResult(offered[best], done, visits)


def _iterate(state: State, root: Node, players: int, rng: random.Random, c: float,
             horizon: tuple[Callable[[Any], int], float] | None) -> None:
    node = root
    if horizon is not None:
        key, scale = horizon
        start = key(state)
        scored: Any = state
        base = list(scored.scores)
    path: list[Node] = []
    choice = rng.choice
    expanded = False
    while not state.is_terminal() and (horizon is None or key(state) == start):
        legal = state.legal_actions()
        if len(legal) == 1:
            state.apply(legal[0])
            continue
        mover = state.current_player
        assert mover is not None
        keys = [action_key(a) for a in legal]
        children = node.children
        untried = [i for i, k in enumerate(keys) if k not in children]
        if untried:
            i = choice(untried)
            child = children[keys[i]] = Node(player=mover)
            for k in keys:
                if k in children:
                    children[k].available += 1
            state.apply(legal[i])
            path.append(child)
            expanded = True
            break
        best_i, best_v = 0, -1.0
        for i, k in enumerate(keys):
            ch = children[k]
            ch.available += 1
            v = ch.reward / ch.visits + c * math.sqrt(math.log(ch.available) / ch.visits)
            if v > best_v:
                best_i, best_v = i, v
        node = children[keys[best_i]]
        state.apply(legal[best_i])
        path.append(node)
    if horizon is None:
        if expanded:
            while not state.is_terminal():
                state.apply(choice(state.legal_actions()))
        reward = rewards(state, players)
    else:
        if expanded:
            while not state.is_terminal() and key(state) == start:
                state.apply(choice(state.legal_actions()))
        reward = rewards(state, players) if state.is_terminal() else score_rewards(state, base, players, scale)
    for n in path:
        n.visits += 1
        n.reward += reward[n.player]


class IsmctsPolicy:
    """An SDK policy (see :mod:`harness.sdk`) that decides by ISMCTS.

    Per decision it searches ``iterations`` iterations if given, and never past
    ``budget_ms`` (default: ``fraction`` of ``time_left_ms``, less a reserve of 60 ms, or a fifth
    of ``time_left_ms`` when that is smaller, for the answer to travel), so it respects both the referee's deadline and a fixed effort.
    """

    def __init__(self, iterations: int | None = None, budget_ms: int | None = None,
                 fraction: float = 0.5, seed: int | None = None, exploration: float = 0.7) -> None:
        self.iterations = iterations
        self.budget_ms = budget_ms
        self.fraction = fraction
        self.rng = random.Random(seed)
        self.exploration = exploration
        self.last: SearchResult | None = None

    def __call__(self, decision: Any) -> Action:
        from harness.games import get_game

        game = get_game(decision.game)
        time_left = decision.time_left_ms
        budget = time_left * self.fraction - min(60, time_left / 5)
        if self.budget_ms is not None:
            budget = min(budget, self.budget_ms)
        deadline = decision.received + max(budget, 1.0) / 1000.0
        self.last = search(game, decision.options, decision.observation, decision.events, decision.actions,
                           decision.players, self.rng, self.iterations, deadline, self.exploration)
        return self.last.action


def bot_main(game: str, argv: Sequence[str] | None = None) -> int:
    """Command line of the ``bots/<game>_ismcts.py`` bots: parse options and play protocol v1."""
    import argparse

    from harness.sdk import run

    parser = argparse.ArgumentParser(
        description=f"Information-set MCTS bot for {game} (protocol v1, on harness.sdk).")
    parser.add_argument("--iterations", type=int, default=None,
                        help="iterations per decision (default: as many as the time budget allows)")
    parser.add_argument("--budget-ms", type=int, default=None,
                        help="most milliseconds per decision (default: half of time_left_ms, less 60 ms or a fifth of it if smaller)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the search's RNG (reproducible play)")
    parser.add_argument("--name", default=f"{game}-ismcts", help="name sent in the ready message")
    args = parser.parse_args(argv)
    if args.iterations is not None and args.iterations < 1:
        parser.error("--iterations must be at least 1")
    if args.budget_ms is not None and args.budget_ms < 1:
        parser.error("--budget-ms must be at least 1")
    return run(IsmctsPolicy(args.iterations, args.budget_ms, seed=args.seed), name=args.name)
