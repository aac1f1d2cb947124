"""Run a league: plan the schedule in the store, play the pending games in worker processes, record.

Each worker is a process pinned to one core that keeps a pool of persistent bot processes
across all its games (bots inherit the affinity: a line exchanged on one core costs ~5x less
than across cores here). Workers only play; the parent alone writes the store, recording each
game and its rating update in one transaction, so a killed runner loses only games in flight
and a re-run plays exactly the games still pending.

Each worker has one pipe to the parent: games go down it (several ahead, so a worker never
waits), results come back (the log already compressed by the worker). The parent wakes at
most every 20 ms and records what arrived in one transaction (each game whole, never half): it
shares the cores with the pinned workers, so its wake-ups and commits are what it costs them.

Ctrl-C: the parent stops dispatching, waits a few seconds for games in flight (recording those
that finish), then stops the workers, which close their bot pools (killing every bot tree).
Workers ignore SIGINT and exit by themselves when their pipe closes because the parent died
(``kill -9``).

The game-playing function and the bot-pool factory are parameters (:class:`Players`), so the
runner is tested with a fake referee and benchmarked with one fresh pool per game.
"""

from __future__ import annotations

import dataclasses
import hashlib
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.league import ratings as rating_mod
from harness.league.config import LeagueConfig
from harness.league.progress import progress_bar as _progress_bar
from harness.league.schedule import planned_chunks, schedule_fingerprint
from harness.league.store import GameOutcome, LeagueStore, PlanSummary, StoreError, compress_log

__all__ = ["Players", "RunSummary", "run_league", "plan_league", "outcome_from_record", "referee_players",
           "LeagueInterrupted", "WorkerSetup", "build_referee_config", "bot_specs", "open_pool"]

#: Games handed to each worker ahead of time: enough to keep it busy while the parent sleeps.
AHEAD_PER_WORKER = 16
#: The parent records results at most this often (seconds): fewer wake-ups on the workers' cores,
#: and all the games that arrived meanwhile in one transaction.
RECORD_INTERVAL = 0.02
#: Longest wait for workers' messages, so that a Ctrl-C (a flag, see _run_workers) is seen soon.
INTERRUPT_POLL = 0.25
#: A run stops dispatching after this many games failed inside the harness (a bug, not a bot).
MAX_ERRORS = 5


class LeagueInterrupted(Exception):
    """Raised after a Ctrl-C once the finished games are recorded; carries the :class:`RunSummary`."""

    def __init__(self, summary: RunSummary) -> None:
        super().__init__("interrupted")
        self.summary = summary


@dataclass(frozen=True)
class Players:
    """How a worker plays games: ``make_pool(referee_config) -> context manager`` and
    ``play(game, options, seed, game_id, seats, pool, referee_config) -> GameRecord``.

    Both must be module-level callables (they are sent to spawned worker processes). With
    ``fresh`` every game gets its own pool (fresh bot processes), for comparison benchmarks.
    """

    play: Callable[..., Any]
    make_pool: Callable[[Any], Any]
    fresh: bool = False


def _referee_pool(referee_config: Any) -> Any:
    from harness.play.referee import BotPool
    return BotPool()


def _referee_play(*args: Any) -> Any:
    from harness.play.referee import play_game
    return play_game(*args)


def referee_players(fresh: bool = False) -> Players:
    """The real referee: :func:`harness.play.referee.play_game` with a :class:`harness.play.referee.BotPool`."""
    return Players(play=_referee_play, make_pool=_referee_pool, fresh=fresh)


@dataclass
class RunSummary:
    """What a run did."""

    plan: PlanSummary
    played: int = 0
    violations: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    dropped_in_flight: int = 0
    workers: int = 0
    gave_up: bool = False  # stopped dispatching after MAX_ERRORS harness errors
    stop_reason: str | None = None  # why the run stopped early, when it is not a bot's or the harness's fault

    @property
    def games_per_second(self) -> float:
        return self.played / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker (a local process or a Dask worker) needs to play this league's games."""

    game: str
    options: dict[str, Any]
    referee_config: Any
    specs: dict[int, Any]  # version id -> BotSpec
    players: Players
    idle_bots: int = 32  # the bound on each worker's idle bot processes (BotPool.max_idle)


def open_pool(setup: WorkerSetup, referee_config: Any) -> Any:
    """``setup.players.make_pool(referee_config)``, its idle processes bounded by ``setup.idle_bots``."""
    pool = setup.players.make_pool(referee_config)
    if hasattr(pool, "max_idle"):
        pool.max_idle = setup.idle_bots
    return pool


def outcome_from_record(record: Any) -> GameOutcome:
    """The store's view of a referee GameRecord (the log compressed here, in the worker)."""
    return GameOutcome(game_id=record.game_id, ranking=list(record.ranking), scores=list(record.scores),
                       ended_by=record.ended_by, forfeits=list(record.forfeits or ()),
                       violations=[dict(v) for v in (record.violations or ())],
                       log=compress_log(record.log) if record.log else b"",
                       decisions=int(getattr(record, "decisions", 0) or 0),
                       seconds=float(getattr(record, "seconds", 0.0) or 0.0))


def build_referee_config(config: LeagueConfig, log_dir: str) -> Any:
    """The referee's RefereeConfig for this league (time controls, limits, violation policy)."""
    from harness.play.limits import ResourceLimits, TimeControls
    from harness.play.referee import RefereeConfig

    limits = ResourceLimits(**config.limits)
    return RefereeConfig(time=TimeControls(**config.time), limits=limits, strikes=config.strikes,
                         log_dir=log_dir, record_messages=True)


def bot_specs(config: LeagueConfig, version_ids: dict[str, int]) -> dict[int, Any]:
    """version id -> BotSpec for the bots of ``config``."""
    from harness.play.limits import BotSpec
    return {version_ids[b.label]: BotSpec(name=b.name, command=tuple(b.command), cwd=b.cwd, sandbox_dir=b.sandbox_dir)
            for b in config.bots}


# ---------------------------------------------------------------------------------------------
# the worker process


def _worker_main(index: int, cpu: int | None, setup: WorkerSetup, conn: Any, stop: Any) -> None:
    """Play the tasks ``(seq, game_id, seed, version_ids)`` received on ``conn`` until ``None``.

    Answers each with ``("done", seq, GameOutcome)``, ``("error", seq, text)`` or, once ``stop``
    is set, ``("skipped", seq, None)``. Exits when the runner's end of the pipe closes (the
    runner died), closing its bot pool on the way out.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's business

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(0)  # unwinds through the pool's close(): no bot survives the worker

    signal.signal(signal.SIGTERM, on_term)
    if cpu is not None:
        try:
            from harness.play.limits import pin_to_cpu
            pin_to_cpu(cpu)
        except (ImportError, OSError):
            pass
    from harness.games import get_game

    game = get_game(setup.game)
    players = setup.players
    referee_config = setup.referee_config
    if getattr(referee_config, "log_dir", None):
        # one stderr log directory per worker: two workers never write (and rotate) the same file
        referee_config = dataclasses.replace(referee_config,
                                             log_dir=os.path.join(referee_config.log_dir, f"worker-{index}"))
    pool = None if players.fresh else open_pool(setup, referee_config)
    try:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):  # the runner is gone (kill -9): stop, killing our bots
                return
            if task is None:
                return
            seq, gid, seed, version_ids = task
            if stop.is_set():
                conn.send(("skipped", seq, None))
                continue
            seats = [setup.specs[v] for v in version_ids]
            try:
                if pool is None:
                    with players.make_pool(referee_config) as fresh_pool:
                        record = players.play(game, setup.options, seed, gid, seats, fresh_pool, referee_config)
                else:
                    record = players.play(game, setup.options, seed, gid, seats, pool, referee_config)
                message: tuple[str, int, Any] = ("done", seq, outcome_from_record(record))
            except Exception:  # a harness bug (play_game never raises because of a bot): report it
                message = ("error", seq, f"{gid}: {traceback.format_exc(limit=8)}")
            try:
                conn.send(message)
            except (BrokenPipeError, OSError):
                return
    finally:
        if pool is not None:
            pool.close()


# ---------------------------------------------------------------------------------------------
# the parent


def plan_league(config: LeagueConfig, store: LeagueStore) -> tuple[PlanSummary, dict[str, int]]:
    """Bind the store to the league, register the bot versions, and bring the schedule up to date."""
    store.bind(config)
    version_ids = store.register_versions(config.bots)
    fingerprint = schedule_fingerprint(config)
    if store.planned_fingerprint() == fingerprint:  # planned before with this very schedule
        return store.unchanged_plan(), version_ids
    summary = store.plan_rows(planned_chunks(config, version_ids), fingerprint)
    return summary, version_ids


def _cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return []


def run_league(config: LeagueConfig, *, players: Players | None = None, progress: bool | str = True,
               grace_seconds: float = 5.0, max_games: int | None = None, pin: bool = True,
               on_game: Callable[[int, GameOutcome], None] | None = None,
               should_stop: Callable[[], bool] | None = None, dask: str | None = None) -> RunSummary:
    """Play every pending game of ``config``'s league and record it; return what was done.

    ``max_games`` stops after that many games (tests, benchmarks). ``dask`` (an address, or
    ``local:N``; default: the config's ``executor``) plays the games on a Dask cluster instead of
    local worker processes. Raises :class:`LeagueInterrupted` on Ctrl-C, after recording what
    finished.
    """
    players = players or referee_players()
    store = LeagueStore(config.store)
    lock = None
    try:
        lock = _lock_league(config.store)
        plan, version_ids = plan_league(config, store)
        pending = store.pending_view(limit=max_games)  # read in chunks as the games are dispatched
        summary = RunSummary(plan=plan)
        rating_mod.advance(store, config.rating)  # catch up (e.g. after a changed rating parameter)
        if not pending:
            return summary
        log_dir = str(Path(config.store).with_suffix("").as_posix() + ".logs")
        referee_config = build_referee_config(config, log_dir)
        specs = bot_specs(config, version_ids)
        setup = WorkerSetup(game=config.game, options=config.options, referee_config=referee_config,
                             specs=specs, players=players, idle_bots=config.idle_bots)
        dask = dask or config.dask
        if dask:
            _run_dask(config, store, setup, pending, dask, summary, progress, on_game, should_stop)
            return summary
        n_workers = max(1, min(config.workers, len(pending)))
        summary.workers = n_workers
        _run_workers(config, store, setup, pending, n_workers, summary, progress, grace_seconds, pin, on_game,
                     should_stop)
        return summary
    finally:
        store.close()
        if lock is not None:
            lock.close()  # releases the lock (the kernel does it too if this process is killed)


def _lock_league(store_path: str) -> Any:
    """Hold ``<store>.lock`` for the run: a second runner of the same league is refused at once.

    Two runners would play the same pending games twice (recorded once, but the work wasted).
    """
    import fcntl

    handle = open(f"{store_path}.lock", "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "?"
        handle.close()
        raise StoreError(f"{store_path}: another `harness run` (pid {holder}) is playing this league now; "
                         f"wait for it, or stop it") from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


class _Worker:
    """The parent's handle on one worker process: its process, its pipe end, its games in flight."""

    def __init__(self, process: Any, conn: Any) -> None:
        self.process = process
        self.conn = conn
        self.in_flight = 0
        self.alive = True


def _run_workers(config: LeagueConfig, store: LeagueStore, setup: WorkerSetup, pending: Sequence[Any],
                 n_workers: int, summary: RunSummary, progress: bool | str, grace_seconds: float, pin: bool,
                 on_game: Callable[[int, GameOutcome], None] | None,
                 should_stop: Callable[[], bool] | None = None) -> None:
    # spawn: never fork a process that may hold threads or an open SQLite handle.
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    cpus = _cpus() if pin else []
    workers: list[_Worker] = []
    old_handler = signal.signal(signal.SIGINT, signal.SIG_IGN)  # children start with SIGINT ignored
    try:
        for i in range(n_workers):
            cpu = cpus[i % len(cpus)] if cpus else None
            parent_end, child_end = ctx.Pipe(duplex=True)
            p = ctx.Process(target=_worker_main, name=f"league-worker-{i}",
                            args=(i, cpu, setup, child_end, stop), daemon=True)
            p.start()
            child_end.close()  # the worker holds the only other end: its death closes the pipe
            workers.append(_Worker(p, parent_end))
    finally:
        signal.signal(signal.SIGINT, old_handler)

    rater = rating_mod.PrefixRater(store, config.rating)
    versions_of: dict[int, tuple[int, ...]] = {}  # of the games dispatched and not yet recorded
    bar = _progress_bar(len(pending), progress, config.name)
    start = time.perf_counter()
    next_task = 0
    by_conn = {w.conn: w for w in workers}

    def dispatch() -> None:
        nonlocal next_task
        if len(summary.errors) >= MAX_ERRORS:
            return  # something is broken in the harness: let the games in flight end, then stop
        if should_stop is not None and should_stop():
            # the caller has what it needs (a match's test decided): the games being played end,
            # the workers skip those queued ahead (they stay pending)
            stop.set()
            return
        alive = [w for w in workers if w.alive]
        while alive and next_task < len(pending):
            # the least busy worker first; queues shrink towards the end so that no worker is left
            # with a long queue while the other idles
            cap = max(2, min(AHEAD_PER_WORKER, (len(pending) - next_task) // len(alive)))
            w = min(alive, key=lambda x: x.in_flight)
            if w.in_flight >= cap:
                return
            g = pending[next_task]
            versions_of[g.seq] = g.version_ids
            try:
                w.conn.send((g.seq, g.game_id, g.seed, g.version_ids))
            except OSError:
                w.alive = False
                alive.remove(w)
                continue
            next_task += 1
            w.in_flight += 1

    def handle(w: _Worker, message: tuple[str, int, Any]) -> None:
        kind, seq, payload = message
        w.in_flight -= 1
        if kind == "done":
            with store.transaction():
                if store.record(seq, payload):
                    rater.recorded(seq, list(zip(versions_of.pop(seq), payload.ranking)))
                    summary.played += 1
                    summary.violations += len(payload.violations)
            if on_game is not None:
                on_game(seq, payload)
            if bar is not None:
                bar.update(1)
                if summary.violations:
                    bar.set_postfix(violations=summary.violations, refresh=False)
        elif kind == "error":
            summary.errors.append(payload)
            if bar is not None:
                bar.write(f"error (game left pending): {payload.strip().splitlines()[-1]}")
            if len(summary.errors) >= MAX_ERRORS:
                summary.gave_up = True
                stop.set()  # the workers skip the games queued ahead

    def busy() -> list[_Worker]:
        return [w for w in workers if w.alive and w.in_flight]

    def receive(timeout: float) -> None:
        """Handle everything the workers sent (waiting up to ``timeout`` for the first message).

        All the games that arrived together are recorded in one transaction (each game whole).
        """
        ready: list[Any] = mp_connection.wait([w.conn for w in busy()], timeout)
        if not ready:
            return
        with store.transaction():
            for conn in ready:
                w = by_conn[conn]
                while w.in_flight:
                    try:
                        if not conn.poll():
                            break
                        message = conn.recv()
                    except (EOFError, OSError):
                        w.alive = False
                        summary.errors.append(
                            f"worker {w.process.name} died (exit code {w.process.exitcode}) with {w.in_flight} "
                            f"games in flight; they stay pending: run again to play them")
                        break
                    handle(w, message)

    # Ctrl-C only raises a flag, checked between batches: a KeyboardInterrupt raised inside a
    # store transaction would roll back games already counted and rated in memory.
    interrupts = 0

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal interrupts
        interrupts += 1

    old_handler = signal.signal(signal.SIGINT, on_sigint)
    try:
        dispatch()
        last = 0.0
        while busy() and not interrupts:
            pause = RECORD_INTERVAL - (time.monotonic() - last)
            if pause > 0:
                time.sleep(pause)
            receive(INTERRUPT_POLL)
            last = time.monotonic()
            if not interrupts:
                dispatch()
        if interrupts:
            summary.interrupted = True
            stop.set()
            if bar is not None:
                bar.write(f"interrupted: recording games in flight (up to {grace_seconds:.0f} s; Ctrl-C again "
                          f"to drop them)")
            deadline = time.monotonic() + grace_seconds
            while busy() and interrupts < 2 and time.monotonic() < deadline:
                receive(min(INTERRUPT_POLL, max(0.05, deadline - time.monotonic())))
            summary.dropped_in_flight = sum(w.in_flight for w in workers if w.alive)
    finally:
        signal.signal(signal.SIGINT, old_handler)
        summary.seconds = time.perf_counter() - start
        if bar is not None:
            bar.close()
        _stop_workers(workers)
    if summary.interrupted:
        raise LeagueInterrupted(summary)


def _run_dask(config: LeagueConfig, store: LeagueStore, setup: WorkerSetup, pending: Sequence[Any], address: str,
              summary: RunSummary, progress: bool | str, on_game: Callable[[int, GameOutcome], None] | None,
              should_stop: Callable[[], bool] | None = None) -> None:
    """Play ``pending`` on the Dask cluster at ``address`` and record what comes back.

    The batches that finished since the last record are recorded in one transaction (a group
    commit: the busier the writer, the bigger its transactions). A game delivered
    twice (a batch re-run after a worker was lost) is recorded once: ``store.record`` refuses a
    game that is no longer pending. Ctrl-C (a flag, as in :func:`_run_workers`) stops at the next
    result: finished batches are recorded, the others cancelled and left pending.
    """
    from harness.league.executors.dask import SchedulerLost, dask_client, play_games

    rater = rating_mod.PrefixRater(store, config.rating)
    versions_of = {g.seq: g.version_ids for g in pending}
    bar = _progress_bar(len(pending), progress, config.name)
    start = time.perf_counter()
    interrupts = 0

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal interrupts
        interrupts += 1

    files = [f for b in config.bots for f in b.files]
    key = f"{config.name}-{hashlib.sha256(config.store.encode()).hexdigest()[:8]}"
    old_handler = signal.signal(signal.SIGINT, on_sigint)
    seen: set[int] = set()
    try:
        with dask_client(address) as client:
            summary.workers = len(client.scheduler_info(n_workers=-1).get("workers", {}))
            stream = play_games(client, setup, pending, key_prefix=key, bot_files=files)
            try:
                for messages in stream:  # what finished together is recorded in one transaction
                    _record_messages(store, rater, versions_of, messages, seen, summary, bar, on_game)
                    if interrupts or summary.gave_up or len(summary.errors) >= MAX_ERRORS:
                        break
                    if should_stop is not None and should_stop():
                        break  # the caller has what it needs (a match decided): the other batches are cancelled
            except SchedulerLost as exc:  # the batches recorded so far stay recorded
                summary.stop_reason = f"{exc} (--dask {address})"
            finally:
                stream.close()  # cancels the batches not finished, closes the workers' bot pools
    finally:
        signal.signal(signal.SIGINT, old_handler)
        summary.seconds = time.perf_counter() - start
        if bar is not None:
            bar.close()
    summary.gave_up = summary.gave_up or (len(summary.errors) >= MAX_ERRORS and len(seen) < len(pending))
    if interrupts:
        summary.interrupted = True
        raise LeagueInterrupted(summary)


def _record_messages(store: LeagueStore, rater: Any, versions_of: dict[int, tuple[int, ...]],
                     messages: list[tuple[str, int, Any]], seen: set[int], summary: RunSummary, bar: Any,
                     on_game: Callable[[int, GameOutcome], None] | None) -> None:
    """Record ``messages`` (from an executor) in one transaction, in bulk; each game once."""
    if not messages:
        return
    done: list[tuple[int, GameOutcome]] = []
    for kind, seq, payload in messages:
        if seq in seen:
            continue  # delivered twice (at least once): already handled
        seen.add(seq)
        if kind == "done":
            done.append((seq, payload))
        elif kind == "refused":  # a worker with other bot files: stop, playing nothing more there
            if payload not in summary.errors:
                summary.errors.append(payload)
            summary.gave_up = True
        else:
            summary.errors.append(payload)
    with store.transaction():
        recorded = set(store.record_many(done))
        rater.recorded_many([(seq, list(zip(versions_of[seq], o.ranking))) for seq, o in done if seq in recorded])
    for seq, outcome in done:
        if seq in recorded:
            summary.played += 1
            summary.violations += len(outcome.violations)
        if on_game is not None:
            on_game(seq, outcome)
    if bar is not None and done:
        bar.update(len(done))


def _stop_workers(workers: list[_Worker]) -> None:
    for w in workers:
        try:
            w.conn.send(None)
        except OSError:
            pass
    deadline = time.monotonic() + 3.0
    for w in workers:
        w.process.join(max(0.0, deadline - time.monotonic()))
    for w in workers:
        if w.process.is_alive():
            w.process.terminate()  # SIGTERM: the worker closes its pool (kills its bots) and exits
    for w in workers:
        w.process.join(3.0)
        if w.process.is_alive():
            w.process.kill()
            w.process.join(1.0)
        w.conn.close()
