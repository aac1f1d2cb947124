"""What every executor shares: the interface the runner's writer loop drives, and one game played.

An executor plays games somewhere (local worker processes, a Dask cluster) and hands back what
finished; it never writes the store. The runner's one writer loop
(:func:`harness.league.runner.run_league`) asks a game source for games while the executor has
room, and records, rates and reports what comes back, the same way for every executor::

    executor.submit(games)           # games to play (PendingGame: seq, game_id, seed, version_ids)
    executor.room(remaining)         # how many more games it wants now (0: it has enough queued);
                                     # remaining: games the source has left, if known
    executor.results(timeout)        # the messages that arrived since the last call (waits up to
                                     # timeout for the first); may raise ExecutorLost
    executor.in_flight()             # games submitted and not yet reported
    executor.stop()                  # start no more games: the queued ones are dropped (left
                                     # pending), those being played are still reported
    executor.close()                 # stop everything, close every bot pool

A message (:data:`Message`) is ``(kind, seq, payload)``: ``("done", seq, GameOutcome)``,
``("error", seq, text)`` (a harness bug: the game stays pending), ``("refused", seq, line)`` (a
worker that must not play, e.g. its bot files differ) or ``("lost", -1, text)`` (a worker died;
its games stay pending). A
game may be reported twice (Dask's at-least-once delivery): the writer records each game once.

Where the bots come from is decided in one place, :func:`open_bot_pool`, which every executor
calls for its pools (persistent ones and the fresh ones of :attr:`GamePlayer.fresh`).
"""

from __future__ import annotations

import dataclasses
import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from harness.games import Game
from harness.league.store import GameOutcome, compress_log
from harness.league.store_pending import PendingGame
from harness.play.limits import BotSpec
from harness.play.pool import BotPool
from harness.play.referee import GameRecord, RefereeConfig, play_game

__all__ = ["Executor", "ExecutorLost", "GamePlayer", "Message", "Played", "Failed", "Task", "WorkerSetup", "open_bot_pool",
           "Pool", "REFEREE", "outcome_from_record", "play_task", "referee_player", "task_of"]

#: What a worker is handed per game: (seq, game_id, seed, version ids by seat).
Task = tuple[int, str, int, tuple[int, ...]]
#: A game played: ("done", seq, its outcome).
Played = tuple[Literal["done"], int, GameOutcome]
#: A game not played, or a worker gone: (kind, seq or -1, the text saying why); see the module docstring.
Failed = tuple[Literal["error", "refused", "lost"], int, str]
#: What a worker hands back per game (a kind's word misspelt anywhere is a type error).
Message = Played | Failed

#: ``play(game, options, seed, game_id, seats, pool, referee_config) -> GameRecord``
PlayFunction = Callable[[Game, dict[str, Any], int, str, Sequence[BotSpec], Any, RefereeConfig], GameRecord]


class Pool(Protocol):
    """A worker's bot processes (:class:`harness.play.pool.BotPool`, or a test's stand-in)."""

    def __enter__(self) -> Pool: ...

    def __exit__(self, *exc: object) -> bool | None: ...

    def close(self) -> None: ...


class ExecutorLost(Exception):
    """The executor cannot go on (e.g. its Dask scheduler is gone); the games not reported stay pending."""


class Executor(Protocol):
    """Plays games and reports them; see the module docstring."""

    workers: int

    def submit(self, games: Sequence[PendingGame]) -> None: ...

    def room(self, remaining: int | None) -> int: ...

    def results(self, timeout: float) -> list[Message]: ...

    def in_flight(self) -> int: ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


def _referee_pool(referee_config: RefereeConfig) -> BotPool:
    return BotPool()


@dataclass(frozen=True)
class GamePlayer:
    """How a worker plays one game: ``play`` (:data:`PlayFunction`) with bots from ``make_pool(referee_config)``
    (a context manager with ``close()``).

    Both must be module-level callables (they are sent to spawned worker processes). With
    ``fresh`` every game gets its own pool (fresh bot processes), for comparison benchmarks.
    The runner's tests pass a fake referee here.
    """

    play: PlayFunction
    make_pool: Callable[[RefereeConfig], Pool] = _referee_pool
    fresh: bool = False


def referee_player(fresh: bool = False) -> GamePlayer:
    """The real referee: :func:`harness.play.referee.play_game` with a :class:`harness.play.pool.BotPool`."""
    return GamePlayer(play=play_game, make_pool=_referee_pool, fresh=fresh)


#: the real referee with a pool kept for all of a worker's games: how a league plays
REFEREE = referee_player()


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker (a local process or a Dask worker) needs to play this league's games."""

    game: str
    options: dict[str, Any]
    referee_config: RefereeConfig
    specs: dict[int, BotSpec]  # version id -> the bot at that version
    player: GamePlayer
    idle_bots: int  # the bound on each worker's idle bot processes (BotPool.max_idle)
    spare_bots: int = 0  # spares started ahead of need per bot that needed a new process (BotPool.spares)
    log_bytes: int | None = None  # a game's log is cut there (before compression; the config's logs.game_kb)

    def for_worker(self, log_subdir: str) -> RefereeConfig:
        """The referee config of one worker: its own stderr log directory, so that two workers never
        write (and rotate) the same file."""
        config = self.referee_config
        if config.log_dir:
            config = dataclasses.replace(config, log_dir=os.path.join(config.log_dir, log_subdir))
        return config


def open_bot_pool(setup: WorkerSetup, referee_config: RefereeConfig) -> Pool:
    """The bot pool a worker plays its games with (all of them, or one with ``setup.player.fresh``),
    its idle processes bounded by ``setup.idle_bots``, ``setup.spare_bots`` spares started ahead. The one place that decides which bot
    processes a game may reuse."""
    pool = setup.player.make_pool(referee_config)
    if hasattr(pool, "max_idle"):
        pool.max_idle = setup.idle_bots
    if hasattr(pool, "spares") and not setup.player.fresh:
        pool.spares = setup.spare_bots
    return pool


def outcome_from_record(record: GameRecord, log_bytes: int | None = None) -> GameOutcome:
    """The store's view of a referee GameRecord (the log compressed here, in the worker, cut at
    ``log_bytes``)."""
    return GameOutcome(game_id=record.game_id, ranking=list(record.ranking), scores=list(record.scores),
                       ended_by=record.ended_by, forfeits=list(record.forfeits or ()),
                       violations=[v.copy() for v in (record.violations or ())],
                       log=compress_log(record.log, log_bytes) if record.log else b"",
                       decisions=int(getattr(record, "decisions", 0) or 0),
                       seconds=float(getattr(record, "seconds", 0.0) or 0.0))


def task_of(game: PendingGame) -> Task:
    """What a worker needs of a pending game."""
    return (game.seq, game.game_id, game.seed, tuple(game.version_ids))


def play_task(setup: WorkerSetup, game: Game, referee_config: RefereeConfig, pool: Any, task: Task) -> Message:
    """Play one task with ``pool`` (``None``: a fresh pool for this game); never raises.

    Answers ``("done", seq, GameOutcome)``, or ``("error", seq, text)`` for a harness bug
    (``play_game`` never raises because of a bot).
    """
    seq, gid, seed, version_ids = task
    seats = [setup.specs[v] for v in version_ids]
    player = setup.player
    try:
        if pool is None:
            with open_bot_pool(setup, referee_config) as fresh_pool:
                record = player.play(game, setup.options, seed, gid, seats, fresh_pool, referee_config)
        else:
            record = player.play(game, setup.options, seed, gid, seats, pool, referee_config)
        return ("done", seq, outcome_from_record(record, setup.log_bytes))
    except Exception:
        return ("error", seq, f"{gid}: {traceback.format_exc(limit=8)}")
