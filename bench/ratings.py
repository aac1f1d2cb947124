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

9. The fit where real leagues are (bench/ratings_cells.py): coverage and P(>next) calibration
   in sparse, spread, seat-edge, noisy-bot and close fields, beside the targets.

Run: python bench/ratings.py [--games crisps,dominoes,epizodiak] [--reps 40] [--max 1536]
     python bench/ratings.py --tiny   (seconds: CI runs it, tests/test_bench_tiny.py; its figures mean nothing)
The figures in docs/ratings.md come from this script (its --reps are printed with them).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import math
import os
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
from harness.league.ratings_fit import TableFit, fit_table  # noqa: E402
from harness.report.sprt import SprtParams, llr, llr_bounds  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
import ratings_cells  # noqa: E402

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


def fit_at(games: list[tuple[int, int, tuple[int, ...], list[int]]], checkpoints: list[int]) -> dict[int, TableFit]:
    """The table's fit (harness.league.ratings_fit.fit_table) of each prefix; a set is (round, deal)."""
    return {n: fit_table((seats, ranking, (r, seed)) for r, seed, seats, ranking in games[:n]) for n in checkpoints}


def right_order(ratings: dict[int, tuple[float, float]] | TableFit) -> bool:
    """The table's order is the truth (bot 0 best): the fit's order by mu, an incremental
    rating's by mu - 3 sigma (as ``harness table --incremental`` sorts)."""
    if isinstance(ratings, TableFit):
        return ratings.order == [0, 1, 2, 3]
    order = sorted(ratings, key=lambda b: -(ratings[b][0] - 3 * ratings[b][1]))
    return order == [0, 1, 2, 3]


def part1(name: str, reps: int, checkpoints: list[int], fit_only: bool = False) -> None:
    """Parts 1-3 for one game; ``fit_only``: the table's fit alone (no plain schedule, no
    incremental TrueSkill: a quarter of the time)."""
    game, choose, players = get_game(name), load_greedy(name), PLAYERS[name]
    configs: dict[str, tuple[bool, float | None]] = {
        "before, plain (tau 25/300)": (False, 25 / 300), "before, duplicate (tau 25/300)": (True, 25 / 300),
        "incremental, duplicate (tau 0)": (True, 0.0), "after: the table's fit, duplicate": (True, None)}
    if fit_only:
        configs = {"after: the table's fit, duplicate": (True, None)}
    right = {c: {n: 0 for n in checkpoints} for c in configs}
    shifts: dict[float | None, list[float]] = {None: []} if fit_only else {25 / 300: [], 0.0: [], None: []}
    calibrated = [0, 0]
    start = time.perf_counter()
    for rep in range(reps):
        rng = random.Random(rep)
        plain = [] if fit_only else league_games(game, choose, players, checkpoints[-1], False, rng)
        dup = league_games(game, choose, players, checkpoints[-1], True, rng)
        for c, (duplicate, tau) in configs.items():
            games = dup if duplicate else plain
            by_n: dict[int, Any] = fit_at(games, checkpoints) if tau is None else rate(games, tau, checkpoints)
            for n, ratings in by_n.items():
                right[c][n] += right_order(ratings)
        for tau in shifts:
            if tau is None:
                fit_fwd, fit_back = fit_at(dup, [len(dup)])[len(dup)], fit_at(list(reversed(dup)), [len(dup)])[len(dup)]
                shifts[tau].append(max(abs(fit_fwd.mu[b] - fit_back.mu[b]) for b in range(4)))
                continue
            fwd = rate(dup, tau, [len(dup)])[len(dup)]
            back = rate(list(reversed(dup)), tau, [len(dup)])[len(dup)]
            shifts[tau].append(max(abs(fwd[b][0] - back[b][0]) for b in range(4)))
        final = fit_at(dup, [len(dup)])[len(dup)]
        for (upper, lower), p in zip(zip(final.order, final.order[1:]), final.p_next):
            if p >= 0.95:
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


# ---------------------------------------------------------------------------------------------
# 5-8: coverage, calibration, the SPRT against fishtest's formula, speed

TARGET = (0.93, 0.97)  # the coverage asked of a 95% interval
BETA = 25 / 6


def model_league(rng: Any, true: Any, seats: int, games: int, luck: float) -> list[tuple[Any, Any, int]]:
    """Duplicate rounds drawn from TrueSkill's model (performance = skill + N(0, beta^2)) among
    len(true) bots: every combination of ``seats`` bots on one deal, every seat order. The deal
    gives each seat a luck N(0, luck^2), the same in all the games of its set, the rest of the
    noise keeps each performance's total noise N(0, beta^2): TrueSkill's model game by game,
    with the games of a set correlated as real deals make them."""
    import numpy as np

    perms = np.array(list(itertools.permutations(range(seats))))
    out: list[tuple[Any, Any, int]] = []
    deal = 0
    while len(out) < games:
        for combo in itertools.combinations(range(len(true)), seats):
            versions = np.array(combo)[perms]
            seat_luck = rng.normal(0, luck, seats)
            perf = true[versions] + seat_luck + rng.normal(0, math.sqrt(BETA**2 - luck**2), versions.shape)
            ranks = np.argsort(np.argsort(-perf, axis=1), axis=1)
            out += [(v, r, deal) for v, r in zip(versions.tolist(), ranks.tolist())]
            deal += 1
    return out[:games]


def reliability(pairs: list[tuple[float, bool]]) -> list[str]:
    """Claimed P(>next) against the share of those pairs truly in that order, per tenth."""
    lines = []
    for low in (0.5, 0.6, 0.7, 0.8, 0.9):
        got = [(p, right) for p, right in pairs if low <= p < low + 0.1 or (low == 0.9 and p >= 1.0)]
        if got:
            claimed = sum(p for p, _ in got) / len(got)
            observed = sum(right for _, right in got) / len(got)
            lines.append(f"      {low:.1f}-{low + 0.1:.1f}: claimed {claimed:.3f}, observed {observed:.3f} "
                         f"({len(got)} pairs)")
    return lines


def coverage_line(label: str, covered: int, total: int, leagues: int, shares: list[float] | None = None) -> str:
    """One row of coverage beside the target; ``shares``: each league's share covered (the
    standard error is over leagues: one league's intervals are not independent)."""
    rate = covered / total if total else float("nan")
    ok = "ok" if TARGET[0] <= rate <= TARGET[1] else "OUT"
    se = f" +-{100 * stats.stdev(shares) / math.sqrt(len(shares)):.1f}" if shares and len(shares) > 1 else ""
    return (f"   {label:<34} {100 * rate:6.1f}%{se}   target {100 * TARGET[0]:.0f}-{100 * TARGET[1]:.0f}%  {ok}   "
            f"({total} intervals, {leagues} leagues)")


def part_model(leagues: int, sizes: list[int]) -> None:
    """Coverage and calibration on leagues drawn from TrueSkill's model (4 bots, skills N(25,
    (beta/2)^2) drawn afresh per league, seat luck 3 of beta's 4.17 shared by the games of a set)."""
    import numpy as np

    print(f"\n5. model-generated leagues (TrueSkill's model, 4 bots, duplicate sets; {leagues} leagues per row)")
    print("   coverage of the table's 95% interval on mu (the truth: each bot's skill relative to the mean)")
    rng = np.random.default_rng(5)
    calibration: list[tuple[float, bool]] = []
    start = time.perf_counter()
    for seats in (2, 3, 4):
        for n in sizes:
            covered = total = 0
            shares: list[float] = []
            for _ in range(leagues):
                true = 25 + rng.normal(0, BETA / 2, 4)
                fit = fit_table(model_league(rng, true, seats, n, luck=3.0))
                inside = 0
                for bot in range(4):
                    low, high = fit.interval(bot)
                    inside += low <= true[bot] - true.mean() + 25 <= high
                covered, total = covered + inside, total + 4
                shares.append(inside / 4)
                calibration += [(p, bool(true[a] > true[b])) for a, b, p in zip(fit.order, fit.order[1:], fit.p_next)]
            print(coverage_line(f"{seats} seats, {n} games", covered, total, leagues, shares), flush=True)
    print(f"   calibration of P(>next), all rows above pooled ({len(calibration)} adjacent pairs):")
    print("\n".join(reliability(calibration)))
    print(f"   ({time.perf_counter() - start:.0f} s)")


REAL = (("crisps", 2), ("dominoes", 3), ("dominoes", 4), ("epizodiak", 3))


def part_real(leagues: int, sizes: list[int]) -> None:
    """Coverage and calibration with the graded bots. The truth is not known, so it is taken
    from the fit of all the leagues' games pooled (``leagues`` times more games than one
    league: its own error adds ~1/leagues of a league's variance); the true order is known
    (eps 0 best)."""
    print(f"\n6. real-bot leagues (the four graded bots, duplicate schedule; {leagues} leagues per row, "
          f"the truth from all of them pooled)")
    calibration: list[tuple[float, bool]] = []
    for name, seats in REAL:
        start = time.perf_counter()
        game, choose = get_game(name), load_greedy(name)
        played = [league_games(game, choose, seats, sizes[-1], True, random.Random(500 + rep)) for rep in range(leagues)]
        pooled = fit_table((s, r, (rep, rnd, seed)) for rep, games in enumerate(played) for rnd, seed, s, r in games)
        for n in sizes:
            covered = total = 0
            for games in played:
                fit = fit_at(games, [n])[n]
                for bot in range(4):
                    low, high = fit.interval(bot)
                    covered += low <= pooled.mu[bot] <= high
                    total += 1
                calibration += [(p, a < b) for a, b, p in zip(fit.order, fit.order[1:], fit.p_next)]
            print(coverage_line(f"{name}, {seats} seats, {n} games", covered, total, leagues))
        print(f"      (truth: mu {', '.join(f'{pooled.mu[b]:.2f}' for b in range(4))} from {pooled.games} games; "
              f"{time.perf_counter() - start:.0f} s)")
    print(f"   calibration of P(>next), all rows above pooled ({len(calibration)} adjacent pairs; truly right = "
          f"the lower eps above):")
    print("\n".join(reliability(calibration)))


def fishtest_llr(set_scores: list[float], params: SprtParams) -> float:
    """fishtest's LLR_logistic (server/fishtest/stats/LLRcalc.py), for the bench and the tests
    only: the exact multinomial GSPRT on the pentanomial counts, each empty cell regularised to
    1e-3, the distribution under each hypothesis the maximum-likelihood one with expected score
    s (Van den Bergh's secular equation)."""
    from scipy.optimize import brentq

    counts = [0.0] * 5
    for x in set_scores:
        counts[round(4 * x)] += 1
    counts = [c if c else 1e-3 for c in counts]
    total = sum(counts)
    values = [i / 4 for i in range(5)]
    probs = [c / total for c in counts]

    def mle(s: float) -> list[float]:
        shifted = [a - s for a in values]
        lo, hi = -1 / max(shifted), 1 / -min(shifted)
        eps = 1e-9
        x = brentq(lambda x: sum(p * d / (1 + x * d) for p, d in zip(probs, shifted)), lo + eps, hi - eps)
        return [p / (1 + x * d) for p, d in zip(probs, shifted)]

    s0, s1 = (1 / (1 + 10 ** (-e / 400)) for e in (params.elo0, params.elo1))
    p0, p1 = mle(s0), mle(s1)
    return total * sum(p * math.log(q1 / q0) for p, q0, q1 in zip(probs, p0, p1))


def part_sprt(runs: int) -> None:
    """The project's LLR (the exact multinomial GSPRT) against fishtest's LLR_logistic written
    from its formulas, on pentanomial sets (2 players) drawn at Elo differences around the
    test's two hypotheses: they should agree to rounding."""
    print(f"\n7. the match's LLR against fishtest's LLR_logistic (pentanomial sets, elo0=0 elo1=10; "
          f"{runs} simulated matches per row)")
    params = SprtParams(elo0=0, elo1=10)
    rng = random.Random(7)
    for sets in (25, 50, 100, 200, 400, 1000):
        diffs = []
        for _ in range(runs):
            elo = rng.choice((-10, 0, 5, 10, 20))
            win = 1 / (1 + 10 ** (-elo / 400))
            draw = 0.3
            scores = []
            for _ in range(sets):  # two games of a deal, correlated: the second repeats the first 30% of the time
                first = 1.0 if rng.random() < win - draw / 2 else 0.5 if rng.random() < draw / (1 - win + draw / 2) else 0.0
                second = first if rng.random() < 0.3 else (1.0 if rng.random() < win - draw / 2 else
                                                          0.5 if rng.random() < draw / (1 - win + draw / 2) else 0.0)
                scores.append((first + second) / 2)
            ours, theirs = llr(scores, params), fishtest_llr(scores, params)
            diffs.append(abs(ours - theirs) / max(abs(theirs), 1.0))
        diffs.sort()
        print(f"   {sets:>5} sets: |ours - fishtest's| / max(|fishtest's|, 1): median {diffs[len(diffs) // 2]:.1e}, "
              f"90th percentile {diffs[int(0.9 * len(diffs))]:.1e}, largest {diffs[-1]:.1e}")


def part_speed(sizes: tuple[int, ...] = (100_000, 1_000_000), k: int = 1000) -> None:
    """The fit at 1,000 bots: 100,000 and 1,000,000 games of 3 seats in duplicate sets of 6."""
    import numpy as np

    from harness.league.ratings_fit import TableBatch, fit_batches

    print(f"\n8. speed of the table's fit, {k:,} bots, 3-seat duplicate sets (this machine is shared: see the load)")
    rng = np.random.default_rng(0)
    true = 25 + rng.normal(0, BETA, k)
    perms = np.array(list(itertools.permutations(range(3))))
    for games in sizes:
        sets = games // 6
        tables = np.argsort(rng.random((sets, k)), axis=1)[:, :3] if k * sets < 5e7 else np.stack(
            [rng.choice(k, 3, replace=False) for _ in range(sets)])
        versions = tables[:, perms].reshape(-1, 3)
        perf = true[versions] + rng.normal(0, BETA, versions.shape)
        ranks = np.argsort(np.argsort(-perf, axis=1), axis=1)
        batch = TableBatch(versions, ranks, np.repeat(np.arange(sets), 6))
        times = []
        for _ in range(3):
            t = time.perf_counter()
            fit_batches([batch])
            times.append(time.perf_counter() - t)
        rows = list(zip(versions.tolist(), ranks.tolist(), np.repeat(np.arange(sets), 6).tolist()))
        t = time.perf_counter()
        fit_table(rows)
        whole = time.perf_counter() - t
        print(f"   {games:>9,} games: fit_batches (arrays) median {sorted(times)[1]:.2f} s (of 3), fit_table from Python "
              f"tuples {whole:.2f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="order,match,model,real,sprt,speed,cells",
                        help="which parts: order (1-3), match (4), model (5), real (6), sprt (7), speed (8), "
                             "cells (9: bench/ratings_cells.py)")
    parser.add_argument("--games", default="crisps,dominoes,epizodiak")
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--max", type=int, default=1536, help="the largest checkpoint (games per league)")
    parser.add_argument("--match-reps", type=int, default=20)
    parser.add_argument("--fit-only", action="store_true", help="parts 1-3 for the table's fit alone (faster)")
    parser.add_argument("--model-leagues", type=int, default=200)
    parser.add_argument("--real-leagues", type=int, default=50)
    parser.add_argument("--sprt-runs", type=int, default=300)
    parser.add_argument("--cell-leagues", type=int, default=200, help="leagues per cell of part 9")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.games, args.reps, args.max, args.match_reps = "crisps", 2, 96, 1
        args.model_leagues, args.real_leagues, args.sprt_runs, args.cell_leagues = 2, 2, 3, 1
    small = args.tiny  # the parts' league sizes, and the fit's timing, at a size of seconds
    parts = set(args.parts.split(","))
    checkpoints = [48] if small else [n for n in (96, 192, 384, 768, 1536, 3072) if n <= args.max]
    if "order" in parts:
        print("1-3. leagues of four graded bots (greedy mixed with random moves at eps 0, 0.25, 0.5, 1)")
        for name in args.games.split(","):
            part1(name, args.reps, checkpoints, args.fit_only)
    if "match" in parts and args.match_reps:
        part4(args.match_reps, 200 if small else 3000)
    if "model" in parts:
        part_model(args.model_leagues, [48] if small else [96, 384, 1536])
    if "real" in parts:
        part_real(args.real_leagues, [48] if small else [96, 384])
    if "sprt" in parts:
        part_sprt(args.sprt_runs)
    if "speed" in parts:
        part_speed((6_000,), 50) if small else part_speed()
    if "cells" in parts:
        print("\n9. the fit where real leagues are (bench/ratings_cells.py: coverage and P(>next) per cell)")
        ratings_cells.run(args.cell_leagues)


if __name__ == "__main__":
    main()
