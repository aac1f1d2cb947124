"""The model and the judging shared by the matchmaking benches (bench/matchmaking.py, its part 5 in
bench/matchmaking_real.py, bench/random_rounds.py): bots of known skill playing sets, the order-free
fit that judges a league's top 10, the league's ``until`` rule, the ladder of games and the
report of a part.

In a game each bot performs its skill plus the seat's deal luck (shared by every seat order of a
duplicate set) plus its own noise, N(0, beta^2 / 2) each (beta = 25/6, TrueSkill's), and the
ranking orders the performances (bench/matchmaking.py's docstring says what each part measures).
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

# One BLAS thread: on a shared two-core machine OpenBLAS's threads made a 200-bot Cholesky 10x slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import matchmaking_headline  # noqa: E402

from harness.league.ratings_fit import TableBatch, fit_batches  # noqa: E402
from harness.league.schedule_adaptive import table_confidence, table_fit_answer  # noqa: E402
from harness.league.schedule_matchmaker import Matchmaker, MatchParams, fit_skills  # noqa: E402

MU, SIGMA, BETA = 25.0, 25.0 / 3, 25.0 / 6
LUCK = BETA / math.sqrt(2)  # the seat's deal luck, shared by the seat orders of a set
NOISE = BETA / math.sqrt(2)  # each bot's own noise in each game
TOP = 10
BENCH_PARAMS = MatchParams(lag=1, refit_growth=0.1)


def play_sets(sets: np.ndarray, skills: np.ndarray, rng: np.random.Generator,
              games: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every seat order of each set (rows of bot indices) on one deal: (winners, losers) of the
    comparisons of every pair of places of every game (as the table's fit reads a game). With
    ``games``, each game's bots from first place to last are appended to it (sets x k! x k)."""
    n_sets, k = sets.shape
    perms = np.array(list(itertools.permutations(range(k))))  # (k!, k): seat -> member
    members = sets[:, perms]  # (S, k!, k): the bot at each seat of each game
    luck = rng.normal(0.0, LUCK, (n_sets, 1, k))
    perf = skills[members] + luck + rng.normal(0.0, NOISE, members.shape)
    order = np.argsort(-perf, axis=2)
    placed = np.take_along_axis(members, order, axis=2)  # bots from first place to last
    if games is not None:
        games.append(placed.astype(np.int16))
    ahead, behind = zip(*itertools.combinations(range(k), 2))
    return placed[:, :, list(ahead)].ravel(), placed[:, :, list(behind)].ravel()


def add_wins(wins: np.ndarray, winners: np.ndarray, losers: np.ndarray) -> None:
    n = wins.shape[0]
    wins += np.bincount(winners * n + losers, minlength=n * n).reshape(n, n)


def uniform_sets(n: int, k: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` sets of ``k`` distinct bots, uniformly at random."""
    out = rng.integers(n, size=(count, k))
    while True:
        bad = np.flatnonzero((np.diff(np.sort(out, axis=1), axis=1) == 0).any(axis=1))
        if not bad.size:
            return out
        out[bad] = rng.integers(n, size=(bad.size, k))


def top_right(wins: np.ndarray, truth: np.ndarray) -> tuple[bool, bool, np.ndarray]:
    """(right top-10 set, right top-10 order, the fit's order) of the order-free fit of ``wins``."""
    fit = fit_skills(wins, mu=MU, sigma=SIGMA, beta=BETA)
    order = np.argsort(-fit.mu, kind="stable")
    return set(order[:TOP]) == set(truth[:TOP]), bool((order[:TOP] == truth[:TOP]).all()), order


class Until:
    """``until: {top: 10, confidence: C}`` as the league applies it (adaptive.AdaptiveSchedule._stop_now):
    the matchmaker's cheap count fit says when to ask; the table's own fit (ratings_fit.fit_batches on
    every game played, each duplicate set a cluster) decides, by adaptive.table_fit_answer; when it
    says no, it is asked again once the games have grown by a tenth."""

    def __init__(self, confidence: float) -> None:
        self.confidence = confidence
        self.confirm_after = 0
        self.asked = 0

    def stop(self, mm: Matchmaker, batch: Callable[[], TableBatch], played: int) -> bool:
        """Whether the league stops now, with ``played`` games; ``batch()`` gives every game played."""
        active = [v for v, on in zip(mm.ids, mm.active) if on]
        cheap = table_confidence(mm.fit(mm.rounds), mm.index, active, TOP)
        if cheap.pair is None or cheap.confidence < self.confidence or played < self.confirm_after:
            return False
        self.asked += 1
        answer = table_fit_answer(fit_batches([batch()], mu=MU, sigma=SIGMA, beta=BETA), active, TOP)
        if answer.pair is not None and answer.confidence >= self.confidence:
            return True
        self.confirm_after = int(played * 1.1) + 1
        return False


def ladder(max_games: float, start: float = 2e4) -> list[int]:
    rungs, g = [], start
    while g <= max_games * 1.0001:
        rungs.append(int(round(g)))
        g *= math.sqrt(2)
    return rungs


def report(k: int, rungs: list[int], results: dict[str, list[list[tuple[bool, bool] | None]]],
           stops: list[tuple[int, bool, bool] | None], ratios: list[float], seconds: float,
           title: str = "", first_league: int = 0,
           gaps: list[float] | None = None, bots: int = 200) -> tuple[int | None, int | None]:
    leagues = len(stops)
    print(f"\n{title or f'tables of {k}'}: {leagues} leagues ({seconds:.0f} s, load {os.getloadavg()[0]:.1f})")
    print(f"{'games':>12}  " + "  ".join(f"{name:>17}" for name in results))
    shares: dict[str, list[tuple[float, float] | None]] = {}
    for name, per_league in results.items():
        shares[name] = []
        for i in range(len(rungs)):
            got = [league[i] for league in per_league]
            shares[name].append(None if any(g is None for g in got) else
                                (sum(g[0] for g in got) / len(got), sum(g[1] for g in got) / len(got)))  # type: ignore[index]
    for i, rung in enumerate(rungs):
        cells = [f"{'-':>17}" if shares[name][i] is None else
                 f"{100 * shares[name][i][0]:7.0f}% / {100 * shares[name][i][1]:3.0f}%" for name in results]  # type: ignore[index]
        print(f"{rung:>12,}  " + "  ".join(cells))
    needed: dict[str, list[int | None]] = {}
    for name in results:
        # the first rung from which the share stays at 95% or more to the end of the ladder, and
        # the first rung at 95% or more
        needed[name] = []
        first: list[int | None] = []
        for j in range(2):
            at = None
            for i in range(len(rungs) - 1, -1, -1):
                share = shares[name][i]
                if share is None or share[j] < 0.95:
                    break
                at = rungs[i]
            needed[name].append(at)
            first.append(next((r for r, sh in zip(rungs, shares[name]) if sh is not None and sh[j] >= 0.95), None))
        shown = ["> max" if g is None else f"{g:,}" for g in needed[name] + first]
        print(f"  {name}: right set in >= 95% of leagues from {shown[0]} games on (first at {shown[2]}), right "
              f"order from {shown[1]} (first at {shown[3]})")
    worse = [(rung, what) for i, rung in enumerate(rungs) for j, what in enumerate(("set", "order"))
             if shares["adaptive"][i][j] < shares["uniform"][i][j]]  # type: ignore[index]
    print(f"  rungs where adaptive has fewer leagues right than uniform: "
          f"{', '.join(f'{r:,} ({w})' for r, w in worse) if worse else 'none'}")
    print("  paired (the same skills in both): leagues right with adaptive only / with uniform only, top-10 set "
          "(two-sided sign test p where uniform has more):")
    print("    " + ", ".join(paired_cell(rung, [lg[i] for lg in results["adaptive"]], [lg[i] for lg in results["uniform"]])
                             for i, rung in enumerate(rungs)))
    stuck = []
    for league, per_rung in enumerate(results["adaptive"]):
        if per_rung[-1] is not None and not per_rung[-1][0]:
            since = len(rungs) - 1
            while since > 0 and per_rung[since - 1] is not None and not per_rung[since - 1][0]:  # type: ignore[index]
                since -= 1
            gap = f" (true {TOP}th/{TOP + 1}th gap {gaps[league]:.3f} beta)" if gaps else ""
            stuck.append(f"league {first_league + league} since {rungs[since]:,}{gap}")
    print(f"  adaptive leagues with the wrong top-{TOP} set at the last rung: {', '.join(stuck) if stuck else 'none'}")
    done = [s for s in stops if s is not None]
    if done:
        print(f"  until {{top: {TOP}, confidence: 0.95}}: {len(done)} of {leagues} adaptive leagues stopped "
              f"(median {np.median([s[0] for s in done]):,.0f} games); of those {sum(s[2] for s in done)} with the "
              f"right top-{TOP} order, {sum(s[1] for s in done)} with the right set")
    else:
        print(f"  until {{top: {TOP}, confidence: 0.95}}: no adaptive league stopped by {rungs[-1]:,} games")
    if ratios:
        print(f"  adaptive balance at {rungs[-1]:,} games: most/least-played games {max(ratios):.3f} (worst league)")
    for line in matchmaking_headline.headline_lines(rungs, results, gaps, bots, MU, SIGMA, BETA):
        print(line)
    return needed["adaptive"][0], needed["uniform"][0]


def paired_cell(rung: int, adaptive: list[tuple[bool, bool] | None], uniform: list[tuple[bool, bool] | None]) -> str:
    """One rung's discordant leagues for the top-10 set: right with adaptive only, right with uniform only."""
    a_only = sum(1 for a, u in zip(adaptive, uniform) if a and u and a[0] and not u[0])
    u_only = sum(1 for a, u in zip(adaptive, uniform) if a and u and u[0] and not a[0])
    cell = f"{rung:,}: {a_only}/{u_only}"
    if u_only > a_only:
        n = a_only + u_only
        p = min(1.0, 2 * sum(math.comb(n, i) for i in range(a_only + 1)) / 2**n)
        cell += f" (p {p:.2f})"
    return cell
