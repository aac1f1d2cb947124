"""Progress of a league run: a tqdm bar on a terminal, a line every 10 s in a log, or nothing."""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Any

__all__ = ["progress_bar"]


class _ProgressLines:
    """Progress for a log rather than a terminal (nohup, CI, a pipe): one line on stderr every
    ``every`` seconds with games done, rate and time left, and the same end of run as the bar."""

    def __init__(self, total: int | None, name: str, every: float = 10.0) -> None:
        self.total, self.name, self.every = total, name, every
        self.done = 0
        self.violations = 0
        self.start = self.last = time.monotonic()

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self._line(now)

    def _line(self, now: float) -> None:
        rate = self.done / max(now - self.start, 1e-9)
        left = (self.total - self.done) / rate if rate > 0 and self.total is not None else float("inf")
        eta = "?" if left == float("inf") else time.strftime("%H:%M:%S", time.gmtime(left))
        extra = f", {self.violations} violations" if self.violations else ""
        print(f"{self.name}: {self.done}/{'?' if self.total is None else self.total} games, {rate:.1f} games/s, {eta} left{extra}",
              file=sys.stderr, flush=True)

    def set_postfix(self, violations: int = 0, refresh: bool = False) -> None:
        self.violations = violations

    def write(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.done and time.monotonic() - self.start >= self.every:
            self._line(time.monotonic())


def progress_bar(total: int | None, enabled: bool | str, name: str) -> Any:
    """Progress over ``total`` games (None: not known in advance): a tqdm bar (True or "bar"), progress lines every 10 s ("lines"), or nothing (False, "none")."""
    if enabled == "lines":
        # the interval can be shortened for tests and demos (seconds, default 10)
        return _ProgressLines(total, name, float(os.environ.get("TABLEBOTS_PROGRESS_SECONDS", "10")))
    if not enabled or enabled == "none":
        return None
    from tqdm import tqdm  # here: ~40 ms to import, paid only when a bar is shown
    # the terminal's size, or 80x24 where it reports 0x0 (tqdm would then hide the bar)
    size = shutil.get_terminal_size()
    return tqdm(total=total, desc=name, unit="game", smoothing=0.1, ncols=size.columns, nrows=size.lines)
