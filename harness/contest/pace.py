"""The ladder's pace: at most ``ladder.games_per_hour`` games an hour, on average.

A token bucket: it holds up to ten minutes' worth of games (a new version gets its first games at
once, then the ladder settles to the pace), one token is taken per recorded game, and tokens come
back at the pace. While the bucket is empty no game starts: the ladder's runner is asked to stop
(games in flight finish and are recorded, so the bucket can go below zero by the games in flight,
and the wait that follows is longer by as much), the ladder sleeps until a game is allowed, and
starts the runner again. So the pace holds on average whatever the workers; the disk a day is
about ``games_per_hour * 24 * log size`` (docs/contest.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Pace", "BUCKET_MINUTES"]

#: the bucket holds this many minutes of the pace
BUCKET_MINUTES = 10


class Pace:
    """A token bucket of ``per_hour`` games an hour (None: no limit); ``clock`` for tests."""

    def __init__(self, per_hour: int | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_hour = per_hour
        self.clock = clock
        self.capacity = max(1.0, (per_hour or 0) * BUCKET_MINUTES / 60)
        self.tokens = self.capacity
        self._at = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self.clock()
        if self.per_hour is not None:
            self.tokens = min(self.capacity, self.tokens + (now - self._at) * self.per_hour / 3600)
        self._at = now

    def take(self) -> None:
        """One game was recorded."""
        with self._lock:
            self._refill()
            if self.per_hour is not None:
                self.tokens -= 1

    def exhausted(self) -> bool:
        """True while no game may start."""
        if self.per_hour is None:
            return False
        with self._lock:
            self._refill()
            return self.tokens < 1

    def wait_seconds(self) -> float:
        """How long until the next game may start (0 if it may now)."""
        if self.per_hour is None:
            return 0.0
        with self._lock:
            self._refill()
            return max(0.0, (1 - self.tokens) * 3600 / self.per_hour)
