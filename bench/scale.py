"""Scale-out figures, measured side by side in one run.

1. The writer: games a second recorded into a league store, synthetic 2-player results with a
   log of ``--log-kb`` KB (already compressed bytes) and TrueSkill ratings kept incrementally:
   per game (``store.record`` + ``PrefixRater.recorded``, the local runner's path; one transaction
   per batch) against the bulk path (``store.record_many`` + ``PrefixRater.recorded_many``; logs on their own thread), for
   batches of 64 and 1024 games, and the bulk path without ratings (what rating costs).
2. Executors: games a second playing the same Crisps league (greedy, random-py, random-js) with
   the local runner (1 and 2 workers) and with a Dask LocalCluster (``local:1``, ``local:2``).
   Times from the start of the run to its end (the cluster's start included for Dask: it is what
   a user waits for), best of ``--repeat``, alternating.

Run: python bench/scale.py [--games N] [--rounds N] [--repeat N] [--parts 1,2]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from harness.games import get_game, ranking_from_keys
from harness.league import ratings as rating_mod
from harness.league.config import BotEntry, LeagueConfig, load_config
from harness.league.runner import RunHooks, RunOptions, plan_league, run_league
from harness.league.store import GameOutcome, LeagueStore

REPO = Path(__file__).resolve().parent.parent


def fresh_store(path: Path, n_games: int, n_bots: int = 20) -> tuple[LeagueConfig, list]:
    bots = tuple(BotEntry(name=f"bot{i:02d}", command=("true",), cwd="/", version=f"v{i}") for i in range(n_bots))
    per_round = n_bots * (n_bots - 1)
    options = get_game("crisps").validate_options({})
    cfg = LeagueConfig(path="synthetic.yaml", name="synthetic", game="crisps", options=options, table_sizes=(2,),
                       bots=bots, rounds=-(-n_games // per_round), store=str(path))
    with LeagueStore(path) as store:
        plan_league(cfg, store)
        pending = store.pending_games()[:n_games]
    return cfg, pending


def outcomes(pending: list, log_kb: int) -> list[tuple[int, GameOutcome]]:
    rng = random.Random(1)
    log = os.urandom(log_kb * 1024)  # incompressible: the size the store really writes
    return [(g.seq, GameOutcome(g.game_id, ranking_from_keys([rng.random(), rng.random()]), [1, 0], "rules",
                                log=log, decisions=40, seconds=0.014)) for g in pending]


def write(dir_: Path, label: str, n_games: int, log_kb: int, batch: int, bulk: bool, rate: bool) -> float:
    path = dir_ / f"w-{label}-{batch}.sqlite"
    cfg, pending = fresh_store(path, n_games)
    versions_of = {g.seq: g.version_ids for g in pending}
    items = outcomes(pending, log_kb)
    random.Random(2).shuffle(items)  # games finish out of order: ratings wait for the prefix
    with LeagueStore(path) as store:
        rater = rating_mod.PrefixRater(store, cfg.rating)
        start = time.perf_counter()
        for i in range(0, len(items), batch):
            chunk = items[i:i + batch]
            with store.transaction():
                if bulk:
                    done = set(store.record_many(chunk))
                    if rate:
                        rater.recorded_many([(s, list(zip(versions_of[s], o.ranking))) for s, o in chunk
                                             if s in done])
                else:
                    for seq, o in chunk:
                        if store.record(seq, o) and rate:
                            rater.recorded(seq, list(zip(versions_of[seq], o.ranking)))
        seconds = time.perf_counter() - start
        assert store.counts()["done"] == n_games
    path.unlink()
    return n_games / seconds


def part1(dir_: Path, n_games: int, log_kb: int) -> None:
    print(f"1. writer: {n_games:,} 2-player games, {log_kb} KB log each, recorded in random order "
          f"(games/s, higher is better)")
    rows = [("per game + rating (local runner's path)", 64, False, True),
            ("bulk + rating", 64, True, True),
            ("bulk + rating", 1024, True, True),
            ("bulk, no rating", 1024, True, False)]
    for label, batch, bulk, rate in rows:
        rate_s = write(dir_, label.split()[0], n_games, log_kb, batch, bulk, rate)
        print(f"   {label:<42} batch {batch:>5}: {rate_s:>9,.0f} games/s")


def league(dir_: Path, rounds: int, name: str) -> Path:
    bots = REPO / "bots"
    path = dir_ / f"{name}.yaml"
    path.write_text(f"name: {name}\ngame: crisps\nrounds: {rounds}\nstore: {dir_ / (name + '.sqlite')}\nbots:\n"
                    f"  - {{name: greedy, command: python3 {bots}/crisps_greedy.py}}\n"
                    f"  - {{name: random-py, command: python3 {bots}/random_bot.py}}\n"
                    f"  - {{name: random-js, command: node {bots}/random_bot.js}}\n")
    return path


def play(path: Path, workers: int, dask: str | None) -> tuple[float, float, int]:
    """Play the league from scratch: (steady games/s, games/s from start to end, games).

    Steady: the games recorded after the first result arrived, over the time from then to the
    last result (results come in batches on Dask: the first batch's games are not counted).
    From start to end: every game over the whole run, the workers' (and the cluster's) start
    included."""
    cfg = load_config(path)
    cfg = dataclasses.replace(cfg, workers=workers)
    for suffix in ("", "-wal", "-shm", "-logs", "-logs-wal", "-logs-shm"):
        Path(cfg.store + suffix).unlink(missing_ok=True)
    stamps: list[float] = []
    start = time.perf_counter()
    summary = run_league(cfg, progress=False, options=RunOptions(dask=dask),
                         hooks=RunHooks(on_game=lambda seq, o: stamps.append(time.perf_counter())))
    end = time.perf_counter()
    after_first = sum(1 for t in stamps if t > stamps[0])
    steady = after_first / (stamps[-1] - stamps[0]) if after_first else 0.0
    return steady, summary.played / (end - start), summary.played


def part2(dir_: Path, rounds: int, repeat: int) -> None:
    print(f"\n2. executors: the same Crisps league ({rounds} rounds), games/s steady (from the first result "
          f"to the last) and from start to end, best of {repeat}")
    path = league(dir_, rounds, "scale")
    setups = [("local runner, 1 worker", 1, None), ("local runner, 2 workers", 2, None),
              ("Dask LocalCluster, 1 worker", 1, "local:1"), ("Dask LocalCluster, 2 workers", 2, "local:2")]
    best: dict[str, tuple[float, float]] = {}
    for r in range(repeat):
        for label, workers, dask in setups:
            steady, whole, games = play(path, workers, dask)
            old = best.get(label, (0.0, 0.0))
            best[label] = (max(old[0], steady), max(old[1], whole))
            print(f"   run {r + 1}: {label:<30} {games} games {steady:7.1f} games/s steady, "
                  f"{whole:7.1f} from start to end", flush=True)
    for label, _, _ in setups:
        print(f"   best: {label:<30} {best[label][0]:7.1f} steady {best[label][1]:7.1f} start to end")
    for i, what in enumerate(("steady", "start to end")):
        local2, dask1, dask2 = best[setups[1][0]][i], best[setups[2][0]][i], best[setups[3][0]][i]
        print(f"   {what}: Dask 2 workers / local 2 workers {dask2 / local2:.2f} (target >= 0.8); "
              f"Dask 2 workers / Dask 1 worker {dask2 / dask1:.2f} (target >= 1.6)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=50_000, help="games recorded by the writer benchmark")
    parser.add_argument("--log-kb", type=int, default=13, help="log size per game (KB)")
    parser.add_argument("--rounds", type=int, default=60, help="rounds of the executor league (6 games a round)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--parts", default="1,2")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.games, args.log_kb, args.rounds, args.repeat = 200, 1, 1, 1
    parts = set(args.parts.split(","))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        if "1" in parts:
            part1(Path(tmp), args.games, args.log_kb)
        if "2" in parts:
            part2(Path(tmp), args.rounds, args.repeat)


if __name__ == "__main__":
    main()
