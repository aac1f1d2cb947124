"""Game logs, kept beside the league store in a file of their own and written by a thread of their own.

A league's logs are most of its bytes (13-50 KB a game, compressed) and most of the writer's
time: recording 20,000 games with 13 KB logs inside the results' transaction cost 165 us a game,
39 us of it the results (bench/scale.py, part 1). So the logs live in a second SQLite file,
``<store>-logs`` (WAL, 64 KB pages: 15% faster than 4 KB for these blobs), written by one thread
with its own connection while the writer records the results in the store. The writer hands a
batch's logs to the thread, records the results, and commits them only once the thread has
committed the logs: a recorded game always has its log, and a crash in between leaves at most
the log of a game still pending, replaced when that game is played again. SQLite releases the
GIL while it writes, so the two overlap on two cores.

Each log is stored with its game's id and read back only under the same id, so the logs file of
a deleted store never shows its logs for another league's games (a new store also empties it).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

__all__ = ["LogStore", "logs_path", "open_for_pruning", "bytes_in_use", "finished_before", "oldest_logged",
           "drop_logs", "log_totals"]

# Rows are appended (rowid order), whatever order games finish in; game_seq is a small unique
# index. Keyed by game_seq, 64 KB pages split and rewrote in the middle of the file: 266 us a log
# against 92 us appended, for 13 KB logs recorded in random order.
SCHEMA = ("CREATE TABLE IF NOT EXISTS logs (id INTEGER PRIMARY KEY, game_seq INTEGER NOT NULL UNIQUE, "
          "game_id TEXT NOT NULL, data BLOB NOT NULL)")


def logs_path(store_path: str | Path) -> Path:
    """Where the logs of the store at ``store_path`` live."""
    return Path(f"{store_path}-logs")


class LogStore:
    """The logs file of one store: writes go through one thread, reads through a lazy connection."""

    def __init__(self, store_path: str | Path, *, fresh: bool = False) -> None:
        """The logs of the store at ``store_path``; ``fresh``: a new store, whose path may still hold
        a deleted store's logs (removed: they are not its logs)."""
        self.path = logs_path(store_path)
        if fresh:
            self.remove(store_path)
        self._pool: ThreadPoolExecutor | None = None
        self._reader: sqlite3.Connection | None = None
        self._local = threading.local()

    @staticmethod
    def remove(store_path: str | Path) -> None:
        """Delete the logs file of a store (when a new store is made at that path)."""
        base = logs_path(store_path)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{base}{suffix}").unlink(missing_ok=True)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        try:  # every seat's hands are in the logs: their owner's eyes only
            os.chmod(self.path, 0o600)
        except OSError:
            pass
        if db.execute("PRAGMA page_size").fetchone()[0] != 65536 and \
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
            db.execute("PRAGMA page_size=65536")  # (only before the first table, and before WAL)
        db.execute("PRAGMA journal_mode=WAL")
        # No fsync: a killed process loses nothing (WAL), only a crash of the machine itself can
        # lose or damage the newest logs; the results, in the store, stay durable. Measured
        # side by side (13 KB logs): 15,000-17,400 logs/s against 11,700-13,600 with NORMAL.
        db.execute("PRAGMA synchronous=OFF")
        db.execute(SCHEMA)
        return db

    def _write(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany("INSERT OR REPLACE INTO logs (game_seq, game_id, data) VALUES (?, ?, ?)", rows)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def submit(self, rows: Sequence[tuple[int, str, bytes]]) -> Future[None]:
        """Write ``(seq, game_id, log)`` rows on the writer thread; the future is done once they are committed."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="league-logs")
        return self._pool.submit(self._write, list(rows))

    def read(self, seq: int, game_id: str) -> bytes | None:
        """The stored log of game ``seq`` if it belongs to ``game_id``."""
        if not self.path.exists():
            return None
        if self._reader is None:
            self._reader = self._connect()
        row = self._reader.execute("SELECT data FROM logs WHERE game_seq = ? AND game_id = ?",
                                   (seq, game_id)).fetchone()
        return bytes(row[0]) if row else None

    def disk_bytes(self) -> int:
        """The bytes the logs file takes on disk, its write-ahead log included."""
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.stat(f"{self.path}{suffix}").st_size
            except OSError:
                pass
        return total

    def count(self) -> int:
        """How many logs the file holds."""
        if not self.path.exists():
            return 0
        if self._reader is None:
            self._reader = self._connect()
        return int(self._reader.execute("SELECT count(*) FROM logs").fetchone()[0])

    def close(self) -> None:
        """Finish pending writes and close every connection."""
        if self._pool is not None:
            self._pool.submit(self._close_writer).result()
            self._pool.shutdown()
            self._pool = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _close_writer(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


# -- pruning: the logs file with its store attached read-only as ``st`` (harness.contest.retention) --
def open_for_pruning(store_path: str | Path) -> sqlite3.Connection | None:
    """A connection to the logs of the store at ``store_path``, the store attached as ``st``; None
    if either file is missing."""
    path = logs_path(store_path)
    if not path.exists() or not Path(store_path).exists():
        return None
    db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("ATTACH DATABASE ? AS st", (str(Path(store_path).resolve()),))  # read only here
    return db


def bytes_in_use(db: sqlite3.Connection) -> int:
    """Bytes of the logs file's pages in use (its size less its free pages)."""
    size = db.execute("PRAGMA main.page_size").fetchone()[0]
    pages = db.execute("PRAGMA main.page_count").fetchone()[0] - db.execute("PRAGMA main.freelist_count").fetchone()[0]
    return int(size * pages)


_SPARED = "l.game_seq NOT IN (SELECT game_seq FROM st.violations)"


def finished_before(db: sqlite3.Connection, before: str, *, spare_violations: bool, limit: int) -> list[int]:
    """Up to ``limit`` games with a log that finished before ``before`` (ISO time), those with a
    violation left out if ``spare_violations``."""
    spared = f" AND {_SPARED}" if spare_violations else ""
    return [int(r[0]) for r in db.execute("SELECT l.game_seq FROM logs l JOIN st.games g ON g.seq = l.game_seq "
                                          f"WHERE g.finished_at < ?{spared} LIMIT ?", (before, limit))]


def oldest_logged(db: sqlite3.Connection, *, spare_violations: bool, limit: int) -> list[int]:
    """The ``limit`` games with the oldest logs, those with a violation left out if ``spare_violations``."""
    where = f"WHERE {_SPARED}" if spare_violations else ""
    return [int(r[0]) for r in db.execute(f"SELECT l.game_seq FROM logs l {where} ORDER BY l.id LIMIT ?", (limit,))]


def drop_logs(db: sqlite3.Connection, seqs: Sequence[int]) -> None:
    """Delete the logs of games ``seqs`` in one short transaction."""
    db.execute("BEGIN IMMEDIATE")
    db.executemany("DELETE FROM logs WHERE game_seq = ?", [(s,) for s in seqs])
    db.execute("COMMIT")


def log_totals(db: sqlite3.Connection, keep_before: str, violations_before: str) -> tuple[int, str | None, int]:
    """The logs kept, the oldest's game's finish, and how many are past their time: finished before
    ``keep_before`` without a violation, or before ``violations_before``."""
    logs, oldest = db.execute("SELECT count(*), min(g.finished_at) FROM logs l JOIN st.games g "
                              "ON g.seq = l.game_seq").fetchone()
    expired = db.execute(
        f"SELECT count(*) FROM logs l JOIN st.games g ON g.seq = l.game_seq WHERE (g.finished_at < ? AND {_SPARED}) "
        "OR g.finished_at < ?", (keep_before, violations_before)).fetchone()[0]
    return int(logs), oldest, int(expired)
