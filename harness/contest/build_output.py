"""What a build leaves behind, taken back onto the host's disk with its size, count and kinds capped.

A build is hostile code (a participant's ``setup.py``, ``Makefile`` or compiler plugin): it once
wrote 300 MB in a second into an upload's 16 MB, made a 1 TiB sparse file, a FIFO and a symbolic
link to ``/`` that stayed, and the site then read them. So:

- sandboxed, the build writes into a tmpfs of its own; when it succeeds, the sandbox writes that
  directory as a tar to a pipe, read here by :class:`OutputReader` up to a cap (past it the
  build is killed), and :func:`replace_with_output` unpacks it in place of the upload's
  directory: regular files and directories only (their executable bit kept), names checked as an
  upload's (:func:`harness.contest.unpack.check_name`), at most ``files`` entries and ``cap``
  bytes, never following a link;
- unsandboxed (``sandbox: none``), the build wrote in place: :func:`clean_output` removes every
  link and special file it left and fails the build if its files are too many or too big
  (counting a sparse file at its apparent size).
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import threading
from collections.abc import Callable
from pathlib import Path

from harness.contest.unpack import UnpackError, check_name

__all__ = ["OutputReader", "clean_output", "replace_with_output", "upload_files"]

CHUNK = 64 * 1024


class OutputReader:
    """Reads a pipe in a thread, keeping at most ``cap`` bytes; past them, calls ``over`` (which
    kills the build) and says so in :attr:`problem`."""

    def __init__(self, fd: int, cap: int, over: Callable[[], None]) -> None:
        self.fd = fd
        self.cap = cap
        self.over = over
        self.data = bytearray()
        self.problem = ""
        self.thread = threading.Thread(target=self._run, name="build-output", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, CHUNK)
                if not chunk:
                    return
                self.data += chunk
                if len(self.data) > self.cap:
                    self.problem = f"it left more than {self.cap >> 20} MB of files (the build's output cap)"
                    self.data.clear()
                    self.over()
                    while os.read(self.fd, CHUNK):  # until the killed build's end closes the pipe
                        pass
                    return
        except OSError as exc:
            self.problem = f"its output could not be read ({exc})"
        finally:
            os.close(self.fd)

    def join(self) -> bytes:
        """The bytes read (empty if over the cap), once the pipe is closed."""
        self.thread.join()
        return bytes(self.data)


def _unpack(data: bytes, target: Path, files: int, cap: int) -> None:
    import io

    count = total = 0
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UnpackError(f"its output is not a readable tar ({exc})") from None
    with archive:
        for member in archive:
            parts = check_name(member.name)
            if not parts:
                continue
            count += 1
            if count > files:
                raise UnpackError(f"it left more than {files} files and directories")
            if member.issym() or member.islnk():
                raise UnpackError(f"it left a link, {member.name!r} (only files and directories are kept)")
            if not (member.isreg() or member.isdir()):
                raise UnpackError(f"it left {member.name!r}, a FIFO, device or other special file")
            path = target.joinpath(*parts)
            path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)  # (nothing here is ever a link)
            if member.isdir():
                path.mkdir(mode=0o755, exist_ok=True)
                continue
            total += member.size
            if total > cap:
                raise UnpackError(f"it left more than {cap >> 20} MB of files")
            src = archive.extractfile(member)
            mode = 0o755 if member.mode & 0o111 else 0o644
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            with os.fdopen(fd, "wb") as dst:
                if src is not None:
                    shutil.copyfileobj(src, dst, CHUNK)


def replace_with_output(workdir: Path, data: bytes, files: int, cap: int) -> str:
    """Replace ``workdir`` by the build's output (a tar, see the module docstring); the reason
    it is refused, or ``""``. On a refusal ``workdir`` is left as the upload was."""
    fresh = workdir.with_name(f".{workdir.name}.built")
    old = workdir.with_name(f".{workdir.name}.old")
    for leftover in (fresh, old):
        shutil.rmtree(leftover, ignore_errors=True)
    fresh.mkdir(mode=0o755)
    try:
        _unpack(data, fresh, files, cap)
    except (UnpackError, OSError) as exc:
        shutil.rmtree(fresh, ignore_errors=True)
        return str(exc).removeprefix("refused: ")
    owner = workdir.stat()
    for path in [fresh, *fresh.rglob("*")]:  # the build's uid owns its files, as before the build
        os.chown(path, owner.st_uid, owner.st_gid, follow_symlinks=False)
    workdir.rename(old)
    fresh.rename(workdir)
    shutil.rmtree(old, ignore_errors=True)
    return ""


def upload_files(workdir: Path) -> set[str]:
    """The relative paths of everything in ``workdir`` (what an unsandboxed build started from)."""
    return {os.path.relpath(os.path.join(top, n), workdir) for top, dirs, names in os.walk(workdir)
            for n in [*dirs, *names]}


def clean_output(workdir: Path, files: int, cap: int, before: set[str] | None = None) -> str:
    """An unsandboxed build's directory made safe: links and special files removed; the reason
    the build fails if it left more than ``files`` entries or ``cap`` bytes, or ``""``. On a
    failure, everything not in ``before`` (the upload's own files) is removed too."""
    problem = _check_in_place(workdir, files, cap)
    if problem and before is not None:
        for top, dirs, names in os.walk(workdir, topdown=False):
            for name in [*names, *dirs]:
                path = os.path.join(top, name)
                if os.path.relpath(path, workdir) not in before:
                    if os.path.isdir(path) and not os.path.islink(path):
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        os.unlink(path)
    return problem


def _check_in_place(workdir: Path, files: int, cap: int) -> str:
    count = total = 0
    removed = []
    for top, dirs, names in os.walk(workdir, followlinks=False):
        for name in [*dirs, *names]:
            path = os.path.join(top, name)
            st = os.lstat(path)
            count += 1
            if stat.S_ISDIR(st.st_mode):
                continue
            if not stat.S_ISREG(st.st_mode):
                os.unlink(path)  # a link (even to a directory) or a FIFO, socket or device
                removed.append(os.path.relpath(path, workdir))
                continue
            total += st.st_size  # a sparse file counts at its apparent size: the site would read that
    if count > files:
        return f"it left more than {files} files and directories"
    if total > cap:
        return f"it left more than {cap >> 20} MB of files"
    if removed:
        return f"it left links or special files (removed): {', '.join(sorted(removed)[:5])}"
    return ""
