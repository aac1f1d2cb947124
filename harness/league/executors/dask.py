"""Play scheduled games on a Dask distributed cluster; the caller (the one writer) records them.

Design, from the figures measured on Dask 2026.8 with one worker (issue 14): a task round trip
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

:func:`play_games` is the reusable entry point (``harness run`` and ``harness match`` both):
give it a client, a worker setup and a list of games, and it yields outcomes as batches finish.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import math
import os
import pickle
import re
import sys
import traceback
from collections.abc import Generator, Iterator, Sequence
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from harness.league.config import ConfigError

__all__ = ["BATCH_GAMES", "LeaguePlugin", "file_hashes", "dask_client", "play_games", "batches",
           "check_bot_files", "BotFilesDiffer", "ClusterUnreachable", "SchedulerLost"]

#: Games per task: ~64 makes the per-task cost (1.2 ms pipelined, 12 ms round trip) negligible
#: beside 64 games of ~14 ms each.
BATCH_GAMES = 64


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


class BotFilesDiffer(ConfigError):
    """A worker's bot files are not the client's: playing there would rate another bot."""


class ClusterUnreachable(ConfigError):
    """No Dask scheduler at the address given."""


class SchedulerLost(Exception):
    """The client lost its scheduler mid-run: the games not yet gathered stay pending."""


class LeaguePlugin(WorkerPlugin):
    """A Dask WorkerPlugin holding one bot pool per worker process across tasks.

    ``work`` is the runner's worker setup (game, options, referee config, bot specs, players).
    """

    def __init__(self, work: Any, expected_files: dict[str, str]) -> None:
        self.work = work
        self.expected_files = expected_files
        self.pool: Any = None
        self.refusal: str | None = None
        self.cpu: int | None = None
        self.pinned = False
        self.game: Any = None
        self.referee_config: Any = None

    def setup(self, worker: Any) -> None:
        """Check the bot files here, then open the pool (stderr logs in a directory of this worker's)."""
        from harness.games import get_game

        self.refusal = check_bot_files(self.expected_files, f"{worker.address} ({os.uname().nodename})")
        self.cpu = _cpu_for(worker.name)
        if self.refusal is not None:
            return
        self.game = get_game(self.work.game)
        config = self.work.referee_config
        if getattr(config, "log_dir", None):
            safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(worker.name))
            config = dataclasses.replace(config, log_dir=os.path.join(config.log_dir, f"dask-{safe}"))
        self.referee_config = config
        if not self.work.players.fresh:
            from harness.league.runner import open_pool
            self.pool = open_pool(self.work, config)

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
        """Close the pool: every bot process tree is killed."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def play(self, tasks: Sequence[tuple[int, str, int, tuple[int, ...]]]) -> bytes:
        """Play ``(seq, game_id, seed, version_ids)`` tasks; return the pickled list of messages."""
        from harness.league.runner import outcome_from_record

        out: list[tuple[str, int, Any]] = []
        players = self.work.players
        if not self.pinned:
            self._pin()
        for seq, gid, seed, version_ids in tasks:
            if self.refusal is not None:
                out.append(("refused", seq, self.refusal))
                continue
            seats = [self.work.specs[v] for v in version_ids]
            try:
                if self.pool is None:
                    with players.make_pool(self.referee_config) as pool:
                        record = players.play(self.game, self.work.options, seed, gid, seats, pool,
                                              self.referee_config)
                else:
                    record = players.play(self.game, self.work.options, seed, gid, seats, self.pool,
                                          self.referee_config)
                out.append(("done", seq, outcome_from_record(record)))
            except Exception:  # a harness bug (play_game never raises because of a bot): report it
                out.append(("error", seq, f"{gid}: {traceback.format_exc(limit=8)}"))
        return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def _cpu_for(name: Any) -> int | None:
    """A core for worker ``name`` (LocalCluster: 0, 1...; ``dask worker --nworkers N``: ``...-K``)."""
    m = re.search(r"(\d+)$", str(name))
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:
        return None
    return cpus[int(m.group(1)) % len(cpus)] if m and cpus else None


def _play_batch(plugin_name: str, tasks: list[tuple[int, str, int, tuple[int, ...]]]) -> bytes:
    """The task run on a worker: play ``tasks`` with the worker's plugin (its bot pool)."""
    from distributed import get_worker

    plugin: Any = get_worker().plugins[plugin_name]
    data: bytes = plugin.play(tasks)
    return data


def batches(games: Sequence[Any], n_workers: int, size: int = BATCH_GAMES) -> list[list[Any]]:
    """Split ``games`` into batches of up to ``size``, grouped by their bots, smaller near the tail.

    A batch holds games of the same bots where it can (fewer bot processes per worker); the
    batch size falls to remaining / (2 * workers) near the end so the last batches spread out.
    """
    ordered = sorted(games, key=lambda g: (sorted(g.version_ids), g.seq))
    out: list[list[Any]] = []
    i = 0
    while i < len(ordered):
        left = len(ordered) - i
        n = max(1, min(size, math.ceil(left / (2 * max(1, n_workers)))))
        out.append(ordered[i:i + n])
        i += n
    return out


@contextlib.contextmanager
def dask_client(address: str) -> Iterator[Any]:
    """A Dask client for ``address`` (``tcp://host:8786``), or ``local:N``: a LocalCluster of N
    single-threaded worker processes on 127.0.0.1, closed on exit."""
    import dask
    from distributed import Client, LocalCluster

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
    # error lines are muted while it is open
    client_log = logging.getLogger("distributed.client")
    level = client_log.level
    client_log.setLevel(logging.CRITICAL)
    try:
        try:
            client = Client(address, direct_to_workers=True, timeout="20s")
        except (OSError, TimeoutError, ValueError) as exc:  # ValueError: a malformed address
            raise ClusterUnreachable(f"--dask {address}: cannot reach a Dask scheduler there ({exc}); start one "
                                     f"with `dask scheduler` and workers with `dask worker {address} --nthreads 1`"
                                     ) from None
        with client:
            yield client
    finally:
        client_log.setLevel(level)


def play_games(client: Any, work: Any, games: Sequence[Any], *, key_prefix: str, bot_files: Sequence[str] = (),
               batch_size: int = BATCH_GAMES) -> Generator[list[tuple[str, int, Any]], None, None]:
    """Play ``games`` (objects with ``seq``, ``game_id``, ``seed``, ``version_ids``) on ``client``'s
    cluster; yield, as batches finish, lists of ``("done", seq, GameOutcome)``, ``("error", seq,
    text)`` or ``("refused", seq, line)`` messages in no particular order: one list for all the
    batches that finished since the last one was taken, so a writer that falls behind records
    bigger groups in one transaction (group commit: 64 games a transaction record at ~7,000
    games/s, 1,024 at ~11,000, bench/scale.py part 1).

    ``work`` is the runner's worker setup (:class:`harness.league.runner.WorkerSetup`); every worker
    checks ``bot_files`` against this machine's copies before playing. A game may be yielded
    twice after a worker was lost (at-least-once): record by seq, once. A lost scheduler raises
    :class:`SchedulerLost`. Closing the generator early cancels the remaining batches and closes
    every worker's bot pool.
    """
    from distributed import as_completed

    expected = file_hashes(sorted(set(bot_files)))
    refusals = [r for r in client.run(_check_here, expected).values() if r]
    if refusals:
        raise BotFilesDiffer(refusals[0])
    plugin_name = f"tablebots-{key_prefix}"
    client.register_plugin(LeaguePlugin(work, expected), name=plugin_name)
    n_workers = max(1, len(client.scheduler_info(n_workers=-1).get("workers", {})))
    futures = {}
    for batch in batches(games, n_workers, batch_size):
        tasks = [(g.seq, g.game_id, g.seed, tuple(g.version_ids)) for g in batch]
        key = f"{plugin_name}-{batch[0].seq}-{batch[-1].seq}-{len(batch)}"
        fut = client.submit(_play_batch, plugin_name, tasks, key=key, pure=False)
        futures[fut] = tasks
    try:
        for finished in as_completed(list(futures)).batches():
            messages: list[tuple[str, int, Any]] = []
            for fut in finished:
                tasks = futures.pop(fut)
                try:
                    messages += pickle.loads(client.gather(fut, direct=True))
                except Exception as exc:  # KilledWorker after repeated losses, a lost scheduler...
                    if client.status != "running":  # no scheduler: every other batch fails the same way
                        if messages:
                            yield messages  # what was gathered before is recorded
                        why = " ".join(str(exc).split())  # one line
                        raise SchedulerLost(f"lost the Dask scheduler ({type(exc).__name__}: {why[:160]})") from None
                    text = f"batch {fut.key}: {type(exc).__name__}: {exc}; its games stay pending: run again"
                    messages += [("error", t[0], text) for t in tasks]
                fut.release()
            yield messages
    finally:
        for fut in futures:
            fut.cancel()
        with contextlib.suppress(Exception):
            client.unregister_worker_plugin(plugin_name)
