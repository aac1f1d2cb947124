"""The bot pool: persistent bot processes reused across games, under the fair-play rule that no
process plays two games of one deal, an idle bound, and spare processes started ahead of need.

The referee (:mod:`harness.play.referee`) takes its processes from here and gives them back
after each game; a league's worker keeps one pool for all its games.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from harness.play import protocol
from harness.play.botproc import OK, BotProcess, StderrLog
from harness.play.limits import MAX_IDLE_BOTS, BotSpec, ResourceLimits, TimeControls


class _FairPlay(Protocol):
    """What the pool reads of the fair-play rules (:class:`harness.play.referee.FairPlay`)."""

    @property
    def cpu_clock(self) -> bool: ...


class PoolConfig(Protocol):
    """What the pool reads of a :class:`harness.play.referee.RefereeConfig` (not imported: the
    referee imports this module)."""

    @property
    def log_dir(self) -> str | None: ...

    @property
    def limits(self) -> ResourceLimits: ...

    @property
    def time(self) -> TimeControls: ...

    @property
    def fair_play(self) -> _FairPlay: ...


#: what a process was started for: the game, its options, time controls, limits and fair-play
#: rules (a process is reused only for the same; made by the referee)
PoolKey = tuple[object, ...]

__all__ = ["BotPool", "PoolConfig", "PoolKey"]


class BotPool:
    """Persistent bot processes keyed by :class:`BotSpec`, reused across games and matches.

    A process is reused only for the same game, options, time controls and limits (its hello
    told it those), and only for a game of another deal: no process ever sees two games dealt
    from one deal (the seat orders of a duplicate deal share its seed), or it would know in the
    second the hand it held in the first, now an opponent's. Otherwise a new one is started. Processes that violated badly, forfeited or
    exited are killed and replaced on next use. ``close()`` says bye, waits briefly, then kills
    every process tree. Use it as a context manager.

    At most ``max_idle`` processes wait idle (settable at any time): past it, the least recently
    used is stopped. A 100-bot league would otherwise keep 100 processes (~14 MB each for a
    Python bot) per worker; games batched by their bots keep the hit rate high under the bound.

    With ``spares`` (settable; 0 by default, a league sets its ``spare_bots``), a game that had to
    start a new process for a bot while one process per deal holds also starts that many spare
    processes of the bot, sent their hello at once: their interpreter, imports and hello run while
    the game is played (only the fork is on its path), and a later game that finds no reusable process takes a spare (its ready read
    then, as a fresh start's would be, with the same checks). A spare has been dealt nothing, so
    the rule holds; it is frozen from the first look at it after its ready (each game's start).
    At most ``max(4, max_idle // 4)`` spares wait in all; past it, no more are started.
    """

    MAX_IDLE = MAX_IDLE_BOTS

    def __init__(self, config: PoolConfig | None = None, max_idle: int = MAX_IDLE) -> None:
        #: informational only: each process is started with the config of the game that needs it
        self.config = config
        self.max_idle = max_idle
        self.evicted = 0
        self._idle: dict[BotSpec, list[BotProcess]] = {}
        # idle processes, least recently used first (dict order: insertion)
        self._lru: dict[BotProcess, None] = {}
        self._busy: set[BotProcess] = set()
        self._logs: dict[tuple[str | None, str], StderrLog] = {}
        self.started = 0
        self.spares = 0
        #: per (bot, pool key): spare processes sent their hello (hello message, its line, the
        #: ready if already read), oldest first
        self._spares: dict[tuple[BotSpec, PoolKey], list[_Spare]] = {}

    def __enter__(self) -> BotPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _log_for(self, spec: BotSpec, config: PoolConfig) -> StderrLog:
        key = (config.log_dir, spec.name)
        log = self._logs.get(key)
        if log is None:
            log = self._logs[key] = StderrLog(config.log_dir, spec.name, config.limits.stderr_bytes)
        return log

    def take(self, spec: BotSpec, key: PoolKey, deal: int | None = None) -> BotProcess | None:
        """An idle live process of ``spec`` started for ``key`` that has never played ``deal`` (the
        most recently used such; ``deal`` None: whatever it played); idle ones started for another
        key, or dead, are killed."""
        idle = self._idle.get(spec)
        if not idle:
            return None
        for i in range(len(idle) - 1, -1, -1):
            proc = idle[i]
            usable = proc.key == key and proc.alive and proc.exit_status() is None
            if usable and deal is not None and deal in proc.deals:
                continue  # it played this deal: kept for the games of other deals
            del idle[i]
            self._lru.pop(proc, None)
            if usable:
                self._busy.add(proc)
                if deal is not None:
                    proc.deals.add(deal)
                return proc
            proc.close_politely(protocol.BYE)
            proc.kill("not reusable for this game" if proc.key != key else "exited between games")
        if not idle:
            del self._idle[spec]
        return None

    def spawn(self, spec: BotSpec, key: PoolKey, config: PoolConfig, deal: int | None = None) -> BotProcess:
        """Start a new process for a game of ``deal`` (no hello sent yet). Raises OSError if it cannot be started."""
        proc = BotProcess(spec, config.limits, self._log_for(spec, config), cpu_clock=config.fair_play.cpu_clock)
        proc.key = key
        if deal is not None:
            proc.deals.add(deal)
        self._busy.add(proc)
        try:
            proc.start()
        except BaseException:
            self._busy.discard(proc)
            raise
        self.started += 1
        return proc

    def take_spare(self, spec: BotSpec, key: PoolKey, deal: int | None) -> _Spare | None:
        """A spare process of ``spec`` for ``key`` (it has played nothing), now busy for ``deal``; None if none."""
        spares = self._spares.get((spec, key))
        if not spares:
            return None
        spare = spares.pop(0)
        if not spares:
            del self._spares[(spec, key)]
        self._busy.add(spare.proc)
        if deal is not None:
            spare.proc.deals.add(deal)
        return spare

    def tend_spares(self) -> None:
        """Read the ready of every spare that sent one, and freeze it (no CPU until its first turn)."""
        for spares in self._spares.values():
            for spare in spares:
                if spare.got is None and spare.proc.alive:
                    spare.got = spare.proc.poll_line()
                    if spare.got is not None and spare.got[0] == OK:
                        spare.proc.freeze()

    def start_spares(self, spec: BotSpec, key: PoolKey, config: PoolConfig, hello: protocol.Hello) -> None:
        """Start spares of ``spec`` for ``key`` up to :attr:`spares` (within the bound), each sent
        ``hello``; a spare that cannot start is forgotten (the game that needs one starts its own)."""
        spares = self._spares.setdefault((spec, key), [])
        bound = max(4, self.max_idle // 4)
        line = protocol.encode(hello)
        while len(spares) < self.spares and sum(len(s) for s in self._spares.values()) < bound:
            try:
                proc = self.spawn(spec, key, config)
            except OSError:
                break
            self._busy.discard(proc)
            if proc.write(line, proc.started_at + config.time.init_ms / 1000) != OK:
                proc.kill(f"spare: {proc.detail}")
                break
            spares.append(_Spare(proc, hello, line))
        if not spares:
            del self._spares[(spec, key)]

    def release(self, proc: BotProcess) -> None:
        """Give a process back after a game: kept if alive, else reaped and dropped."""
        self._busy.discard(proc)
        if proc.alive and proc.exit_status() is None:
            proc.drain_stderr()
            self._idle.setdefault(proc.spec, []).append(proc)
            self._lru[proc] = None
            while len(self._lru) > max(0, self.max_idle):
                self._evict(next(iter(self._lru)))
        else:
            proc.kill("dropped after its game")

    def _evict(self, proc: BotProcess) -> None:
        """Stop an idle process (the least recently used) to keep the pool within ``max_idle``."""
        del self._lru[proc]
        self._idle[proc.spec].remove(proc)
        if not self._idle[proc.spec]:
            del self._idle[proc.spec]
        self.evicted += 1
        proc.close_politely(protocol.BYE)
        proc.kill("idle pool full: least recently used")

    def idle_count(self) -> int:
        """Processes waiting idle in the pool now."""
        return len(self._lru)

    def discard(self, proc: BotProcess, reason: str) -> None:
        self._busy.discard(proc)
        proc.kill(reason)

    def processes(self) -> list[BotProcess]:
        return ([p for procs in self._idle.values() for p in procs] + list(self._busy)
                + [s.proc for spares in self._spares.values() for s in spares])

    def close(self, grace: float = 0.5) -> None:
        """Say bye to every process, give them ``grace`` seconds to exit, then kill every tree."""
        procs = self.processes()
        self._idle.clear()
        self._lru.clear()
        self._busy.clear()
        self._spares.clear()
        for proc in procs:
            proc.close_politely(protocol.BYE)
        deadline = time.monotonic() + grace
        for proc in procs:
            while proc.alive and proc.exit_status() is None and time.monotonic() < deadline:
                time.sleep(0.002)
        for proc in procs:
            proc.kill("pool closed")
        for log in self._logs.values():
            log.close()
        self._logs.clear()


@dataclass
class _Spare:
    """A process started ahead of need: the hello it was sent, and its answer once read."""

    proc: BotProcess
    hello: protocol.Hello
    line: bytes
    got: tuple[int, bytes] | None = None
