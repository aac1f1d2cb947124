"""No bot holds root's powers: where the harness runs as root (as CI does), each bot process runs
as an unprivileged uid of its own.

Root's powers are one step from the host: a sandboxed bot run as root opened
``/proc/sys/kernel/core_pattern`` for writing (the next core dump would have run its program as
root). So, when the harness is root, every bot process runs as a uid of its bot, from
:data:`BOT_UID_RANGE` (no account uses it), a hash of the bot's name: one per bot, so that
``RLIMIT_NPROC`` counts each bot alone, no two bots share a uid that could signal or trace the
other, and a restarted process of a bot still owns the files its predecessor wrote; set in the child
between fork and exec (:func:`drop_privileges`), or by ``setpriv`` inside a wrapper that itself
needs root (:func:`setpriv_prefix`).

The runtime must stay reachable for that uid. On CI the interpreter often lives under ``/root``
(``pyenv``), a directory only root may enter. Inside the sandbox bwrap's own mount points make
it reachable. Without the sandbox, :func:`reachable_paths_mounter` gives the bot a private mount
namespace in which each directory that blocks the way (``/root``) is covered by an empty tmpfs
holding only the paths the bot needs (its interpreter, the harness package, its own files),
bound back in: the bot sees the host's filesystem as any unprivileged user does, minus
those private directories.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import signal
import stat
from collections.abc import Callable, Iterable

__all__ = ["BOT_UID_RANGE", "bot_uid", "die_with_parent", "drop_privileges", "setpriv_prefix", "blocked_ancestors",
           "reachable_paths_mounter", "scratch_mounter", "tool"]

BOT_UID_RANGE = (0x5A000000, 0x5A000000 + (1 << 24))

_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REMOUNT, _MS_REC, _MS_PRIVATE = (
    1, 2, 4, 4096, 32, 16384, 1 << 18)

_libc: ctypes.CDLL | None
try:
    _libc = ctypes.CDLL(None, use_errno=True)  # loaded before any fork: not safe to load in the child
except OSError:  # pragma: no cover - not Linux/glibc
    _libc = None


_PR_SET_PDEATHSIG = 1
_prctl: Callable[..., int] | None = None if _libc is None else _libc.prctl


def die_with_parent(parent: int) -> None:
    """In a child between fork and exec: be SIGKILLed when the process ``parent`` (the one that
    forked it) dies, even by SIGKILL; exit at once if it already has. After any change of
    credentials, which clears it. The kernel ties this to the thread that forked: a child started
    from a worker thread dies when that thread ends."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)


def bot_uid(name: str) -> int | None:
    """The unprivileged host uid of the bot ``name`` when the harness runs as root, else None (the
    bot then runs as the harness's own user, which holds no privilege to drop)."""
    if os.geteuid() != 0:
        return None
    digest = int.from_bytes(hashlib.sha256(f"tablebots-uid:{name}".encode()).digest()[:8], "big")
    return BOT_UID_RANGE[0] + digest % (BOT_UID_RANGE[1] - BOT_UID_RANGE[0])


def drop_privileges(uid: int) -> None:
    """Become ``uid`` (gid ``uid``, no supplementary groups) for good: every capability goes too.

    Called in the child between fork and exec, after it joined its cgroups (only root may) and
    before PR_SET_PDEATHSIG (a change of credentials clears it)."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


#: the sandbox's own tools found so far, per (name, PATH): looked up at every bot start, and each
#: lookup stats every directory of PATH; one not found is looked for again (it may be installed)
_found: dict[tuple[str, str | None], str] = {}


def tool(name: str) -> str | None:
    """Where the tool ``name`` is on this process's ``PATH`` (kept once found), or None."""
    key = (name, os.environ.get("PATH"))
    got = _found.get(key)
    if got is None:
        got = shutil.which(name, path=key[1])
        if got is not None:
            _found[key] = got
    return got


def setpriv_prefix(uid: int | None) -> list[str]:
    """The ``setpriv`` words that make what follows run as ``uid`` with no capability at all (none
    permitted, inheritable or in the bounding set, no new privileges); ``[]`` for None."""
    if uid is None:
        return []
    exe = tool("setpriv") or "/usr/bin/setpriv"
    return [exe, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
            "--no-new-privs", "--"]


def _others_may_enter(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & stat.S_IXOTH)
    except OSError:
        return True  # not there: nothing to open up


def blocked_ancestors(paths: Iterable[str]) -> dict[str, list[str]]:
    """For paths an unprivileged user cannot reach: the highest directory on the way that others
    may not enter -> the paths under it (resolved) to bind back in."""
    out: dict[str, list[str]] = {}
    for path in dict.fromkeys(os.path.realpath(p) for p in paths if p):
        parts = path.split("/")
        for i in range(2, len(parts)):
            ancestor = "/".join(parts[:i])
            if not _others_may_enter(ancestor):
                out.setdefault(ancestor, []).append(path)
                break
    return out


def _mount(source: bytes | None, target: str, fstype: bytes | None, flags: int, data: bytes | None = None) -> None:
    assert _libc is not None
    if _libc.mount(source, target.encode(), fstype, flags, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def reachable_paths_mounter(paths: Iterable[str]) -> Callable[[], None] | None:
    """A function to run in the child (as root, before dropping to the bot's uid) that makes
    ``paths`` reachable for an unprivileged uid in a mount namespace of its own (see the
    module docstring); None when nothing blocks the way."""
    blocked = blocked_ancestors(paths)
    if not blocked or _libc is None:
        return None
    plan = []
    for top, under in sorted(blocked.items()):
        paths_ = sorted(set(under))  # a path inside another one comes with it
        plan.append((top, [p for p in paths_ if not any(p.startswith(q + "/") for q in paths_)]))

    libc = _libc

    def mount_reachable() -> None:
        if libc.unshare(_CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing of this leaks to the host
        for top, under in plan:
            fds = [os.open(p, os.O_PATH) for p in under]  # opened before the tmpfs hides them
            _mount(b"tmpfs", top, b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=755,size=64k")
            for p, fd in zip(under, fds):
                if os.path.isdir(f"/proc/self/fd/{fd}"):
                    os.makedirs(p, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(p), exist_ok=True)
                    os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
                # bound as they are: the host's modes decide what the bot's uid may write there
                _mount(f"/proc/self/fd/{fd}".encode(), p, None, _MS_BIND | _MS_REC)
                os.close(fd)
            _mount(None, top, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)

    return mount_reachable


def scratch_mounter(target: str, size_mb: int, inodes: int) -> Callable[[], None] | None:
    """A function to run in the child (as root, before it executes bwrap) that mounts the bot's
    scratch, a tmpfs of ``size_mb`` and at most ``inodes`` files, on ``target`` in a mount
    namespace of the child's own (nothing of it is seen on the host, and it goes with the bot);
    bwrap binds it as the sandbox's ``/tmp`` (:func:`harness.play.sandbox.bwrap_command`'s
    ``scratch_at``). None where mounts cannot be made from Python here."""
    if _libc is None:
        return None
    libc = _libc
    options = f"mode=1777,size={max(1, size_mb) << 20},nr_inodes={inodes}".encode()

    def mount_scratch() -> None:
        if libc.unshare(_CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing of this leaks to the host
        _mount(b"tmpfs", target, b"tmpfs", _MS_NOSUID | _MS_NODEV, options)

    return mount_scratch
