"""How long the ladder's game logs are kept, and how much disk they may take (``logs`` in contest.yaml).

A game's log (every request and answer, 13-50 KB compressed) is most of the ladder's disk; its
result, seats and violations are a few hundred bytes and are never dropped. :func:`prune_logs`
drops the logs of games finished more than ``keep_days`` ago, except games with a violation,
kept ``violations_days`` (a team reads its violations from them); then, while the logs file's
pages in use exceed ``disk_mb``, the oldest logs, those without a violation first. The finals
are their own store (``finals/``) and are never pruned. A game whose log was dropped keeps its
result on every page; its replay says the log is gone.

SQLite reuses the pages freed by a delete, so the logs file stops growing at about the budget
(it does not shrink: ``status`` shows its size and the bytes in use). The ladder prunes every
:data:`PRUNE_EVERY` seconds (:class:`Pruner`), in short transactions beside the logs' writer.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.contest.config import LogRetention
from harness.league import logstore

__all__ = ["prune_logs", "Pruned", "Pruner", "logs_in_use", "PRUNE_EVERY"]

PRUNE_EVERY = 600.0
#: logs deleted in one transaction (the ladder's writer waits for no longer than one)
CHUNK = 500


@dataclass
class Pruned:
    """What one pass dropped: logs past their time, and logs over the disk budget."""

    expired: int = 0
    over_budget: int = 0


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def logs_in_use(db: sqlite3.Connection) -> int:
    """Bytes of the logs file's pages in use (its size less its free pages)."""
    return logstore.bytes_in_use(db)


def _delete(db: sqlite3.Connection, before: str, spare_violations: bool) -> int:
    """Delete the logs of games finished before ``before``, CHUNK at a time; return how many."""
    total = 0
    while seqs := logstore.finished_before(db, before, spare_violations=spare_violations, limit=CHUNK):
        logstore.drop_logs(db, seqs)
        total += len(seqs)
    return total


def prune_logs(store_path: Path, keep: LogRetention, now: float | None = None) -> Pruned:
    """Drop the logs past their time, then the oldest over the disk budget (see the module docstring)."""
    now = time.time() if now is None else now
    db = logstore.open_for_pruning(store_path)
    result = Pruned()
    if db is None:
        return result
    try:
        result.expired = _delete(db, _iso(now - keep.keep_days * 86400), True)
        result.expired += _delete(db, _iso(now - keep.violations_days * 86400), False)
        budget = keep.disk_mb * 1024 * 1024
        for spare_violations in (True, False):
            while logs_in_use(db) > budget:
                seqs = logstore.oldest_logged(db, spare_violations=spare_violations, limit=CHUNK // 5)
                if not seqs:
                    break
                logstore.drop_logs(db, seqs)
                result.over_budget += len(seqs)
        return result
    finally:
        db.close()


def due(store_path: Path, keep: LogRetention, now: float | None = None) -> dict[str, object]:
    """What the logs file holds now and what the next pass would drop: for ``harness contest status``."""
    now = time.time() if now is None else now
    db = logstore.open_for_pruning(store_path)
    if db is None:
        return {"logs": 0, "in_use": 0, "expired": 0, "oldest": None}
    try:
        logs, oldest, expired = logstore.log_totals(db, _iso(now - keep.keep_days * 86400),
                                                    _iso(now - keep.violations_days * 86400))
        return {"logs": logs, "in_use": logs_in_use(db), "expired": expired, "oldest": oldest}
    finally:
        db.close()


class Pruner:
    """Prunes the ladder's logs every ``every`` seconds on a thread of its own; totals go to ``record``."""

    def __init__(self, store_path: Path, keep: LogRetention, record: Callable[[Pruned], None] | None = None,
                 every: float = PRUNE_EVERY) -> None:
        self.store_path, self.keep, self.every = store_path, keep, every
        self.record = record
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="contest-prune", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _loop(self) -> None:
        while True:
            try:
                pruned = prune_logs(self.store_path, self.keep)
            except sqlite3.Error as exc:  # a busy or damaged logs file: the ladder plays on, retried later
                print(f"pruning the game logs failed ({exc}); retried in {self.every:.0f} s", flush=True)
                pruned = Pruned()
            if self.record is not None and (pruned.expired or pruned.over_budget):
                self.record(pruned)
            if self._stop.wait(self.every):
                return
