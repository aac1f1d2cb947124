"""What a bot is and what it may do: its spec, time controls, resource limits and sandbox.

Everything here is decided before the process starts: the command as it will be run (Python
scripts run with the harness's interpreter, wrapped in ``bwrap`` or ``unshare`` when asked), and
the ``setrlimit`` calls made in the child between ``fork`` and ``exec``. The running process and its
killing live in :mod:`harness.play.botproc`, its line I/O under deadlines in :mod:`harness.play.botpipes`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.play.cgroups import BotCgroup
from harness.play.privileges import die_with_parent, drop_privileges
from harness.play.sandbox import SANDBOX_CHOICES, SandboxMode, bwrap_problem

__all__ = ["BotSpec", "MAX_IDLE_BOTS", "TimeControls", "ResourceLimits", "SandboxUnavailable", "SANDBOXES", "TOKEN_VAR",
           "LIMIT_KEYS", "NULLABLE_LIMITS",
           "pin_to_cpu", "resolve_command", "check_sandbox", "unshare_pid_prefix", "limit_setter",
           "tree_memory_mb"]

MIB = 1 << 20
#: default bound on the idle bot processes a pool keeps (BotPool.max_idle; league key ``idle_bots``)
MAX_IDLE_BOTS = 32
WRAPPERS = frozenset({"bwrap", "unshare"})
TOKEN_VAR = "TABLEBOTS_BOT_TOKEN"


@dataclass(frozen=True)
class BotSpec:
    """A bot: its display name, its command line (argv, never a shell string) and working directory.

    ``cwd`` ``None`` runs the bot in the harness's current directory. Under the bwrap sandbox
    (:mod:`harness.play.sandbox`) the bot sees its own files read-only: ``sandbox_dir`` when set
    (a league bot whose config sets ``cwd``), and the directory of its program (the executable, or
    the script its interpreter runs: :func:`harness.play.sandbox.program_dir`);
    it runs there, and may write only to its private ``/tmp``.
    """

    name: str
    command: tuple[str, ...]
    cwd: str | None = None
    sandbox_dir: str | None = None


@dataclass(frozen=True)
class TimeControls:
    """Deadlines in milliseconds: start-up (hello -> ready), per decision, and a per-game bank.

    A decision may take ``move_ms`` plus whatever is left of the bank; time over ``move_ms`` is
    taken from the bank, which is refilled to ``bank_ms`` at the start of every game.
    ``jitter_ms``: each request is sent after a random delay of 0 to ``jitter_ms`` (the bot frozen
    meanwhile, so never charged), which blurs what one bot can read of another's answer times.
    """

    init_ms: int = 5000
    move_ms: int = 1000
    bank_ms: int = 0
    jitter_ms: int = 0


@dataclass(frozen=True)
class ResourceLimits:
    """Per-bot limits. ``None`` leaves a limit unset (inherited from the harness).

    memory_mb:      RLIMIT_AS, address space of each process of the bot; and, where the harness
                    may make cgroups with the memory controller, the memory of the bot's whole
                    tree together (its scratch tmpfs and kernel memory too: ``memory_mb`` plus
                    ``scratch_mb`` when sandboxed; :func:`tree_memory_mb`).
    cpu_seconds:    RLIMIT_CPU, CPU time over the life of the process (it lives a whole league).
    processes:      processes and threads of the bot: ``pids.max`` of its cgroup where there is
                    one; else RLIMIT_NPROC inside its own user namespace (sandboxed: counted per
                    bot); else RLIMIT_NPROC, which the kernel counts over every process of the
                    user (bots of one user then share it) and does not apply to root.
    open_files:     RLIMIT_NOFILE.
    stderr_bytes:   disk used by the bot's stderr log (two rotating halves).
    max_line_bytes: longest line the bot may send (without the newline).
    max_json_depth: deepest nesting of arrays/objects accepted in a message.
    sandbox:        a :class:`~harness.play.sandbox.SandboxMode`: None (none), "bwrap"
                    (harness.play.sandbox: no network, only the runtime and the bot's own files,
                    read-only, and a private /tmp), or "auto" (bwrap if it works here).
    pid_namespace:  run the bot as PID 1 of its own PID namespace (``unshare``, needs root) so
                    that no descendant can outlive it; the bot then sees itself as PID 1.
    scratch_mb:     size of a sandboxed bot's only writable place, its private ``/tmp`` (a tmpfs,
                    in memory; ``/dev/shm`` is the same place), freed when the process ends; also
                    RLIMIT_FSIZE, the largest file any process of the bot may write.
    """

    memory_mb: int | None = 2048
    cpu_seconds: int | None = 3600
    processes: int | None = 4096
    open_files: int | None = 256
    stderr_bytes: int = 4 * MIB
    max_line_bytes: int = MIB
    max_json_depth: int = 64
    sandbox: str | None = None
    pid_namespace: bool = False
    scratch_mb: int = 64


#: The limits a config may set (a league's or a contest's ``limits``): every field of
#: ResourceLimits but ``pid_namespace``, which only code sets (it needs root; the sandbox does the same).
LIMIT_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ResourceLimits) if f.name != "pid_namespace")
#: The limits that ``None`` switches off: those whose field may be None (the others always apply).
NULLABLE_LIMITS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ResourceLimits)
                                         if f.name in LIMIT_KEYS and str(f.type) == "int | None")

#: the sandboxes a bot may be started in (None, not "none", says no sandbox in ResourceLimits)
SANDBOXES = tuple(mode for mode in SandboxMode if mode != SandboxMode.NONE)


def tree_memory_mb(limits: ResourceLimits, sandboxed: bool) -> int | None:
    """The memory bound of a bot's whole process tree (its cgroup), in MB: ``memory_mb``, plus
    ``scratch_mb`` when sandboxed (its ``/tmp`` is a tmpfs, charged to its memory)."""
    if limits.memory_mb is None:
        return None
    return limits.memory_mb + (max(1, limits.scratch_mb) if sandboxed else 0)


class SandboxUnavailable(RuntimeError):
    """The requested sandbox cannot be used on this machine (raised before any game starts)."""


def check_sandbox(limits: ResourceLimits) -> None:
    """Raise :class:`SandboxUnavailable` with the fix if ``limits.sandbox`` (or ``pid_namespace``) cannot be used here."""
    if limits.pid_namespace and limits.sandbox is None and not unshare_pid_prefix():
        raise SandboxUnavailable("pid_namespace asked for, but `unshare --pid` does not work here "
                                 "(it needs root or CAP_SYS_ADMIN)")
    if limits.sandbox is None or limits.sandbox == SandboxMode.AUTO:
        return  # auto falls back to no sandbox (with a warning where it is resolved)
    if limits.sandbox not in SANDBOXES:
        raise SandboxUnavailable(f"unknown sandbox {limits.sandbox!r} (known: {', '.join(SANDBOX_CHOICES)})")
    problem = bwrap_problem()
    if problem is not None:
        raise SandboxUnavailable(f"sandbox 'bwrap' asked for, but {problem}; install or fix it, "
                                 "or choose --sandbox auto or none")


def pin_to_cpu(cpu: int) -> None:
    """Pin this process to one CPU; bots started afterwards inherit the affinity.

    Referee and bots on one core exchange a line ~5x faster than across cores on the project
    machines (cross-core wake-ups dominate).
    """
    os.sched_setaffinity(0, {cpu})


def resolve_command(command: Sequence[str]) -> list[str]:
    """The argv to run: a leading ``python`` or ``python3`` becomes the interpreter running the harness.

    This skips version-manager shims (the pyenv shim costs ~70 ms per start) and makes a bot
    run with the same Python everywhere. Anything else is run as given.
    """
    argv = list(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return argv


@functools.cache
def unshare_pid_prefix() -> tuple[str, ...]:
    """``unshare --pid --fork --kill-child`` if this machine lets us use it, else ``()``.

    The bot then runs as PID 1 of its own PID namespace: when it dies (or ``unshare``, its
    parent, is killed) the kernel kills every process left in the namespace, so no descendant
    can escape, whatever it does (``setsid``, double fork, scrubbed environment). Needs root or
    CAP_SYS_ADMIN; the probe runs once per harness process.
    """
    exe = shutil.which("unshare")
    if exe is None:
        return ()
    cmd = (exe, "--pid", "--fork", "--kill-child", "--")
    try:
        ok = subprocess.run([*cmd, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    return cmd if ok else ()


def limit_setter(limits: ResourceLimits, cgroup: BotCgroup | None = None, uid: int | None = None,
                 before_drop: Callable[[], None] | None = None, nproc: bool = True) -> Callable[[], None]:
    """The function Popen runs in the child before exec: joining the cgroup, becoming ``uid``
    (when the harness runs as root: :func:`harness.play.sandbox.drop_privileges`), PDEATHSIG, rlimits.

    ``nproc`` False: RLIMIT_NPROC is set elsewhere (inside the bot's own user namespace, where it
    counts this bot alone: set here, before bwrap makes the namespace, it would also bound the
    processes of every bot of the user together)."""
    pairs = []
    if limits.memory_mb is not None:
        pairs.append((resource.RLIMIT_AS, limits.memory_mb * MIB))
    if limits.cpu_seconds is not None:
        pairs.append((resource.RLIMIT_CPU, limits.cpu_seconds))
    if limits.processes is not None and nproc:
        pairs.append((resource.RLIMIT_NPROC, limits.processes))
    pairs.append((resource.RLIMIT_FSIZE, max(1, limits.scratch_mb) * MIB))
    if limits.open_files is not None:
        pairs.append((resource.RLIMIT_NOFILE, limits.open_files))

    parent = os.getpid()

    def set_limits() -> None:  # runs in the child between fork and exec (SIGPIPE is restored by Popen)
        if cgroup is not None:  # first, so that everything the bot ever forks is in it
            cgroup.join()
        if before_drop is not None:  # e.g. a mount namespace that only root may make
            before_drop()
        if uid is not None:  # before PDEATHSIG, which a change of credentials clears
            drop_privileges(uid)
        die_with_parent(parent)  # with the referee, even if it is SIGKILLed
        for which, value in pairs:
            hard = resource.getrlimit(which)[1]
            if hard != resource.RLIM_INFINITY and value > hard:
                value = hard
            # soft = hard: the bot cannot raise its own limit again
            resource.setrlimit(which, (value, value))

    return set_limits
