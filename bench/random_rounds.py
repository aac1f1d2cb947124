"""Rounds in which every bot plays one set (tables drawn at random) against uniform random sets,
in the synthetic model of bench/matchmaking.py, for a small field of close bots.

The adaptive schedule plays rounds: every active bot sits at one table per round. On the real
Dominoes engine (bench/matchmaking.py part 5, 20 bots), such rounds with the tables drawn at
random were behind uniform random sets early; this checks whether the rounds themselves cost
anything in the model the matchmaker assumes: 20 bots evenly spread over 8.8 TrueSkill units
(the greedy-to-random span of Dominoes), in a random order, each league rated by the order-free
fit; the share of leagues with the right top-10 set at each rung, and the leagues right with
one only. Run: python bench/random_rounds.py [--leagues 1500]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from matchmaking_model import MU, add_wins, play_sets, top_right, uniform_sets  # noqa: E402

RUNGS = [1000, 1414, 2000, 2828, 4000]
BOTS, SIZE, SPAN = 20, 2, 8.8


def league(index: int) -> dict[str, np.ndarray]:
    """One league's (right top-10 set per rung) for uniform sets and for random rounds, on the same skills."""
    rng = np.random.default_rng([index, 7])
    skills = (MU + np.linspace(SPAN / 2, -SPAN / 2, BOTS))[rng.permutation(BOTS)]
    truth = np.argsort(-skills)
    out = {}
    for name in ("uniform sets", "random rounds"):
        wins = np.zeros((BOTS, BOTS))
        played, right = 0, []
        for rung in RUNGS:
            while played + SIZE <= rung:
                if name == "uniform sets":
                    sets = uniform_sets(BOTS, SIZE, min(BOTS // SIZE, (rung - played) // SIZE), rng)
                else:
                    sets = rng.permutation(BOTS).reshape(-1, SIZE)
                add_wins(wins, *play_sets(sets, skills, rng))
                played += len(sets) * SIZE
            right.append(top_right(wins, truth)[0])
        out[name] = np.array(right)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--leagues", type=int, default=1500)
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.leagues = 2
    got = [league(i) for i in range(args.leagues)]
    print(f"{BOTS} bots over {SPAN} units, tables of {SIZE}, {args.leagues} leagues: leagues with the right top-10 set")
    for i, rung in enumerate(RUNGS):
        u = sum(int(g["uniform sets"][i]) for g in got)
        r = sum(int(g["random rounds"][i]) for g in got)
        r_only = sum(int(g["random rounds"][i] and not g["uniform sets"][i]) for g in got)
        u_only = sum(int(g["uniform sets"][i] and not g["random rounds"][i]) for g in got)
        print(f"  {rung:>6,} games: uniform sets {u}, random rounds {r} (right with random rounds only / uniform "
              f"only: {r_only} / {u_only})")


if __name__ == "__main__":
    main()
