"""The guard of a harness's bot cgroups: when the harness dies, no frozen bot is left behind.

A process frozen by the cgroup v1 freezer ignores even SIGKILL until it is thawed, so the
death signal the kernel sends bots when their harness dies (PR_SET_PDEATHSIG) would leave
frozen bots, and their cgroups, behind after a ``kill -9`` of the harness. The harness starts
this guard once (in its own session, so a Ctrl-C or a signal to the harness's group does not
reach it), holding the write end of its stdin; when that reads end-of-file (the harness is
gone, however it died) the guard thaws and kills every process in the harness's bot cgroups,
removes them, and exits.

    python -m harness.play.cgroup_guard BASE_DIR...
"""

from __future__ import annotations

import os
import signal
import sys
import time


def _groups(bases: list[str]) -> list[str]:
    """The bot cgroups (the directories) under ``bases`` now; a base that is gone has none."""
    groups: list[str] = []
    for base in bases:
        try:
            groups.extend(e.path for e in os.scandir(base) if e.is_dir())
        except OSError:
            continue
    return groups


def sweep(bases: list[str]) -> None:
    """Thaw, kill and remove every bot cgroup under ``bases``, then the bases themselves."""
    for group in _groups(bases):
        for name, value in (("freezer.state", "THAWED"), ("cgroup.freeze", "0")):
            try:
                with open(os.path.join(group, name), "w") as fh:
                    fh.write(value)
            except OSError:
                pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        left = False
        for group in _groups(bases):
            try:
                with open(os.path.join(group, "cgroup.procs")) as fh:
                    pids = [int(p) for p in fh.read().split()]
            except (OSError, ValueError):
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.rmdir(group)
            except OSError:
                left = True
        if not left:
            break
        time.sleep(0.01)
    for base in bases:
        try:
            os.rmdir(base)
        except OSError:
            pass


def main(argv: list[str]) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):  # until the harness, and so the write end, is gone
        pass
    sweep(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
