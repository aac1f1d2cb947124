"""League speed, measured side by side in one run.

1. The same small league played two ways, with the same number of workers: as `harness run`
   plays it (persistent bot processes, one pool per worker, reused game after game) and with a
   fresh set of bot processes per game (what one-process-per-game league managers do). Prints
   games per second for both and their ratio (target: >= 10). Done twice: on short games
   (``max_turns`` cut, where starting a bot dominates) and on full games.
2. The speed-up from 1 worker to N (target on 2 cores: >= 1.8), persistent processes, with what a league
   plays by default; on the bench league, Python bots only, and leagues of greedy bots only.
3. The time to print the table of a 100,000-game league (results synthesized directly in a
   temporary store, ratings kept incrementally as the runner does): in process, and as the
   whole `harness table` command.
4. Planning at scale: a new 1,000,000-game league (10 bots, 2 seats, 11,112 rounds) planned into
   an empty store (target < 5 s), as `harness run` does it (ids and seeds hashed by a helper
   process) and hashed in one process, then planned again as a re-run does (target: well under
   a second), and the first pending games read as the runner reads them; beside it, on a
   100,000-game league, the object-per-game path (build_schedule + plan) against the bulk rows
   path, with their ratio.

Games per second are measured from the first recorded game to the last, so the one-off start of
the worker processes does not count. The machines are shared and noisy: each figure is the best
of ``--repeat`` runs (default 3), measured alternately, and every run is printed; the speed-up is
also given as the median over back-to-back pairs of runs, which noise inflates less.
Run: python bench/league.py [--rounds N] [--repeat N] [--quick] [--parts 1,2,3,4]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.games import get_game, ranking_from_keys
from harness.league import ratings as rating_mod
from harness.league.config import BotEntry, LeagueConfig, default_workers, load_config
from harness.league.runner import RunHooks, plan_league, referee_player, run_league
from harness.league.store import GameOutcome, LeagueStore
from harness.report.tables import format_table, league_table

REPO = Path(__file__).resolve().parent.parent


def league_file(dir_: Path, name: str, options: str, rounds: int) -> Path:
    bots = REPO / "bots"
    path = dir_ / f"{name}.yaml"
    path.write_text(f"""name: {name}
game: crisps
options: {options}
rounds: {rounds}
store: {dir_ / (name + '.sqlite')}
bots:
  - {{name: greedy, command: python3 {bots}/crisps_greedy.py}}
  - {{name: random-py, command: python3 {bots}/random_bot.py}}
  - {{name: random-js, command: node {bots}/random_bot.js}}
""")
    return path


def games_per_second(config: LeagueConfig, *, fresh: bool = False, workers: int | None = None) -> tuple[float, int]:
    """Play the league from scratch; (games/s from the first recorded game to the last, games)."""
    cfg = dataclasses.replace(config, workers=workers or config.workers)
    for suffix in ("", "-wal", "-shm"):
        Path(cfg.store + suffix).unlink(missing_ok=True)
    stamps: list[float] = []
    run_league(cfg, player=referee_player(fresh=fresh), progress=False,
               hooks=RunHooks(on_game=lambda seq, outcome: stamps.append(time.perf_counter())))
    if len(stamps) < 2:
        return 0.0, len(stamps)
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), len(stamps)


def persistent_vs_fresh(dir_: Path, label: str, options: str, rounds: int, fresh_rounds: int, repeat: int) -> None:
    cfg = load_config(league_file(dir_, f"bench-{label}", options, rounds))
    fresh_cfg = load_config(league_file(dir_, f"bench-{label}-fresh", options, fresh_rounds))
    runs_p, runs_f = [], []
    for _ in range(repeat):
        persistent, n1 = games_per_second(cfg)
        fresh, n2 = games_per_second(fresh_cfg, fresh=True)
        runs_p.append(persistent)
        runs_f.append(fresh)
    persistent, fresh = max(runs_p), max(runs_f)
    print(f"{label:<12} {cfg.workers:>7} {n1:>7} {persistent:>13.1f} {n2:>7} {fresh:>13.1f} "
          f"{persistent / fresh:>7.1f}  {'ok' if persistent / fresh >= 10 else 'below 10'}")
    print(f"{'':<12} runs: persistent {', '.join(f'{x:.1f}' for x in runs_p)}; "
          f"fresh {', '.join(f'{x:.1f}' for x in runs_f)}")


def synthesize(store_path: Path, n_games: int, n_bots: int = 20) -> LeagueConfig:
    """A store with ``n_games`` finished 2-player games between ``n_bots`` bots, rated incrementally."""
    bots = tuple(BotEntry(name=f"bot{i:02d}", command=("true",), cwd="/", version=f"v{i}") for i in range(n_bots))
    per_round = n_bots * (n_bots - 1)
    options = get_game("crisps").validate_options({})
    cfg = LeagueConfig(path="synthetic.yaml", name="synthetic", game="crisps", options=options, table_sizes=(2,), bots=bots,
                       rounds=-(-n_games // per_round), store=str(store_path))
    strength = {b.name: i for i, b in enumerate(bots)}
    rng = random.Random(1)
    with LeagueStore(store_path) as store:
        plan_league(cfg, store)
        pending = store.pending_games()[:n_games]
        names = {r.id: r.name for r in store.versions()}
        with store.transaction():
            for g in pending:
                keys = [strength[names[v]] + rng.gauss(0, 6) for v in g.version_ids]
                store.record(g.seq, GameOutcome(g.game_id, ranking_from_keys(keys), [0, 0], "rules"))
            store.db.execute("UPDATE games SET status = 'dropped' WHERE status = 'pending'")
        start = time.perf_counter()
        rating_mod.advance(store, cfg.rating)
        print(f"  (synthesized {len(pending):,} games; rating them all at once took "
              f"{time.perf_counter() - start:.1f} s, {1e3 * (time.perf_counter() - start) / len(pending):.2f} ms a game)")
    return cfg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40, help="rounds of the persistent-process leagues")
    parser.add_argument("--quick", action="store_true", help="smaller leagues (a rough check)")
    parser.add_argument("--table-games", type=int, default=100_000)
    parser.add_argument("--parts", default="1,2,3,4", help="which measurements to run, e.g. 3")
    parser.add_argument("--plan-games", type=int, default=1_000_000, help="games of the planning measurement")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each league measurement (best is kept)")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.rounds, args.repeat, args.table_games, args.plan_games = 1, 1, 1000, 2000
    rounds = 10 if args.quick else args.rounds
    cores = default_workers()
    with tempfile.TemporaryDirectory() as tmp:
        dir_ = Path(tmp)
        parts = set(args.parts.split(","))
        if "1" in parts:
            part1(dir_, rounds, cores, args.repeat, args.tiny)
        if "2" in parts:
            part2(dir_, rounds, cores, args.repeat, args.tiny)
        if "3" in parts:
            part3(dir_, args.table_games)
        if "4" in parts:
            part4(dir_, args.plan_games)


def part1(dir_: Path, rounds: int, cores: int, repeat: int, tiny: bool = False) -> None:
    """Persistent bot processes vs a fresh set per game (``tiny``: short games only, one round each)."""
    print(f"1. persistent bot processes vs a fresh set per game, {cores} workers (Crisps: greedy, "
          f"random-py, random-js)")
    print(f"{'games':<12} {'workers':>7} {'games':>7} {'persistent/s':>13} {'games':>7} {'fresh/s':>13} "
          f"{'ratio':>7}")
    if tiny:
        persistent_vs_fresh(dir_, "short", "{max_turns: 12}", rounds, rounds, repeat)
        return
    persistent_vs_fresh(dir_, "short", "{max_turns: 12}", rounds * 5, max(2, rounds // 2), repeat)
    persistent_vs_fresh(dir_, "full", "{}", rounds, max(2, rounds // 2), repeat)


def greedy_leagues(dir_: Path) -> tuple[Path, Path]:
    """Leagues of greedy bots only (real bots: they compute every move): Crisps at 2 seats (the
    Python greedy bot twice, the JavaScript one), and Dominoes at 4 seats (four Python greedy
    bots: 24 seat orders a deal, so one process per deal starts many processes)."""
    bots = REPO / "bots"
    crisps = dir_ / "bench-greedy-crisps.yaml"
    crisps.write_text(f"""name: bench-greedy-crisps
game: crisps
store: {dir_ / 'bench-greedy-crisps.sqlite'}
bots:
  - {{name: greedy-a, command: python3 {bots}/crisps_greedy.py --name a}}
  - {{name: greedy-b, command: python3 {bots}/crisps_greedy.py --name b}}
  - {{name: greedy-js, command: node {bots}/crisps_greedy.js}}
""")
    dominoes = dir_ / "bench-greedy-dom4.yaml"
    dominoes.write_text(f"""name: bench-greedy-dom4
game: dominoes
players: 4
store: {dir_ / 'bench-greedy-dom4.sqlite'}
bots:
""" + "".join(f"  - {{name: greedy-{n}, command: python3 {bots}/dominoes_greedy.py --name {n}}}\n" for n in "abcd"))
    return crisps, dominoes


def part2(dir_: Path, rounds: int, cores: int, repeat: int, tiny: bool = False) -> None:
    """Speed-up from 1 worker to one per core: the bench league (greedy and random bots), Python
    bots only, and leagues of greedy bots only (``tiny``: the mixed league and greedy Crisps). Each league as
    a league plays by default (the sandbox where it works, the CPU clock, one process per deal)."""
    print("\n2. speed-up from 1 worker to", cores, "(persistent processes, full games, the league's defaults)")
    mixed = league_file(dir_, "bench-scale", "{}", rounds)
    python_only = dir_ / "bench-scale-py.yaml"
    python_only.write_text("\n".join(line for line in mixed.read_text().splitlines()
                                     if "random-js" not in line).replace("bench-scale", "bench-scale-py") + "\n")
    greedy_crisps, greedy_dom4 = greedy_leagues(dir_)
    # (rounds scaled so each league has a few hundred games: 2 bots play a third of 3 bots' games a
    # round; a round of 4 bots at 4 seats is 24 games)
    leagues = (("greedy-py, random-py, random-js", mixed, 1), ("greedy-py, random-py (Python only)", python_only, 3),
               ("greedy only: Crisps, greedy-py x2, greedy-js", greedy_crisps, 1),
               ("greedy only: Dominoes at 4 seats, greedy-py x4", greedy_dom4, 0.5))
    for label, path, scale in (leagues[0], leagues[2]) if tiny else leagues:
        cfg = load_config(path, rounds=max(1, int(rounds * scale)))
        ones, manys = [], []
        load0 = os.getloadavg()[0]
        for _ in range(repeat):
            one, n = games_per_second(cfg, workers=1)
            many, _ = games_per_second(cfg, workers=cores)
            ones.append(one)
            manys.append(many)
        one, many = max(ones), max(manys)
        paired = statistics.median(m / o for m, o in zip(manys, ones))
        print(f"   {label}: 1 worker {one:.1f} games/s; {cores} workers {many:.1f} games/s (best runs); speed-up "
              f"{many / one:.2f} best vs best, {paired:.2f} median of back-to-back pairs ({n} games; target >= 1.8 "
              f"on 2 cores); load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
        print(f"      runs: 1 worker {', '.join(f'{x:.1f}' for x in ones)}; {cores} workers "
              f"{', '.join(f'{x:.1f}' for x in manys)}")


def part3(dir_: Path, table_games: int) -> None:
    """Time to print the table of a big league."""
    print(f"\n3. the table of a {table_games:,}-game league")
    store_path = dir_ / "synthetic.sqlite"
    cfg = synthesize(store_path, table_games)
    with LeagueStore(store_path) as store:
        start = time.perf_counter()
        text = format_table(league_table(store, cfg))
        in_process = time.perf_counter() - start
    config_path = dir_ / "synthetic.yaml"
    config_path.write_text("name: synthetic\ngame: crisps\nstore: " + str(store_path) + "\nbots:\n" + "".join(
        f"  - {{name: {b.name}, command: python3 {REPO}/bots/random_bot.py, version: {b.version}}}\n"
        for b in cfg.bots))
    harness = str(Path(sys.executable).parent / "harness")
    start = time.perf_counter()
    out = subprocess.run([harness, "table", str(config_path)], capture_output=True, text=True, check=True)
    command = time.perf_counter() - start
    assert out.stdout.startswith(text.splitlines()[0])
    print(f"   league_table + format: {in_process * 1000:.0f} ms in process; `harness table` command: "
          f"{command * 1000:.0f} ms (interpreter start included; target < 1 s)")


def _planning_config(dir_: Path, name: str, n_games: int) -> LeagueConfig:
    bots = tuple(BotEntry(name=f"bot{i}", command=("true",), cwd="/", version=f"v{i}") for i in range(10))
    options = get_game("crisps").validate_options({})
    return LeagueConfig(path=f"{name}.yaml", name=name, game="crisps", options=options, table_sizes=(2,), bots=bots,
                        rounds=-(-n_games // 90), store=str(dir_ / f"{name}.sqlite"))


def part4(dir_: Path, n_games: int) -> None:
    """Planning a big league, re-planning it, and the object path against the bulk path."""
    from harness.league import schedule_roundrobin as schedule_mod
    from harness.league.schedule_roundrobin import build_schedule

    cfg = _planning_config(dir_, "plan-big", n_games)
    print(f"\n4. planning: a new league of {cfg.rounds * 90:,} games (10 bots, 2 seats, {cfg.rounds:,} rounds)")
    inline_cfg = dataclasses.replace(cfg, store=str(dir_ / "plan-big-inline.sqlite"))
    parallel_from = schedule_mod.PARALLEL_FROM
    schedule_mod.PARALLEL_FROM = 10**12  # the same plan hashed in this process only
    try:
        with LeagueStore(inline_cfg.store) as store:
            start = time.perf_counter()
            plan_league(inline_cfg, store)
            inline = time.perf_counter() - start
    finally:
        schedule_mod.PARALLEL_FROM = parallel_from
    with LeagueStore(cfg.store) as store:
        start = time.perf_counter()
        plan, _ = plan_league(cfg, store)
        first = time.perf_counter() - start
        start = time.perf_counter()
        again, _ = plan_league(cfg, store)
        second = time.perf_counter() - start
        start = time.perf_counter()
        view = store.pending_view()
        head = [view[i] for i in range(min(100, len(view)))]
        read = time.perf_counter() - start
    assert plan.added == cfg.rounds * 90 and again.added == 0 and len(head) == 100
    print(f"   new league planned in {first:.2f} s (target < 5 s), the ids and seeds hashed by a helper process; "
          f"hashed in this process alone: {inline:.2f} s ({inline / first:.2f}x)")
    print(f"   re-run planned in {second * 1000:.0f} ms and its first 100 pending games read in {read * 1000:.0f} ms "
          f"(target: well under a second)")
    small = _planning_config(dir_, "plan-small", min(n_games, 100_000))
    rows_cfg = dataclasses.replace(small, name="plan-small-rows", store=str(dir_ / "plan-small-rows.sqlite"))
    with LeagueStore(small.store) as store:
        store.bind(small)
        ids = store.register_versions(small.bots)
        start = time.perf_counter()
        store.plan(build_schedule(small), ids)
        objects = time.perf_counter() - start
    with LeagueStore(rows_cfg.store) as store:
        start = time.perf_counter()
        plan_league(rows_cfg, store)
        rows = time.perf_counter() - start
    print(f"   {small.rounds * 90:,} games: an object per game (build_schedule + plan) {objects:.2f} s, "
          f"bulk rows {rows:.2f} s: {objects / rows:.1f}x")


if __name__ == "__main__":
    main()
