"""Single-observer information-set Monte Carlo tree search (SO-ISMCTS, Cowling et al. 2012).

One tree for the deciding seat's information set; each iteration draws a determinization with
the game's sampler (``resample_from_infostate``), walks the tree choosing among the children
legal in that determinization by UCB1 with availability counts, adds one node, plays out and
backs up each node's reward for the seat that moved into it. Decisions with a single legal
action are applied without a node, as the referee does.

What the search knows of a particular game comes from the game's
:class:`~harness.games.base.Evaluator` (``Game.evaluator()``): playouts stop at its horizon (the
end of the current deal, hand or round) and score each seat by the logistic of its points
gained there less the best other seat's gain; a playout that ends the game scores by rank
(``(players - 1 - rank) / (players - 1)``). An evaluator may also give a playout policy, a
prior (progressive bias in the tree) and an estimate for playouts cut off after
``CUTOFF_MOVES`` moves. Without one, playouts are uniformly random to the end of the game.
Why these choices, with the strength measured for each: docs/bots.md.

Design choice: the search works on engine states directly (a fresh determinization per
iteration, so no state copies and no JSON inside the loop); actions are keyed by a small
hashable form. Speed per game: bench/ismcts.py, figures in docs/bots.md.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.games import Game, State
from harness.games.base import Evaluator

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


#: Playouts of a game whose evaluator gives an ``estimate`` stop after this many moves (counted
#: from the root) and score each seat by that estimate instead of playing to the horizon.
CUTOFF_MOVES = 30

#: Progressive bias (Chaslot et al. 2008): in the tree, the action a game's prior prefers gets
#: ``BIAS / (visits + 1)`` added to its UCB value, so few iterations follow the heuristic and
#: more iterations may overrule it.
BIAS = 1.0

#: A playout policy: (state, its legal actions, rng) -> the index of the action to play.
Playout = Callable[[Any, list[Action], random.Random], int]


def score_rewards(state: Any, base: Sequence[int], players: int, scale: float) -> list[float]:
    """Each seat's reward in ``(0, 1)``: logistic of its points gained since ``base`` less the best
    gain of another seat (gains, not totals: a seat far behind still tells good moves from bad)."""
    return gain_rewards([s - b for s, b in zip(state.scores, base)], players, scale)


def gain_rewards(scores: Sequence[float], players: int, scale: float) -> list[float]:
    """Each seat's reward in ``(0, 1)``: logistic of its gain less the best other seat's gain."""
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
    # the sampler directly, options checked once (Game.resample_from_infostate checks per call)
    resample = game.sampler()
    if resample is None:
        raise NotImplementedError(f"{game.name} has no sampler (Game.sampler)")
    root = Node()
    offered = {action_key(a): a for a in actions}
    hints = game.evaluator() or Evaluator()
    horizon = (hints.horizon, hints.scale) if hints.horizon is not None else None
    playout, prior, estimate = hints.playout, hints.prior, hints.estimate
    cutoff = (CUTOFF_MOVES, estimate) if estimate is not None and CUTOFF_MOVES > 0 else None
    done = 0
    while True:
        if iterations is not None and done >= iterations:
            break
        if deadline is not None and done and time.monotonic() >= deadline:
            break
        state = resample(opts, observation, events, rng)
        _iterate(state, root, players, rng, exploration, horizon, playout, prior, cutoff)
        done += 1
    visits = {k: c.visits for k, c in root.children.items() if k in offered}
    best = max(visits, key=lambda k: (visits[k], root.children[k].reward)) if visits else next(iter(offered))
    return SearchResult(offered[best], done, visits)


def _iterate(state: State, root: Node, players: int, rng: random.Random, c: float,
             horizon: tuple[Callable[[Any], int], float] | None, playout: Playout | None = None,
             prior: Callable[[Any, list[Action]], int] | None = None,
             cutoff: tuple[int, Callable[[Any], list[float]]] | None = None) -> None:
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
        favoured = prior(state, legal) if prior is not None else -1
        for i, k in enumerate(keys):
            ch = children[k]
            ch.available += 1
            v = ch.reward / ch.visits + c * math.sqrt(math.log(ch.available) / ch.visits)
            if i == favoured:
                v += BIAS / (ch.visits + 1)
            if v > best_v:
                best_i, best_v = i, v
        node = children[keys[best_i]]
        state.apply(legal[best_i])
        path.append(node)
    moves = len(path)
    if expanded:
        while not state.is_terminal() and (horizon is None or key(state) == start):
            if cutoff is not None and moves >= cutoff[0]:
                break
            legal = state.legal_actions()
            state.apply(legal[playout(state, legal, rng)] if playout is not None and len(legal) > 1 else choice(legal))
            moves += 1
    if horizon is None:
        reward = rewards(state, players)
    elif state.is_terminal():
        reward = rewards(state, players)
    elif key(state) != start or cutoff is None:
        reward = score_rewards(state, base, players, scale)
    else:
        reward = gain_rewards(cutoff[1](state), players, scale)
    for n in path:
        n.visits += 1
        n.reward += reward[n.player]


class IsmctsPolicy:
    """An SDK policy (see :mod:`harness.sdk`) that decides by ISMCTS.

    Per decision it searches ``iterations`` iterations if given, and never past ``budget_ms``
    (default: ``fraction`` of ``time_left_ms`` less ``reserve_ms``, 45 ms at ``move_ms`` 100),
    so it respects both the referee's deadline and a fixed effort. The rest of ``time_left_ms``
    covers the last iteration (under 1 ms), reading and writing the messages and a loaded
    machine's scheduling delays; the timeouts measured at ``move_ms`` 100 are in docs/bots.md.
    """

    def __init__(self, iterations: int | None = None, budget_ms: int | None = None,
                 fraction: float = 0.5, seed: int | None = None, exploration: float = 0.7,
                 reserve_ms: float = 5.0) -> None:
        self.iterations = iterations
        self.budget_ms = budget_ms
        self.fraction = fraction
        self.reserve_ms = reserve_ms
        self.rng = random.Random(seed)
        self.exploration = exploration
        self.last: SearchResult | None = None

    def __call__(self, decision: Any) -> Action:
        from harness.games import get_game

        game = get_game(decision.game)
        time_left = decision.time_left_ms
        budget = time_left * self.fraction - self.reserve_ms
        if self.budget_ms is not None:
            budget = min(budget, self.budget_ms)
        deadline = decision.received + max(budget, 1.0) / 1000.0
        self.last = search(game, decision.options, decision.observation, decision.events, decision.actions,
                           decision.players, self.rng, self.iterations, deadline, self.exploration)
        return self.last.action


def bot_main(game: str, argv: Sequence[str] | None = None) -> int:
    """Command line of the ``bots/<game>_ismcts.py`` bots: parse options and play protocol v1."""
    import argparse

    from harness.games import get_game
    from harness.sdk import run

    parser = argparse.ArgumentParser(
        description=f"Information-set MCTS bot for {game} (protocol v1, on harness.sdk).")
    parser.add_argument("--iterations", type=int, default=None,
                        help="iterations per decision (default: as many as the time budget allows)")
    parser.add_argument("--budget-ms", type=int, default=None,
                        help="most milliseconds per decision (default: half of time_left_ms less 5 ms)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the search's RNG (reproducible play)")
    parser.add_argument("--name", default=f"{game}-ismcts", help="name sent in the ready message")
    args = parser.parse_args(argv)
    if args.iterations is not None and args.iterations < 1:
        parser.error("--iterations must be at least 1")
    if args.budget_ms is not None and args.budget_ms < 1:
        parser.error("--budget-ms must be at least 1")
    # the engine and its sampler load now, within init_ms, not in the first move's time
    get_game(game).sampler()
    return run(IsmctsPolicy(args.iterations, args.budget_ms, seed=args.seed), name=args.name)
