"""A cgroup per bot: every descendant stays in it whatever it does, so killing the bot kills them all.

A process cannot leave its cgroup by ``setsid``, double forks, scrubbing its environment or
closing its pipes, the escapes the process-group kill and the ``/proc`` scan can miss. Where the
harness may create cgroups (root on cgroup v1 with the ``pids`` controller, or a writable cgroup v2
tree), each bot gets one; on v1 ``pids.max`` also enforces ``processes``, which ``RLIMIT_NPROC``
does not do for root. Where it may not, :func:`BotCgroup.create` returns ``None`` and the other
layers of :mod:`harness.play.botproc` do the work.

The same cgroups make CPU fair (:mod:`harness.play.cpuclock`): the ``freezer`` stops a bot
whenever it is not its turn (so a spinning bot takes no CPU from its opponent), and
``cpuacct`` counts the CPU time of its whole tree, which its deadlines are measured in.

They are also one envelope for the whole tree: ``memory`` bounds the memory of every process of
the bot together (``memory.limit_in_bytes`` on v1, ``memory.max`` on v2: page cache, its
tmpfs scratch and the kernel memory of its files and processes included, so 300,000 empty files
in ``/tmp`` count), and ``pids`` bounds its processes, per bot (``RLIMIT_NPROC`` counts every
process of a uid, so bots of one user starved each other). When the kernel's OOM killer stops a
process of the bot, :meth:`BotCgroup.oom_kills` says so (on cgroup v1 an eventfd,
:attr:`BotCgroup.oom_event_fd`, is signalled as well: the referee polls it with the bot's pipes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

__all__ = ["BotCgroup", "CgroupBase", "cgroup_base", "cgroup_mounts", "v1_controllers", "V1_CONTROLLERS"]


def cgroup_mounts() -> list[tuple[str, str]]:
    """(``cgroup`` or ``cgroup2``, mount point) of every cgroup mount this process sees."""
    return [(kind, mount) for kind, mount, _ in _mounts()]


def v1_controllers() -> set[str]:
    """The controllers this host binds to cgroup v1 hierarchies (no cgroup v2 subtree can offer them)."""
    return {opt for kind, _, opts in _mounts() if kind == "cgroup" for opt in opts}


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


#: The cgroup v1 controllers a bot gets a group in: ``pids`` (the group no descendant can leave,
#: and ``pids.max``), ``freezer`` (frozen while it is not its turn) and ``cpuacct`` (the CPU time
#: of its whole tree, which its deadlines count), ``memory`` (the memory of its whole tree).
V1_CONTROLLERS = ("pids", "freezer", "cpuacct", "memory")

#: Where bot cgroups are made: one directory per controller (v1), or ``{"": dir}`` on cgroup v2.
CgroupBase = dict[str, str]


#: this process's last answer of cgroup_base (pid, base): asked at every bot start
_known: tuple[int, CgroupBase | None] = (0, None)


def cgroup_base() -> CgroupBase | None:
    """The directories under which this process may create bot cgroups, per controller.

    cgroup v1 first (``pids`` is required; ``freezer`` and ``cpuacct`` are used where writable),
    then cgroup v2 (one tree with all three). ``None`` if neither is writable here.

    Asked at every bot start: the answer is kept while its directories are there (they go when
    their last bot does: :meth:`BotCgroup.remove_base`), so the mount table, this process's
    cgroups and the stale directories of dead harness processes are read once, not per start.
    """
    global _known
    pid, known = _known
    if pid == os.getpid() and known and all(os.path.isdir(path) for path in known.values()):
        if "freezer" in known or "" in known:
            _guard(known)
        return dict(known)
    base = _find_base()
    _known = (os.getpid(), dict(base) if base else None)
    return base


def _find_base() -> CgroupBase | None:
    """:func:`cgroup_base`, found (and the directories made) afresh."""
    own = _own_paths()
    mounts = _mounts()
    bases: CgroupBase = {}
    for controller in V1_CONTROLLERS:
        for fstype, mount, opts in mounts:
            if fstype == "cgroup" and controller in opts:
                base = _make_base(os.path.join(mount, own.get(controller, "/").lstrip("/")))
                if base is not None:
                    bases[controller] = base
                break
    if "pids" in bases:
        if "freezer" in bases:
            _guard(bases)
        return bases
    for path in bases.values():
        _rmdir(path)
    for fstype, mount, _opts in mounts:
        if fstype == "cgroup2":
            own_dir = os.path.join(mount, own.get("", "/").lstrip("/"))
            if os.path.basename(own_dir).startswith(_LEAF):  # moved there by _enable_v2 below
                own_dir = os.path.dirname(own_dir)
            base = _make_base(own_dir)
            if base is not None:
                _enable_v2(own_dir, base)
                _guard({"": base})
                return {"": base}
    return None


#: the cgroup v2 controllers bot cgroups get where a delegated subtree offers them
V2_CONTROLLERS = ("pids", "memory")
#: the leaf cgroup the harness moves itself into in a delegated v2 subtree (see _enable_v2)
_LEAF = "tablebots-harness-"


def _read(path: str) -> set[str]:
    try:
        with open(path) as fh:
            return set(fh.read().split())
    except OSError:
        return set()


def _enable_v2(own_dir: str, base: str) -> None:
    """Enable the ``pids`` and ``memory`` controllers for the bot cgroups under ``base``, where
    the subtree offers them (a subtree systemd delegated: ``Delegate=yes``). cgroup v2 lets a
    cgroup hand controllers down only while no process sits in it, so the harness's own
    processes first move to a leaf of their own (``tablebots-harness-PID``). Where a controller
    is not offered (the host binds it to cgroup v1), bots go without: :mod:`harness.play.doctor`
    says so."""
    want = set(V2_CONTROLLERS) & _read(os.path.join(own_dir, "cgroup.controllers"))
    if not want:
        return
    missing = want - _read(os.path.join(own_dir, "cgroup.subtree_control"))
    control = os.path.join(own_dir, "cgroup.subtree_control")
    if missing and not _write(control, " ".join(f"+{c}" for c in sorted(missing))):
        leaf = os.path.join(own_dir, f"{_LEAF}{os.getpid()}")
        try:
            os.makedirs(leaf, exist_ok=True)
        except OSError:
            return
        for pid in _read(os.path.join(own_dir, "cgroup.procs")):
            _write(os.path.join(leaf, "cgroup.procs"), pid)
        _write(control, " ".join(f"+{c}" for c in sorted(missing)))
    _write(os.path.join(base, "cgroup.subtree_control"), " ".join(f"+{c}" for c in sorted(want)))


_guards: dict[tuple[str, ...], subprocess.Popen[bytes]] = {}


def _guard(base: CgroupBase) -> None:
    """Start, once per base, the process that empties these cgroups when the harness dies
    (:mod:`harness.play.cgroup_guard`: a frozen bot ignores even SIGKILL until thawed)."""
    key = tuple(sorted(base.values()))
    guard = _guards.get(key)
    if guard is not None and guard.poll() is None and guard.pid and _guards_owner.get(key) == os.getpid():
        return
    try:
        _guards[key] = subprocess.Popen([sys.executable, "-m", "harness.play.cgroup_guard", *key],
                                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True, close_fds=True)
        _guards_owner[key] = os.getpid()
    except OSError:
        pass


_guards_owner: dict[tuple[str, ...], int] = {}


def _make_base(path: str) -> str | None:
    _sweep_stale(path)
    base = os.path.join(path, f"tablebots-{os.getpid()}")
    try:
        os.makedirs(base, exist_ok=True)
    except OSError:
        return None
    if os.access(os.path.join(base, "cgroup.procs"), os.W_OK):
        return base
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
            _thaw_dir(child)
            _rmdir(child)  # fails, and stays, while a process is still in it
        _rmdir(base)


def _thaw_dir(path: str) -> None:
    for name, value in (("freezer.state", b"THAWED"), ("cgroup.freeze", b"0")):
        try:
            fd = os.open(os.path.join(path, name), os.O_WRONLY)
        except OSError:
            continue
        try:
            os.write(fd, value)
        except OSError:
            pass
        finally:
            os.close(fd)


def _rmdir(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


class BotCgroup:
    """One bot's cgroups: the child joins them before exec; the referee freezes and thaws the
    bot, reads its tree's CPU time, and :meth:`kill` empties and removes them.

    Freezing and the CPU clock keep their files open: a freeze, a thaw or a reading is one
    ``pwrite``/``pread`` (a few microseconds), done on every decision.
    """

    def __init__(self, paths: dict[str, str]) -> None:
        self.paths = paths
        self.v2 = "" in paths
        main = paths.get("pids") or paths[""]
        self.path = main
        self._procs = [os.path.join(p, "cgroup.procs") for p in dict.fromkeys(paths.values())]
        self._freeze_fd = self._cpu_fd = self._oom_fd = -1
        #: an eventfd the kernel signals when the bot's tree runs out of memory (cgroup v1): the
        #: referee polls it with the bot's pipes instead of reading the OOM counter every turn
        self.oom_event_fd = -1
        self._frozen = False
        #: whether ``pids.max`` and the memory bound were set (the controllers are there)
        self.max_processes = self.max_memory = False
        self.memory_mb = 0
        if self.v2:
            self._freeze_fd = _open(os.path.join(main, "cgroup.freeze"), os.O_WRONLY)
            self._cpu_fd = _open(os.path.join(main, "cpu.stat"), os.O_RDONLY)
        else:
            if "freezer" in paths:
                self._freeze_fd = _open(os.path.join(paths["freezer"], "freezer.state"), os.O_WRONLY)
            if "cpuacct" in paths:
                self._cpu_fd = _open(os.path.join(paths["cpuacct"], "cpuacct.usage"), os.O_RDONLY)

    @classmethod
    def create(cls, base: CgroupBase | None, name: str, max_processes: int | None,
               memory_mb: int | None = None) -> BotCgroup | None:
        """A new cgroup ``name`` under each directory of ``base`` (see :func:`cgroup_base`), or
        ``None`` if the main one (``pids``, or v2) cannot be made; ``max_processes`` and
        ``memory_mb`` bound its whole tree where the controllers are there."""
        if base is None:
            return None
        paths: dict[str, str] = {}
        for controller, path in base.items():
            target = os.path.join(path, name)
            try:
                os.mkdir(target)
            except OSError:
                if controller in ("pids", ""):
                    for made in paths.values():
                        _rmdir(made)
                    return None
                continue
            paths[controller] = target
        group = cls(paths)
        if max_processes is not None:
            group.max_processes = _write(os.path.join(group.path, "pids.max"), str(max_processes))
        if memory_mb is not None:
            group.memory_mb = memory_mb
            limit = str(memory_mb << 20)
            if group.v2:
                group.max_memory = _write(os.path.join(group.path, "memory.max"), limit)
                _write(os.path.join(group.path, "memory.swap.max"), "0")
            elif "memory" in paths:
                # the swap a tree may use too, where the kernel counts it (a limit of memory+swap)
                group.max_memory = _write(os.path.join(paths["memory"], "memory.limit_in_bytes"), limit)
                _write(os.path.join(paths["memory"], "memory.memsw.limit_in_bytes"), limit)

        if group.max_memory:  # kept open: one pread (every turn where no event can be had)
            group._oom_fd = _open(os.path.join(group.path, "memory.events") if group.v2 else
                                  os.path.join(paths["memory"], "memory.oom_control"), os.O_RDONLY)
            if not group.v2 and group._oom_fd >= 0:
                group.oom_event_fd = _oom_eventfd(paths["memory"], group._oom_fd)
        return group

    def rearm_oom_event(self) -> None:
        """Reset the OOM eventfd after an event that killed nothing (the counter is still 0)."""
        if self.oom_event_fd >= 0:
            try:
                os.eventfd_read(self.oom_event_fd)
            except OSError:
                pass

    def over_memory(self) -> str:
        """Why the bot must stop, if the kernel stopped a process of it for going over its tree's
        memory bound; else ``""`` (one ``pread``: after every turn, or where :attr:`oom_event_fd`
        is watched, after its event or a failed turn)."""
        kills = self.oom_kills()
        if not kills:
            return ""
        return (f"its processes together went over {self.memory_mb} MB (memory_mb, plus scratch_mb when "
                f"sandboxed): the kernel stopped {kills} of them")

    def oom_kills(self) -> int:
        """How many processes of the bot the kernel's OOM killer stopped (its tree went over its
        memory bound); 0 where the memory controller is not there."""
        if self._oom_fd < 0:
            return 0
        try:
            data = os.pread(self._oom_fd, 4096, 0)
            at = data.find(b"oom_kill ")
            return int(data[at + 9:].split(b"\n", 1)[0]) if at >= 0 else 0
        except (OSError, ValueError):
            return 0

    @property
    def can_freeze(self) -> bool:
        return self._freeze_fd >= 0

    @property
    def can_count_cpu(self) -> bool:
        return self._cpu_fd >= 0

    def join(self) -> None:
        """Move the calling process into the cgroups (called in the child between fork and exec)."""
        pid = str(os.getpid()).encode()
        for procs in self._procs:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def never_freeze(self, pids: list[int]) -> list[int]:
        """Move ``pids`` out of the freezer cgroup into its parent (the harness's, never frozen),
        leaving them in every other cgroup of the bot (counted, bounded and killed with it); the
        ones moved. Only for the sandbox's own processes (:meth:`BotProcess.freeze` says why):
        cgroup v1 only, where the freezer is a hierarchy of its own (on v2 it is not: none moved)."""
        if self.v2 or "freezer" not in self.paths or self._frozen:
            return []
        target = os.path.join(os.path.dirname(self.paths["freezer"]), "cgroup.procs")
        return [pid for pid in pids if _write(target, str(pid))]

    def freeze(self) -> None:
        """Stop every process of the bot (it gets no CPU) until :meth:`thaw`."""
        if self._freeze_fd >= 0 and not self._frozen:
            try:
                os.pwrite(self._freeze_fd, b"1" if self.v2 else b"FROZEN", 0)
                self._frozen = True
            except OSError:
                pass

    def thaw(self) -> None:
        if self._freeze_fd >= 0 and self._frozen:
            try:
                os.pwrite(self._freeze_fd, b"0" if self.v2 else b"THAWED", 0)
            except OSError:
                pass
            self._frozen = False

    def cpu_ns(self) -> int | None:
        """CPU time used by every process that was ever in the cgroup, in nanoseconds."""
        if self._cpu_fd < 0:
            return None
        try:
            data = os.pread(self._cpu_fd, 4096, 0)
            if self.v2:
                for line in data.split(b"\n"):
                    if line.startswith(b"usage_usec "):
                        return int(line.split()[1]) * 1000
                return None
            return int(data)
        except (OSError, ValueError):
            return None

    def pids(self) -> list[int]:
        try:
            with open(self._procs[0]) as fh:
                return [int(p) for p in fh.read().split()]
        except (OSError, ValueError):
            return []

    def kill(self, timeout: float = 2.0) -> int:
        """SIGKILL every process in the cgroup until it is empty, then remove it; return how many
        were hit. A frozen cgroup is thawed first (a frozen process would not die)."""
        killed = 0
        deadline = time.monotonic() + timeout
        kill_file = os.path.join(self.path, "cgroup.kill")
        self._frozen = True
        self.thaw()
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
        for fd in (self._freeze_fd, self._cpu_fd, self._oom_fd, self.oom_event_fd):
            if fd >= 0:
                os.close(fd)
        self._freeze_fd = self._cpu_fd = self._oom_fd = self.oom_event_fd = -1
        for path in self.paths.values():
            _rmdir(path)
        return killed

    @staticmethod
    def remove_base(base: CgroupBase | None) -> None:
        """Remove the per-harness directories once every bot cgroup in them is gone."""
        if base is not None:
            for path in base.values():
                _rmdir(path)


def _write(path: str, value: str) -> bool:
    try:
        with open(path, "w") as fh:
            fh.write(value)
    except OSError:
        return False
    return True


def _oom_eventfd(memory_dir: str, oom_control_fd: int) -> int:
    """An eventfd the kernel signals when the memory cgroup ``memory_dir`` runs out of memory
    (cgroup v1's ``cgroup.event_control`` on ``memory.oom_control``: signalled before the OOM
    killer stops a process of it); -1 where it cannot be registered."""
    try:
        efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    except OSError:
        return -1
    if _write(os.path.join(memory_dir, "cgroup.event_control"), f"{efd} {oom_control_fd}"):
        return efd
    os.close(efd)
    return -1


def _open(path: str, flags: int) -> int:
    try:
        return os.open(path, flags)
    except OSError:
        return -1
