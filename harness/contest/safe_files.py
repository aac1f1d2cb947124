"""Reading a file a team's code could have made, for a page: never whole, never through a link.

An upload's directory holds what its build left, and a build is hostile: four page views of a
300 MB file it wrote took the site from 46 MB to 1.21 GB, and a 1 TiB sparse file gave a 500.
So the site reads such files only here: opened without following a link (``O_NOFOLLOW``, and
every directory on the way checked to be inside the folder), without blocking on a FIFO
(``O_NONBLOCK``), refused unless a regular file, and read up to a cap, from the start or from
the end, in chunks: the memory a page costs is the cap, whatever the file's size.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["NotShown", "read_capped", "list_files"]

CHUNK = 64 * 1024


class NotShown(ValueError):
    """The file is not shown (gone, a link, a FIFO, a device, a directory, outside the folder)."""


def _inside(folder: Path, relative: str) -> Path:
    root = os.path.realpath(folder)
    path = os.path.normpath(os.path.join(root, relative))
    if not path.startswith(root.rstrip("/") + "/"):
        raise NotShown("outside the folder")
    # every directory on the way must be a real directory inside the folder (no link to elsewhere)
    if os.path.realpath(os.path.dirname(path)) != os.path.dirname(path):
        raise NotShown("a link on the way")
    return Path(path)


def read_capped(folder: Path, relative: str, cap: int, tail: bool = False) -> tuple[bytes, int]:
    """At most ``cap`` bytes of the regular file ``folder/relative`` (its first, or with ``tail``
    its last), and its size; :class:`NotShown` for anything else."""
    path = _inside(folder, relative)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise NotShown(exc.strerror or "cannot open") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotShown("not a regular file")
        if tail and st.st_size > cap:
            os.lseek(fd, st.st_size - cap, os.SEEK_SET)
        parts: list[bytes] = []
        left = cap
        while left > 0:
            chunk = os.read(fd, min(CHUNK, left))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts), st.st_size
    finally:
        os.close(fd)


def list_files(folder: Path, limit: int) -> list[str]:
    """The regular files under ``folder`` (relative paths, sorted), at most ``limit`` looked at:
    links are neither listed nor followed."""
    found: list[str] = []
    seen = 0
    for top, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(top, d)))
        for name in sorted(names):
            seen += 1
            if seen > limit:
                return sorted(found)
            path = os.path.join(top, name)
            try:
                if stat.S_ISREG(os.lstat(path).st_mode):
                    found.append(os.path.relpath(path, folder))
            except OSError:
                continue
    return sorted(found)
