"""Play scheduled games on a Dask distributed cluster; the caller (the one writer) records them.

Design, from the figures measured on Dask 2026.8 with one worker: a task round trip
costs 11-13 ms and a pipelined task 1.1-1.3 ms, returning a nested 5 KB dict 9-10 ms of
serialization but bytes 1.4 ms, while a Crisps game through the referee costs 13-15 ms. So:

- a task plays a *batch* of games (:data:`BATCH_GAMES`, fewer near the tail so that no worker
  idles while another still has a long batch), grouped by the bots they seat so that a batch
  reuses the same bot processes;
- task keys are deterministic (league name and the batch's game seqs): a re-submitted batch is
  the same task;
- a batch's results come back as one ``bytes`` (pickled list of ``(kind, seq, payload)``, the
  game logs already compressed) and are gathered straight from the workers
  (``direct_to_workers``), never through the scheduler: a league's logs are gigabytes;
- each worker process keeps one bot pool across tasks in a :class:`LeaguePlugin` (a
  WorkerPlugin); bots die with their worker (PDEATHSIG, see harness.play.limits), and the
  plugin's teardown closes the pool;
- before any game the plugin checks the bot files on its worker against the client's hashes and
  refuses with a line naming the worker and the file.

Delivery is at least once: a worker killed mid-batch is restarted by its nanny and the scheduler
re-runs the whole batch. The writer records a game only while its row is pending
(:meth:`harness.league.store.LeagueStore.record`), so a game delivered twice is recorded once.

:class:`DaskExecutor` is the executor interface of :mod:`harness.league.executors.base` on a
cluster: ``harness run`` and ``harness match`` both reach it through the runner's writer loop.
The games it is given are submitted at once (as batches); it wants more whenever it is asked.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import pickle
import re
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

import dask
from distributed import Client, Future, LocalCluster, as_completed, get_worker
from distributed.diagnostics.plugin import WorkerPlugin

from harness.games import Game, get_game
from harness.league.config import LeagueError
from harness.league.executors.base import (
    ExecutorLost,
    Message,
    Pool,
    Task,
    WorkerSetup,
    open_bot_pool,
    play_task,
    task_of,
)
from harness.league.store_pending import PendingGame
from harness.play.referee import RefereeConfig

__all__ = ["BATCH_GAMES", "DaskExecutor", "LeaguePlugin", "file_hashes", "dask_client", "batches",
           "check_bot_files", "BotFilesDiffer", "ClusterUnreachable", "SchedulerLost"]

#: Games per task: ~64 makes the per-task cost (1.2 ms pipelined, 12 ms round trip) negligible
#: beside 64 games of ~14 ms each.
BATCH_GAMES = 64
#: how long a run tries to reach its scheduler, at the start or after losing it, before it stops
#: with one line (seconds); the environment variable :data:`CONNECT_ENV` overrides it
CONNECT_SECONDS = 20
#: seconds to wait for the scheduler instead of :data:`CONNECT_SECONDS` (tests and demos shorten it)
CONNECT_ENV = "TABLEBOTS_DASK_CONNECT_SECONDS"


def connect_seconds() -> float:
    """How long to try to reach the scheduler: ``$TABLEBOTS_DASK_CONNECT_SECONDS`` or :data:`CONNECT_SECONDS`."""
    text = os.environ.get(CONNECT_ENV, "").strip()
    if not text:
        return float(CONNECT_SECONDS)
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise LeagueError(f"{CONNECT_ENV}={text!r}: give a number of seconds above 0, or unset it for "
                          f"{CONNECT_SECONDS}")
    return seconds


def file_hashes(paths: Sequence[str]) -> dict[str, str]:
    """sha256 of each file (``"missing"`` where it cannot be read)."""
    out = {}
    for p in paths:
        try:
            with open(p, "rb") as fh:
                out[p] = hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            out[p] = "missing"
    return out


def check_bot_files(expected: dict[str, str], where: str) -> str | None:
    """A one-line refusal naming ``where`` and the first file that differs from ``expected``, or None."""
    got = file_hashes(sorted(expected))
    for path, digest in sorted(expected.items()):
        if got[path] != digest:
            state = "is missing" if got[path] == "missing" else "differs from the client's copy"
            return (f"worker {where}: bot file {path} {state}; copy the same bot files to the same paths "
                    f"on every machine")
    return None


def _check_here(expected: dict[str, str], dask_worker: Any = None) -> str | None:
    """Run on every worker by ``client.run`` (which passes ``dask_worker``)."""
    where = f"{getattr(dask_worker, 'address', '?')} ({os.uname().nodename})"
    return check_bot_files(expected, where)


class BotFilesDiffer(LeagueError):
    """A worker's bot files are not the client's: playing there would rate another bot."""


class ClusterUnreachable(LeagueError):
    """No Dask scheduler at the address given."""


class SchedulerLost(ExecutorLost):
    """The client lost its scheduler mid-run: the games not yet gathered stay pending."""


class LeaguePlugin(WorkerPlugin):
    """A Dask WorkerPlugin holding one bot pool per worker process across tasks."""

    def __init__(self, work: WorkerSetup, expected_files: dict[str, str]) -> None:
        self.work = work
        self.expected_files = expected_files
        self.pool: Pool | None = None
        self.refusal: str | None = None
        self.cpu: int | None = None
        self.pinned = False
        self.game: Game | None = None
        self.referee_config: RefereeConfig = work.referee_config
        self.closed = False

    def setup(self, worker: Any) -> None:
        """Check the bot files here, then open the pool (stderr logs in a directory of this worker's)."""
        self.refusal = check_bot_files(self.expected_files, f"{worker.address} ({os.uname().nodename})")
        self.cpu = _cpu_for(worker.name)
        if self.refusal is not None:
            return
        self.game = get_game(self.work.game)
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(worker.name))
        self.referee_config = self.work.for_worker(f"dask-{safe}")
        if not self.work.player.fresh:
            self.pool = open_bot_pool(self.work, self.referee_config)

    def _pin(self) -> None:
        """Pin the task thread (Linux affinity is per thread) to this worker's core, in the first task:
        the bots it starts inherit it, and a line exchanged on one core costs ~5x less than across
        cores (harness.play.limits.pin_to_cpu). Also hand the GIL back sooner after the referee's
        I/O waits: the worker's event loop thread shares this process."""
        self.pinned = True
        sys.setswitchinterval(0.0005)
        if self.cpu is not None:
            with contextlib.suppress(OSError):
                os.sched_setaffinity(0, {self.cpu})

    def teardown(self, worker: Any) -> None:
        """Close the pool: every bot process tree is killed. A batch still playing stops at its next game."""
        self.closed = True
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def play(self, tasks: Sequence[Task]) -> bytes:
        """Play ``(seq, game_id, seed, version_ids)`` tasks; return the pickled list of messages."""
        out: list[Message] = []
        if not self.pinned:
            self._pin()
        for task in tasks:
            if self.closed:
                # the worker is closing (its scheduler lost, say) or the plugin was replaced: the
                # rest of the batch would start fresh bots for each game while the worker waits for it
                out.append(("error", task[0], "the worker closed mid-batch; the game stays pending: run again"))
                continue
            if self.refusal is not None or self.game is None:
                out.append(("refused", task[0], self.refusal or "this worker's plugin was not set up"))
                continue
            out.append(play_task(self.work, self.game, self.referee_config, self.pool, task))
        return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def _cpu_for(name: Any) -> int | None:
    """A core for worker ``name`` (LocalCluster: 0, 1...; ``dask worker --nworkers N``: ``...-K``)."""
    m = re.search(r"(\d+)$", str(name))
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:
        return None
    return cpus[int(m.group(1)) % len(cpus)] if m and cpus else None


def _play_batch(plugin_name: str, tasks: list[Task]) -> bytes:
    """The task run on a worker: play ``tasks`` with the worker's plugin (its bot pool)."""
    plugin: Any = get_worker().plugins[plugin_name]
    data: bytes = plugin.play(tasks)
    return data


def batches(games: Sequence[PendingGame], n_workers: int, size: int = BATCH_GAMES) -> list[list[PendingGame]]:
    """Split ``games`` into batches of up to ``size``, grouped by their bots, smaller near the tail.

    A batch holds games of the same bots where it can (fewer bot processes per worker); the
    batch size falls to remaining / (2 * workers) near the end so the last batches spread out.
    """
    ordered = sorted(games, key=lambda g: (sorted(g.version_ids), g.seq))
    out: list[list[PendingGame]] = []
    i = 0
    while i < len(ordered):
        left = len(ordered) - i
        n = max(1, min(size, math.ceil(left / (2 * max(1, n_workers)))))
        out.append(ordered[i:i + n])
        i += n
    return out


@contextlib.contextmanager
def dask_client(address: str) -> Iterator[Client]:
    """A Dask client for ``address`` (``tcp://host:8786``), or ``local:N``: a LocalCluster of N
    single-threaded worker processes on 127.0.0.1, closed on exit."""
    m = re.fullmatch(r"local:(\d+)", address)
    if m:
        n = int(m.group(1))
        if n < 1:
            raise ClusterUnreachable(f"--dask {address}: local:N needs N >= 1 workers")
        # no statistical profiler thread in the workers: it takes the GIL from the referee every 10 ms
        with dask.config.set({"distributed.worker.profile.enabled": False,
                              "distributed.scheduler.worker-saturation": float("inf")}), \
                LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                             dashboard_address=None) as cluster, \
                Client(cluster, direct_to_workers=True) as client:
            yield client
        return
    # the run reports a lost scheduler in its own words (SchedulerLost), once: the client's own
    # error lines are muted while it is open. The timeout bounds the first connection and the
    # reconnection after a lost scheduler alike (Dask's Client reuses it)
    client_log = logging.getLogger("distributed.client")
    level = client_log.level
    client_log.setLevel(logging.CRITICAL)
    try:
        try:
            client = Client(address, direct_to_workers=True, timeout=f"{connect_seconds()}s")
        except (OSError, TimeoutError, ValueError) as exc:  # ValueError: a malformed address
            raise ClusterUnreachable(f"--dask {address}: cannot reach a Dask scheduler there ({exc}); start one "
                                     f"with `dask scheduler` and workers with `dask worker {address} --nthreads 1`"
                                     ) from None
        with client:
            yield client
    finally:
        client_log.setLevel(level)


class DaskExecutor:
    """The executor interface (:mod:`harness.league.executors.base`) on the Dask cluster at ``address``.

    Every worker checks ``bot_files`` against this machine's copies before playing (a worker
    with other files refuses, :class:`BotFilesDiffer` if one already differs at the start). A
    game may be reported twice after a worker was lost (at-least-once). A lost scheduler raises
    :class:`SchedulerLost` from :meth:`results`, after the results gathered before it were
    returned. :meth:`stop` cancels every batch not gathered yet.
    """

    def __init__(self, address: str, setup: WorkerSetup, *, key_prefix: str, bot_files: Sequence[str] = (),
                 batch_size: int = BATCH_GAMES) -> None:
        self.address = address
        self.batch_size = batch_size
        self._exit = contextlib.ExitStack()
        self.client: Client = self._exit.enter_context(dask_client(address))
        self._futures: dict[Future[bytes], list[Task]] = {}
        self._lost: SchedulerLost | None = None
        self._stopped = False
        self.plugin_name = f"tablebots-{key_prefix}"
        try:
            self.workers = len(self.client.scheduler_info(n_workers=-1).get("workers", {}))
            expected = file_hashes(sorted(set(bot_files)))
            refusals = [r for r in self.client.run(_check_here, expected).values() if r]
            if refusals:
                raise BotFilesDiffer(refusals[0])
            self.client.register_plugin(LeaguePlugin(setup, expected), name=self.plugin_name)
        except BaseException:
            self._exit.close()
            raise
        self._done = as_completed()

    def room(self, remaining: int | None = None) -> int:
        """All the games there are: the cluster balances the batches itself."""
        return 0 if self._stopped or self._lost is not None else sys.maxsize

    def submit(self, games: Sequence[PendingGame]) -> None:
        """Submit ``games`` as batches (:func:`batches`) with deterministic keys."""
        n_workers = max(1, len(self.client.scheduler_info(n_workers=-1).get("workers", {})))
        for batch in batches(games, n_workers, self.batch_size):
            tasks = [task_of(g) for g in batch]
            key = f"{self.plugin_name}-{batch[0].seq}-{batch[-1].seq}-{len(batch)}"
            fut = self.client.submit(_play_batch, self.plugin_name, tasks, key=key, pure=False)
            self._futures[fut] = tasks
            self._done.add(fut)

    def in_flight(self) -> int:
        return sum(len(tasks) for tasks in self._futures.values())

    def results(self, timeout: float) -> list[Message]:
        """The messages of every batch that finished since the last call (waiting up to ``timeout`` for one):
        a writer that falls behind records bigger groups in one transaction (group commit: 64 games a
        transaction record at ~7,000 games/s, 1,024 at ~11,000, bench/scale.py part 1)."""
        if self._lost is not None:
            raise self._lost
        deadline = time.monotonic() + timeout
        while self._futures and not self._done.has_ready() and time.monotonic() < deadline:
            time.sleep(0.005)
        messages: list[Message] = []
        for fut in self._done.next_batch(block=False):
            tasks = self._futures.pop(fut, None)
            if tasks is None:
                continue  # cancelled by stop()
            try:
                messages += pickle.loads(self.client.gather(fut, direct=True))
            except Exception as exc:  # KilledWorker after repeated losses, a lost scheduler...
                if self.client.status != "running":  # no scheduler: every other batch fails the same way
                    why = " ".join(str(exc).split())  # one line
                    self._lost = SchedulerLost(f"lost the Dask scheduler ({type(exc).__name__}: {why[:160]}) "
                                               f"(--dask {self.address})")
                    self._futures.clear()
                    if messages:
                        return messages  # what was gathered before is recorded
                    raise self._lost from None
                text = f"batch {fut.key}: {type(exc).__name__}: {exc}; its games stay pending: run again"
                messages += [("error", t[0], text) for t in tasks]
            fut.release()
        return messages

    def stop(self) -> None:
        """Cancel every batch not gathered yet (its games stay pending)."""
        self._stopped = True
        for fut in self._futures:
            fut.cancel()
        self._futures.clear()

    def close(self) -> None:
        """Cancel what is left, close every worker's bot pool (the plugin's teardown), close the client."""
        try:
            self.stop()
            with contextlib.suppress(Exception):
                self.client.unregister_worker_plugin(self.plugin_name)
        finally:
            self._exit.close()
