"""A cgroup per bot: every descendant stays in it whatever it does, so killing the bot kills them all.

A process cannot leave its cgroup by ``setsid``, double forks, scrubbing its environment or
closing its pipes, the escapes the process-group kill and the ``/proc`` scan can miss. Where the
harness may create cgroups (root on cgroup v1 with the ``pids`` controller, or a writable cgroup v2
tree), each bot gets one; on v1 ``pids.max`` also enforces ``processes``, which ``RLIMIT_NPROC``
does not do for root. Where it may not, :func:`BotCgroup.create` returns ``None`` and the other
layers of :mod:`harness.play.botproc` do the work.
"""

from __future__ import annotations

import os
import signal
import time

__all__ = ["BotCgroup", "cgroup_base"]


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(fstype, mount point, options) of every cgroup mount of this process."""
    out = []
    try:
        with open("/proc/self/mounts") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
                    out.append((parts[2], parts[1], set(parts[3].split(","))))
    except OSError:
        pass
    return out


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller name, and under ``""`` for v2."""
    paths: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                for c in controllers.split(",") if controllers else [""]:
                    paths[c] = path
    except (OSError, ValueError):
        pass
    return paths


def cgroup_base() -> tuple[str, bool] | None:
    """The directory under which this process may create bot cgroups, and whether it is v2.

    Tries cgroup v1 ``pids`` first (it also limits process counts), then cgroup v2. ``None``
    if neither is writable here.
    """
    own = _own_paths()
    candidates = []
    for fstype, mount, opts in _mounts():
        if fstype == "cgroup" and "pids" in opts:
            candidates.append((os.path.join(mount, own.get("pids", "/").lstrip("/")), False))
    for fstype, mount, _opts in _mounts():
        if fstype == "cgroup2":
            candidates.append((os.path.join(mount, own.get("", "/").lstrip("/")), True))
    for path, v2 in candidates:
        _sweep_stale(path)
        base = os.path.join(path, f"tablebots-{os.getpid()}")
        try:
            os.makedirs(base, exist_ok=True)
        except OSError:
            continue
        if os.access(os.path.join(base, "cgroup.procs"), os.W_OK):
            return base, v2
        _rmdir(base)
    return None


def _sweep_stale(path: str) -> None:
    """Remove the empty bot cgroups left by harness processes that died (e.g. SIGKILLed)."""
    try:
        names = os.listdir(path)
    except OSError:
        return
    for name in names:
        owner = name.removeprefix("tablebots-")
        if name == owner or not owner.isdigit() or os.path.exists(f"/proc/{owner}"):
            continue
        base = os.path.join(path, name)
        try:
            children = [e.path for e in os.scandir(base) if e.is_dir()]
        except OSError:
            continue
        for child in children:
            _rmdir(child)  # fails, and stays, while a process is still in it
        _rmdir(base)


def _rmdir(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


class BotCgroup:
    """One bot's cgroup: the child joins it before exec; :meth:`kill` empties it and removes it."""

    def __init__(self, path: str, v2: bool) -> None:
        self.path = path
        self.v2 = v2
        self._procs = os.path.join(path, "cgroup.procs")

    @classmethod
    def create(cls, base: tuple[str, bool] | None, name: str, max_processes: int | None) -> BotCgroup | None:
        """A new cgroup ``name`` under ``base`` (see :func:`cgroup_base`), or ``None`` if it cannot be made."""
        if base is None:
            return None
        path = os.path.join(base[0], name)
        try:
            os.mkdir(path)
        except OSError:
            return None
        group = cls(path, base[1])
        if max_processes is not None and not group.v2:
            try:
                with open(os.path.join(path, "pids.max"), "w") as fh:
                    fh.write(str(max_processes))
            except OSError:
                pass
        return group

    def join(self) -> None:
        """Move the calling process into the cgroup (called in the child between fork and exec)."""
        fd = os.open(self._procs, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)

    def pids(self) -> list[int]:
        try:
            with open(self._procs) as fh:
                return [int(p) for p in fh.read().split()]
        except (OSError, ValueError):
            return []

    def kill(self, timeout: float = 2.0) -> int:
        """SIGKILL every process in the cgroup until it is empty, then remove it; return how many were hit."""
        killed = 0
        deadline = time.monotonic() + timeout
        kill_file = os.path.join(self.path, "cgroup.kill")
        while True:
            pids = self.pids()
            if not pids:
                break
            if self.v2 and os.path.exists(kill_file):
                try:
                    with open(kill_file, "w") as fh:
                        fh.write("1")
                except OSError:
                    pass
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except OSError:
                    pass
            if time.monotonic() > deadline:
                break
            time.sleep(0.001)
        # a killed process leaves the cgroup once reaped; its parent (us, or init) does that
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.002)
        _rmdir(self.path)
        return killed

    @staticmethod
    def remove_base(base: tuple[str, bool] | None) -> None:
        """Remove the per-harness directory once every bot cgroup in it is gone."""
        if base is not None:
            _rmdir(base[0])
