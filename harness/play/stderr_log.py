"""A bot's stderr log: a size-capped file that rotates at half its cap, keeping the newest output.

The log is what a bot's author reads (a contest shows it to the bot's team), so it holds the bot's
own output and short harness lines (a process started, ended and why) only; what only the
organizer needs (the full command line with the sandbox's arguments and the server's paths) goes to
a separate harness log beside it, ``<name>.harness.log``, never shown to a team.
"""

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

    def __init__(self, log_dir: str | None, name: str, cap: int, suffix: str = ".stderr.log") -> None:
        self.path = (os.path.join(log_dir, _UNSAFE.sub("_", name) + suffix)
                     if log_dir else None)
        self._log_dir, self._name, self._cap = log_dir, name, cap
        self._harness: StderrLog | None = None
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

    def harness_note(self, text: str) -> None:
        """A line for the organizer only (``<name>.harness.log``): may hold paths and command lines."""
        if self._log_dir is None:
            return
        if self._harness is None:
            self._harness = StderrLog(self._log_dir, self._name, self._cap, suffix=".harness.log")
        self._harness.write(f"{text}\n".encode())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if self._harness is not None:
            self._harness.close()
