"""The cost of fair play, measured side by side with the behaviour before it, in one run.

1. One process per deal (a bot process never plays two seat orders of one deal): league games
   per second with the rule and without it (``FairPlay(process_per_deal=False)``: processes
   reused for every seat order, as before), and the bot processes each started. On the bench
   league of bench/league.py (Crisps, greedy / random-py / random-js, 2 seats: 2 seat orders a
   deal) and on Dominoes at 2, 3 and 4 seats (``--dom-seats``; 4 seats: 24 seat orders a deal, the
   worst case: each bot needs 24 processes, spread over the workers; the default idle bound is sized
   to keep them (``idle_bound``: 72 per worker here), ``--fixed-idle`` plays the last league again with
   the fixed bound of 32 it had before, which stops some between windows of deals). Three columns: before, the rule with games dispatched in
   schedule order (``schedule-order``), the rule blocked by deal with a spare process of a bot
   started ahead of need (``spares``: ``spare_bots: 1``), and the rule blocked by deal (after, as
   a league plays by default).
2. CPU fairness (bots frozen between turns, deadlines in the CPU time of the bot's tree): the
   same league's games per second with it and with wall-clock deadlines and no freezing
   (``FairPlay(cpu_clock=False)``), i.e. the cost of a freeze, a thaw and two CPU
   readings per decision.
   And per decision, in one process pinned to one core (less noisy than games per second on
   a shared machine): the referee's CPU time and the wall time per request sent, with and
   without (part 4).
3. What it buys: timeouts charged to two bots computing 50 ms of CPU per move at
   ``move_ms: 100``, with twice as many workers as cores, eight busy processes beside the
   league and a bot spinning four threads at the table; before and after.

Runs alternate between the two behaviours (each in fresh worker processes, given the rules by
``RunOptions(fair_play=...)``: :class:`harness.play.referee.FairPlay`); every run is printed, and the best of each is compared. The machine is
shared: say with which load the figures were taken (the load average is printed).

    python bench/fairplay.py [--rounds N] [--repeat N] [--parts 1,2,3,4]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import multiprocessing as mp
import os
import sqlite3
import tempfile
import time
from pathlib import Path

from harness.league.config import LeagueConfig, load_config
from harness.league.game_sources import DEAL_WINDOW, StoreSource
from harness.league.runner import RunHooks, RunOptions, idle_bound, run_league
from harness.play.referee import FAIR_PLAY, FairPlay

REPO = Path(__file__).resolve().parent.parent
BOTS = REPO / "bots"
ATTACKER = REPO / "tests" / "bots" / "attacker.py"


def write_league(dir_: Path, name: str, body: str) -> LeagueConfig:
    path = dir_ / f"{name}.yaml"
    path.write_text(f"name: {name}\nstore: {dir_ / (name + '.sqlite')}\n" + body)
    return load_config(path)


CRISPS = f"""game: crisps
options: {{max_turns: 40}}
rounds: {{rounds}}
limits: {{sandbox: bwrap}}
bots:
  - {{name: greedy, command: python3 {BOTS}/crisps_greedy.py}}
  - {{name: random-py, command: python3 {BOTS}/random_bot.py}}
  - {{name: random-js, command: node {BOTS}/random_bot.js}}
"""

DOMINOES = f"""game: dominoes
players: {{players}}
options: {{max_turns: 40}}
rounds: {{rounds}}
limits: {{sandbox: bwrap}}
bots:
  - {{name: greedy, command: python3 {BOTS}/dominoes_greedy.py}}
  - {{name: random-py, command: python3 {BOTS}/random_bot.py}}
  - {{name: random-js, command: node {BOTS}/random_bot.js}}
  - {{name: random-py-2, command: python3 {BOTS}/random_bot.py --seed 3}}
"""


#: the behaviours measured: "" (fair play, as in a league), and what each baseline turns off
BASELINES = {"": FAIR_PLAY, "schedule-order": FAIR_PLAY, "reuse-deals": FairPlay(process_per_deal=False),
             "wall-clock": FairPlay(cpu_clock=False), "spares": FAIR_PLAY}


def play(config: LeagueConfig, baseline: str, workers: int | None = None) -> tuple[float, int, int, int]:
    """Play the league from scratch under ``baseline`` (a key of :data:`BASELINES`); (games/s from
    the first recorded game to the last, games, bot processes started, timeouts). ``baseline``
    ``schedule-order``: the rule, games dispatched in schedule order (no blocking by deal);
    ``spares``: the rule, a spare process started ahead of need (``spare_bots: 1``)."""
    window = 1 if baseline == "schedule-order" else DEAL_WINDOW
    cfg = dataclasses.replace(config, workers=workers or config.workers)
    if baseline == "spares":
        cfg = dataclasses.replace(cfg, spare_bots=1)
    for suffix in ("", "-wal", "-shm", "-logs"):
        Path(cfg.store + suffix).unlink(missing_ok=True)
    logs = Path(str(Path(cfg.store).with_suffix("")) + ".logs")
    for log in logs.glob("**/*.log*"):
        log.unlink()
    stamps: list[float] = []
    run_league(cfg, progress=False,
               options=RunOptions(source=functools.partial(StoreSource, window=window), fair_play=BASELINES[baseline]),
               hooks=RunHooks(on_game=lambda seq, outcome: stamps.append(time.perf_counter())))
    started = sum(log.read_text(errors="replace").count("# tablebots: started pid") for log in logs.glob("**/*.log*"))
    with sqlite3.connect(cfg.store) as db:
        timeouts = db.execute("SELECT count(*) FROM violations WHERE kind = 'timeout'").fetchone()[0]
    rate = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
    return rate, len(stamps), started, timeouts


def side_by_side(label: str, config: LeagueConfig, before: str, after: str, repeat: int,
                 workers: int | None = None, middle: str | tuple[str, ...] = ()) -> None:
    """``before`` and ``after`` (and ``middle``, one or more, between them), alternated, best of each."""
    middles = (middle,) if isinstance(middle, str) else middle
    modes = [before, *middles, after]
    names = {before: "before", after: "after", **{m: m for m in middles}}
    runs: dict[str, list[tuple[float, int, int, int]]] = {m: [] for m in modes}
    for _ in range(repeat):
        for mode in modes:
            runs[mode].append(play(config, mode, workers))
    best = {m: max(r[0] for r in runs[m]) for m in modes}
    games = runs[after][0][1]
    print(f"   {label}: {games} games; " + ", ".join(f"{names[m]} {best[m]:.1f} games/s" for m in modes)
          + " (/before: " + ", ".join(f"{names[m]} {best[m] / best[before]:.2f}" for m in modes[1:])
          + "); bot processes started: " + ", ".join(f"{names[m]} {runs[m][0][2]}" for m in modes)
          + f"; load {os.getloadavg()[0]:.1f}")
    for mode in modes:
        print(f"      runs {names[mode]}: " + ", ".join(f"{r[0]:.1f}" for r in runs[mode]))


def _burn(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def part3(dir_: Path, rounds: int, repeat: int, busy: int = 8, turns: int = 24) -> None:
    cores = os.cpu_count() or 1
    think = f"[python3, {ATTACKER}, think, --cpu-ms, '50']"
    config = write_league(dir_, "bench-fair-cpu", f"""game: crisps
rounds: {rounds}
options: {{max_turns: {turns}}}
time: {{move_ms: 100}}
limits: {{sandbox: bwrap}}
bots:
  - {{name: thinker-a, command: {think}}}
  - {{name: thinker-b, command: {think}}}
  - {{name: spinner, command: [python3, {ATTACKER}, spin, --threads, '4']}}
""")
    ctx = mp.get_context("spawn")
    burners = [ctx.Process(target=_burn, args=(3600.0,), daemon=True) for _ in range(busy)]
    for b in burners:
        b.start()
    try:
        print(f"\n3. thinkers at 50 ms of CPU per move, move_ms 100, {2 * cores} workers on {cores} cores, "
              f"{busy} busy processes, a spinning bot at the table")
        for _ in range(repeat):
            for mode, name in (("wall-clock", "before (wall clock)"), ("", "after (CPU clock, frozen)")):
                rate, games, _started, _ = play(config, mode, 2 * cores)
                with sqlite3.connect(config.store) as db:
                    rows = dict(db.execute(
                        "SELECT b.name, count(*) FROM violations x JOIN versions v ON v.id = x.version_id "
                        "JOIN bots b ON b.id = v.bot_id WHERE x.kind = 'timeout' GROUP BY b.name").fetchall())
                thinkers = rows.get("thinker-a", 0) + rows.get("thinker-b", 0)
                print(f"   {name}: {games} games, {rate:.1f} games/s; timeouts charged to the thinkers: {thinkers} "
                      f"(to the spinner: {rows.get('spinner', 0)}); load {os.getloadavg()[0]:.1f}")
    finally:
        for b in burners:
            b.kill()
            b.join()


def part4(games: int, repeat: int) -> None:
    """Per decision: the referee's CPU and wall time per request, CPU clock on and off."""
    import sys

    from harness.games import get_game
    from harness.play.limits import BotSpec, ResourceLimits, pin_to_cpu
    from harness.play.pool import BotPool
    from harness.play.referee import RefereeConfig, play_game

    pin_to_cpu(sorted(os.sched_getaffinity(0))[-1])
    game = get_game("crisps")
    spec = [BotSpec(name=f"r{i}", command=(sys.executable, str(BOTS / "random_bot.py"), "--seed", str(i)),
                    cwd=str(REPO)) for i in range(2)]
    limits = ResourceLimits(sandbox=None)
    results: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    seed = 0
    for _ in range(repeat):
        for name, baseline in (("before", "wall-clock"), ("after", "")):
            config = RefereeConfig(limits=limits, fair_play=BASELINES[baseline])
            with BotPool(config) as pool:
                play_game(game, {}, 10**6 + seed, "warm", spec, pool, config)  # start the processes
                requests = 0
                cpu0, wall0 = time.process_time(), time.perf_counter()
                for _ in range(games):
                    seed += 1
                    requests += play_game(game, {}, seed, f"g{seed}", spec, pool, config).requests
                cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
            results[name].append((cpu / requests * 1e6, wall / requests * 1e6))
    print(f"\n4. per request, one process pinned to one core, Crisps between two random bots ({games} games a run)")
    for name in ("before", "after"):
        runs = results[name]
        print(f"   {name}: referee CPU {min(r[0] for r in runs):.0f} us, wall {min(r[1] for r in runs):.0f} us per "
              f"request (best of {len(runs)}; runs " + ", ".join(f"{c:.0f}/{w:.0f}" for c, w in runs) + ")")
    extra = min(r[0] for r in results["after"]) - min(r[0] for r in results["before"])
    print(f"   the CPU clock costs the referee {extra:.0f} us of CPU per request (a thaw, a freeze, one reading)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20, help="rounds of the Crisps league")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--parts", default="1,2,3,4")
    parser.add_argument("--dom-rounds", type=int, default=0, help="rounds (deals) of the Dominoes league "
                        "(default rounds / 20)")
    parser.add_argument("--dom-seats", default="2,3,4", help="seats of the Dominoes leagues of part 1")
    parser.add_argument("--fixed-idle", action="store_true", help="part 1's last league also with idle_bots 32 "
                        "(the fixed default before the bound was sized to the league)")
    parser.add_argument("--games", type=int, default=40, help="games a run in part 4")
    parser.add_argument("--middles", default="schedule-order,spares", help="part 1's columns between before "
                        "and after (comma-separated; '' for none: a longer league in less time)")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.rounds, args.repeat, args.dom_rounds, args.games, args.dom_seats = 1, 1, 1, 2, "2"
    parts = {int(p) for p in args.parts.split(",")}
    print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} at start (a shared machine)")
    with tempfile.TemporaryDirectory(prefix="bench-fairplay-") as tmp:
        dir_ = Path(tmp)
        dir_.chmod(0o755)
        crisps = write_league(dir_, "bench-fair-crisps", CRISPS.replace("{rounds}", str(args.rounds)))
        if 1 in parts:
            print(f"1. one process per deal ({crisps.workers} workers); before: processes reused across the seat "
                  f"orders of a deal; schedule-order: the rule, games dispatched in schedule order; after: the "
                  f"rule, dispatched in windows of {DEAL_WINDOW} deals blocked by seat order")
            middles = tuple(m for m in args.middles.split(",") if m)
            side_by_side("Crisps, 2 seats (2 seat orders a deal)", crisps, "reuse-deals", "", args.repeat,
                         middle=middles)
            for seats in (int(s) for s in args.dom_seats.split(",")):
                body = DOMINOES.replace("{rounds}", str(args.dom_rounds or max(1, args.rounds // 20)))
                dominoes = write_league(dir_, f"bench-fair-dom{seats}", body.replace("{players}", str(seats)))
                side_by_side(f"Dominoes, {seats} seats ({math.factorial(seats)} seat orders a deal)", dominoes,
                             "reuse-deals", "", args.repeat, middle=middles)
            if args.fixed_idle:  # (the last of the Dominoes leagues: 4 seats by default)
                fixed = dataclasses.replace(dominoes, idle_bots=32)
                side_by_side(f"the same, idle_bots 32 (the bound sized to the league: {idle_bound(dominoes)})", fixed,
                             "reuse-deals", "", args.repeat)
        if 2 in parts:
            print(f"\n2. CPU fairness ({crisps.workers} workers); before: wall-clock deadlines, no freezing")
            side_by_side("Crisps, 2 seats", crisps, "wall-clock", "", args.repeat)
        if 3 in parts:
            part3(dir_, max(1, args.rounds // 10), args.repeat, *((1, 4) if args.tiny else (8, 24)))
        if 4 in parts:
            part4(args.games, args.repeat + 1)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
