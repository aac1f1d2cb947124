"""How many games does a league need to order bots of known strength, and how sure is the table?

In process (no bot processes): four graded bots per game, the greedy reference policy of
``bots/<game>_greedy.py`` mixed with uniform random moves at eps 0, 0.25, 0.5 and 1 (eps 0 is
the strongest). For each game, schedule and rating setting, ``--reps`` independent leagues are
played and, at every checkpoint (a number of games), the table's order (by mu - 3 sigma, as
``harness table`` sorts it) is compared with the truth. Printed side by side in one run:

1. % of leagues with exactly the right order, per checkpoint, for
   - before: TrueSkill with tau 25/300 (the old default) on a plain schedule (a fresh deal per
     game, random seats),
   - before, duplicate: tau 25/300 on the project's duplicate schedule,
   - tau 0 (the new default of the incremental rating) on the duplicate schedule,
   - after: the table's order-free fit of TrueSkill's model (harness.league.ratings_fit) on the
     duplicate schedule;
   and the games each needs for 95% (or "> max" when it never gets there).
2. Order dependence: the largest |mu| shift of a bot when the same results are rated in reverse
   order (median over leagues), tau 25/300, tau 0 and the order-free fit.
3. Calibration of the table's P(>next): of all adjacent pairs to which it gives >= 0.95, the
   share in the right order.
4. ``harness match``'s statistic for a close pair (eps 0 against eps 0.1, Crisps): games until
   the SPRT (elo0=0, elo1=20) decides, duplicate sets against single games with a fresh deal
   each.

Run: python bench/ratings.py [--games crisps,dominoes,epizodiak] [--reps 40] [--max 1536]
The figures in docs/ratings.md come from this script (its --reps are printed with them).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import random
import statistics as stats
import sys
import time
from pathlib import Path
from typing import Any

import trueskill

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.games import get_game  # noqa: E402
from harness.league.ratings_fit import fit_ratings  # noqa: E402
from harness.report.sprt import SprtParams, llr, llr_bounds  # noqa: E402
from harness.report.statistics import GameRow, adjacent_better  # noqa: E402

EPS = (0.0, 0.25, 0.5, 1.0)
PLAYERS = {"crisps": 2, "dominoes": 3, "epizodiak": 3}


def load_greedy(game: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"{game}_greedy", REPO / "bots" / f"{game}_greedy.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.choose


def play(game: Any, choose: Any, eps: list[float], seed: int, rng: random.Random) -> list[int]:
    """One game between policies of the given eps by seat; returns the ranking by seat."""
    state = game.new_state(len(eps), seed)
    while not state.is_terminal():
        seat = state.current_player
        legal = state.legal_actions()
        if len(legal) == 1 or rng.random() < eps[seat]:
            action = legal[rng.randrange(len(legal))]
        else:
            got = choose(state.observation(seat), legal)
            action = legal[got] if isinstance(got, int) else got
        state.apply(action)
    return list(state.result()["ranking"])


def league_games(game: Any, choose: Any, players: int, n: int, duplicate: bool, rng: random.Random
                 ) -> list[tuple[int, int, tuple[int, ...], list[int]]]:
    """``n`` games as (round, seed, bots by seat, ranking by seat), in schedule order."""
    out: list[tuple[int, int, tuple[int, ...], list[int]]] = []
    r = 0
    while len(out) < n:
        if duplicate:  # one round: every combination, every seat order on one deal
            for combo in itertools.combinations(range(4), players):
                seed = rng.randrange(2**31)
                for seats in itertools.permutations(combo):
                    out.append((r, seed, seats, play(game, choose, [EPS[b] for b in seats], seed, rng)))
        else:
            seats = tuple(rng.sample(range(4), players))
            seed = rng.randrange(2**31)
            out.append((r, seed, seats, play(game, choose, [EPS[b] for b in seats], seed, rng)))
        r += 1
    return out[:n]


def rate(games: list[tuple[int, int, tuple[int, ...], list[int]]], tau: float, checkpoints: list[int]
         ) -> dict[int, dict[int, tuple[float, float]]]:
    env = trueskill.TrueSkill(tau=tau, draw_probability=0.10)
    ratings = {b: env.create_rating() for b in range(4)}
    out = {}
    for n, (_, _, seats, ranking) in enumerate(games, 1):
        rated = env.rate([(ratings[b],) for b in seats], ranks=ranking)
        for b, (new,) in zip(seats, rated):
            ratings[b] = new
        if n in checkpoints:
            out[n] = {b: (r.mu, r.sigma) for b, r in ratings.items()}
    return out


def fit_at(games: list[tuple[int, int, tuple[int, ...], list[int]]], checkpoints: list[int]
           ) -> dict[int, dict[int, tuple[float, float]]]:
    return {n: fit_ratings(((seats, ranking) for _, _, seats, ranking in games[:n]), mu=25.0, sigma=25 / 3,
                           beta=25 / 6) for n in checkpoints}


def right_order(ratings: dict[int, tuple[float, float]]) -> bool:
    order = sorted(ratings, key=lambda b: -(ratings[b][0] - 3 * ratings[b][1]))
    return order == [0, 1, 2, 3]


def part1(name: str, reps: int, checkpoints: list[int]) -> None:
    game, choose, players = get_game(name), load_greedy(name), PLAYERS[name]
    configs: dict[str, tuple[bool, float | None]] = {
        "before, plain (tau 25/300)": (False, 25 / 300), "before, duplicate (tau 25/300)": (True, 25 / 300),
        "incremental, duplicate (tau 0)": (True, 0.0), "after: order-free fit, duplicate": (True, None)}
    right = {c: {n: 0 for n in checkpoints} for c in configs}
    shifts: dict[float | None, list[float]] = {25 / 300: [], 0.0: [], None: []}
    calibrated = [0, 0]
    start = time.perf_counter()
    for rep in range(reps):
        rng = random.Random(rep)
        plain = league_games(game, choose, players, checkpoints[-1], False, rng)
        dup = league_games(game, choose, players, checkpoints[-1], True, rng)
        for c, (duplicate, tau) in configs.items():
            games = dup if duplicate else plain
            by_n = fit_at(games, checkpoints) if tau is None else rate(games, tau, checkpoints)
            for n, ratings in by_n.items():
                right[c][n] += right_order(ratings)
        for tau in shifts:
            if tau is None:
                fwd, back = fit_at(dup, [len(dup)])[len(dup)], fit_at(list(reversed(dup)), [len(dup)])[len(dup)]
            else:
                fwd = rate(dup, tau, [len(dup)])[len(dup)]
                back = rate(list(reversed(dup)), tau, [len(dup)])[len(dup)]
            shifts[tau].append(max(abs(fwd[b][0] - back[b][0]) for b in range(4)))
        final = fit_at(dup, [len(dup)])[len(dup)]
        order = sorted(final, key=lambda b: -(final[b][0] - 3 * final[b][1]))
        rows = [GameRow(i, r, s, seats, tuple(rk), tuple(float(-x) for x in rk))
                for i, (r, s, seats, rk) in enumerate(dup)]
        for (upper, lower), p in zip(zip(order, order[1:]), adjacent_better(rows, order, resamples=300, seed=rep)):
            if p is not None and p >= 0.95:
                calibrated[0] += 1
                calibrated[1] += upper < lower
    took = time.perf_counter() - start
    print(f"\n{name} ({players} players, {reps} leagues per point, {took:.0f} s)")
    print("   % of leagues in exactly the right order, by games played:")
    print("   " + " " * 32 + "".join(f"{n:>8}" for n in checkpoints) + "   games for 95%")
    for c in configs:
        need = next((n for n in checkpoints if right[c][n] / reps >= 0.95), None)
        print(f"   {c:<32}" + "".join(f"{100 * right[c][n] / reps:>7.0f}%" for n in checkpoints)
              + f"   {need if need else '> ' + str(checkpoints[-1])}")
    for tau, values in shifts.items():
        label = "the order-free fit" if tau is None else f"incremental, tau {tau:.4f}"
        print(f"   rating the same {checkpoints[-1]} games in reverse order moves a bot's mu by up to "
              f"{stats.median(values):.2f} (median of the largest shift), {label}")
    if calibrated[0]:
        print(f"   calibration: {calibrated[0]} adjacent pairs with P(>next) >= 0.95, "
              f"{100 * calibrated[1] / calibrated[0]:.1f}% of them in the right order")


def part4(reps: int, max_games: int) -> None:
    """Games the SPRT needs for eps 0 against eps 0.1 at Crisps, duplicate sets against single games."""
    game, choose = get_game("crisps"), load_greedy("crisps")
    params = SprtParams(elo0=0, elo1=20)
    lower, upper = llr_bounds(params)
    print(f"\n4. match: eps 0 against eps 0.1 at Crisps, SPRT elo0=0 elo1=20, up to {max_games} games, {reps} runs")
    for duplicate in (True, False):
        needed, verdicts = [], []
        for rep in range(reps):
            rng = random.Random(1000 + rep)
            scores: list[float] = []
            games = 0
            verdict = "none"
            while games < max_games:
                seed = rng.randrange(2**31)
                if duplicate:
                    a = play(game, choose, [0.0, 0.1], seed, rng)
                    b = play(game, choose, [0.1, 0.0], seed, rng)
                    scores.append(((a[0] < a[1]) + (b[1] < b[0])) / 2)
                    games += 2
                else:
                    first = rng.randrange(2)
                    ranks = play(game, choose, [0.0, 0.1] if first == 0 else [0.1, 0.0], seed, rng)
                    mine, theirs = (ranks[0], ranks[1]) if first == 0 else (ranks[1], ranks[0])
                    scores.append(1.0 if mine < theirs else 0.5 if mine == theirs else 0.0)
                    games += 1
                value = llr(scores, params)
                if value >= upper or value <= lower:
                    verdict = "H1" if value >= upper else "H0"
                    break
            needed.append(games)
            verdicts.append(verdict)
        print(f"   {'duplicate sets' if duplicate else 'single games  '}: median {stats.median(needed):.0f} games "
              f"to decide; verdicts {dict((v, verdicts.count(v)) for v in set(verdicts))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", default="crisps,dominoes,epizodiak")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--max", type=int, default=1536, help="the largest checkpoint (games per league)")
    parser.add_argument("--match-reps", type=int, default=20)
    args = parser.parse_args()
    checkpoints = [n for n in (96, 192, 384, 768, 1536, 3072) if n <= args.max]
    print("1-3. leagues of four graded bots (greedy mixed with random moves at eps 0, 0.25, 0.5, 1)")
    for name in args.games.split(","):
        part1(name, args.reps, checkpoints)
    if args.match_reps:
        part4(args.match_reps, 3000)


if __name__ == "__main__":
    main()
