"""Deadlines in CPU time: a bot is charged for its own use of the machine, not for the host's load.

Wall-clock deadlines charge a bot for every other process that wants the CPU: on a loaded host
a bot well within its time is out of it, and a bot whose threads spin takes time from its
opponent on the same core (the measurements: docs/security.md).

Where the harness may create cgroups (root, as in CI), each bot's cgroup (:mod:`harness.play.cgroups`)
gives two things:

- **Frozen between turns**: the ``freezer`` stops every process of the bot from the moment it
  answers (or is ready) until it is sent its next request. A bot gets CPU only while it is its
  turn: spinning threads take nothing from the opponent, and thinking "in the background" is
  not possible (protocol.md, Timing).
- **CPU time deadline**: a decision may use ``time_left_ms`` of CPU time, counted over the bot's
  whole process tree (threads and children too) by ``cpuacct``. The wait is sliced: the referee
  first wakes when the budget could have been used at the fastest possible rate (all cores),
  reads the tree's CPU time, and sleeps again for what is left; a bot answering in time costs
  one read before and one after its turn.
- **Wall-clock cap** for a bot that sleeps or blocks (it uses no CPU, so the CPU deadline would
  never come): past :data:`WALL_FACTOR` x ``time_left_ms`` of wall-clock time, a bot none of
  whose threads is running or waiting for a CPU is out of time. One that is runnable, only
  starved by the host, is given up to :data:`HARD_FACTOR` x ``time_left_ms``.

Each timeout says what was measured (CPU and wall time) and whether the host was overloaded
(load average above its cores), in the violation's ``detail`` and its ``clock`` field.

Where cgroups cannot be made (an ordinary user), deadlines stay wall-clock and bots are not
frozen; :attr:`BotProcess.cpu_clock` says which applies. A benchmark of its cost turns it off
explicitly (``RefereeConfig.fair_play``, :class:`harness.play.referee.FairPlay`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["WALL_FACTOR", "HARD_FACTOR", "Clock", "host_load"]

#: A bot that sleeps or blocks is out of time after this many times its CPU budget in wall time.
WALL_FACTOR = 3
#: Even a bot that is runnable (starved by the host) is out of time after this many times its budget.
HARD_FACTOR = 20


@dataclass
class Clock:
    """What one decision cost the bot: CPU and wall time (ms), and how its time ran out if it did."""

    cpu_ms: float = 0.0
    wall_ms: float = 0.0
    #: "cpu" (its CPU budget used up), "wall" (asleep or blocked past the cap), "hard" (runnable
    #: but past the hard cap), or "" (answered in time)
    ran_out: str = ""
    #: the load average (1 minute) and core count when the time ran out
    load: float = 0.0
    cores: int = 0

    @property
    def overloaded(self) -> bool:
        """The host had more runnable work than cores when the time ran out."""
        return self.cores > 0 and self.load > self.cores

    def to_json(self) -> dict[str, object]:
        return {"cpu_ms": round(self.cpu_ms, 3), "wall_ms": round(self.wall_ms, 3), "ran_out": self.ran_out,
                "load": round(self.load, 2), "cores": self.cores, "host_overloaded": self.overloaded}


def host_load() -> tuple[float, int]:
    """The 1-minute load average and the number of cores."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return load, os.cpu_count() or 1
