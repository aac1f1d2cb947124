"""Head-to-head strength of the ISMCTS bots against the greedy bots, in process (harness.sdk).

    python bench/strength.py crisps --games 60 --iterations 50
    python bench/strength.py epizodiak --games 30 --iterations 50

Seats rotate from game to game, every game has its own seed, and the greedy bots are the
files in bots/ (their ``choose`` functions, no pipes). Prints ISMCTS's score per game (1 for a
win, 0.5 for a shared first place, 0 for a loss; in 3-player Epizodiak the two greedy seats
are one opponent and a "win" is first place) with a 95% Wilson interval, and the seconds per
game. Fixed iterations make the result independent of machine load.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from pathlib import Path
from typing import Any

from harness.games.epizodiak import evaluator as epizodiak_evaluator
from harness.sdk import Decision, Policy, ismcts, play_in_process
from harness.sdk.ismcts import IsmctsPolicy

BOTS = Path(__file__).resolve().parent.parent / "bots"
PLAYERS = {"crisps": 2, "dominoes": 2, "epizodiak": 3}


def greedy(game: str) -> Policy:
    """The reference greedy bot of ``game`` as an SDK policy."""
    spec = importlib.util.spec_from_file_location(f"{game}_greedy", BOTS / f"{game}_greedy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def policy(d: Decision) -> Any:
        if game == "crisps":
            return module.choose(d.observation, d.actions, d.options.get("jacks", False))
        return module.choose(d.observation, d.actions)
    return policy


def wilson(wins: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``wins / n``."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("game", nargs="?", choices=sorted(PLAYERS))
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1000, help="seed of the first game")
    parser.add_argument("--epsilon", type=float, default=None,
                        help="share of random moves in the Epizodiak playouts (default: harness.games.epizodiak.evaluator.EPSILON)")
    parser.add_argument("--bias", type=float, default=None,
                        help="progressive bias weight in Epizodiak (default: harness.sdk.ismcts.BIAS)")
    parser.add_argument("--cutoff", type=int, default=None,
                        help="Epizodiak playouts stop after this many moves, 0 for none (default: harness.sdk.ismcts.CUTOFF_MOVES)")
    parser.add_argument("--hand-weight", type=float, default=None, help="harness.games.epizodiak.evaluator.HAND_WEIGHT")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.game, args.games, args.iterations = args.game or "crisps", 2, 5
    if args.game is None:
        parser.error("which game? (one of " + ", ".join(sorted(PLAYERS)) + ")")
    if args.cutoff is not None:
        ismcts.CUTOFF_MOVES = args.cutoff
    if args.hand_weight is not None:
        epizodiak_evaluator.HAND_WEIGHT = args.hand_weight
    if args.bias is not None:
        ismcts.BIAS = args.bias
    if args.epsilon is not None:
        epizodiak_evaluator.EPSILON = args.epsilon
    n = PLAYERS[args.game]
    score = 0.0
    start = time.perf_counter()
    for g in range(args.games):
        me = g % n
        policies = [greedy(args.game) for _ in range(n)]
        policies[me] = IsmctsPolicy(iterations=args.iterations, seed=g)
        ranking = play_in_process(args.game, policies, args.seed + g)["ranking"]
        firsts = ranking.count(0)
        score += (1.0 / firsts) if ranking[me] == 0 else 0.0
        print(f"game {g + 1}: ISMCTS seat {me}, ranking {ranking}, score so far {score}/{g + 1}",
              file=sys.stderr, flush=True)
    lo, hi = wilson(score, args.games)
    took = (time.perf_counter() - start) / max(args.games, 1)
    print(f"{args.game}: ISMCTS ({args.iterations} iterations) vs greedy: {score:g}/{args.games} = "
          f"{score / args.games:.2f}, 95% interval [{lo:.2f}, {hi:.2f}] ({took:.1f} s a game)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
