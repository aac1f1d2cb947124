"""The table at scale: 1,000 bots and 1,000,000 finished 3-seat games, measured in one run.

A synthetic Epizodiak league (adaptive schedule, so no round robin is planned) is written
straight into a temporary store with SQL: duplicate sets of 3 bots drawn at random, one deal in
all 6 seat orders, ranked by TrueSkill's model (skill + N(0, beta) per game). The incremental
ratings are stored as caught up (as the runner's writer leaves them), so `harness table` pays
only for reading and fitting. Printed side by side:

- the fit's input: the old path (``statistics.load_games``: one Python object per game, then
  ``fit_table`` converts the tuples to arrays) against the new (``queries.done_table_batches``
  straight into arrays, then ``fit_batches``), and the two fits' largest difference;
- the statistics the table and the report index compute, old against new: the old from
  ``load_games``' rows (bench/statistics_before.py: dense bootstrap matrices, a Python loop and a
  bootstrap per pair), each in its own process with a time limit (``--limit``); the new from
  ``statistics.load_arrays`` (the delta method past 10,000 sets), in this process; and the new
  intervals' largest difference from the old where both finished; mean score/rank intervals
  (the table), head to head and seat bias (the index);
- ``harness table`` end to end (a new process, imports included);
- the rating history, old (bench/history_before.py: 30 fits from scratch of shares of
  ``load_games``' rows) against new (:mod:`harness.report.history`: power-of-two marks,
  warm-started fits from the pairs' totals, the store's cache) with the cache empty, unchanged,
  and after 1% more games; and their largest mu difference at the last point;
- ``harness serve``'s pages in process (:class:`harness.report.live.LiveLeague`): the index's
  first load, a load after 1% more games, ``/api/status`` and a bot page; then ``harness report``
  end to end (a new process: the index, every bot's page, up to 500 replays).

Run: python bench/table.py [--games 1000000] [--bots 1000] [--limit 300]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import numpy as np  # noqa: E402
import statistics_before  # noqa: E402  (bench/, next to this file)

from harness.league import queries  # noqa: E402
from harness.league.config import load_config  # noqa: E402
from harness.league.queries import done_table_batches  # noqa: E402
from harness.league.ratings_fit import fit_batches, fit_table  # noqa: E402
from harness.league.store import LeagueStore  # noqa: E402
from harness.report import statistics  # noqa: E402

SEATS = 3
ORDERS = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))


def write_config(dir_: Path, bots: int) -> Path:
    lines = [f"  - {{name: b{i:04d}, command: 'true'}}" for i in range(bots)]
    path = dir_ / "big.yaml"
    path.write_text(f"name: big\ngame: epizodiak\nplayers: 3\nschedule: adaptive\nstore: {dir_ / 'big.sqlite'}\n"
                    "bots:\n" + "\n".join(lines) + "\n")
    return path


def synthesize(path: Path, games: int, seed: int = 1) -> None:
    """``games`` finished games (whole duplicate sets) written with executemany."""
    cfg = load_config(str(path), strict=False)
    rng = np.random.default_rng(seed)
    with LeagueStore(cfg.store) as store:
        store.bind(cfg)
        ids = store.register_versions(cfg.bots)
        version = np.array([ids[b.label] for b in cfg.bots])
        skill = rng.normal(cfg.rating.mu, 5.0, size=len(version))
        n_sets = -(-games // len(ORDERS))
        # three distinct bots per set: argpartition of random keys, one row per set
        trio = np.argpartition(rng.random((n_sets, len(version))), SEATS, axis=1)[:, :SEATS]
        deal_seed = rng.integers(0, 2**53, size=n_sets)
        rounds = np.arange(n_sets) // 1000
        seat_of = trio[:, ORDERS].reshape(-1, SEATS)[:games]  # bot index by seat, game by game
        set_of = np.repeat(np.arange(n_sets), len(ORDERS))[:games]
        perf = skill[seat_of] + rng.normal(0, cfg.rating.beta, size=seat_of.shape)
        ranks = np.argsort(np.argsort(-perf, axis=1), axis=1)
        seats_v = version[seat_of]
        db = store.db
        db.execute("PRAGMA synchronous=OFF")
        with store.transaction():
            db.executemany(
                "INSERT INTO games (seq, id, round, players, seed, status, ended_by, decisions, seconds, finished_at, "
                "versions) VALUES (?, ?, ?, 3, ?, 'done', 'rules', 100, 0.01, '2026-11-24T00:00:00', ?)",
                ((g + 1, f"g{g}", r, s, json.dumps(v)) for g, (r, s, v) in
                 enumerate(zip(rounds[set_of].tolist(), deal_seed[set_of].tolist(), seats_v.tolist()))))
            db.executemany("INSERT INTO seats (game_seq, seat, version_id, rank, score, forfeited) "
                           "VALUES (?, ?, ?, ?, ?, 0)",
                           ((g // SEATS + 1, g % SEATS, v, r, 2 - r) for g, (v, r) in
                            enumerate(zip(seats_v.ravel().tolist(), ranks.ravel().tolist()))))
            # the incremental ratings as the runner's writer leaves them: caught up
            store.save_ratings({int(v): (float(m), 1.0) for v, m in zip(version, skill)})
            store.set_meta("rating_params", json.dumps(cfg.rating.as_dict(), sort_keys=True))
            store.set_meta("rated_upto", str(games))


STATISTICS = ("score and rank intervals (table)", "seat bias (index)", "head to head (every pair)")


def _old_statistic(name: str, played: list[statistics.GameRow]) -> Any:
    if name == "score and rank intervals (table)":
        return statistics_before.bot_intervals(played)
    if name == "head to head (every pair)":
        return statistics_before.head_to_head(played, resamples=200)
    return statistics_before.seat_bias(played, resamples=200)


def _new_statistic(name: str, arrays: list[Any]) -> Any:
    if name == "score and rank intervals (table)":
        return statistics.bot_intervals(arrays)
    if name == "head to head (every pair)":
        return statistics.head_to_head(arrays, resamples=200)
    return statistics.seat_bias(arrays, resamples=200)


def _intervals(result: Any) -> dict[str, list[float | None]]:
    """Every interval of a statistic's output by its place in it: {'3/0/win_rate_ci': [low, high], ...}."""
    if isinstance(result, list):
        result = {f"{p['a']}-{p['b']}" if "a" in p else str(i): p for i, p in enumerate(result)}
    out: dict[str, list[float | None]] = {}
    for key, value in result.items():
        if isinstance(value, dict):
            out.update({f"{key}/{k}": v for k, v in value.items() if k.endswith("_ci")})
        elif isinstance(value, list):
            out.update({f"{key}/{k}": v for k, v in _intervals(value).items()})
    return out


def _part(name: str, config: str, out: mp.Queue) -> None:
    cfg = load_config(config, strict=False)
    with LeagueStore(cfg.store, create=False) as store:
        played = statistics.load_games(store)
        start = time.perf_counter()
        result = _old_statistic(name, played)
        out.put((time.perf_counter() - start, _intervals(result)))


def timed_part(name: str, config: str, limit: float) -> tuple[float | None, str, dict[str, Any]]:
    """One statistic in its own process (memory and a time limit of its own), load_games excluded:
    (seconds or None, as text, its intervals)."""
    out: mp.Queue = mp.Queue()
    proc = mp.get_context("fork").Process(target=_part, args=(name, config, out))
    proc.start()
    got = None
    try:
        got = out.get(timeout=limit)  # before join: a large result would fill the pipe
    except queue.Empty:
        pass
    if got is None:
        proc.kill()
        proc.join()
        return None, (f"> {limit:.0f} s (stopped)" if proc.exitcode in (None, -9) else
                      f"failed (exit {proc.exitcode})"), {}
    proc.join()
    return got[0], f"{got[0]:.1f} s", got[1]


def _largest_difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The largest endpoint difference between old and new intervals, as a share of the old width."""
    shares = [max(abs(o[0] - n[0]), abs(o[1] - n[1])) / (o[1] - o[0]) for k, o in old.items()
              if (n := new.get(k)) and None not in o and None not in n and o[1] > o[0]]
    if not shares:
        return "-"
    return f"median {float(np.median(shares)):.2f}, largest {max(shares):.2f} of the width ({len(shares):,} intervals)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--limit", type=float, default=300.0, help="seconds allowed to each statistic")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.games, args.bots, args.limit = 3000, 30, 20.0
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine)")
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), args.bots)
        start = time.perf_counter()
        synthesize(config, args.games)
        print(f"synthesized {args.games:,} games of {args.bots:,} bots, 3 seats, in {time.perf_counter() - start:.0f} s")
        cfg = load_config(str(config), strict=False)
        r = cfg.rating
        with LeagueStore(cfg.store, create=False) as store:
            start = time.perf_counter()
            played = statistics.load_games(store)
            t_load = time.perf_counter() - start
            old = fit_table(((g.versions, g.ranks, (g.round, g.seed)) for g in played), mu=r.mu, sigma=r.sigma,
                            beta=r.beta)
            t_old = time.perf_counter() - start
            del played
            start = time.perf_counter()
            batches = done_table_batches(store)
            t_read = time.perf_counter() - start
            new = fit_batches(batches, mu=r.mu, sigma=r.sigma, beta=r.beta)
            t_new = time.perf_counter() - start
        diff = max(abs(new.mu[v] - old.mu[v]) for v in old.mu)
        print(f"{'the fit, from the store':<34} {'old: load_games + fit_table':>28} {'new: arrays + fit_batches':>26}"
              f" {'old/new':>8}")
        print(f"{'  reading the games':<34} {t_load:>26.1f} s {t_read:>24.1f} s {t_load / t_read:>8.1f}")
        print(f"{'  reading + fit':<34} {t_old:>26.1f} s {t_new:>24.1f} s {t_old / t_new:>8.1f}")
        print(f"  same fit: largest |mu difference| {diff:.1e}, same order: {new.order == old.order}")
        with LeagueStore(cfg.store, create=False) as store:
            start = time.perf_counter()
            arrays = statistics.load_arrays(store)
            t_arrays = time.perf_counter() - start
        print(f"{'the statistics':<34} {'old: load_games rows':>28} {'new: load_arrays':>26} {'old/new':>8}"
              "   new vs old intervals: largest endpoint difference")
        print(f"{'  reading the games':<34} {t_load:>26.1f} s {t_arrays:>24.1f} s {t_load / t_arrays:>8.1f}")
        for name in STATISTICS:
            old_s, old_text, old_cis = timed_part(name, str(config), args.limit)
            start = time.perf_counter()
            new_cis = _intervals(_new_statistic(name, arrays))
            t = time.perf_counter() - start
            ratio = f"{old_s / t:>8.1f}" if old_s else f"{'>' + format(args.limit / t, '.0f'):>8}"
            print(f"  {name:<32} {old_text:>28} {t:>24.1f} s {ratio}   {_largest_difference(old_cis, new_cis)}",
                  flush=True)
        start = time.perf_counter()
        fitted = fit_batches(queries.table_batches(arrays), mu=r.mu, sigma=r.sigma, beta=r.beta)
        statistics.head_to_head(arrays, resamples=200, among=fitted.order[:20])
        print(f"  head to head of the table's first 20 (the index's matrix, fit included): "
              f"{time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-m", "harness", "table", str(config), "--format", "csv"],
                                  capture_output=True, text=True, timeout=3 * args.limit)
            took = f"{time.perf_counter() - start:.1f} s (exit {done.returncode}, {done.stdout.count(chr(10))} rows)"
            if done.returncode:
                took += ": " + done.stderr.strip()[-300:]
        except subprocess.TimeoutExpired:
            took = f"> {3 * args.limit:.0f} s (stopped)"
        print(f"harness table end to end (new process): {took}")
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "harness", "table", str(config), "--incremental", "--format",
                               "csv"], capture_output=True, text=True, timeout=600)
        print(f"harness table --incremental (no fit, no statistics): {time.perf_counter() - start:.1f} s")
        history_rows(config, args.games, args.limit)
        page_rows(config, args.games, args.limit)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def append_games(path: Path, games: int, seed: int) -> None:
    """``games`` more finished games (whole duplicate sets, the same bots' skills as
    :func:`synthesize`), after the last game, recorded as the runner's writer would leave them."""
    cfg = load_config(str(path), strict=False)
    rng = np.random.default_rng(1)
    with LeagueStore(cfg.store, create=False) as store:
        version = np.array([v.id for v in store.versions()])
        skill = rng.normal(cfg.rating.mu, 5.0, size=len(version))  # the first draw: synthesize's skills
        rng = np.random.default_rng(seed)
        first = store.last_seq() + 1
        n_sets = -(-games // len(ORDERS))
        trio = np.argpartition(rng.random((n_sets, len(version))), SEATS, axis=1)[:, :SEATS]
        seat_of = trio[:, ORDERS].reshape(-1, SEATS)[:games]
        set_of = np.repeat(np.arange(n_sets), len(ORDERS))[:games]
        deal_seed = rng.integers(0, 2**53, size=n_sets)
        perf = skill[seat_of] + rng.normal(0, cfg.rating.beta, size=seat_of.shape)
        ranks = np.argsort(np.argsort(-perf, axis=1), axis=1)
        seats_v = version[seat_of]
        with store.transaction():
            store.db.executemany(
                "INSERT INTO games (seq, id, round, players, seed, status, ended_by, decisions, seconds, finished_at, "
                "versions) VALUES (?, ?, ?, 3, ?, 'done', 'rules', 100, 0.01, '2026-11-24T00:00:00', ?)",
                ((first + g, f"g{first + g}", 10**6 + seed, int(deal_seed[s]), json.dumps(v)) for g, (s, v) in
                 enumerate(zip(set_of.tolist(), seats_v.tolist()))))
            store.db.executemany("INSERT INTO seats (game_seq, seat, version_id, rank, score, forfeited) "
                                 "VALUES (?, ?, ?, ?, ?, 0)",
                                 ((first + g // SEATS, g % SEATS, v, r, 2 - r) for g, (v, r) in
                                  enumerate(zip(seats_v.ravel().tolist(), ranks.ravel().tolist()))))
            store.set_meta("rated_upto", str(store.last_seq()))


def _old_history(config: str, out: mp.Queue) -> None:
    import history_before  # bench/, next to this file

    cfg = load_config(config, strict=False)
    with LeagueStore(cfg.store, create=False) as store:
        played = statistics.load_games(store)
        r = cfg.rating
        start = time.perf_counter()
        lines = history_before.rating_history(played, mu=r.mu, sigma=r.sigma, beta=r.beta)
        out.put((time.perf_counter() - start, {v: line[-1][1] for v, line in lines.items()}))


def history_rows(config: Path, games: int, limit: float) -> None:
    """The rating history, old against new, and the new one's cache at work."""
    from harness.report.history import rating_history

    cfg = load_config(str(config), strict=False)
    out: mp.Queue = mp.Queue()
    proc = mp.get_context("fork").Process(target=_old_history, args=(str(config), out))
    proc.start()
    try:
        t_old, old_last = out.get(timeout=limit)
    except queue.Empty:
        t_old, old_last = None, {}
    proc.kill()
    proc.join()
    with LeagueStore(cfg.store, create=False) as store:
        store.db.execute("DELETE FROM rating_history")
        start = time.perf_counter()
        lines = rating_history(store, cfg.rating)
        t_first = time.perf_counter() - start
        start = time.perf_counter()
        rating_history(store, cfg.rating)
        t_again = time.perf_counter() - start
    append_games(config, max(1, games // 100), seed=2)
    with LeagueStore(cfg.store, create=False) as store:
        start = time.perf_counter()
        rating_history(store, cfg.rating)
        t_more = time.perf_counter() - start
    old_text = f"{t_old:.1f} s" if t_old else f"> {limit:.0f} s (stopped)"
    ratio = f"{t_old / t_first:.1f}" if t_old else f">{limit / t_first:.0f}"
    print(f"{'rating history (index)':<34} {'old: 30 fits from scratch':>28} {'new: history.py':>26} {'old/new':>8}")
    print(f"{'  the cache empty (first render)':<34} {old_text:>28} {t_first:>24.2f} s {ratio:>8}")
    print(f"{'  again, no new game':<34} {'':>28} {t_again:>24.2f} s")
    print(f"{'  after 1% more games':<34} {'':>28} {t_more:>24.2f} s")
    if old_last:
        diff = max(abs(old_last[v] - line[-1][1]) for v, line in lines.items())
        print(f"  the last point (every game), new vs old: largest |mu difference| {diff:.1e}; "
              f"{len(next(iter(lines.values())))} points a bot")


def _settle(live: Any) -> None:
    """Wait until the page made is of the league as it is now. A render's end may commit the
    rating history's refit, a new state: it is kicked as the page's poll of api/status would."""
    while True:
        generation = live._generation_now()
        if live.renderer.rendered() == generation:
            return
        live.renderer.kick(generation)
        time.sleep(0.05)


def _pages(config: str, games: int) -> None:
    from harness.report.live import LiveLeague

    cfg = load_config(config, strict=False)
    with LeagueStore(cfg.store, create=False) as store:
        store.db.execute("DELETE FROM rating_history")
        bot = store.versions()[0].id
    live = LiveLeague(cfg)
    # the index is made in the background: a load answers within FRESH_WAIT (2 s) with the newest
    # page made, and the page made of the league as it is follows when its render ends
    start = time.perf_counter()
    _status, body, _ = live.index()
    answered = time.perf_counter() - start
    _settle(live)
    what = "the being-prepared page" if 'id="preparing"' in body else "the index"
    print(f"  index, first load (the history's cache empty): answered in {answered:.1f} s ({what}), "
          f"the index ready after {time.perf_counter() - start:.1f} s", flush=True)
    append_games(Path(config), max(1, games // 100), seed=3)
    start = time.perf_counter()
    _status, body, _ = live.index()
    answered = time.perf_counter() - start
    fresh = live.renderer.rendered() == live._generation_now()
    _settle(live)
    print(f"  index, a load after 1% more games: answered in {answered:.1f} s "
          f"({'the new games in it' if fresh else 'the page before them'}), the page with them ready after "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        live.status()
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    live.bot(bot)
    print(f"  /api/status: median {1000 * sorted(times)[2]:.0f} ms; a bot page: "
          f"{1000 * (time.perf_counter() - start):.0f} ms", flush=True)


def page_rows(config: Path, games: int, limit: float) -> None:
    """``harness serve``'s pages (in a process of their own, stopped after 3 x ``limit``), then
    ``harness report`` end to end."""
    print("harness serve's pages (in process):", flush=True)
    proc = mp.get_context("fork").Process(target=_pages, args=(str(config), games))
    proc.start()
    proc.join(3 * limit)
    if proc.is_alive():
        proc.kill()
        proc.join()
        print(f"  stopped after {3 * limit:.0f} s")
        raise SystemExit("harness serve's pages did not finish: the bench is broken or the pages are too slow")
    if proc.exitcode:
        raise SystemExit(f"harness serve's pages failed (exit {proc.exitcode})")
    site = config.parent / "site"
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "harness", "report", str(config), "--out", str(site)],
                              capture_output=True, text=True, timeout=3 * limit)
        files = list(site.rglob("*.html"))
        took = (f"{time.perf_counter() - start:.1f} s (exit {done.returncode}, {len(files):,} pages, "
                f"{sum(f.stat().st_size for f in files) / 1e6:.0f} MB)")
        if done.returncode:
            took += ": " + done.stderr.strip()[-300:]
    except subprocess.TimeoutExpired:
        took = f"> {3 * limit:.0f} s (stopped)"
    print(f"harness report end to end (new process): {took}")


if __name__ == "__main__":
    main()
