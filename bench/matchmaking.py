"""Does the adaptive schedule find the best bots with fewer games than uniform random sets?

In process, bots of known strength: 200 skills drawn from TrueSkill's prior N(25, (25/3)^2); in
a game each bot performs its skill plus the seat's deal luck (shared by every seat order of a
duplicate set) plus its own noise, N(0, beta^2 / 2) each (beta = 25/6, TrueSkill's), and the
ranking orders the performances. Each league is rated as the league rates: the order-free fit
of TrueSkill's model on every pair of seats of every game (the table's pairwise composite
likelihood; harness.league.schedule_matchmaker.fit_skills, mu only). Side by side in one run, tables of 2 and of 3:

1. The share of leagues whose fit has the right top-10 set, and the right top-10 order, at each
   rung of a geometric ladder of games played, for the adaptive schedule (the matchmaker with
   its defaults, except the fit refreshed when the rounds grow by 10% and the previous round's
   results known when choosing the next: an in-process league plays a round at once), uniform
   random sets, and round-robin rounds (whole rounds only); the games each needs for 95%; per
   rung, the leagues right with adaptive only and with uniform only (the same skills in both:
   a paired comparison, with a sign test where uniform has more); the adaptive leagues with the
   wrong set at the last rung, since which rung, and their true gap between the 10th and 11th
   bots (a gap of a few thousandths of beta is a coin flip for any schedule within the ladder).
   --workers spreads the leagues over processes (the same leagues whatever the count; --first-league
   starts elsewhere, to add leagues to a run). The adaptive leagues also
   apply ``until: {top: 10, confidence: 0.95}`` as the league applies it (:class:`Until`: the
   matchmaker's count fit says when to ask; the table's own fit, ratings_fit.fit_batches on every
   game played with each duplicate set a cluster, decides by adaptive.table_fit_answer, the
   function the league calls): how many stopped, and the share of those with the right top-10
   order and set, judged on the games played when they stopped.
2. Balance (adaptive): the most- over the least-played bot's games, seats (every seat order of
   each set: equal by construction, counted), and each table size's share per bot in a league
   with tables of 2 and 3.
3. A newcomer (a skill from the same prior) arriving in a league whose bots have ~1,000 games:
   its rank error after its first 100 and 200 games, and how many league games and sets those
   took, adaptive (the settings of part 1) against uniform random sets.
4. Speed: choosing a round among 1,000 active bots (tables of 2 and of 3), and the fit it draws from.
5. The real engines: bots that are in-process policies (bench/greedy_mix.py: the greedy choice of
   bots/<game>_greedy.py with probability p, a uniformly random move otherwise), p graded from 1
   down to 0 over the field, so the true order is the order of p; the premise is checked first
   on a sample (p=1 against p=0.9, and against p=0). Dominoes at tables of 2, Epizodiak at
   tables of 3; adaptive, uniform random sets, round-robin rounds and random rounds (every bot at
   one table a round, the tables drawn at random: the adaptive schedule's rounds without its
   choice, which tells the rounds' share of a difference from the choice's), rated and judged as in
   part 1, with ``until`` as in part 1 (the part's loop is bench/matchmaking_real.py). Not at full size: the engines play 300-700 games/s per
   core in process (~150-450 on this shared machine under load), and p from 0 to 1 spans only
   ~8.8 TrueSkill units in Dominoes (p=1 ahead of p=0 in 93% of games) and ~2.2 in Epizodiak
   (64.5%): 200 bots would be 0.04 and 0.01 units apart, beyond any ladder in reach. The default
   is 20 Dominoes bots (p step 0.053) and 12 Epizodiak bots (step 0.091), 12 leagues per
   schedule, ladders to 22,627 and 16,000 games (--real, --real-leagues); the full case (200
   bots, 40 leagues) would need a faster engine or policy (C++), many cores, and a wider
   strength range than greedy/random gives.

The last line is the headline: games adaptive / games uniform for the top-10 set, per table size.

The model of a game and the judging of a league are bench/matchmaking_model.py (shared with part 5
and bench/random_rounds.py).

Run: python bench/matchmaking.py [--leagues 40] [--workers 2] [--max-games 2:1.6e7,3:8e6] [--parts 1,2,3,4,5]
     [--real 2:20:22627,3:12:16000] [--real-leagues 12]
The figures in docs/leagues.md come from this script (its --leagues and the load are printed).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import multiprocessing
import os
import sys
import time
from pathlib import Path

# One BLAS thread: on a shared two-core machine OpenBLAS's threads made a 200-bot Cholesky 10x slower.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from matchmaking_headline import bootstrap_ratio, stays_from  # noqa: E402
from matchmaking_model import (  # noqa: E402
    BENCH_PARAMS,
    BETA,
    LUCK,
    MU,
    NOISE,
    SIGMA,
    TOP,
    Until,
    add_wins,
    ladder,
    play_sets,
    report,
    top_right,
    uniform_sets,
)
from matchmaking_real import REAL_GAMES, part5  # noqa: E402
from scipy.special import ndtr  # noqa: E402

from harness.league.ratings_fit import TableBatch  # noqa: E402
from harness.league.schedule_matchmaker import Matchmaker, MatchParams, fit_skills  # noqa: E402

# ---------------------------------------------------------------------------------------------
# playing sets


def play_chunked(sets: np.ndarray, skills: np.ndarray, wins: np.ndarray, rng: np.random.Generator,
                 chunk: int = 200_000) -> None:
    for i in range(0, len(sets), chunk):
        add_wins(wins, *play_sets(sets[i:i + chunk], skills, rng))


def pair_outcomes(skills: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For a set of two (both seat orders of one deal): P(row bot wins both games), P(it loses both).

    The two games differ by the sign of the seats' luck difference D; given D they are
    independent: integrated over D by Gauss-Hermite quadrature."""
    nodes, weights = np.polynomial.hermite.hermgauss(40)
    luck = math.sqrt(2) * math.sqrt(2) * LUCK * nodes  # D ~ N(0, 2 LUCK^2)
    w = weights / math.sqrt(math.pi)
    delta = (skills[:, None] - skills[None, :])[:, :, None]
    scale = math.sqrt(2) * NOISE
    first, second = ndtr((delta + luck) / scale), ndtr((delta - luck) / scale)
    return (w * first * second).sum(axis=2), (w * (1 - first) * (1 - second)).sum(axis=2)


def play_pairs(counts: np.ndarray, both: np.ndarray, neither: np.ndarray, wins: np.ndarray,
               rng: np.random.Generator) -> None:
    """``counts[a, b]`` sets of two for each pair a < b, played in aggregate (exactly the
    distribution of :func:`play_sets`): each set is two wins, one each, or two losses for a."""
    a, b = np.nonzero(np.triu(counts, 1))
    n = counts[a, b]
    two = rng.binomial(n, both[a, b])
    zero = rng.binomial(n - two, np.clip(neither[a, b] / np.maximum(1 - both[a, b], 1e-300), 0, 1))
    one = n - two - zero
    wins[a, b] += 2 * two + one
    wins[b, a] += 2 * zero + one


def play_block(mm: Matchmaker, block: list[np.ndarray], skills: np.ndarray, wins: np.ndarray,
               rng: np.random.Generator, games: list[np.ndarray] | None = None) -> None:
    """Play the rounds ``block`` (just planned by ``mm``) at once; each round's results go to ``mm`` under its number."""
    sizes = {sets.shape[1] for sets in block if sets.size}
    first = mm.rounds - len(block)
    for k in sizes:
        rounds = [i for i, sets in enumerate(block) if sets.size and sets.shape[1] == k]
        winners, losers = play_sets(np.concatenate([block[i] for i in rounds]), skills, rng, games)
        add_wins(wins, winners, losers)
        per_set = math.factorial(k) * math.comb(k, 2)
        bounds = np.cumsum([len(block[i]) * per_set for i in rounds])[:-1]
        for i, w, lo in zip(rounds, np.split(winners, bounds), np.split(losers, bounds)):
            mm.record_comparisons(first + i, w, lo, np.ones(w.size))


# ---------------------------------------------------------------------------------------------
# judging a league


def table_batch(games: list[np.ndarray]) -> TableBatch:
    """The games played (blocks of sets x k! x k, bots from first place to last) as the table's fit reads them."""
    placed = np.concatenate(games)
    n_sets, per_set, k = placed.shape
    return TableBatch(placed.reshape(-1, k).astype(np.int64), np.tile(np.arange(k), (n_sets * per_set, 1)),
                      np.repeat(np.arange(n_sets), per_set))


# ---------------------------------------------------------------------------------------------
# part 1: the three schedules

#: the stream of uniform's games run further (:func:`uniform_further`), apart from the saved run's
UNIFORM_STREAM = 7


def run_uniform(skills: np.ndarray, k: int, rungs: list[int], rng: np.random.Generator) -> list[tuple[bool, bool]]:
    n = skills.size
    wins = np.zeros((n, n))
    played, out = 0, []
    per_set = math.factorial(k)
    tables = pair_outcomes(skills) if k == 2 else None
    iu = np.triu_indices(n, 1)
    for rung in rungs:
        count = (rung - played) // per_set
        if tables is not None:  # sets of two in aggregate: how many each pair plays, then how they end
            counts = np.zeros((n, n), dtype=np.int64)
            counts[iu] = rng.multinomial(count, np.full(iu[0].size, 1.0 / iu[0].size))
            play_pairs(counts, *tables, wins, rng)
        else:
            play_chunked(uniform_sets(n, k, count, rng), skills, wins, rng)
        played += count * per_set
        out.append(top_right(wins, np.argsort(-skills))[:2])
    return out


def run_round_robin(skills: np.ndarray, k: int, rungs: list[int], rng: np.random.Generator) -> list[tuple[bool, bool] | None]:
    n = skills.size
    combos = np.array(list(itertools.combinations(range(n), k))) if k > 2 else None
    per_round = math.comb(n, k) * math.factorial(k)
    tables = pair_outcomes(skills) if k == 2 else None
    wins = np.zeros((n, n))
    rounds, out = 0, []
    last: tuple[bool, bool] | None = None
    for rung in rungs:
        target = rung // per_round
        if target > rounds:
            if tables is not None:
                play_pairs(np.triu(np.full((n, n), target - rounds, dtype=np.int64), 1), *tables, wins, rng)
            else:
                for _ in range(target - rounds):
                    play_chunked(combos, skills, wins, rng)  # type: ignore[arg-type]
            rounds = target
            last = top_right(wins, np.argsort(-skills))[:2]
        out.append(last)
    return out


def run_adaptive(skills: np.ndarray, k: int, rungs: list[int], seed: int, rng: np.random.Generator,
                 confidence: float = 0.95) -> tuple[list[tuple[bool, bool]], dict[str, float], tuple[int, bool, bool] | None]:
    """The adaptive league up to each rung; also its balance at the end and where ``until`` stopped it."""
    n = skills.size
    mm = Matchmaker(seed, (k,), params=BENCH_PARAMS)
    for v in range(n):
        mm.add_bot(v)
    wins = np.zeros((n, n))
    played, out = 0, []
    stopped: tuple[int, bool, bool] | None = None
    truth = np.argsort(-skills)
    per_set = math.factorial(k)
    games: list[np.ndarray] | None = []
    until = Until(confidence)
    for rung in rungs:
        while played < rung:
            block = mm.plan_rounds(min(mm.rounds_on_this_fit(), max(1, (rung - played) // (n * per_set // k))))
            play_block(mm, block, skills, wins, rng, games)
            played += sum(len(sets) for sets in block) * per_set
            if games is not None and until.stop(mm, lambda kept=games: table_batch(kept), played):
                # judged on the games played when it stopped (the fit of the wins so far)
                stopped = (played, *top_right(wins, truth)[:2])
                games = None  # asked and answered: no more games to keep
        right_set, right_order, _ = top_right(wins, truth)
        out.append((right_set, right_order))
    games = mm.games[:n]
    balance = {"games_ratio": float(games.max() / max(games.min(), 1))}
    return out, balance, stopped


def league_case(case: tuple[int, int, int, list[int]]) -> tuple[list[tuple[bool, bool]], dict[str, float],
                                                               tuple[int, bool, bool] | None, list[tuple[bool, bool]],
                                                               list[tuple[bool, bool] | None]]:
    """One league of part 1, the three schedules on the same skills (a worker's task: it depends
    only on its arguments, so the leagues come out the same whatever ``--workers`` is). The
    balance dict also carries the true gap between the 10th and 11th bots, in units of beta."""
    k, league, n_bots, rungs = case
    rng = np.random.default_rng([k, league])
    skills = rng.normal(MU, SIGMA, n_bots)
    adaptive, balance, stopped = run_adaptive(skills, k, rungs, seed=league, rng=rng)
    ranked = np.sort(skills)[::-1]
    balance["gap"] = float(ranked[TOP - 1] - ranked[TOP]) / BETA
    return adaptive, balance, stopped, run_uniform(skills, k, rungs, rng), run_round_robin(skills, k, rungs, rng)


def part1(n_bots: int, leagues: int, max_games: dict[int, float], sizes: list[int], workers: int = 1,
          first: int = 0, save: str = "") -> dict[int, tuple[int | None, int | None]]:
    print(f"\n1. {n_bots} bots, {leagues} leagues per case (from league {first}, {workers} worker(s)): share of "
          f"leagues with the right top-{TOP} set / order")
    headline: dict[int, tuple[int | None, int | None]] = {}
    pool = multiprocessing.get_context("fork").Pool(workers) if workers > 1 else None
    for k in sizes:
        rungs = ladder(max_games[k])
        results: dict[str, list[list[tuple[bool, bool] | None]]] = {"adaptive": [], "uniform": [], "round robin": []}
        stops: list[tuple[int, bool, bool] | None] = []
        ratios: list[float] = []
        gaps: list[float] = []
        t0 = time.perf_counter()
        cases = [(k, league, n_bots, rungs) for league in range(first, first + leagues)]
        outcomes = pool.imap(league_case, cases) if pool else map(league_case, cases)
        for done, (adaptive, balance, stopped, uniform, round_robin) in enumerate(outcomes, 1):
            if save:  # one line per league as it finishes: a run cut short still counts, and pieces combine
                with open(save, "a") as out:
                    out.write(json.dumps({"k": k, "league": first + done - 1, "bots": n_bots, "max": max_games[k],
                                          "adaptive": adaptive, "uniform": uniform, "round robin": round_robin,
                                          "stopped": stopped, "balance": balance}) + "\n")
            results["adaptive"].append(adaptive)  # type: ignore[arg-type]
            stops.append(stopped)
            ratios.append(balance["games_ratio"])
            gaps.append(balance["gap"])
            results["uniform"].append(uniform)  # type: ignore[arg-type]
            results["round robin"].append(round_robin)
            if done % 10 == 0 or done == leagues:  # a partial table now and then: a long run says something
                headline[k] = report(k, rungs, results, stops, ratios, time.perf_counter() - t0, first_league=first, gaps=gaps,
                                     bots=n_bots)
                sys.stdout.flush()
    if pool:
        pool.close()
    return headline


def uniform_further(paths: list[str], tops: dict[int, float]) -> None:
    """The headline as a ratio: uniform sets run on their own up a longer ladder (to ``tops``),
    on each saved league's skills (drawn again from its seed, as :func:`league_case` draws them;
    uniform's games from a stream of their own, not the saved run's), against the saved adaptive
    leagues' rung from which 95% stays (on their ladder); bootstrap over the leagues, both
    schedules resampled together. Uniform sets at tables of two are played in aggregate (how
    many games each pair plays, then how they end), so the longer ladder costs seconds."""
    for k, bots, top, rows in saved_groups(paths):
        a_rungs, u_rungs = ladder(top), ladder(tops.get(k, top))
        adaptive = np.array([[bool(c and c[0]) for c in row["adaptive"]] for row in rows])
        saved = np.array([[bool(c and c[0]) for c in row["uniform"]] for row in rows])
        start = time.perf_counter()
        uniform = []
        for row in rows:
            skills = np.random.default_rng([k, row["league"]]).normal(MU, SIGMA, bots)
            got = run_uniform(skills, k, u_rungs, np.random.default_rng([k, row["league"], UNIFORM_STREAM]))
            uniform.append([right for right, _ in got])
        u = np.array(uniform)
        print(f"\nuniform sets further, tables of {k}, {bots} bots, {len(rows)} saved leagues "
              f"({rows[0]['league']}-{rows[-1]['league']}; {time.perf_counter() - start:.0f} s):")
        print("   games        uniform, run further   uniform, saved run   adaptive, saved run")
        for i, rung in enumerate(u_rungs):
            cells = [f"{100 * u[:, i].mean():5.1f}%"] + [f"{100 * m[:, i].mean():5.1f}%" if i < m.shape[1] else "    -"
                                                        for m in (saved, adaptive)]
            print(f"   {rung:>10,}   {cells[0]:>20}   {cells[1]:>18}   {cells[2]:>19}")
        ratio, low, high, usable = bootstrap_ratio(a_rungs, adaptive, u, uniform_rungs=u_rungs)
        a_at, u_at = stays_from(a_rungs, adaptive), stays_from(u_rungs, u)
        if ratio is None:
            print(f"   uniform still short of 95% at {u_rungs[-1]:,} games: the headline stays a bound")
            continue
        print(f"   headline: games adaptive / uniform for the right top-{TOP} set {ratio:.3f} ({a_at:,} / {u_at:,}), "
              f"bootstrap 90% interval over the {len(rows)} leagues {low:.3f}-{high:.3f} ({usable} of 1,000 resamples "
              f"where both reached 95%; the rungs are a factor sqrt(2) apart)")


# ---------------------------------------------------------------------------------------------
# part 2: balance over time with two table sizes


def saved_groups(paths: list[str]) -> list[tuple[int, int, float, list[dict]]]:
    """The leagues saved by ``--save`` runs, per (table size, bots, ladder top), in league order
    (pieces with different ``--first-league`` combine; a league saved twice counts once)."""
    leagues: dict[tuple[int, int, int, float], dict] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                leagues[(row["k"], row["bots"], row["league"], row["max"])] = row
    return [(k, bots, top, [leagues[key] for key in sorted(leagues) if key[0] == k and key[1] == bots and key[3] == top])
            for k, bots, top in sorted({(k, b, m) for k, b, _, m in leagues})]


def from_saved(paths: list[str]) -> None:
    """Part 1's report from the leagues saved by ``--save`` runs."""
    for k, bots, top, rows in saved_groups(paths):
        results = {name: [[None if c is None else tuple(c) for c in row[name]] for row in rows]
                   for name in ("adaptive", "uniform", "round robin")}
        stops = [None if row["stopped"] is None else tuple(row["stopped"]) for row in rows]
        report(k, ladder(top), results, stops, [row["balance"]["games_ratio"] for row in rows], 0.0,  # type: ignore[arg-type]
               title=f"tables of {k}, {bots} bots, from saved leagues {rows[0]['league']}-{rows[-1]['league']}",
               gaps=[row["balance"]["gap"] for row in rows], bots=bots)


def part2(n_bots: int, games: int) -> None:
    print(f"\n2. balance, adaptive, {n_bots} bots, tables of 2 and 3 in one league, {games:,} games")
    rng = np.random.default_rng(99)
    skills = rng.normal(MU, SIGMA, n_bots)
    mm = Matchmaker(5, (2, 3), params=BENCH_PARAMS)
    for v in range(n_bots):
        mm.add_bot(v)
    seats = np.zeros((n_bots, 3), dtype=np.int64)
    played, worst = 0, 0.0
    while played < games:
        for sets in mm.plan_rounds(min(mm.rounds_on_this_fit(), 16)):
            r = mm.rounds - 1
            k = sets.shape[1]
            for perm in itertools.permutations(range(k)):
                for seat, member in enumerate(perm):
                    np.add.at(seats[:, seat], sets[:, member], 1)
            winners, losers = play_sets(sets, skills, rng)
            mm.record_comparisons(r, winners, losers, np.ones(winners.size))
            played += len(sets) * math.factorial(k)
            g = mm.games[:n_bots]
            if g.min() >= 100:
                worst = max(worst, float(g.max() / g.min()))
    g = mm.games[:n_bots]
    share2 = mm.by_size[:n_bots, 0] / g
    print(f"  most/least-played games: {g.max() / g.min():.3f} now, {worst:.3f} at worst once each had 100 "
          f"(target <= 1.25)")
    print(f"  seat 0 games per bot: {seats[:, 0].min()}-{seats[:, 0].max()}, seat 1: {seats[:, 1].min()}-"
          f"{seats[:, 1].max()}; each bot's seats within its own games: every seat order of every set")
    print(f"  share of a bot's games at tables of 2: {share2.min():.3f}-{share2.max():.3f}")


# ---------------------------------------------------------------------------------------------
# part 3: a newcomer


def newcomer_league(k: int, schedule: str, league: int, n_bots: int, warm_games: int) -> dict[str, float]:
    rng = np.random.default_rng([77, k, league])
    skills = rng.normal(MU, SIGMA, n_bots + 1)
    new = n_bots
    wins = np.zeros((n_bots + 1, n_bots + 1))
    per_set = math.factorial(k)
    out: dict[str, float] = {}
    truth_rank = int(np.sum(skills > skills[new]))
    if schedule == "uniform":
        play_chunked(uniform_sets(n_bots, k, warm_games // per_set, rng), skills, wins, rng)
        new_games = league_games = sets_done = 0
        while new_games < 200:
            sets = uniform_sets(n_bots + 1, k, 1000, rng)
            for s in sets:
                add_wins(wins, *play_sets(s[None, :], skills, rng))
                league_games += per_set
                sets_done += 1
                if new in s:
                    new_games += per_set
                    for mark in (100, 200):
                        if new_games >= mark and f"games{mark}" not in out:
                            fit = fit_skills(wins, mu=MU, sigma=SIGMA, beta=BETA)
                            rank = int(np.sum(fit.mu > fit.mu[new]))
                            out[f"games{mark}"], out[f"sets{mark}"] = league_games, sets_done
                            out[f"error{mark}"] = abs(rank - truth_rank)
                if new_games >= 200:
                    break
        return out
    mm = Matchmaker(league, (k,), params=BENCH_PARAMS)
    for v in range(n_bots):
        mm.add_bot(v)
    played = 0
    while played < warm_games:
        block = mm.plan_rounds(min(mm.rounds_on_this_fit(), 64))
        play_block(mm, block, skills, wins, rng)
        played += sum(len(sets) for sets in block) * per_set
    mm.add_bot(new)
    league_games = sets_done = 0
    while "games200" not in out:
        (sets,) = mm.plan_rounds(1)
        r = mm.rounds - 1
        with_new = np.flatnonzero((sets == new).any(axis=1))
        before = int(mm.games[new] - len(with_new) * per_set)
        # sets are played in the order chosen: count the league's games up to each of the newcomer's
        for s in sets:
            winners, losers = play_sets(s[None, :], skills, rng)
            mm.record_comparisons(r, winners, losers, np.ones(winners.size))
            add_wins(wins, winners, losers)
            league_games += per_set
            sets_done += 1
            if new in s:
                before += per_set
                for mark in (100, 200):
                    if before >= mark and f"games{mark}" not in out:
                        fit = fit_skills(wins, mu=MU, sigma=SIGMA, beta=BETA)
                        rank = int(np.sum(fit.mu > fit.mu[new]))
                        out[f"games{mark}"], out[f"sets{mark}"] = league_games, sets_done
                        out[f"error{mark}"] = abs(rank - truth_rank)
    return out


def part3(n_bots: int, leagues: int, sizes: list[int]) -> None:
    warm = n_bots * 1000 // 2
    print(f"\n3. a newcomer in a league of {n_bots} bots with ~1,000 games each ({leagues} leagues per case): "
          f"median over leagues")
    for k in sizes:
        for schedule in ("adaptive", "uniform"):
            rows = [newcomer_league(k, schedule, i, n_bots, warm * k // 2 if k == 3 else warm) for i in range(leagues)]
            med = {key: float(np.median([r[key] for r in rows])) for key in rows[0]}
            print(f"  tables of {k}, {schedule:>8}: after 100 of its games rank error {med['error100']:.0f} "
                  f"({med['games100']:,.0f} league games, {med['sets100']:,.0f} sets); after 200: rank error "
                  f"{med['error200']:.0f} ({med['games200']:,.0f} league games, {med['sets200']:,.0f} sets)")


# ---------------------------------------------------------------------------------------------
# part 4: speed


def part4(n_bots: int) -> None:
    print(f"\n4. speed: {n_bots} active bots")
    for k in (2, 3):
        rng = np.random.default_rng(k)
        skills = rng.normal(MU, SIGMA, n_bots)
        mm = Matchmaker(1, (k,), params=MatchParams(lag=1))
        for v in range(n_bots):
            mm.add_bot(v)
        for _ in range(3):
            (sets,) = mm.plan_rounds(1)
            winners, losers = play_sets(sets, skills, rng)
            mm.record_comparisons(mm.rounds - 1, winners, losers, np.ones(winners.size))
        t0 = time.perf_counter()
        mm.fit(mm.rounds)
        fit_s = time.perf_counter() - t0
        times = []
        for _ in range(5):
            mm.fit(mm.rounds)  # (cached: the same results)
            t0 = time.perf_counter()
            mm.plan_rounds(1)
            times.append(time.perf_counter() - t0)
            mm.rounds -= 1  # plan the same round again
        print(f"  tables of {k}: choosing a round ({len(sets)} sets) {1000 * min(times):.1f} ms (best of 5, median "
              f"{1000 * float(np.median(times)):.1f} ms); the fit it draws from {1000 * fit_s:.0f} ms")


def count(text: str) -> int:
    """An argparse type: a whole number >= 0 (league numbers seed numpy, which takes no negatives)."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--leagues", type=int, default=40)
    parser.add_argument("--bots", type=int, default=200)
    parser.add_argument("--workers", type=count, default=1, help="part 1's and part 5's leagues on this many processes")
    parser.add_argument("--first-league", type=count, default=0, help="part 1's and part 5's first league (its seed)")
    parser.add_argument("--max-games", default="2:1.6e7,3:8e6", help="the ladder's top per table size")
    parser.add_argument("--sizes", default="2,3")
    parser.add_argument("--parts", default="1,2,3,4,5")
    parser.add_argument("--newcomer-leagues", type=int, default=20)
    parser.add_argument("--real", default="2:20:22627,3:12:16000",
                        help="part 5 per table size: size:bots:ladder top (dominoes at 2, epizodiak at 3)")
    parser.add_argument("--real-leagues", type=int, default=12)
    parser.add_argument("--verify-sets", type=int, default=200, help="part 5's check of the premise: sets per pair")
    parser.add_argument("--save", default="", help="part 1: append each league's results to this file (JSON lines)")
    parser.add_argument("--from-saved", default="", help="part 1's report from saved files (comma-separated), no play")
    parser.add_argument("--uniform-further", default="", help="saved files (comma-separated): uniform sets alone on "
                        "their leagues up the ladder to --max-games, against the saved adaptive leagues (a ratio)")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.leagues, args.bots, args.max_games, args.sizes, args.newcomer_leagues = 1, 20, "2:2e4", "2", 1
        args.real, args.real_leagues, args.verify_sets = "2:11:1000", 1, 2
    if args.from_saved:
        from_saved(args.from_saved.split(","))
        return
    if args.uniform_further:
        uniform_further(args.uniform_further.split(","),
                        {int(k): float(v) for k, v in (item.split(":") for item in args.max_games.split(","))})
        return
    parts = {int(p) for p in args.parts.split(",")}
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine)")
    cells = []
    if 4 in parts:
        part4(100 if args.tiny else 1000)
    if 2 in parts:
        part2(args.bots, 5_000 if args.tiny else 200_000)
    if 3 in parts:
        part3(args.bots, args.newcomer_leagues, sizes)
    if 1 in parts:
        tops = {int(k): float(v) for k, v in (item.split(":") for item in args.max_games.split(","))}
        for k, (a, u) in part1(args.bots, args.leagues, tops, sizes, args.workers, args.first_league,
                                     args.save).items():
            cells.append(headline_cell(f"synthetic, tables of {k}", a, u, tops[k]))
    if 5 in parts:
        for item in args.real.split(","):
            k, bots, top = (float(x) for x in item.split(":"))
            if int(k) in sizes:
                a, u = part5(int(k), int(bots), args.real_leagues, top, args.verify_sets, args.workers,
                             args.first_league)
                cells.append(headline_cell(f"{REAL_GAMES[int(k)]} ({int(bots)} bots, {args.real_leagues} leagues), "
                                           f"tables of {int(k)}", a, u, top))
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    if cells:
        print("headline: games adaptive / games uniform for the right top-10 set in 95% of leagues: " + "; ".join(cells))


def headline_cell(label: str, adaptive: int | None, uniform: int | None, top: float) -> str:
    ratio = (f"{adaptive / uniform:.2f}" if adaptive and uniform else f"< {adaptive / top:.2f}" if adaptive
             else "n/a (adaptive did not reach 95%)")
    return (f"{label}: {ratio} ({'> max' if adaptive is None else f'{adaptive:,}'} / "
            f"{'> max' if uniform is None else f'{uniform:,}'})")


if __name__ == "__main__":
    main()
