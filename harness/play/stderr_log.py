"""A bot's stderr log: a size-capped file that rotates at half its cap, keeping the newest output."""

from __future__ import annotations

import os
import re
from typing import BinaryIO

__all__ = ["StderrLog"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class StderrLog:
    """A bot's stderr log: a size-capped rotating file (or nothing, without a directory).

    The file is ``<dir>/<name>.stderr.log``; when it reaches half of ``cap`` it becomes
    ``.stderr.log.1`` (replacing the previous one) and a new file starts, so at most ``cap``
    bytes are on disk and the newest output is kept.
    """

    def __init__(self, log_dir: str | None, name: str, cap: int) -> None:
        self.path = (os.path.join(log_dir, _UNSAFE.sub("_", name) + ".stderr.log")
                     if log_dir else None)
        self._half = max(cap // 2, 1)
        self._fh: BinaryIO | None = None
        self._size = 0
        if self.path and log_dir:
            os.makedirs(log_dir, exist_ok=True)
            # owner only: a bot may log its hand, and an unsandboxed bot must not read another's
            self._fh = open(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")
            self._size = self._fh.tell()

    def write(self, data: bytes) -> None:
        fh = self._fh
        if fh is None:
            return
        if len(data) > self._half:
            data = data[-self._half:]
        if self._size + len(data) > self._half:
            fh.close()
            assert self.path is not None  # a file handle exists only with a path
            os.replace(self.path, self.path + ".1")
            fh = self._fh = open(os.open(self.path, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o600), "wb")
            self._size = 0
        fh.write(data)
        fh.flush()
        self._size += len(data)

    def note(self, text: str) -> None:
        """A line from the harness itself (process started, killed), marked with ``#``."""
        self.write(f"# tablebots: {text}\n".encode())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
