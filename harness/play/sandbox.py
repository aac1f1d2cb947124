"""The bubblewrap sandbox: what a bot can see and write, and the ``auto`` default.

A sandboxed bot sees only:

- the system's runtime, read-only: ``/usr`` (with ``/bin``, ``/sbin``, ``/lib*`` as on the host),
  the few files under ``/etc`` that programs need to start (the dynamic loader's cache,
  ``alternatives``, certificates, ``passwd``/``group``, time zone), and the Python installation
  the harness itself runs on (its ``sys.prefix`` and ``sys.base_prefix``), so a ``python3`` bot
  starts with the harness's interpreter, and the ``harness`` package itself (code, no data:
  bots written on its SDK import it);
- its own files, read-only: the directory of its program (the executable, ``./mybot``, or the
  script an interpreter runs, ``python3 -u bots/x.py`` -> ``bots/``), and its ``cwd`` when the
  league config sets one; it runs in that ``cwd``, else in its program's directory. No other
  word of the command decides what it sees (``python3 -c CODE ../runs/x.sqlite`` once exposed
  the store): a command naming a file elsewhere is refused when the config is loaded;
- a private, empty, writable ``/tmp`` of ``scratch_mb`` (a tmpfs: also its ``HOME``, ``TMPDIR``
  and ``/dev/shm``), gone when it ends; the sandbox's ``/``, ``/dev`` and ``/proc/sys`` are
  read-only (a bot once wrote 0.8 GB to ``/`` and 1.5 GB to an unbounded ``/tmp``);
- a minimal ``/dev`` and its own ``/proc`` (its own PID namespace: it sees only its processes).

No network (its own empty network namespace), no IPC with the host, no privilege: where the
harness runs as root, bwrap itself runs as the bot's unprivileged uid
(:mod:`harness.play.privileges`) and puts the bot in a user namespace of its own, or, where that
cannot work here (user namespaces off, or the runtime in a directory only root may enter, such
as ``/root/.pyenv``), bwrap runs as root and ``setpriv`` drops the bot to its uid with no
capability inside. A clean environment (``PATH``, ``LANG``, ``HOME``, ``TMPDIR`` and the
harness's kill token). Everything else — the other bots, the league store (which holds every
seat's hands in its logs), the logs, home directories — does not exist inside.

``auto`` (the default of leagues, ``play`` and ``check-bot``) uses bubblewrap when a probe run
(``bwrap ... true``, once per process) works on this machine, and otherwise runs bots without a
sandbox after one warning line. Starting a bot under bwrap costs ~2-4 ms more; bots are started
once per worker and reused, so a league does not notice.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from enum import StrEnum

from harness.play.privileges import bot_uid, die_with_parent, drop_privileges, setpriv_prefix, tool
from harness.play.sandbox_etc import etc_args

__all__ = ["SandboxMode", "SANDBOX_CHOICES", "bwrap_command", "bwrap_problem", "bwrap_userns", "outside_word", "own_dirs",
           "program_dir", "resolve_sandbox",
           "runtime_prefixes", "sandbox_env", "scratch_mount_point"]



class SandboxMode(StrEnum):
    """The sandbox a bot runs in: the one list of them (``limits.sandbox``, ``--sandbox``, the
    contest's limits). ``ResourceLimits.sandbox`` holds one of these, or None for none."""

    #: bwrap where it works on this machine, else none with a warning (:func:`resolve_sandbox`)
    AUTO = "auto"
    BWRAP = "bwrap"
    NONE = "none"


#: the words accepted wherever a sandbox is chosen (a config, ``--sandbox``)
SANDBOX_CHOICES = tuple(mode.value for mode in SandboxMode)

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: The ``harness`` package's own code: visible to every bot (bots written on its SDK import it).
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ENV_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "PYTHONHASHSEED", "PYTHONUNBUFFERED")


def runtime_prefixes() -> list[str]:
    """The Python installation the harness runs on (a venv and its base), when outside /usr."""
    return list(_runtime_prefixes())


@functools.cache
def _runtime_prefixes() -> tuple[str, ...]:
    out = []
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, os.path.realpath(sys.base_prefix))):
        if prefix and not any(prefix == d or prefix.startswith(d + "/") for d in _SYSTEM_DIRS):
            out.append(prefix)
    return tuple(out)


@functools.cache
def _runtime_roots() -> tuple[str, ...]:
    """The system's and the harness's runtime directories, resolved (asked at every bot start)."""
    return (*_SYSTEM_DIRS, *_runtime_prefixes(), *(os.path.realpath(p) for p in _runtime_prefixes()))


def _is_runtime(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r.rstrip("/") + "/") for r in _runtime_roots())


#: Interpreter options after which the next word is code or a module, not the program's file.
_CODE_OPTIONS = frozenset({"-c", "-m", "-e", "--eval", "-p", "--print", "-E"})


def program_dir(argv: Sequence[str], cwd: str) -> str | None:
    """The directory of the program a command runs: the executable itself when it is not part
    of the system's runtime (``./mybot``), else the interpreter's first argument that is not an
    option (``python3 -u bots/x.py`` -> ``bots/``). None if that names no file (``python3 -m
    pkg``, ``python3 -c CODE``): no later word is ever taken for the program, so a command
    cannot make the sandbox show a file by naming it (``python3 -c CODE ../runs/x.sqlite``)."""
    exe = argv[0] if not argv or os.sep in argv[0] else shutil.which(argv[0])
    if not argv:
        return None
    exe_path = os.path.join(cwd, exe) if exe else None
    if exe_path and _is_file(exe_path) and not _is_runtime(exe_path):
        return os.path.dirname(os.path.abspath(exe_path))
    for word in argv[1:]:
        if word in _CODE_OPTIONS:
            return None
        if word.startswith("-"):
            continue
        path = os.path.join(cwd, word)
        return os.path.dirname(os.path.abspath(path)) if _is_file(path) else None
    return None


def own_dirs(argv: Sequence[str], cwd: str, declared: str | None) -> list[str]:
    """The directories a sandboxed bot sees as its own: ``declared`` (a league bot's ``cwd``)
    when given, and its program's directory (:func:`program_dir`)."""
    return list(dict.fromkeys(d for d in (declared, program_dir(argv, cwd)) if d))


def outside_word(argv: Sequence[str], cwd: str, own: Sequence[str]) -> str | None:
    """The first word of ``argv`` that names an existing file or directory (itself, or after an
    option's ``=``) outside the directories ``own`` and outside the runtime every bot sees; None
    if there is none. Such a command would not find that file in the sandbox: it is refused
    up front."""
    roots = [os.path.realpath(d) for d in own]
    for i, word in enumerate(argv):
        for candidate in (word, word.split("=", 1)[1] if word.startswith("-") and "=" in word else ""):
            if not candidate or (i == 0 and os.sep not in candidate):
                continue
            path = os.path.join(cwd, candidate)
            if not _exists(path):
                continue
            real = os.path.realpath(path)
            if any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots):
                continue
            if _is_runtime(real) or real.startswith(_PACKAGE + "/"):
                continue
            return word
    return None


def _is_file(path: str) -> bool:
    try:
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


#: The uid and gid a sandboxed bot sees itself as, inside its own user namespace.
INNER_UID = 1000


def _dev_args() -> list[str]:
    """A minimal read-only ``/dev``: the harmless devices, and ``/dev/shm`` as a link to ``/tmp``,
    so that shared memory counts in the one bounded scratch (``--dev`` gives an unbounded one)."""
    args = ["--size", str(1 << 16), "--tmpfs", "/dev"]
    for name in ("null", "zero", "full", "random", "urandom", "tty"):
        if os.path.exists(f"/dev/{name}"):
            args += ["--dev-bind", f"/dev/{name}", f"/dev/{name}"]
    args += ["--symlink", "/proc/self/fd", "/dev/fd", "--symlink", "/proc/self/fd/0", "/dev/stdin",
             "--symlink", "/proc/self/fd/1", "/dev/stdout", "--symlink", "/proc/self/fd/2", "/dev/stderr",
             "--symlink", "/tmp", "/dev/shm", "--remount-ro", "/dev"]
    return args


def scratch_inodes(scratch_mb: int) -> int:
    """Files (and directories) a bot's scratch may hold: one per 4 KB page of it, at least 1024."""
    return max(1024, scratch_mb * 256)


def bwrap_command(argv: Sequence[str], cwd: str, own_dirs: Sequence[str], scratch_mb: int = 64,
                  userns: bool = True, uid: int | None = None, processes: int | None = None,
                  scratch_at: str | None = None) -> list[str]:
    """``argv`` wrapped in bubblewrap as the module docstring describes: ``own_dirs`` are the bot's
    own directories (read-only), and it runs in the first; ``scratch_mb`` bounds its ``/tmp``.
    Words of ``argv`` that name existing paths relative to ``cwd`` (the harness's view) are made
    absolute.

    ``userns``: bwrap runs as an unprivileged user (the harness's own, or ``uid`` it dropped to)
    and puts the bot in a user namespace of its own, as uid :data:`INNER_UID`. Without it (user
    namespaces unusable, or the runtime unreadable to ``uid``, while the harness is root), bwrap
    runs as root and ``setpriv`` makes the bot ``uid`` with no capability (none permitted, none
    inheritable, an empty bounding set, no new privileges) inside the sandbox, where the
    mount points bwrap made let it reach the runtime whatever the host's directory modes.

    ``processes`` (with ``userns``): RLIMIT_NPROC set inside the bot's user namespace (by
    ``prlimit``), where the kernel counts the processes of this bot alone, not of every bot of
    the user (see :func:`harness.play.limits.limit_setter`).

    ``scratch_at`` (without ``userns``): where the caller's child has mounted the bot's scratch,
    bounded in bytes and files, in a mount namespace of its own before it runs bwrap
    (:func:`harness.play.privileges.scratch_mounter`); it is bound as ``/tmp``. Without it, a
    shell inside the sandbox remounts bwrap's ``/tmp`` with the bound on files before ``setpriv``
    (two more programs started: ~4 ms of CPU a start, docs/performance.md).
    """
    cmd = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "bot"]
    if userns:
        cmd += ["--unshare-user", "--uid", str(INNER_UID), "--gid", str(INNER_UID)]
    if userns and (os.geteuid() == 0 or uid is not None):
        cmd += ["--cap-drop", "ALL"]  # (without userns, setpriv needs CAP_SETUID: it drops them all itself)
    # /proc/sys read-only (its files are writable by the namespace's root); the private /tmp
    # first: binds made after it land on top of it, so an interpreter, package or bot that lives
    # under /tmp (a CI checkout there) stays visible instead of being hidden
    cmd += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", *_dev_args(),
            *(["--bind", scratch_at, "/tmp"] if scratch_at and not userns else
              ["--perms", "1777", "--size", str(max(1, scratch_mb) << 20), "--tmpfs", "/tmp"])]
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    cmd += ["--perms", "0755", "--dir", "/etc"]  # (bwrap run as root would make it 0700)
    cmd += etc_args()  # public files only: never /etc/shadow, /etc/ssl/private
    binds = [p for p in runtime_prefixes() if os.path.isdir(p)] + [_PACKAGE, *dict.fromkeys(own_dirs)]
    made: set[str] = set()
    for path in binds:
        # the directories on the way, enterable by anyone (bwrap run as root makes them 0700);
        # like the root they live in the sandbox's own tmpfs, which is remounted read-only
        parts = path.split("/")
        for i in range(2, len(parts)):
            parent = "/".join(parts[:i])
            if parent not in made and not any(parent == d or parent.startswith(d + "/") for d in binds):
                made.add(parent)
                cmd += ["--perms", "0755", "--dir", parent]
        cmd += ["--ro-bind", path, path]
    cmd += ["--remount-ro", "/"]  # the sandbox's root (a tmpfs bwrap made): not a scratch space
    words = [os.path.abspath(os.path.join(cwd, w)) if i and _exists(os.path.join(cwd, w)) else w
             for i, w in enumerate(argv)]
    if os.sep in words[0] and not os.path.isabs(words[0]):
        words[0] = os.path.abspath(os.path.join(cwd, words[0]))
    if not userns and scratch_at:
        words = [*setpriv_prefix(uid), *words]  # (the scratch came bounded in files too)
    elif not userns:
        # bwrap's --tmpfs bounds bytes, not inodes (300,000 empty files in a "64 MB" /tmp took
        # 600 MB of kernel memory): root's bwrap bounds them before setpriv drops the bot
        inodes = f"mount -o remount,nr_inodes={scratch_inodes(scratch_mb)} /tmp && exec \"$@\""
        words = ["/bin/sh", "-c", inodes, "sh", *setpriv_prefix(uid), *words]
    elif processes is not None:
        words = [tool("prlimit") or "/usr/bin/prlimit", f"--nproc={processes}", "--", *words]
    return cmd + ["--chdir", own_dirs[0] if own_dirs else "/tmp", "--", *words]


@functools.cache
def scratch_mount_point() -> str | None:
    """An empty directory of this user that no one else may enter or write to, on which a bot's
    child mounts its scratch in a mount namespace of its own (never on the host:
    :func:`harness.play.privileges.scratch_mounter`); None if none can be made."""
    for parent in dict.fromkeys((tempfile.gettempdir(), "/tmp")):
        path = os.path.join(parent, f"tablebots-scratch-{os.geteuid()}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError:
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077:
            return path
    return None


def _exists(path: str) -> bool:
    try:
        return os.path.exists(path)
    except (OSError, ValueError):
        return False


def sandbox_env(env: dict[str, str]) -> dict[str, str]:
    """The environment a sandboxed bot gets: a few harmless variables of ``env``, HOME and TMPDIR
    in its private /tmp, and the harness's kill token (any variable starting ``TABLEBOTS_``)."""
    out = {k: v for k, v in env.items() if k in _ENV_KEPT or k.startswith("TABLEBOTS_")}
    out.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    out["HOME"] = out["TMPDIR"] = "/tmp"
    return out


def bwrap_problem() -> str | None:
    """Why the bwrap sandbox cannot be used here (None if it can): probed by running ``true``
    inside it, once per process and ``bwrap`` executable."""
    exe = tool("bwrap")
    if exe is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    return _probe(exe, True) if _probe(exe, True) is None else _probe(exe, False)


def bwrap_userns() -> bool:
    """Whether bots get a user namespace of their own (bwrap run unprivileged works here)."""
    exe = tool("bwrap")
    return exe is not None and _probe(exe, True) is None


@functools.cache
def _probe(exe: str, userns: bool) -> str | None:
    """Run ``true`` in the sandbox exactly as a bot is run (as root: after dropping to a bot uid)."""
    uid = bot_uid("probe")
    parent = os.getpid()

    def preexec() -> None:  # a probe never outlives its process (a worker killed mid-probe)
        if uid is not None and userns:
            drop_privileges(uid)
        die_with_parent(parent)

    try:
        probe = subprocess.run([exe, *bwrap_command(["true"], "/", [], 1, userns, uid)[1:]], capture_output=True,
                               timeout=20, preexec_fn=preexec)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap does not run here: {exc}"
    if probe.returncode != 0:
        why = probe.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap does not work here: {why[-1] if why else f'exit status {probe.returncode}'}"
    return None


#: What a bot can do without the sandbox, said plainly wherever it runs without one.
UNSANDBOXED = ("a bot can read every file your user can (the league store, which holds every seat's hands, and "
               "the other bots), use the network, and signal, trace or freeze the harness and the other bots; "
               "see docs/security.md")
#: The same when the harness is root: bots then run as unprivileged uids of their own.
UNSANDBOXED_ROOT = ("each bot runs as an unprivileged user of its own, but can read every file any user may, "
                    "use the network, and see every process; see docs/security.md")


def resolve_sandbox(requested: str | None) -> tuple[str | None, str | None]:
    """The sandbox to use for ``requested`` (``auto``, ``bwrap``, ``none`` or None = none), and a
    warning line when ``auto`` falls back to none. ``bwrap`` is returned as asked: whether it
    works is checked (with a clear error) when a bot starts."""
    if requested is None or requested == SandboxMode.NONE:
        return None, None
    if requested == SandboxMode.AUTO:
        problem = bwrap_problem()
        if problem is None:
            return SandboxMode.BWRAP.value, None
        what = UNSANDBOXED_ROOT if os.geteuid() == 0 else UNSANDBOXED
        return None, f"warning: bots run without a sandbox ({problem}): {what}"
    # an unknown word is passed on: check_sandbox refuses it, naming the known ones, before a bot starts
    return requested, None
