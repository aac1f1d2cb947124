"""`harness serve`'s live page at 1,000 bots and 1,000,000 games: how long after a batch of games
is recorded the index shows them, and what ``/api/status`` costs, the old path and the new side by
side in one run.

The league is bench/table.py's synthetic one (3-seat Epizodiak, duplicate sets of 3 bots in all
6 seat orders), written straight into a temporary store. Then, for batches of new games appended
as the runner's writer leaves them (a set at a time, in schedule order):

- **old**: the index made from every game at each new state (``ReportPages.index()`` without a kept
  table: the games read as arrays, the fit from scratch, the statistics, the rating history),
  what ``harness serve`` did before; its ``api/status`` counted the games per status, the
  violations and the versions and read the latest games at every poll;
- **new**: :class:`harness.report.live.LiveLeague` as ``harness serve`` runs it, the table and its
  statistics kept up to date (:mod:`harness.report.standing`), the fit warm-started; the delay
  is from the batch's commit until a page made shows the batch's games (its count of games
  played), the render started by the server's watch of the store (:meth:`LiveLeague.watch`, as
  ``harness serve`` runs it) or the page's poll of ``api/status``; ``api/status`` answered from
  memory. Beside each wall time, the process's CPU time: on a loaded shared machine it says
  what the wall time would be on a quiet one.

Run: python bench/live.py [--games 1000000] [--bots 1000] [--batches 100,1000,10000]
"""

from __future__ import annotations

import argparse
import os
import statistics as stats
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from table import append_games, synthesize, write_config  # noqa: E402  (bench/, next to this file)

from harness.league import queries  # noqa: E402
from harness.league.config import load_config  # noqa: E402
from harness.league.store import LeagueStore  # noqa: E402
from harness.report.arena import one_arena  # noqa: E402
from harness.report.html import ReportPages  # noqa: E402
from harness.report.live import LiveLeague  # noqa: E402


def old_status(config_path: str) -> None:
    """What ``api/status`` did at every poll before: counts per status, violations, versions,
    the latest 20 games with their seats."""
    cfg = load_config(config_path, strict=False)
    with LeagueStore(cfg.store, create=False) as store:
        store.counts()
        queries.violation_count(store)
        len(store.versions())
        ReportPages(cfg, store, live=True).latest_games(20)


def old_index(config_path: str) -> tuple[float, float]:
    """(wall, CPU) seconds the old index took: every game read, the table and statistics from scratch."""
    cfg = load_config(config_path, strict=False)
    start, cpu = time.perf_counter(), time.process_time()
    with LeagueStore(cfg.store, create=False) as store:
        ReportPages(cfg, store, live=True).index()
    return time.perf_counter() - start, time.process_time() - cpu


def new_delay(live: LiveLeague, done: int, limit: float) -> tuple[float, float]:
    """(wall, CPU) seconds from now (a batch just committed) until the live index made shows
    ``done`` finished games. The CPU time is this process's (the render's thread; the poll here
    sleeps): on a shared machine it says what the wall time would be on a quiet one."""
    start, cpu = time.perf_counter(), time.process_time()
    shown = f'id="games-done">{done}<'
    polled = -1.0
    while time.perf_counter() - start < limit:
        if time.perf_counter() - polled >= 1.0:  # the page's poll, once a second (the watch started the render)
            live.status()
            polled = time.perf_counter()
        last = live.renderer.last
        if last is not None and shown in last[1]:
            break
        time.sleep(0.005)  # (reading the last page made: no work in this thread's CPU time)
    return time.perf_counter() - start, time.process_time() - cpu


def timed(call: object, times: int) -> tuple[float, float]:
    """(median, 95th percentile) in ms of ``times`` calls."""
    got = []
    for _ in range(times):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        got.append(1000 * (time.perf_counter() - start))
    got.sort()
    return stats.median(got), got[min(len(got) - 1, int(0.95 * len(got)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--batches", default="102,1002,10002", help="games per batch (whole sets of 6)")
    parser.add_argument("--polls", type=int, default=50, help="api/status calls timed per path")
    parser.add_argument("--config", help="an existing league's config (its store gains the batches: use a copy) "
                        "instead of the synthetic league")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.games, args.bots, args.batches, args.polls = 3000, 30, "30,60", 10
    batches = [int(b) for b in args.batches.split(",")]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        if args.config:
            config = Path(args.config)
            with LeagueStore(load_config(args.config, strict=False).store, create=False) as store:
                args.games = store.counts()["done"]
        else:
            config = write_config(Path(tmp), args.bots)
            start = time.perf_counter()
            synthesize(config, args.games)
            print(f"synthesized {args.games:,} games of {args.bots:,} bots, 3 seats, in "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
        measure(config, args.games, batches, args.polls)


def measure(config: Path, games: int, batches: list[int], polls: int) -> None:
    """The rows: the first index, each batch's delay old and new, api/status."""
    cfg = load_config(str(config), strict=False)
    one_arena()  # as harness serve runs it (make_server): its threads share one malloc arena
    live = LiveLeague(cfg)
    live.watch()  # as harness serve runs it: a render started when the store changes
    start, cpu = time.perf_counter(), time.process_time()
    live.index()
    new_delay(live, games, 1800.0)
    print(f"new: the first index (the store read whole, the fit from scratch): {time.perf_counter() - start:.1f} s "
          f"(CPU {time.process_time() - cpu:.1f} s)", flush=True)
    print(f"{'delay from recording a batch to the index showing it':<44} {'old: from every game':>24} "
          f"{'new: kept table':>22} {'old/new':>8}")
    print(f"{'':<44} {'wall':>11} {'CPU':>12} {'wall':>10} {'CPU':>11} {'wall':>8}")
    for seed, batch in enumerate(batches, 10):
        append_games(config, batch, seed=seed)
        new, new_cpu = new_delay(live, games + sum(batches[:seed - 9]), 600.0)
        old, old_cpu = old_index(str(config))
        assert live.status()[1].count(f'"done": {games + sum(batches[:seed - 9])}') == 1
        print(f"  {batch:>7,} games more{'':<25} {old:>9.2f} s {old_cpu:>10.2f} s {new:>8.2f} s {new_cpu:>9.2f} s "
              f"{old / new:>8.1f}", flush=True)
    old_med, old_95 = timed(lambda: old_status(str(config)), polls)
    new_med, new_95 = timed(live.status, polls)
    print(f"{'/api/status (in process): median / 95th percentile':<56} {old_med:>9.1f} / {old_95:>6.1f} ms "
          f"{new_med:>7.2f} / {new_95:>5.2f} ms {old_med / new_med:>8.0f}")
    standing = live._standing
    assert standing is not None
    print(f"whole reads of the store by the new path: {standing.rebuilds} (the first)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
