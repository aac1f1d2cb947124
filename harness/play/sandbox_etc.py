"""The public files of ``/etc`` a sandboxed bot sees, copied into one directory that each
sandbox binds as its ``/etc``.

Binding them one by one (20-odd binds, each with its own mount and a read of the mount table
by bwrap) cost ~2.5-3 ms of CPU on every bot start, which one process per deal makes frequent
(docs/performance.md). The copy holds exactly what those binds showed: the public parts of
:data:`ETC_FILES` (what is only for root or a group, like ``/etc/ssl/private``, is left out;
:func:`public_parts`), with symbolic links kept as links, so they resolve inside the sandbox,
where only public files are (a bind resolved them on the host). Its files are the harness
user's and read-only to others; it lies where every user may enter (bwrap run as a bot's uid
must reach it: the temporary directory, else ``/tmp`` or ``/dev/shm``), under a name made of
the user and the state of ``/etc`` (each named entry's mtime, size and inode, looked at again
at a start a second or more after the last look): made once (~0.5 s, written aside and renamed into place) and reused by every harness
process of the user until ``/etc`` changes; a directory of that name that is not the user's, or
that others may write to, is never used. It is not removed (~2 MB): running sandboxes of other
processes have it bound. Where no copy can be made, the files are bound one by one as before.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import threading
import time

__all__ = ["ETC_FILES", "copy_name", "copy_parents", "etc_args", "etc_binds", "public_parts"]

ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates",
             "localtime", "timezone", "nsswitch.conf", "passwd", "group", "hosts", "host.conf", "gai.conf",
             "mime.types", "protocols", "services",
             # the JDK reads its configuration (security, logging) from here: Java bots cannot start without it
             "java-17-openjdk", "java-21-openjdk", "java-11-openjdk")
_PREFIX = "tablebots-etc-"


def _public(path: str) -> bool:
    """Whether any user may read ``path`` (and enter it, for a directory); links count as public:
    they resolve inside the sandbox, where only public files are."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        return True
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(st.st_mode) else 0)
    return st.st_mode & need == need


def public_parts(path: str, depth: int = 0) -> list[str]:
    """``path`` if everything under it is public, else its public parts (what is only for root
    or a group, like ``/etc/ssl/private``, is left out); nothing if ``path`` itself is not."""
    if not _public(path):
        return []
    if os.path.islink(path) or not os.path.isdir(path):
        return [path]
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    subs = [os.path.join(path, n) for n in names]
    parts = [public_parts(p, depth + 1) if depth < 4 else ([p] if _public(p) else []) for p in subs]
    if all(part == [p] for part, p in zip(parts, subs)):
        return [path]
    return [f for part in parts for f in part]


def etc_binds() -> tuple[str, ...]:
    """bwrap's binds of the public files of ``/etc`` one by one (the fallback of :func:`etc_args`)."""
    args: list[str] = []
    for name in ETC_FILES:
        top = os.path.join("/etc", name)
        if not os.path.lexists(top):
            continue
        made: set[str] = set()
        for p in public_parts(top):
            # the directories on the way (bwrap run as root would make them 0700)
            rel = os.path.relpath(os.path.dirname(p), "/etc").split(os.sep)
            for i in range(1, len(rel) + 1):
                d = os.path.join("/etc", *rel[:i])
                if rel[0] != "." and d not in made:
                    made.add(d)
                    args += ["--perms", "0755", "--dir", d]
            args += ["--ro-bind", p, p]
    return tuple(args)


def _stamp() -> tuple[tuple[int, int, int], ...]:
    """What says the copy is still current: each named entry's (mtime, size, inode), 0s if absent."""
    out = []
    for name in ETC_FILES:
        try:
            st = os.lstat(os.path.join("/etc", name))
            out.append((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append((0, 0, 0))
    return tuple(out)


def _copy_into(dest: str) -> None:
    """The public parts of ``ETC_FILES`` copied under ``dest`` as they are under ``/etc``."""
    for name in ETC_FILES:
        top = os.path.join("/etc", name)
        if not os.path.lexists(top):
            continue
        for p in public_parts(top):
            target = os.path.join(dest, os.path.relpath(p, "/etc"))
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            if os.path.islink(p):
                os.symlink(os.readlink(p), target)
            elif os.path.isdir(p):
                shutil.copytree(p, target, symlinks=True, copy_function=_copy_file)
            else:
                _copy_file(p, target)
    for root, dirs, _files in os.walk(dest):
        for d in dirs:
            if not os.path.islink(os.path.join(root, d)):
                os.chmod(os.path.join(root, d), 0o755)


def _copy_file(src: str, dst: str) -> None:
    """A public file's bytes and its permission bits for others (never writable by them)."""
    shutil.copyfile(src, dst, follow_symlinks=False)
    if not os.path.islink(dst):
        os.chmod(dst, stat.S_IMODE(os.lstat(src).st_mode) & 0o755 | 0o444)


def _reachable(path: str) -> bool:
    """Whether every user may enter each directory on the way to ``path`` and ``path`` itself."""
    parts = os.path.realpath(path).split("/")
    for i in range(2, len(parts) + 1):
        try:
            if not os.stat("/".join(parts[:i])).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


def _trusted(path: str) -> bool:
    """Whether ``path`` is a copy this user made: a directory (not a link) of this user that no
    one else may write to (a directory of another user at that name is never used)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def copy_parents() -> tuple[str, ...]:
    """Where a copy may lie, in order: the temporary directory, ``/tmp``, ``/dev/shm``."""
    return tuple(dict.fromkeys((tempfile.gettempdir(), "/tmp", "/dev/shm")))


def copy_name(stamp: tuple[tuple[int, int, int], ...]) -> str:
    """The name of the copy for ``/etc`` as ``stamp`` says it is (the same in every process)."""
    return f"{_PREFIX}{os.geteuid()}-{hashlib.sha256(repr((ETC_FILES, stamp)).encode()).hexdigest()[:20]}"


def _copy_for(stamp: tuple[tuple[int, int, int], ...]) -> str | None:
    """The copy for ``/etc`` as ``stamp`` says it is: made once per machine and reused by every
    harness process of this user (a name of its own per state of ``/etc``), or None if none
    can be made where all may reach it."""
    for parent in copy_parents():
        if not _reachable(parent):
            continue
        final = os.path.join(parent, copy_name(stamp))
        if _trusted(final):
            return final
        try:
            path = tempfile.mkdtemp(prefix=f"{_PREFIX}new-", dir=parent)
        except OSError:
            continue
        try:
            _copy_into(path)
            os.chmod(path, 0o755)  # (made 0700: opened to all only once complete)
            os.rename(path, final)  # (atomic: another process's sandbox never sees half a copy)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)  # (another process made it first, or no room)
        if _trusted(final):
            return final
    return None


_lock = threading.Lock()
#: how often /etc is looked at again for changes (s)
_RECHECK_S = 1.0
_checked: tuple[float, tuple[tuple[int, int, int], ...]] = (-_RECHECK_S, ())
_current: dict[tuple[tuple[int, int, int], ...], tuple[str, ...]] = {}


def etc_args() -> tuple[str, ...]:
    """bwrap's arguments that show a sandbox the public files of ``/etc``: one read-only bind of
    the copy of them (:func:`_copy_for`); the binds one by one (:func:`etc_binds`) where no
    copy can be made."""
    global _checked
    with _lock:
        now = time.monotonic()
        if now - _checked[0] >= _RECHECK_S:  # (20-odd lstat calls: not at every start of a busy league)
            _checked = (now, _stamp())
        stamp = _checked[1]
        args = _current.get(stamp)
        if args is None or (args[0] == "--ro-bind" and args[2] == "/etc" and not _trusted(args[1])):
            path = _copy_for(stamp)
            # where no copy can be made, the binds one by one, until /etc changes (not a new
            # attempt at every start: a failed copy can take as long as a good one, ~0.5 s)
            args = ("--ro-bind", path, "/etc") if path is not None else etc_binds()
            _current.clear()
            _current[stamp] = args
    return args
