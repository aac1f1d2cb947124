"""A league store's SQLite file, opened: made (its schema, its deal secret), checked, migrated;
its transactions and its meta table.

What is stored in it and how: :class:`harness.league.store.LeagueStore`, built on
:class:`StoreBase`; the tables: :mod:`harness.league.store_schema`.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Self

from harness.league import store_schema
from harness.league.config import LeagueError
from harness.league.logstore import LogStore
from harness.league.store_schema import SCHEMA_VERSION

__all__ = ["StoreBase", "StoreError", "utc_now"]


class StoreError(LeagueError):
    """A store that cannot be used with this config (another league, a newer schema...)."""


def utc_now() -> str:
    """The time now as the store records it (UTC, to the second)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class StoreBase:
    """An open store file: its connection, transactions and meta. Use as a context manager, or
    call :meth:`close`."""

    @staticmethod
    def ready(path: str | Path) -> bool:
        """Whether a store exists at ``path`` with its schema written (read only: never creating either)."""
        if not Path(path).exists():
            return False
        try:
            db = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, timeout=5.0)
            try:
                return int(db.execute("PRAGMA user_version").fetchone()[0]) > 0
            finally:
                db.close()
        except sqlite3.Error:
            return False

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(f"{self.path}: no such store (run the league first: harness run CONFIG)")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: cannot open the store ({exc})") from None
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a commit survives a killed process
            self.db.execute("PRAGMA cache_size=-65536")  # up to 64 MB of pages: big plans and tables stay in memory
            self.db.execute("PRAGMA foreign_keys=ON")
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise StoreError(f"{self.path}: not a league store ({exc})") from None
        self.logs: LogStore
        #: the logs file's budget in bytes (None: none): past it, only games with violations keep their logs
        self.log_budget: int | None = None
        #: games recorded without their logs because the logs file was past its budget
        self.logs_dropped = 0
        self._logs_in_flight: list[Future[None]] = []
        if version == 0:
            with self.transaction():
                if self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise StoreError(f"{self.path}: not a league store (it has other tables)")
                self.logs = LogStore(self.path, fresh=True)  # logs left by a deleted store are not this one's
                # ids hash the secret (stores made before keep public ids)
                store_schema.create(self.db, {"deal_secret": secrets.token_hex(32), "game_ids": "keyed"})
            try:  # the store holds every seat's hands and the deal secret: its owner's eyes only
                os.chmod(self.path, 0o600)  # (SQLite gives its -wal and -shm files the same mode)
            except OSError:
                pass
        elif version > SCHEMA_VERSION:
            self.db.close()
            raise StoreError(f"{self.path}: made by a newer tablebots (store schema {version}, this one reads "
                             f"{SCHEMA_VERSION})")
        else:
            self.logs = LogStore(self.path)
            if version == 1:
                with self.transaction():
                    store_schema.migrate_from_1(self.db)
            if version <= 2:
                try:  # a store only readable here stays at 2: the history is fitted without its cache
                    with self.transaction():
                        store_schema.migrate_from_2(self.db)
                except sqlite3.OperationalError:
                    pass

    # -- plumbing --------------------------------------------------------------------------

    def close(self) -> None:
        self.logs.close()
        self.db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE); nested calls join the outer one.

        Commits only once the logs handed to the logs thread inside it are committed (see
        :meth:`record_many`), so a recorded game always has its log.
        """
        if self.db.in_transaction:
            yield self.db
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
            while self._logs_in_flight:
                self._logs_in_flight.pop().result()
        except BaseException:
            self._logs_in_flight.clear()  # (orphan logs of games still pending: replaced when played)
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                        "excluded.value", (key, value))


class StoreWatch:
    """SQLite's ``data_version`` of a store file, read on one read-only connection kept for it
    (reopened when the file is made again): the number changes when another connection commits,
    so a reader learns that the league moved without reading it. Safe across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._db: tuple[sqlite3.Connection, str, int] | None = None

    def version(self, store_path: str | Path) -> tuple[int, int]:
        """``(data_version, the file's inode)``; raises ``sqlite3.Error`` or ``OSError`` while the
        store cannot be read."""
        path = str(Path(store_path).resolve())
        inode = os.stat(path).st_ino
        with self._lock:
            if self._db is None or self._db[1:] != (path, inode):  # a store made again: its new file
                if self._db is not None:
                    self._db[0].close()
                self._db = (sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0,
                                            check_same_thread=False), path, inode)
            return int(self._db[0].execute("PRAGMA data_version").fetchone()[0]), inode
