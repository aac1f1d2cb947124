"""Finding and killing what is left of a bot's process tree after its group was killed.

Layer (2) of :mod:`harness.play.botproc`'s killing: a scan of ``/proc`` for every process that
carries the bot's random ``TABLEBOTS_BOT_TOKEN`` in its environment or holds one of the bot's
pipes open, which catches descendants that left the process group (``setsid``, double fork).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Collection, Sequence

from harness.play.limits import TOKEN_VAR

__all__ = ["kill_remnants", "pipe_holders"]


def kill_remnants(tokens: Sequence[str], pipes: Sequence[str] = ()) -> int:
    """SIGKILL every process that carries one of ``tokens`` in its environment or holds one of
    ``pipes`` (``"pipe:[INODE]"``) open; return how many were hit.

    Catches a bot's descendants that left its process group (``setsid``, double fork), even
    those that also scrubbed their environment, as long as they hold one of its pipes. Repeats
    the scan until a pass finds nobody, so a process forking while we scan is caught too.
    """
    if not tokens and not pipes:
        return 0
    needles = [f"{TOKEN_VAR}={t}\0".encode() for t in tokens]
    pipe_set = frozenset(pipes)
    me = os.getpid()
    killed = 0
    for _ in range(10):
        hit = 0
        try:
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            return killed
        for pid in pids:
            if pid == me or not _is_remnant(pid, needles, pipe_set):
                continue
            try:
                os.kill(pid, signal.SIGKILL)
                hit += 1
            except OSError:
                pass
        killed += hit
        if not hit:
            break
    return killed


def _is_remnant(pid: int, needles: Sequence[bytes], pipes: frozenset[str]) -> bool:
    if needles:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read()
        except OSError:
            env = b""
        if any(n in env for n in needles):
            return True
    if pipes:
        base = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(base)
        except OSError:
            return False
        for fd in fds:
            try:
                if os.readlink(f"{base}/{fd}") in pipes:
                    return True
            except OSError:
                continue
    return False


def pipe_holders(pipe: str, skip: Collection[str] = ()) -> list[int]:
    """Processes other than this one that hold ``pipe`` (``"pipe:[INODE]"``) open, except those
    whose command name (``/proc/PID/comm``) is in ``skip``."""
    holders = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/comm") as fh:
                if fh.read().strip() in skip:
                    continue
        except OSError:
            continue
        if _is_remnant(int(entry), (), frozenset((pipe,))):
            holders.append(int(entry))
    return holders
