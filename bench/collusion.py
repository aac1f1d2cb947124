"""The collusion report's false alarm and detection rates (harness/report/collusion.py), side by side.

**Real leagues** (``--real``, the default): real bot processes through the league runner, one
fresh store (fresh secret, fresh deals) per league. All-Fives Dominoes at tables of ``--players``
(3 or 4) between ``bots/dominoes_greedy.py`` (twice), ``bots/random_bot.py`` (twice: at 4 seats
once) and two copies of ``tests/bots/colluder.py``, which find each other by a timing handshake:

- honest: both colluders in ``--mode honest`` (they shake hands, then play greedy): the rate of
  leagues with any pair flagged is the false alarm rate;
- feed: ``take`` and ``feed`` (the feeder plays for its partner);
- joint: both ``joint`` (both play against the third seats): the rate of leagues where that
  pair is flagged is the detection rate (and how often some other pair was flagged too).

**Simulated leagues** (``--simulated``): ``--bots`` bots of skills spread over 10 points,
duplicate sets at tables of 3 (a random trio each, every seat order of one deal); a game's
performance is skill + the deal's luck for the seat + TrueSkill's noise (beta); bots 0 and 1
collude at every table they share: ``feed`` moves ``--edge`` performance from 1 to 0, ``joint``
gives both ``--edge``.

Rates are printed with their standard errors, sqrt(p (1 - p) / n).

    python3 bench/collusion.py --leagues 12 --rounds 5
    python3 bench/collusion.py --simulated --leagues 200 --sets 300
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from harness.report.collusion import PairFinding, analyse, store_sets

REPO = Path(__file__).resolve().parent.parent
BETA = 25 / 6
MODES = {"honest": ("honest", "honest"), "feed": ("take", "feed"), "joint": ("joint", "joint")}


def league(rng: random.Random, bots: int, sets: int, mode: str, edge: float) -> tuple[list, dict]:
    """A simulated league: its duplicate sets (each a list of games of (bot, rank) by seat)."""
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


def real_league(where: Path, mode: str, players: int, rounds: int, jitter: int, index: int,
                max_games: int | None = None) -> tuple[list, set[int]]:
    """Play one real league; its duplicate sets and the version ids of the two colluders."""
    from harness.league import queries
    from harness.league.config import load_config
    from harness.league.runner import RunOptions, run_league
    from harness.league.store import LeagueStore

    py = sys.executable
    bots = [("greedy", f"{py} {REPO}/bots/dominoes_greedy.py"), ("greedy2", f"{py} {REPO}/bots/dominoes_greedy.py --name g2"),
            ("random", f"{py} {REPO}/bots/random_bot.py --seed 1")]
    if players == 3:
        bots.append(("random2", f"{py} {REPO}/bots/random_bot.py --seed 2"))
    a, b = MODES[mode]
    bots += [("pal-a", f"{py} {REPO}/tests/bots/colluder.py --mode {a}"), ("pal-b", f"{py} {REPO}/tests/bots/colluder.py --mode {b}")]
    path = where / f"{mode}-{index}.yaml"
    listed = "\n".join(f"  - {{name: {n}, command: {c}}}" for n, c in bots)
    path.write_text(f"name: c{index}\ngame: dominoes\nplayers: {players}\noptions: {{target: 100}}\nrounds: {rounds}\n"
                    f"workers: 2\ntime: {{jitter_ms: {jitter}}}\nlimits: {{sandbox: none}}\n"
                    f"store: {where / f'{mode}-{index}.sqlite'}\nbots:\n{listed}\n")
    config = load_config(path)
    run_league(config, progress=False, options=RunOptions(max_games=max_games))
    with LeagueStore(config.store, create=False) as store:
        pals = {r.id for r in store.versions() if r.name.startswith("pal-")}
        return store_sets(queries.done_seats(store)), pals


def rate(hits: int, n: int) -> str:
    p = hits / max(n, 1)
    return f"{hits} of {n} ({100 * p:.1f}% +- {100 * math.sqrt(p * (1 - p) / max(n, 1)):.1f})"


def tally(results: dict[str, list[tuple[list[PairFinding], set[int]]]], label: str) -> None:
    """One line per mode: the false alarm rate (honest) or the detection rate, side by side."""
    for mode, leagues in results.items():
        n = len(leagues)
        if mode == "honest":
            print(f"  {label} honest: any pair flagged (false alarm) in {rate(sum(any(f.flagged for f in fs) for fs, _ in leagues), n)}")
        else:
            caught = sum(any(f.flagged and {f.a, f.b} == pals for f in fs) for fs, pals in leagues)
            other = sum(any(f.flagged and {f.a, f.b} != pals for f in fs) for fs, pals in leagues)
            print(f"  {label} {mode:6}: the colluding pair flagged in {rate(caught, n)}; another pair flagged in {rate(other, n)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulated", action="store_true", help="simulated leagues instead of real ones")
    parser.add_argument("--leagues", type=int, default=12, help="leagues per mode")
    parser.add_argument("--rounds", type=int, default=5, help="real: rounds of each league")
    parser.add_argument("--players", type=int, default=3, choices=(3, 4), help="real: table size")
    parser.add_argument("--jitter", type=int, default=0, help="real: time.jitter_ms of each league")
    parser.add_argument("--bots", type=int, default=8, help="simulated: bots per league")
    parser.add_argument("--sets", type=int, default=300, help="simulated: duplicate sets per league")
    parser.add_argument("--edge", type=float, default=2.0, help="simulated: the colluders' edge")
    parser.add_argument("--alpha", type=float, nargs="+", default=[0.01, 0.001])
    parser.add_argument("--save", help="write every league's duplicate sets to this JSON file")
    parser.add_argument("--load", help="judge the leagues of a --save file instead of playing them")
    parser.add_argument("--merge", type=int, default=1,
                        help="with --load: judge each K leagues of a mode as one league of K times the rounds "
                             "(the same roster and version ids; each league had its own deals)")
    parser.add_argument("--tiny", action="store_true", help="a few small leagues (does it still run?)")
    args = parser.parse_args()
    if args.tiny:
        args.leagues, args.sets, args.rounds = 1, 60, 1
    start = time.time()
    per_mode: dict[str, list[list]] = {mode: [] for mode in MODES}
    pals: dict[str, list[set[int]]] = {mode: [] for mode in MODES}
    if args.simulated:
        rng = random.Random(1)
        print(f"simulated: {args.leagues} leagues a mode of {args.bots} bots, {args.sets} sets of 3 seats, edge {args.edge}")
    elif not args.load:
        print(f"real: {args.leagues} leagues a mode, Dominoes at {args.players} seats, {args.rounds} rounds, "
              f"jitter_ms {args.jitter}; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.load:
        saved = json.loads(Path(args.load).read_text())
        per_mode, pals = saved["sets"], {m: [set(p) for p in ps] for m, ps in saved["pals"].items()}
        print(f"(the leagues of {args.load}: {saved['about']}; each {args.merge} judged as one)")
        for mode in per_mode:
            k, n = args.merge, len(per_mode[mode]) // args.merge
            assert all(p == pals[mode][0] for p in pals[mode]), "the leagues' colluders differ: they cannot merge"
            per_mode[mode] = [[s for league in per_mode[mode][i * k:(i + 1) * k] for s in league] for i in range(n)]
            pals[mode] = pals[mode][:n]
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(0 if args.load else args.leagues):
            for mode in MODES:
                if args.simulated:
                    sets, _ = league(rng, args.bots, args.sets, mode, args.edge)
                    pair = {0, 1}
                else:
                    sets, pair = real_league(Path(tmp), mode, args.players, args.rounds, args.jitter, i,
                                             12 if args.tiny else None)
                per_mode[mode].append(sets)
                pals[mode].append(pair)
                if args.save:  # after each league: a long run stopped early keeps what it played
                    about = f"{i + 1} leagues a mode, {args.players} seats, {args.rounds} rounds, jitter_ms {args.jitter}"
                    Path(args.save).write_text(json.dumps({"about": about, "sets": per_mode, "pals": {
                        m: [sorted(p) for p in ps] for m, ps in pals.items()}}))
    for alpha in args.alpha:
        results = {mode: [(analyse(s, alpha), p) for s, p in zip(per_mode[mode], pals[mode])] for mode in MODES}
        tally(results, f"alpha {alpha}:")
    shared = [sum(1 for s in sets if pair <= {v for v, _ in s[0]}) for sets, pair in zip(per_mode["feed"], pals["feed"])]
    print(f"(the colluders shared {min(shared)}-{max(shared)} duplicate sets a league; {time.time() - start:.0f} s; "
          f"load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
