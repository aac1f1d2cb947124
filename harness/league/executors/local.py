"""Play games in worker processes on this machine, one pinned to each core.

Each worker is a process pinned to one core that keeps a pool of persistent bot processes
across all its games (bots inherit the affinity: a line exchanged on one core costs ~5x less
than across cores here). Workers only play; the runner's writer records.

Each worker has one pipe to the parent: games go down it (several ahead, so a worker never
waits: :data:`AHEAD_PER_WORKER`, fewer near the end so that no worker is left with a long
queue while another idles), results come back (the log already compressed by the worker).

The first game of a deal goes to the least busy worker; the deal's other seat orders to the
workers that follow it in seat order (:func:`preferred_worker`), unless that one holds
:data:`AFFINITY_SLACK` games more than the least busy. No bot process plays two seat
orders of one deal, so a worker that played any seat order of every deal would need a process
per seat order of a deal for each bot (24 at tables of 4); sent half of each deal's seat
orders, each worker needs half of those, and a league starts ``bots x seat orders`` processes
in all instead of about that many per worker (at tables of 2: one process per bot per worker,
as many as without the rule; bench/fairplay.py).

Workers ignore SIGINT (Ctrl-C is the writer's business) and exit by themselves when their pipe
closes because the parent died (``kill -9``), closing their bot pools (killing every bot tree).
"""

from __future__ import annotations

import math
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import signal
import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event
from types import FrameType
from typing import Literal

from harness.games import get_game
from harness.league.executors.base import Message, WorkerSetup, open_bot_pool, play_task, task_of
from harness.league.store_pending import PendingGame
from harness.play.limits import pin_to_cpu

__all__ = ["AFFINITY_SLACK", "AHEAD_PER_WORKER", "LocalExecutor", "preferred_worker", "seat_order_rank"]

#: What a local worker sends back: a Message, or ("skipped", seq, None) for a game queued before
#: stop() (never passed on: the game stays pending)
_WorkerMessage = Message | tuple[Literal["skipped"], int, None]

#: Games handed to each worker ahead of time: enough to keep it busy while the parent sleeps.
AHEAD_PER_WORKER = 16
#: How many games more than the least busy worker the preferred one may hold before a game goes
#: to the least busy instead (its queue still has games while the other's fills).
AFFINITY_SLACK = AHEAD_PER_WORKER // 2


def seat_order_rank(version_ids: Sequence[int]) -> int:
    """The index of this seat order among the seat orders of its table (the permutations of its
    bots, in sorted order): 0 .. k!-1 at a table of k."""
    rank = 0
    rest = list(version_ids)
    for i, v in enumerate(version_ids):
        rest.remove(v)
        rank += sum(1 for r in rest if r < v) * math.factorial(len(version_ids) - 1 - i)
    return rank


def preferred_worker(game: PendingGame, workers: int, offset: int = 0) -> int:
    """The worker a game goes to when it has room: its seat order's rank plus its deal's
    ``offset``, modulo the workers. The seat orders of one deal are consecutive ranks, so each
    worker gets an equal share of every deal's (one each when a deal has fewer seat orders than
    there are workers)."""
    return (seat_order_rank(game.version_ids) + offset) % max(1, workers)


#: deals whose offset the executor remembers (their other seat orders still to be handed out)
_DEALS_KEPT = 4096


def _worker_main(index: int, cpu: int | None, setup: WorkerSetup, conn: mp_connection.Connection,
                 stop: Event) -> None:
    """Play the tasks ``(seq, game_id, seed, version_ids)`` received on ``conn`` until ``None``.

    Answers each with a message (:func:`harness.league.executors.base.play_task`) or, once
    ``stop`` is set, ``("skipped", seq, None)``. Exits when the runner's end of the pipe closes
    (the runner died), closing its bot pool on the way out.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's business

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)  # unwinds through the pool's close(): no bot survives the worker

    signal.signal(signal.SIGTERM, on_term)
    if cpu is not None:
        try:
            pin_to_cpu(cpu)
        except OSError:
            pass
    game = get_game(setup.game)
    referee_config = setup.for_worker(f"worker-{index}")
    pool = None if setup.player.fresh else open_bot_pool(setup, referee_config)
    try:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):  # the runner is gone (kill -9): stop, killing our bots
                return
            if task is None:
                return
            message: _WorkerMessage = ("skipped", task[0], None) if stop.is_set() else \
                play_task(setup, game, referee_config, pool, task)
            try:
                conn.send(message)
            except (BrokenPipeError, OSError):
                return
    finally:
        if pool is not None:
            pool.close()


def _cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:
        return []


class _Worker:
    """The parent's handle on one worker process: its process, its pipe end, its games in flight."""

    def __init__(self, process: BaseProcess, conn: mp_connection.Connection) -> None:
        self.process = process
        self.conn = conn
        self.in_flight = 0
        self.alive = True


class LocalExecutor:
    """``n_workers`` worker processes (spawned: never fork a process that may hold threads or an
    open SQLite handle), pinned round robin to this process's cores when ``pin``."""

    def __init__(self, setup: WorkerSetup, n_workers: int, *, pin: bool = True) -> None:
        ctx = mp.get_context("spawn")
        self._stop = ctx.Event()
        self.workers = n_workers
        self._remaining: int | None = None  # games left to hand out, as room() was last told
        #: deal (seed) -> (its offset, its games still to come): see submit()
        self._deals: dict[int, tuple[int, int]] = {}
        cpus = _cpus() if pin else []
        self._pool: list[_Worker] = []
        old_handler = signal.signal(signal.SIGINT, signal.SIG_IGN)  # children start with SIGINT ignored
        try:
            for i in range(n_workers):
                cpu = cpus[i % len(cpus)] if cpus else None
                parent_end, child_end = ctx.Pipe(duplex=True)
                p = ctx.Process(target=_worker_main, name=f"league-worker-{i}",
                                args=(i, cpu, setup, child_end, self._stop), daemon=True)
                p.start()
                child_end.close()  # the worker holds the only other end: its death closes the pipe
                self._pool.append(_Worker(p, parent_end))
        finally:
            signal.signal(signal.SIGINT, old_handler)
        self._by_conn = {w.conn: w for w in self._pool}

    def _alive(self) -> list[_Worker]:
        return [w for w in self._pool if w.alive]

    def room(self, remaining: int | None = None) -> int:
        """Games wanted now: each to the least busy worker until it holds ``max(2, min(AHEAD_PER_WORKER,
        games left / workers))``; ``remaining`` (games left to hand out, when known) shortens the
        queues towards the end so that no worker is left with a long queue while another idles."""
        alive = self._alive()
        self._remaining = remaining
        if self._stop.is_set() or not alive:
            return 0
        loads = sorted(w.in_flight for w in alive)
        wanted = 0
        while remaining is None or wanted < remaining:
            left = AHEAD_PER_WORKER * len(alive) if remaining is None else remaining - wanted
            cap = max(2, min(AHEAD_PER_WORKER, left // len(alive)))
            if loads[0] >= cap:
                break
            loads[0] += 1
            loads.sort()
            wanted += 1
        return wanted

    def submit(self, games: Sequence[PendingGame]) -> None:
        """The first game of a deal to the least busy worker; the deal's other seat orders to the
        workers that follow it (:func:`preferred_worker`), each to the least busy instead if its own
        holds :data:`AFFINITY_SLACK` games more (fewer near the end of the games, so that no worker
        is left with a queue while another idles)."""
        for g in games:
            alive = self._alive()
            if not alive:
                return
            w = min(alive, key=lambda x: x.in_flight)
            if g.seed in self._deals:
                offset, left = self._deals.pop(g.seed)
                preferred = alive[preferred_worker(g, len(alive), offset)]
                remaining = self._remaining
                slack = AFFINITY_SLACK if remaining is None else max(
                    1, min(AFFINITY_SLACK, remaining // (2 * len(alive))))
                if preferred.in_flight < w.in_flight + slack:
                    w = preferred
            else:  # the deal's first game: the least busy worker, and the others follow from it
                offset, left = (alive.index(w) - seat_order_rank(g.version_ids)) % len(alive), \
                    math.factorial(len(g.version_ids))
            if left > 1:
                self._deals[g.seed] = (offset, left - 1)
                if len(self._deals) > _DEALS_KEPT:
                    del self._deals[next(iter(self._deals))]
            try:
                w.conn.send(task_of(g))
            except OSError:
                w.alive = False
                continue
            w.in_flight += 1

    def in_flight(self) -> int:
        return sum(w.in_flight for w in self._pool if w.alive)

    def results(self, timeout: float) -> list[Message]:
        """Everything the workers sent (waiting up to ``timeout`` for the first message)."""
        busy = [w.conn for w in self._pool if w.alive and w.in_flight]
        if not busy:
            return []
        out: list[Message] = []
        for conn in mp_connection.wait(busy, timeout):
            w = self._by_conn[conn]  # type: ignore[index]
            while w.in_flight:
                try:
                    if not w.conn.poll():
                        break
                    message: _WorkerMessage = w.conn.recv()
                except (EOFError, OSError):
                    w.alive = False
                    out.append(("lost", -1, f"worker {w.process.name} died (exit code {w.process.exitcode}) with "
                                            f"{w.in_flight} games in flight; they stay pending: run again to play them"))
                    break
                w.in_flight -= 1
                if message[0] != "skipped":
                    out.append(message)
        return out

    def stop(self) -> None:
        self._stop.set()  # the workers skip the games queued ahead

    def close(self) -> None:
        """End every worker: ask, then SIGTERM (it closes its pool, killing its bots), then SIGKILL."""
        workers = self._pool
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
                w.process.terminate()
        for w in workers:
            w.process.join(3.0)
            if w.process.is_alive():
                w.process.kill()
                w.process.join(1.0)
            w.conn.close()
