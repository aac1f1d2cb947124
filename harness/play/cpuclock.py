"""Deadlines a bot is charged for fairly: its own time, never the host's load.

Wall-clock deadlines charge a bot for every other process that wants the CPU: on a loaded host
a bot well within its time is out of it, and a bot whose threads spin takes time from its
opponent on the same core (the measurements: docs/security.md).
CPU-time deadlines alone let a bot sleep for free: one that slept 2.5 x ``time_left_ms`` a move
(a timing channel to a partner, or a build worker held for minutes) was never out of time.

Where the harness may create cgroups (root, as in CI), each bot's cgroup (:mod:`harness.play.cgroups`)
gives:

- **Frozen between turns**: the ``freezer`` stops every process of the bot from the moment it
  answers (or is ready) until it is sent its next request. A bot gets CPU only while it is its
  turn: spinning threads take nothing from the opponent, and thinking "in the background" is
  not possible (protocol.md, Timing).
- **Charged time**: a decision is charged the larger of the CPU time of the bot's whole tree
  (``cpuacct``: threads and children too) and the wall time of its turn minus the time the bot
  was *kept from running*: runnable, but waiting for a CPU that others held
  (:class:`RunDelay`). Sleeping and blocking count; the host's load does not. The wait is
  sliced: the referee wakes when the budget could have been used at the fastest possible rate
  (all cores), reads the clocks, and sleeps again for what is left.
- **Hard cap**: a bot kept from running so long that even its charged time stays under the
  budget is out of time at :data:`HARD_FACTOR` x ``time_left_ms`` of wall-clock time.

Each timeout says what was measured (CPU, wall and kept time) and whether the host was
overloaded (load average above its cores), in the violation's ``detail`` and its ``clock`` field.

Where cgroups cannot be made (an ordinary user), deadlines stay wall-clock and bots are not
frozen; :attr:`BotProcess.cpu_clock` says which applies. A benchmark of its cost turns it off
explicitly (``RefereeConfig.fair_play``, :class:`harness.play.referee.FairPlay`).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from harness.play.violations import DecisionCost

__all__ = ["HARD_FACTOR", "QUICK_S", "Clock", "RunDelay", "host_load", "kept_bound", "own_wait_ns"]

#: Even a bot kept from running by the host is out of time after this many times its budget.
HARD_FACTOR = 20
#: A bot thawed for less than this (seconds) in all since its run delays were last read is
#: charged its CPU time for a turn it answered, the run delays not read (``BotProcess._kept_ms``):
#: a reading saved on most turns of a quick bot, and at most this much more credit at the next one.
QUICK_S = 0.001
#: The longest a running thread's run time can go without growing (a scheduler tick at 250 Hz).
_TICK_NS = 4_000_000


@dataclass
class Clock:
    """What one decision cost the bot: CPU, wall and kept time (ms), and how its time ran out if it did."""

    cpu_ms: float = 0.0
    wall_ms: float = 0.0
    #: of the wall time, how long the bot was kept from running (see :class:`RunDelay`)
    kept_ms: float = 0.0
    #: "cpu" (its CPU time reached the budget), "wall" (its wall time minus the time it was kept
    #: from running did: asleep, blocked or slow), "hard" (kept from running past the hard cap),
    #: or "" (answered in time)
    ran_out: str = ""
    #: the load average (1 minute) and core count when the time ran out
    load: float = 0.0
    cores: int = 0

    @property
    def charged_ms(self) -> float:
        """What the decision costs the bot: the larger of its CPU time and its wall time minus the
        time it was kept from running."""
        return max(self.cpu_ms, self.wall_ms - self.kept_ms)

    @property
    def overloaded(self) -> bool:
        """The host had more runnable work than cores when the time ran out."""
        return self.cores > 0 and self.load > self.cores

    def to_json(self) -> DecisionCost:
        return {"cpu_ms": round(self.cpu_ms, 3), "wall_ms": round(self.wall_ms, 3), "kept_ms": round(self.kept_ms, 3),
                "charged_ms": round(self.charged_ms, 3), "ran_out": self.ran_out,
                "load": round(self.load, 2), "cores": self.cores, "host_overloaded": self.overloaded}


def host_load() -> tuple[float, int]:
    """The 1-minute load average and the number of cores."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return load, os.cpu_count() or 1


def kept_bound(threads: list[tuple[int, int]], cpu_ns: float) -> float:
    """A lower bound of the time no thread of a bot ran while one was waiting for a CPU, from each
    thread's (run, wait) over the turn and the tree's CPU time ``cpu_ns`` (which also counts
    threads and children gone since).

    While thread i waited, the tree was either kept from running, or another thread ran; the
    others ran at most ``cpu_ns - run_i`` in all. So the tree was kept from running at least
    ``wait_i + run_i - cpu_ns``, for every i: exact for one thread, and it never credits a
    many-threaded bot with time it was not kept from running (4 threads spinning on 2 cores
    wait 2 s a second in sum, and were never kept from running: 0).
    """
    best = max((run + wait for run, wait in threads), default=0)
    return max(0.0, best - cpu_ns)


class RunDelay:
    """How long a bot's whole tree was kept from running (runnable, but no thread of it on a CPU),
    from the kernel's per-thread run delay (``/proc/<tid>/schedstat``: time on a CPU, time
    runnable waiting for one) of the threads in its cgroup, bounded by :func:`kept_bound`.

    The cgroup v2 ``cpu.pressure`` "full" total would be the natural measure, but the kernel
    averages it over CPUs, and v1 hosts have none (bench/kept_time.py prints both side by side).
    A thread that exits during the turn takes its delay with it: the bot is then charged more,
    never less.
    """

    def __init__(self, tasks_file: str, skip: frozenset[int] = frozenset()) -> None:
        self.tasks_file = tasks_file  # the cgroup's list of thread ids (v1 ``tasks``, v2 ``cgroup.threads``)
        # threads not read: the sandbox's own processes (they only wait for the bot). Leaving a
        # thread out can only lower the bound (kept_bound takes the most any thread ran or waited),
        # so the bot is never charged less for it; each one read costs a system call a turn.
        self._skip = {str(tid).encode() for tid in skip}
        self._mark: dict[int, tuple[int, int]] = {}
        # kept open and re-read with pread (a reading a turn: open/close would double its cost)
        self._tasks_fd = -1
        self._fds: dict[bytes, int] = {}
        # the task list as last read, and the (tid, schedstat file) of the threads it names: read
        # at every turn, and almost always unchanged, so it is compared as bytes and not parsed again
        self._tasks_raw = b""
        self._threads: list[tuple[int, int]] = []
        self._waiting: dict[int, tuple[float, int, int]] = {}  # runnable threads: (since, run, wait)

    def _read(self) -> dict[int, tuple[int, int]]:
        try:
            if self._tasks_fd < 0:
                self._tasks_fd = os.open(self.tasks_file, os.O_RDONLY)
            raw = os.pread(self._tasks_fd, 1 << 16, 0)
        except OSError:
            return {}
        if raw != self._tasks_raw:
            self._threads_of(raw)
        out = {}
        pread = os.pread
        for tid, fd in self._threads:
            try:
                run, wait, _ = pread(fd, 128, 0).split(b" ", 2)
                out[tid] = (int(run), int(wait))
            except (OSError, ValueError):
                continue
        return out

    def _threads_of(self, raw: bytes) -> None:
        """Open the schedstat files of the threads the task list ``raw`` names (and close the
        files of those gone): the threads read from now on."""
        tids = raw.split()
        if self._skip:
            tids = [tid for tid in tids if tid not in self._skip]
        fds = self._fds
        threads = []
        for tid in tids:
            fd = fds.get(tid)
            if fd is None:
                try:
                    fd = fds[tid] = os.open(b"/proc/%s/schedstat" % tid, os.O_RDONLY)
                except OSError:
                    continue  # (gone already: its next reading tries again)
            threads.append((int(tid), fd))
        if len(fds) > len(tids):  # threads that exited: their files go
            alive = set(tids)
            for tid in [t for t in fds if t not in alive]:
                os.close(fds.pop(tid))
        # a thread whose file could not be opened is looked for again at the next reading
        self._tasks_raw = raw if len(threads) == len(tids) else b""
        self._threads = threads

    def close(self) -> None:
        """Close the files it keeps open (the bot is gone)."""
        for fd in [self._tasks_fd, *self._fds.values()]:
            if fd >= 0:
                os.close(fd)
        self._tasks_fd = -1
        self._fds.clear()
        self._threads = []
        self._tasks_raw = b""

    def mark(self) -> None:
        """Start counting from now (the bot is thawed for its turn, or was frozen since the last reading)."""
        self._mark = self._read()
        self._waiting.clear()

    def _still_waiting(self, now: dict[int, tuple[int, int]], at: float) -> dict[int, int]:
        """The wait not counted yet of each thread waiting for a CPU right now (ns).

        The kernel adds a wait to a thread's run delay only when the thread gets a CPU, so one
        starved at this moment shows none of its current wait. A thread runnable (state R) at two
        readings whose run and wait did not move between them never ran since the first (its
        run time would have grown at the next tick) and never slept (it would have had to run
        to go to sleep): it has waited since then, less a tick.
        """
        pending: dict[int, int] = {}
        seen: dict[int, tuple[float, int, int]] = {}
        for tid, (run, wait) in now.items():
            try:
                with open(f"/proc/{tid}/stat", "rb") as fh:
                    runnable = fh.read().rsplit(b")", 1)[1].split()[0] == b"R"
            except (OSError, IndexError):
                continue
            if not runnable:
                continue
            since, run0, wait0 = self._waiting.get(tid, (at, run, wait))
            if (run0, wait0) != (run, wait):
                since = at
            seen[tid] = (since, run, wait)
            pending[tid] = max(0, int((at - since) * 1e9) - _TICK_NS)
        self._waiting = seen
        return pending

    def kept_ns(self, cpu_ns: float, remark: bool = False, at: float | None = None) -> float:
        """How long the tree was kept from running since :meth:`mark` (at least; ``cpu_ns``: the
        tree's CPU time since then); ``remark``: this reading is the mark of the next turn (the
        bot is frozen now); ``at``: the time of a reading while the bot may still be waiting for
        a CPU (the referee's look during its turn), to count the waits not counted yet."""
        now = self._read()
        pending = self._still_waiting(now, at) if at is not None else {}
        # kept_bound(deltas, cpu_ns), the deltas not built (it runs at every turn)
        mark = self._mark
        best = 0
        for tid, (run, wait) in now.items():
            run0, wait0 = mark.get(tid, (0, 0))
            if run < run0 or wait < wait0:  # a thread id reused by a new thread
                run0 = wait0 = 0
            got = run - run0 + wait - wait0
            if pending:
                got += pending.get(tid, 0)
            if got > best:
                best = got
        if remark:
            self._mark = now
        return max(0.0, best - cpu_ns)


#: each thread's own ``/proc/thread-self/schedstat``, opened at its first reading; kept in
#: thread-local storage, not keyed by ``threading.get_native_id()``, which is a system call
#: (gettid) at every reading: one more a decision, each ~2-5 us in a game on these machines
_own = threading.local()


def _forget_own_after_fork() -> None:
    """In a forked child, the forking thread's file is its parent's thread's: read a new one."""
    fd = getattr(_own, "fd", None)
    if fd is not None:
        del _own.fd
        try:
            os.close(fd)
        except OSError:
            pass


os.register_at_fork(after_in_child=_forget_own_after_fork)


def own_wait_ns() -> int:
    """The calling thread's run delay so far (ns): how long it was runnable but waiting for a CPU.

    Read around the referee's wait for an answer: what it waited for a CPU once the answer had
    woken it is not the bot's time (under load, the referee would charge each bot its own
    wake-up latency). 0 where the kernel keeps no schedstats.
    """
    try:
        fd = _own.fd
    except AttributeError:
        try:
            fd = _own.fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            return 0
    try:
        return int(os.pread(fd, 128, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return 0
