"""glibc's malloc in a process that makes its pages on threads: one arena for every thread.

``harness serve`` makes the live index on a thread of its own, and its fit finds a second
maximum on another (:func:`harness.league.ratings_local.localise_ahead`). glibc gives each
thread an arena of its own, whose heaps are at most 64 MB and are given back to the system as
their chunks are freed, so the fit's arrays over every entry (15 MB each at 1,000,000 games)
were faulted in again at every refresh: 2,500-3,200 page faults and 0.13-0.17 s of system time
for one evaluation of the likelihood on a thread, none on the main thread, whose arena keeps
its memory. With one arena the threads share the main one (its lock is taken once per
allocation, and large arrays are few). Measured as ``harness serve`` runs, with the fit's two
threads, the page shown after 102 new games at 1,000,000: 1.06-1.25 s -> 0.72-0.83 s (one series
of runs; docs/performance.md).
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["M_ARENA_MAX", "one_arena"]

#: glibc's ``mallopt`` parameter for the most arenas (malloc.h)
M_ARENA_MAX = -8


def one_arena() -> bool:
    """Make every thread that has not yet allocated use glibc's main arena (``mallopt(M_ARENA_MAX,
    1)``); whether it was set (False off glibc, where nothing changes). Call it before the
    process starts its threads: a thread keeps the arena it first got."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # (no C library to open, or one without mallopt)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, 1))
