"""Part 5 of bench/matchmaking.py: the schedules on the real engines, bots of graded strength.

Run through bench/matchmaking.py (``--parts 5``); this module holds the part's league loop so that
each file stays one job. Each bot is a policy of bench/greedy_mix.py (greedy with probability p,
random otherwise), so the true order is the order of p; every schedule plays its own games on the
engine (nothing is shared between schedules but the field's p), rated as the league rates them.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from greedy_mix import Field, play_set  # noqa: E402
from matchmaking_model import BENCH_PARAMS, Until, ladder, report, top_right, uniform_sets  # noqa: E402

from harness.league.ratings_fit import TableBatch  # noqa: E402
from harness.league.schedule_matchmaker import Matchmaker  # noqa: E402

REAL_GAMES = {2: "dominoes", 3: "epizodiak"}


def real_verify(k: int, sets: int) -> None:
    """The premise of part 5 on a sample: a bot with p = 1 against one with p = 0.9, and p = 1 against p = 0."""
    game = REAL_GAMES[k]
    for strong, weak in ((1.0, 0.9), (1.0, 0.0)):
        rng = random.Random(f"verify:{k}:{weak}")
        score, games = 0.0, 0
        for _ in range(sets):
            greedy = [strong, weak] + [0.5] * (k - 2)
            for seats, ranking in play_set(game, rng.randrange(2**31), greedy, rng):
                ra, rb = ranking[seats.index(0)], ranking[seats.index(1)]
                score += 1.0 if ra < rb else 0.5 if ra == rb else 0.0
                games += 1
        share = score / games
        half = 1.96 * math.sqrt(share * (1 - share) / games)  # (sets' games are dependent: a rough interval)
        print(f"  {game}, tables of {k}: p={strong:g} placed ahead of p={weak:g} in {share:.3f} +- {half:.3f} of "
              f"{games:,} games ({sets} sets)")


def real_league(k: int, schedule: str, greedy: np.ndarray, rungs: list[int], league: int,
                confidence: float = 0.95) -> tuple[list[tuple[bool, bool] | None], tuple[int, bool, bool] | None]:
    """One league of bots playing greedy at the rates ``greedy`` (bot 0 strongest) on the real
    engine, up to each rung: (right top-10 set, right order) per rung, and where ``until`` stopped it."""
    n = greedy.size
    field = Field(REAL_GAMES[k], greedy.tolist(), seed=f"{k}:{schedule}:{league}")
    np_rng = np.random.default_rng([k, league, len(schedule)])
    truth = np.arange(n)
    per_set = math.factorial(k)
    mm = Matchmaker(league, (k,), params=BENCH_PARAMS)
    for v in range(n):
        mm.add_bot(v)
    combos = np.array(list(itertools.combinations(range(n), k)))
    until = Until(confidence) if schedule == "adaptive" else None
    played, out, stopped = 0, [], None

    def batch() -> TableBatch:
        return TableBatch(np.array(field.versions), np.array(field.ranks), np.array(field.sets))

    for rung in rungs:
        while played + (len(combos) * per_set if schedule == "round robin" else per_set) <= rung:
            if schedule == "adaptive":
                (sets,) = mm.plan_rounds(1)
                for members in sets.tolist():
                    for seats, ranking in field.play(members):
                        mm.record(mm.rounds - 1, seats, ranking)
            else:
                if schedule == "round robin":
                    sets = combos
                elif schedule == "random rounds":  # every bot in one set a round, tables drawn at random
                    sets = np_rng.permutation(n)[:n - n % k].reshape(-1, k)
                else:
                    sets = uniform_sets(n, k, min(n // k, (rung - played) // per_set), np_rng)
                for members in sets.tolist():
                    field.play(members)
            played += len(sets) * per_set
            if until is not None and stopped is None and until.stop(mm, batch, played):
                stopped = (played, *top_right(np.array(field.wins), truth)[:2])
        # judged once per rung, on the games played by then (not after every round)
        out.append(top_right(np.array(field.wins), truth)[:2] if played else None)
    return out, stopped


def real_case(case: tuple[int, int, list[float], list[int]]) -> dict[str, tuple[list[tuple[bool, bool] | None],
                                                                               tuple[int, bool, bool] | None]]:
    """One league of part 5, the three schedules (a worker's task: it depends only on its arguments)."""
    k, league, greedy, rungs = case
    return {name: real_league(k, name, np.array(greedy), rungs, league)
            for name in ("adaptive", "uniform", "round robin", "random rounds")}


def part5(k: int, n_bots: int, leagues: int, max_games: float, verify_sets: int,
          workers: int = 1, first: int = 0) -> tuple[int | None, int | None]:
    game = REAL_GAMES[k]
    greedy = np.linspace(1.0, 0.0, n_bots)
    print(f"\n5. the real engines: {game}, tables of {k}, {n_bots} bots, bot i greedy with probability "
          f"{greedy[0]:g}..{greedy[-1]:g} (step {greedy[0] - greedy[1]:.3f}) and uniformly random otherwise; "
          f"{leagues} leagues per schedule, {workers} worker(s)")
    t0 = time.perf_counter()
    real_verify(k, verify_sets)
    print(f"  (the check took {time.perf_counter() - t0:.0f} s)")
    rungs = ladder(max_games, start=max(1000.0, math.comb(n_bots, k) * math.factorial(k) / 8))
    results: dict[str, list[list[tuple[bool, bool] | None]]] = {"adaptive": [], "uniform": [], "round robin": [],
                                                                "random rounds": []}
    stops: list[tuple[int, bool, bool] | None] = []
    needed: tuple[int | None, int | None] = (None, None)
    t0 = time.perf_counter()
    pool = multiprocessing.get_context("fork").Pool(workers) if workers > 1 else None
    cases = [(k, league, greedy.tolist(), rungs) for league in range(first, first + leagues)]
    for outcome in pool.imap(real_case, cases) if pool else map(real_case, cases):
        for name in results:
            got, stopped = outcome[name]
            results[name].append(got)
            if name == "adaptive":
                stops.append(stopped)
        needed = report(k, rungs, results, stops, [], time.perf_counter() - t0, title=f"{game}, tables of {k}",
                        first_league=first)
        sys.stdout.flush()
    if pool:
        pool.close()
    return needed
