"""The collusion report's false alarm and detection rates, on simulated leagues (harness/report/collusion.py).

Each league: ``--bots`` bots of skills spread over 10 points, ``--sets`` duplicate sets at tables
of 3 (a random trio each, every seat order of one deal). A game's performance is the bot's skill,
plus the deal's luck for the seat it holds (the same across the set's seat orders, as a
duplicate deal), plus TrueSkill's noise (beta); ranks follow the performances. The report
expects each pair's record without the partner, so no fit is involved.

- honest: no collusion; the rate of leagues with any pair flagged (should be about alpha);
- colluding: bots 0 and 1 collude at every table they share: ``feed`` moves ``--edge``
  performance from bot 1 to bot 0, ``joint`` gives both ``--edge`` (as if they knew each
  other's hands); the rate of leagues where that pair is flagged.

    python3 bench/collusion.py --leagues 200 --sets 300
"""

from __future__ import annotations

import argparse
import itertools
import random
import time

from harness.report.collusion import analyse

BETA = 25 / 6


def league(rng: random.Random, bots: int, sets: int, mode: str, edge: float) -> list:
    skill = [20 + 10 * i / max(bots - 1, 1) for i in range(bots)]
    rng.shuffle(skill)
    out = []
    for _ in range(sets):
        trio = rng.sample(range(bots), 3)
        luck = [rng.gauss(0, 3) for _ in range(3)]
        games = []
        for order in itertools.permutations(trio):
            perf = {v: skill[v] + luck[s] + rng.gauss(0, BETA) for s, v in enumerate(order)}
            if 0 in order and 1 in order and mode != "honest":
                perf[0] += edge
                perf[1] += -edge if mode == "feed" else edge
            ranked = sorted(order, key=lambda v: -perf[v])
            games.append([(v, ranked.index(v)) for v in order])
        out.append(games)
    return out, {v: (s, 1.0) for v, s in enumerate(skill)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leagues", type=int, default=200)
    parser.add_argument("--bots", type=int, default=8)
    parser.add_argument("--sets", type=int, default=300)
    parser.add_argument("--edge", type=float, default=2.0)
    parser.add_argument("--alpha", type=float, default=0.001)
    parser.add_argument("--tiny", action="store_true", help="a few small leagues (does it still run?)")
    args = parser.parse_args()
    if args.tiny:
        args.leagues, args.sets = 3, 60
    rng = random.Random(1)
    start = time.time()
    for mode in ("honest", "feed", "joint"):
        hits = 0
        for _ in range(args.leagues):
            sets, rating = league(rng, args.bots, args.sets, mode, args.edge)
            found = analyse(sets, args.alpha)
            hits += any(f.flagged for f in found) if mode == "honest" else any(
                f.flagged and {f.a, f.b} == {0, 1} for f in found)
        what = "any pair flagged (false alarm)" if mode == "honest" else "the colluding pair flagged"
        print(f"{mode:7} {args.leagues} leagues of {args.bots} bots, {args.sets} sets of 3 seats, edge {args.edge}: "
              f"{what} in {hits} ({100 * hits / args.leagues:.1f}%)")
    print(f"({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
