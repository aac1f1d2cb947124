"""The adaptive schedule resuming at scale: 1,000 bots and 1,000,000 finished 3-seat games.

A synthetic adaptive Epizodiak league is written straight into a store with SQL (the games of
``bench/table.py``'s ``synthesize``: duplicate sets of 3 bots, one deal in all 6 seat orders,
ranked by TrueSkill's model), then shaped as a killed adaptive run leaves it: every game an
adaptive one (``a-`` ids), in rounds of 1,998 games (333 sets: each of 999 bots in one set),
the last two rounds pending, one set in a hundred dropped, and bot 1,000 retired (the config no
longer lists it, so its pending games are dropped at resume). What a resume pays, measured
side by side in one run, each path in a fresh process on its own copy of the store:

- *resume*: what ``harness run`` does before it plays (open the store, bind, register the
  versions, build :class:`~harness.league.schedule_adaptive.AdaptiveSchedule` and its source) and then
  choose the first new round (``next_games``: the stop checks, the fit, the choice), for the
  per-game replay (the reference, :func:`rebuild_per_game`: every recorded game replayed in
  Python, as the schedule did before it read arrays) and the schedule's own array rebuild;
  peak RSS of each process; the round chosen must be the same (its hash);
- *BLAS threads*: the schedule's path again with one BLAS thread (``OPENBLAS_NUM_THREADS=1``):
  on 2 cores shared with busy workers, OpenBLAS's threads wait on each other in every Newton
  step of the fit (the schedule's ``next_games`` limits its fits to one thread with threadpoolctl,
  so the first ``next_games`` differs little between the two; the per-round rows call the fit
  directly, outside that limit, and show what it avoids);
- *per round* at that size: the matchmaker's fit (refreshed every round), the choice from it,
  the ``until`` question's cheap check (the fit's P(>next) of the top pairs) and the table's fit
  that decides it (every finished game read from the store and fitted), against the time the
  round's 1,998 games take to play at a given speed (``--speed``, games/s).

Run: python bench/resume.py [--games 1000000] [--bots 1000] [--speed 60] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.league import schedule_adaptive as adaptive  # noqa: E402
from harness.league.config import load_config  # noqa: E402
from harness.league.store import LeagueStore  # noqa: E402

SEATS = 3
TOP = 10


def _bench_table() -> Any:
    """bench/table.py, imported (not copied) for its ``synthesize``."""
    spec = importlib.util.spec_from_file_location("bench_table", REPO / "bench" / "table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_config(dir_: Path, bots: int, name: str) -> Path:
    lines = [f"  - {{name: b{i:04d}, command: 'true'}}" for i in range(bots)]
    path = dir_ / name
    path.write_text(f"name: big\ngame: epizodiak\nplayers: 3\nschedule: {{kind: adaptive, until: {{top: {TOP}, "
                    f"confidence: 0.95}}}}\nstore: {dir_ / 'big.sqlite'}\nbots:\n" + "\n".join(lines) + "\n")
    return path


def build(dir_: Path, games: int, bots: int) -> tuple[Path, int]:
    """The synthetic league at ``dir_``: the config of the active bots (all but the last) and the rounds' size."""
    full = write_config(dir_, bots, "all.yaml")
    _bench_table().synthesize(full, games)
    per_round = (bots - 1) // SEATS * 6  # the active bots in one set each
    cfg = load_config(str(full), strict=False)
    with LeagueStore(cfg.store, create=False) as store:
        db = store.db
        db.execute("PRAGMA synchronous=OFF")
        with store.transaction():
            db.execute("UPDATE games SET id = 'a-' || printf('%012x', seq), round = (seq - 1) / ?", (per_round,))
            last = int(db.execute("SELECT max(round) FROM games").fetchone()[0])
            # a killed run: the last two rounds pending; one set in a hundred dropped (a retirement)
            db.execute("UPDATE games SET status = 'pending', ended_by = NULL, decisions = NULL, seconds = NULL, "
                       "finished_at = NULL WHERE round >= ? OR ((seq - 1) / 6) % 100 = 37", (last - 1,))
            db.execute("UPDATE games SET status = 'dropped' WHERE status = 'pending' AND round < ?", (last - 1,))
            db.execute("DELETE FROM seats WHERE game_seq IN (SELECT seq FROM games WHERE status != 'done')")
            store.set_meta(adaptive.FROM_KEY, "0")
    return write_config(dir_, bots - 1, "active.yaml"), per_round


def rebuild_per_game(self: adaptive.AdaptiveSchedule, version_ids: dict[str, int]) -> None:
    """The reference rebuild: every game of the store's schedule log replayed in Python, one
    :meth:`~harness.league.schedule_matchmaker.Matchmaker.note_set` / ``record`` call per game."""
    store = self.store
    with store.transaction():
        start = store.get_meta(adaptive.FROM_KEY)
        if start is None:
            start = str(store.last_seq())
            store.set_meta(adaptive.FROM_KEY, start)
        store.db.execute(f"UPDATE games SET status = 'dropped' WHERE status = 'pending' AND id NOT LIKE "
                         f"'{adaptive.ID_PREFIX}%'")
        store.set_meta("plan_fingerprint", "")
    self.start = int(start)
    for row in store.versions():
        self.labels[row.id] = f"{row.name}@{row.version}"
        self.names[row.id] = row.name
        self.mm.add_bot(row.id)
    self.mm.set_roster(sorted(version_ids.values()))
    for seq, game_id, round_, status, versions, ranks in store.schedule_log(0):
        if seq <= self.start or not game_id.startswith(adaptive.ID_PREFIX):
            if status == "done" and ranks is not None:
                self.mm.record(-1, versions, ranks)
            continue
        if status == "dropped":
            continue
        self.mm.note_set(round_, versions, games=1)
        self.scheduled += 1
        if status == "done" and ranks is not None:
            self.mm.record(round_, versions, ranks)
        else:
            self._track(seq, round_, versions)
    self._drop_games_of(set(self.mm.ids) - set(self.active))


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    got = fn()
    return time.perf_counter() - start, got


def _peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: not inherited across exec, unlike ru_maxrss)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _resume(config: str, per_game: bool, out: mp.Queue) -> None:
    """One resume, as ``harness run`` starts: its times, peak RSS and the first round's hash."""
    if per_game:
        adaptive.AdaptiveSchedule._rebuild = rebuild_per_game  # type: ignore[method-assign]
    start = time.perf_counter()
    cfg = load_config(config, strict=False)
    store = LeagueStore(cfg.store, create=False)
    store.bind(cfg)
    ids = store.register_versions(cfg.bots)
    t_open = time.perf_counter() - start
    t_build, schedule = _timed(lambda: adaptive.AdaptiveSchedule(cfg, store, ids))
    assert isinstance(schedule, adaptive.AdaptiveSchedule)
    t_source, _ = _timed(lambda: adaptive.AdaptiveSource(schedule))
    t_first, games = _timed(schedule.next_games)
    assert games, "the first round was not chosen"
    digest = hashlib.sha256(repr([(g.game_id, g.seed, g.version_ids) for g in games]).encode()).hexdigest()[:12]
    rss = _peak_rss_mb()
    result: dict[str, object] = {"open": t_open, "build": t_build, "source": t_source, "first": t_first,
                                 "total": time.perf_counter() - start, "rss": rss, "round": digest,
                                 "games": len(games), "scheduled": schedule.scheduled}
    if not per_game:  # the per-round costs at this size, in the same process
        mm = schedule.mm
        n = len(mm.ids)
        from harness.league.schedule_matchmaker import adjacent_confidence, fit_skills
        result["fit"], fit = _timed(lambda: fit_skills(mm.wins[:n, :n], mu=mm.mu, sigma=mm.sigma, beta=mm.beta))
        mm._fit, mm._fit_key = fit, (mm._fit_point(mm.rounds), n)
        result["choice"], _ = _timed(mm.plan_round)
        order = sorted(schedule.active, key=lambda v: -mm._fit.mu[mm.index[v]])[: TOP + 1]  # type: ignore[union-attr]
        result["cheap"], _ = _timed(lambda: adjacent_confidence(mm._fit, [mm.index[v] for v in order]))  # type: ignore[arg-type]
        result["table"], answer = _timed(schedule.table_answer)
        result["answer"] = getattr(answer, "confidence", None)
        result["rss_after"] = _peak_rss_mb()
    store.close()
    out.put(result)


def resume(store_dir: Path, config: Path, per_game: bool, blas_threads: str | None = None) -> dict[str, Any]:
    """One resume in a fresh process on a copy of the store (a resume writes: it drops games)."""
    with tempfile.TemporaryDirectory(dir=store_dir) as tmp:
        copy = Path(tmp) / "big.sqlite"
        shutil.copy(store_dir / "big.sqlite", copy)
        text = config.read_text().replace(str(store_dir / "big.sqlite"), str(copy))
        conf = Path(tmp) / config.name
        conf.write_text(text)
        ctx = mp.get_context("spawn")  # a fresh interpreter: its peak RSS is its own
        out: mp.Queue = ctx.Queue()
        proc = ctx.Process(target=_resume, args=(str(conf), per_game, out))
        before = os.environ.get("OPENBLAS_NUM_THREADS")
        if blas_threads is not None:
            os.environ["OPENBLAS_NUM_THREADS"] = blas_threads  # read when the child imports numpy
        try:
            proc.start()
        finally:
            if blas_threads is not None:
                os.environ.pop("OPENBLAS_NUM_THREADS")
                if before is not None:
                    os.environ["OPENBLAS_NUM_THREADS"] = before
        got = out.get()
        proc.join()
        return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--bots", type=int, default=1000)
    parser.add_argument("--speed", type=float, default=60.0, help="games/s a round is played at (the ratio's base)")
    parser.add_argument("--keep", type=Path, help="build the store in this directory and keep it (reused if there)")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    if args.tiny:
        args.games, args.bots = 3000, 40
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a shared machine)")
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        if (where / "active.yaml").exists():
            config, per_round = where / "active.yaml", (args.bots - 1) // SEATS * 6
            print(f"reusing the league in {where}")
        else:
            config, per_round = build(where, args.games, args.bots)
            print(f"synthesized {args.games:,} games of {args.bots:,} bots (3 seats, rounds of {per_round:,} games) "
                  f"in {time.perf_counter() - start:.0f} s")
        old = resume(where, config, per_game=True)
        new = resume(where, config, per_game=False)
        one = resume(where, config, per_game=False, blas_threads="1")
    print(f"{'resume (a fresh process)':<44} {'per-game replay':>16} {'arrays':>9} {'ratio':>6} {'1 BLAS thread':>14}")
    for key, what in (("open", f"open, bind, register {args.bots - 1} versions"), ("build", "rebuild the schedule"),
                      ("source", "the source (pending games)"), ("first", "first next_games (checks, fit, choice)"),
                      ("total", "until the first new round is planned")):
        print(f"  {what:<42} {old[key]:>14.2f} s {new[key]:>7.2f} s {old[key] / new[key]:>6.1f} {one[key]:>12.2f} s")
    print(f"  {'peak RSS (VmHWM)':<42} {old['rss']:>13.0f} MB {new['rss']:>6.0f} MB {'':>6} {one['rss']:>11.0f} MB")
    print(f"  same first round: {old['round'] == new['round'] == one['round']} ({new['games']:,} games, hash "
          f"{new['round']}); scheduled {old['scheduled']:,} / {new['scheduled']:,}")
    play = per_round / args.speed
    print(f"per round at this size (a round of {per_round:,} games plays in {play:.0f} s at {args.speed:g} games/s):")
    print(f"  {'':<50} {'BLAS default':>22} {'1 BLAS thread':>22}")
    for key, what in (("fit", "the matchmaker's fit (every round)"), ("choice", "the choice from it"),
                      ("cheap", "until: the cheap check (every round)"),
                      ("table", "until: the table's fit (if the cheap says yes)")):
        print(f"  {what:<50} {new[key]:>8.3f} s {new[key] / play:>6.1%} round {one[key]:>8.3f} s "
              f"{one[key] / play:>6.1%} round")
    print(f"  (the table's fit answered P(>next) {new['answer']:.3f}; peak RSS after it {new['rss_after']:.0f} MB, "
          f"{one['rss_after']:.0f} MB)")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
