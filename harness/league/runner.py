"""Run a league: plan the schedule in the store, play the pending games with an executor, record.

The runner is the one writer: an executor (:mod:`harness.league.executors`: worker processes
on this machine, or a Dask cluster) only plays, and this process records each game and its
rating update in one transaction, so a killed runner loses only games in flight and a re-run
plays exactly the games still pending.

One writer loop drives every executor (:func:`_play_and_record`): it asks the run's game source
(:mod:`harness.league.game_sources`; the round robin's pending games by default) for as many games
as the executor has room for, and records what finished. It wakes at most every 20 ms and
records everything that arrived meanwhile in one transaction (each game whole, never half): it
shares the cores with the pinned workers, so its wake-ups and commits are what it costs them,
and a writer that falls behind a cluster records bigger groups (group commit).

Ctrl-C: the loop stops dispatching, tells the executor to start nothing more, waits a few
seconds for games in flight (recording those that finish; a second Ctrl-C drops them), then
closes the executor, which closes its bot pools (killing every bot tree).

How a game is played and where its bots come from is a parameter (:class:`GamePlayer`), so the
runner is tested with a fake referee and benchmarked with one fresh pool per game.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import math
import os
import signal
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO

from harness.league import ratings as rating_mod
from harness.league.config import BotEntry, LeagueConfig
from harness.league.executors.base import (
    REFEREE,
    Executor,
    ExecutorLost,
    GamePlayer,
    Message,
    WorkerSetup,
    referee_player,
)
from harness.league.executors.local import LocalExecutor
from harness.league.game_sources import GameSource, StoreSource
from harness.league.progress import progress_bar as _progress_bar
from harness.league.store import GameOutcome, LeagueStore, PlanSummary, StoreError
from harness.league.store_pending import PendingGame
from harness.play.limits import MAX_IDLE_BOTS, BotSpec, ResourceLimits, TimeControls
from harness.play.referee import FAIR_PLAY, FairPlay, RefereeConfig

__all__ = ["GamePlayer", "RunSummary", "RunOptions", "RunHooks", "run_league", "plan_league", "open_source",
           "referee_player", "LeagueInterrupted", "build_referee_config", "bot_spec", "bot_specs", "worker_setup",
           "MAX_ERRORS", "idle_bound", "IDLE_BOTS_CAP"]

#: The parent records results at most this often (seconds): fewer wake-ups on the workers' cores,
#: and all the games that arrived meanwhile in one transaction.
RECORD_INTERVAL = 0.02
#: Longest wait for the executor's results, so that a Ctrl-C (a flag, see _play_and_record) is seen soon.
INTERRUPT_POLL = 0.25
#: A run stops dispatching after this many games failed inside the harness (a bug, not a bot).
MAX_ERRORS = 5
#: How often a standing ladder with nothing to play looks for bots (seconds).
ROSTER_POLL = 1.0

#: Makes a run's game source from its store and its ``max_games``.
SourceFactory = Callable[[LeagueStore, "int | None"], GameSource]


@dataclass(frozen=True)
class RunOptions:
    """How a run plays; the defaults are what ``harness run`` does.

    max_games:     stop after that many games (tests, benchmarks).
    dask:          a Dask scheduler's address, or ``local:N``, to play on a cluster instead of local
                   worker processes (default: the config's ``executor``).
    source:        the round robin's source from the store and ``max_games`` (default
                   :class:`~harness.league.game_sources.StoreSource`; a match hands out smaller
                   windows of deals); given, an adaptive config plays its round robin instead.
    forever:       an adaptive league plays on past its budget and its ``until`` question (a standing
                   ladder, until Ctrl-C or ``should_stop()``).
    grace_seconds: how long a Ctrl-C waits for the games in flight.
    pin:           pin each local worker to a core.
    fair_play:     a fair-play rule turned off, for a benchmark of its cost only (bench/fairplay.py).
    claim_store:   the config takes over a store that another config file made (``harness run
                   --claim-store``: a renamed copy, a checkout elsewhere), once the run holds the league.
    """

    max_games: int | None = None
    dask: str | None = None
    source: SourceFactory | None = None
    forever: bool = False
    grace_seconds: float = 5.0
    pin: bool = True
    fair_play: FairPlay = FAIR_PLAY
    claim_store: bool = False


@dataclass(frozen=True)
class RunHooks:
    """What the caller of a run hears and decides while it plays (each optional).

    on_game(seq, outcome): sees every finished game, once recorded.
    should_stop():         once true, no more games start (those in flight end and are recorded).
    roster():              an adaptive league's bots now, or None when unchanged, polled between
                           rounds (``harness run`` re-reads its config file:
                           :func:`harness.league.schedule_adaptive.config_roster`).
    notify(line):          hears who joined or left an adaptive league.
    """

    on_game: Callable[[int, GameOutcome], None] | None = None
    should_stop: Callable[[], bool] | None = None
    roster: Callable[[], Sequence[BotEntry] | None] | None = None
    notify: Callable[[str], None] | None = None


class LeagueInterrupted(Exception):
    """Raised after a Ctrl-C once the finished games are recorded; carries the :class:`RunSummary`."""

    def __init__(self, summary: RunSummary) -> None:
        super().__init__("interrupted")
        self.summary = summary


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
    finished: str | None = None  # why an adaptive schedule stopped (its budget, its question answered)
    logs_bytes: int = 0  # the logs file's size on disk at the end of the run
    logs_dropped: int = 0  # games recorded without their logs, the logs file being past its budget
    #: the league's games per status ("pending", "done", "dropped") when the run ended (empty: the
    #: store could not be read then)
    counts: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def games_per_second(self) -> float:
        return self.played / self.seconds if self.seconds > 0 else 0.0


def build_referee_config(config: LeagueConfig, log_dir: str, fair_play: FairPlay = FAIR_PLAY) -> RefereeConfig:
    """The referee's RefereeConfig for this league (time controls, limits, violation policy)."""
    return RefereeConfig(time=TimeControls(**config.time), limits=ResourceLimits(**config.limits),
                         strikes=config.strikes, log_dir=log_dir, record_messages=True, fair_play=fair_play)


def bot_spec(bot: BotEntry) -> BotSpec:
    """How a worker starts ``bot``."""
    return BotSpec(name=bot.name, command=tuple(bot.command), cwd=bot.cwd, sandbox_dir=bot.sandbox_dir)


def bot_specs(config: LeagueConfig, version_ids: dict[str, int]) -> dict[int, BotSpec]:
    """version id -> BotSpec for the bots of ``config``."""
    return {version_ids[b.label]: bot_spec(b) for b in config.bots}


#: the most idle processes per worker the default ``idle_bots`` keeps: 4 bots at tables of 4 on one
#: worker (~0.5 GB of Python bots, each ~5 MB of its own; a JVM bot takes ten times that)
IDLE_BOTS_CAP = 96


def idle_bound(config: LeagueConfig) -> int:
    """The idle bot processes each worker keeps: ``idle_bots`` when the league sets it, else enough
    that the pool never stops a process the league will need again.

    No process plays two seat orders of one deal, so each bot needs a process per seat order of
    a deal (``k!`` at tables of ``k``), spread over the workers: ``bots x seat orders / workers``
    per worker, and half as much again for the uneven split of a deal's seat orders between
    workers. Kept alive between the windows of deals (harness.league.game_sources), they are reused
    for every later deal, so a league starts that many processes whatever its length; fewer, and
    every window restarts the ones stopped (bench/fairplay.py). At least :data:`MAX_IDLE_BOTS`, at
    most :data:`IDLE_BOTS_CAP` (a league of many bots at tables of 4 sets its own bound)."""
    if config.idle_bots is not None:
        return config.idle_bots
    orders = sum(math.factorial(k) for k in config.table_sizes)
    need = math.ceil(len(config.bots) * orders * 3 / (2 * max(1, config.workers)))
    return max(MAX_IDLE_BOTS, min(IDLE_BOTS_CAP, need))


def worker_setup(config: LeagueConfig, version_ids: dict[str, int], player: GamePlayer,
                 fair_play: FairPlay = FAIR_PLAY) -> WorkerSetup:
    """What the executor's workers need to play ``config``'s games (stderr logs in ``<store>.logs``)."""
    log_dir = str(Path(config.store).with_suffix("").as_posix() + ".logs")
    return WorkerSetup(game=config.game, options=config.options,
                       referee_config=build_referee_config(config, log_dir, fair_play),
                       specs=bot_specs(config, version_ids), player=player, idle_bots=idle_bound(config),
                       spare_bots=config.spare_bots, log_bytes=config.logs["game_kb"] * 1024)


def plan_league(config: LeagueConfig, store: LeagueStore) -> tuple[PlanSummary, dict[str, int]]:
    """Bind the store to the league, register the bot versions, and bring the round robin up to date."""
    version_ids = store.bind_league(config)
    return store.plan_round_robin(config, version_ids), version_ids


def open_source(config: LeagueConfig, store: LeagueStore, options: RunOptions = RunOptions(),
                hooks: RunHooks = RunHooks()) -> tuple[GameSource, PlanSummary, dict[str, int]]:
    """The run's game source (the one factory), what planning did, and the versions' ids.

    The store is bound to the league and the config's versions registered; then an adaptive
    schedule is rebuilt from the store (its plan: the games pending and done), or the round robin
    is brought up to date in the store and its pending games are the source
    (``options.source``, default :class:`StoreSource`)."""
    version_ids = store.bind_league(config)
    if config.schedule.adaptive and options.source is None:
        # numpy and scipy (the fit): ~0.4 s of CPU to import, paid by every process that imports the
        # runner (`harness run`, and each league worker of a script that does) if imported above
        from harness.league.schedule_adaptive import AdaptiveSchedule, AdaptiveSource

        adaptive = AdaptiveSource(AdaptiveSchedule(config, store, version_ids, forever=options.forever),
                                  hooks.roster, hooks.notify)
        counts = store.counts()
        return adaptive, PlanSummary(0, 0, 0, counts["pending"], counts["done"]), version_ids
    plan = store.plan_round_robin(config, version_ids)
    return (options.source or StoreSource)(store, options.max_games), plan, version_ids


def run_league(config: LeagueConfig, *, player: GamePlayer | None = None, progress: bool | str = True,
               options: RunOptions = RunOptions(), hooks: RunHooks = RunHooks()) -> RunSummary:
    """Play the games of ``config``'s league that its source gives (:func:`open_source`: every
    pending game of a round robin; the rounds an adaptive schedule chooses) and record them; return
    what was done. ``player`` plays a game (default: the referee), ``progress`` shows the run
    (``harness.league.progress``), ``options`` say how it plays, ``hooks`` what the caller hears
    and decides. Raises :class:`LeagueInterrupted` on Ctrl-C, after recording what finished. Why
    an adaptive schedule stopped is in :attr:`RunSummary.finished`.
    """
    store = LeagueStore(config.store)
    store.log_budget = config.logs["budget_mb"] * 1024 * 1024
    lock = None
    summary: RunSummary | None = None
    try:
        lock = _lock_league(config.store)
        if options.claim_store:
            store.claim(config)
        games, plan, version_ids = open_source(config, store, options, hooks)
        summary = RunSummary(plan=plan)
        rater = rating_mod.PrefixRater(store, config.rating)  # caught up (e.g. after a changed rating parameter)
        if games.remaining() == 0:
            return summary
        setups = [worker_setup(config, version_ids, player or REFEREE, options.fair_play)]
        executor_at = options.dask or config.executor

        def start_executor(joined: Mapping[int, BotEntry]) -> Executor:
            if joined:  # bots that joined: the workers must know them
                bots = {**{b.label: b for b in config.bots}, **{b.label: b for b in joined.values()}}
                specs = {**setups[-1].specs, **{v: bot_spec(b) for v, b in joined.items()}}
                setups.append(dataclasses.replace(setups[-1], specs=specs))
                return _start_executor(dataclasses.replace(config, bots=tuple(bots.values())), setups[-1],
                                       executor_at, None, options.pin)
            return _start_executor(config, setups[-1], executor_at, games.remaining(), options.pin)

        _play_and_record(config, store, start_executor, games, summary, progress, options.grace_seconds,
                         rater, hooks)
        summary.finished = games.stop_reason()
        return summary
    finally:
        if summary is not None:
            summary.logs_dropped = store.logs_dropped
            with contextlib.suppress(sqlite3.Error):  # (a store gone bad: the error that stopped the run tells)
                summary.counts = store.counts()
        store.close()
        if summary is not None:
            summary.logs_bytes = store.logs.disk_bytes()
        if lock is not None:
            lock.close()  # releases the lock (the kernel does it too if this process is killed)


def _start_executor(config: LeagueConfig, setup: WorkerSetup, dask: str | None, games: int | None,
                    pin: bool) -> Executor:
    """The Dask executor at ``dask``, else ``config.workers`` local workers (no more than ``games``, if known)."""
    if dask:
        from harness.league.executors.dask import DaskExecutor  # dask and distributed: ~1 s to import

        files = [f for b in config.bots for f in b.files]
        key = f"{config.name}-{hashlib.sha256(config.store.encode()).hexdigest()[:8]}"
        return DaskExecutor(dask, setup, key_prefix=key, bot_files=files)
    return LocalExecutor(setup, max(1, min(config.workers, games or config.workers)), pin=pin)


def _lock_league(store_path: str) -> IO[str]:
    """Hold ``<store>.lock`` for the run: a second runner of the same league is refused at once.

    Two runners would play the same pending games twice (recorded once, but the work wasted).
    """
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


def _more_later(source: GameSource, writer: _Writer) -> bool:
    """Whether the run goes on with nothing in flight: bots joined and wait for the executor, or
    a standing ladder waits for bots."""
    if writer.stopped:
        return False
    return bool(source.new_bots()) or source.more_later()


class _Writer:
    """Records, rates and reports the executor's messages: each game once, a batch in one transaction."""

    def __init__(self, config: LeagueConfig, store: LeagueStore, source: GameSource, summary: RunSummary,
                 progress: bool | str, rater: rating_mod.PrefixRater, hooks: RunHooks) -> None:
        self.store = store
        self.source = source
        self.summary = summary
        self.on_game = hooks.on_game
        self.should_stop = hooks.should_stop
        self.rater = rater
        self.playing: dict[int, PendingGame] = {}  # handed to the executor, not reported yet
        self.bar = _progress_bar(source.total(), progress, config.name)
        self.stopped = False  # no more games are started
        self.budget_mb = config.logs["budget_mb"]
        self.logs_told = False  # the logs' budget was passed and the progress output said so

    def dispatch(self, executor: Executor) -> None:
        """Hand the executor as many games as it has room for."""
        if self.stopped:
            return
        if len(self.summary.errors) >= MAX_ERRORS or (self.should_stop is not None and self.should_stop()):
            # something is broken in the harness, or the caller has what it needs (a match's test
            # decided): start nothing more, let the games being played end
            self.stop(executor)
            return
        room = executor.room(self.source.remaining())
        if room:
            games = self.source.next_games(room)
            for g in games:
                self.playing[g.seq] = g
            executor.submit(games)

    def stop(self, executor: Executor) -> None:
        self.stopped = True
        executor.stop()

    def record(self, executor: Executor, messages: list[Message]) -> None:
        """Record ``messages`` in one transaction, in bulk; a game reported twice is recorded once."""
        summary = self.summary
        done: list[tuple[int, GameOutcome]] = []
        games: dict[int, PendingGame] = {}
        for message in messages:
            seq = message[1]
            if message[0] == "lost":  # a worker died: its games stay pending
                summary.errors.append(message[2])
                continue
            game = self.playing.pop(seq, None)
            if game is None:
                continue  # reported twice (at least once): already handled
            if message[0] == "done":
                done.append((seq, message[2]))
                games[seq] = game
                continue
            payload = message[2]  # (the text of a refusal or an error)
            if message[0] == "refused":  # a worker with other bot files: stop, playing nothing more there
                if payload not in summary.errors:
                    summary.errors.append(payload)
                summary.gave_up = True
                self.stop(executor)
            else:
                summary.errors.append(payload)
                if self.bar is not None and len(summary.errors) <= MAX_ERRORS:
                    self.bar.write(f"error (game left pending): {payload.strip().splitlines()[-1]}")
                if len(summary.errors) >= MAX_ERRORS and not summary.gave_up:
                    summary.gave_up = True
                    self.stop(executor)
        if not done:
            return
        with self.store.transaction():
            recorded = set(self.store.record_many(done))
            self.rater.recorded_many([(seq, list(zip(games[seq].version_ids, o.ranking)))
                                      for seq, o in done if seq in recorded])
        for seq, outcome in done:
            if seq in recorded:
                summary.played += 1
                summary.violations += len(outcome.violations)
                self.source.recorded(games[seq], outcome)
            if self.on_game is not None:
                self.on_game(seq, outcome)
        if self.bar is not None and self.store.logs_dropped and not self.logs_told:
            self.logs_told = True  # once: a standing ladder can run for days past it
            self.bar.write(f"logs: past their budget of {self.budget_mb} MB (logs.budget_mb): from now on only "
                           f"games with violations keep their logs")
        if self.bar is not None:
            self.bar.update(len(done))
            if summary.violations:
                self.bar.set_postfix(violations=summary.violations, refresh=False)


def _play_and_record(config: LeagueConfig, store: LeagueStore,
                     start_executor: Callable[[Mapping[int, BotEntry]], Executor], source: GameSource,
                     summary: RunSummary, progress: bool | str, grace_seconds: float,
                     rater: rating_mod.PrefixRater, hooks: RunHooks) -> None:
    """The writer loop, the same for every executor: dispatch, wait, record, until nothing is in flight.

    ``start_executor(joined)`` starts workers that know the config's bots and those that joined."""
    # Ctrl-C only raises a flag, checked between batches: a KeyboardInterrupt raised inside a
    # store transaction would roll back games already counted and rated in memory.
    interrupts = 0

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupts
        interrupts += 1

    old_handler = signal.signal(signal.SIGINT, on_sigint)
    writer: _Writer | None = None
    executor: Executor | None = None
    start = time.perf_counter()
    try:
        executor = start_executor({})  # a source's first games are the config's bots'
        summary.workers = executor.workers
        writer = _Writer(config, store, source, summary, progress, rater, hooks)
        start = time.perf_counter()
        try:
            writer.dispatch(executor)
            last = 0.0
            while (executor.in_flight() or _more_later(source, writer)) and not interrupts:
                if not executor.in_flight():
                    joined = source.new_bots()
                    if joined:  # bots joined: workers that know them, once nothing is in flight
                        executor.close()
                        executor = start_executor(joined)
                        source.bots_given()
                        summary.workers = executor.workers
                    else:
                        time.sleep(ROSTER_POLL)  # a standing ladder with nothing to play: wait for bots
                pause = RECORD_INTERVAL - (time.monotonic() - last)
                if pause > 0:
                    time.sleep(pause)
                writer.record(executor, executor.results(INTERRUPT_POLL))
                last = time.monotonic()
                if not interrupts:
                    writer.dispatch(executor)
            if interrupts:
                summary.interrupted = True
                writer.stop(executor)
                if writer.bar is not None and executor.in_flight():
                    writer.bar.write(f"interrupted: recording games in flight (up to {grace_seconds:.0f} s; "
                                     f"Ctrl-C again to drop them)")
                deadline = time.monotonic() + grace_seconds
                while executor.in_flight() and interrupts < 2 and time.monotonic() < deadline:
                    writer.record(executor, executor.results(min(INTERRUPT_POLL,
                                                                 max(0.05, deadline - time.monotonic()))))
                summary.dropped_in_flight = executor.in_flight()
        except ExecutorLost as exc:  # the games recorded so far stay recorded
            summary.stop_reason = str(exc)
    finally:
        signal.signal(signal.SIGINT, old_handler)
        summary.seconds = time.perf_counter() - start
        if writer is not None and writer.bar is not None:
            writer.bar.close()
        if executor is not None:
            executor.close()
    if summary.interrupted:
        raise LeagueInterrupted(summary)
