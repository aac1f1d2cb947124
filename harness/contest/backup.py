"""``harness contest backup DIR OUT`` and ``restore``: a contest copied while the site and the ladder run.

A live SQLite file in WAL mode cannot be copied as a file (the last transactions are in its
``-wal``, and a copy taken mid-write is torn), so each database (``contest.sqlite``, the
ladder's store and its logs, the finals') is copied with SQLite's online backup API, which reads
one consistent snapshot while the writers go on. The rest are plain files: ``contest.yaml``,
the uploads (``submissions/``), the finals' report, the bots' stderr logs. The databases are
copied one after another, so the ladder's store may hold a few games more than the leaderboard's
summary in ``contest.sqlite``; the ladder rebuilds that summary from its store when it starts, so
a restored contest shows every game of the store. ``manifest.json`` says what the copy holds.

``restore BACKUP DIR`` copies a backup into a new directory: ``serve`` and ``run`` then work there
(the ladder's config is rewritten from the roster when the ladder starts, with the new paths).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from harness.contest import db_ops
from harness.contest.config import CONFIG_NAME, ContestConfig

__all__ = ["backup_contest", "restore_contest", "BackupError", "MANIFEST"]

MANIFEST = "manifest.json"
#: databases, relative to the contest's directory, copied with the online backup API; a store before
#: its logs (a game's log is committed before its result, so every game of the store's copy has its
#: log in the logs' copy; a log of a game recorded in between is replaced when it is played again)
DATABASES = ("contest.sqlite", "ladder.sqlite", "ladder.sqlite-logs", "finals/finals.sqlite",
             "finals/finals.sqlite-logs")
#: plain files and folders copied as they are
FILES = (CONFIG_NAME, "submissions", "ladder.logs", "finals")


class BackupError(ValueError):
    """A backup or restore that cannot be done; one line saying why."""


def _copy_db(src: Path, dst: Path) -> None:
    db_ops.copy_database(src, dst)
    os.chmod(dst, 0o600)


def _ignore_dbs(folder: str, names: list[str]) -> set[str]:
    """In ``finals/`` itself, the databases (copied by the backup API instead) and their -wal/-shm
    (a team's upload may hold files of any name: those are copied)."""
    return {n for n in names if n.startswith("finals.sqlite")}


def backup_contest(cfg: ContestConfig, out: Path) -> dict[str, Any]:
    """Copy the contest in ``cfg.root`` to the new directory ``out`` (mode 0700); return the manifest."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise BackupError(f"{out}: exists and is not empty (a backup goes to a new directory)")
    if out.resolve().is_relative_to(cfg.root):
        raise BackupError(f"{out}: inside the contest's directory (put backups elsewhere)")
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)  # token hashes, every team's code and logs: the organizer's eyes only
    started = time.time()
    for name in FILES:
        src = cfg.root / name
        if src.is_dir():
            shutil.copytree(src, out / name, symlinks=True, ignore=_ignore_dbs if name == "finals" else None)
        elif src.is_file():
            shutil.copy2(src, out / name)
    copied = []
    for name in DATABASES:
        src = cfg.root / name
        if src.is_file():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            _copy_db(src, out / name)
            copied.append(name)
    manifest = {"contest": cfg.name, "from": str(cfg.root), "started": started, "finished": time.time(),
                "databases": copied, **db_ops.copy_counts(out)}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def restore_contest(backup: Path, root: Path) -> dict[str, Any]:
    """Copy the backup at ``backup`` into the new directory ``root``; return its manifest."""
    backup, root = Path(backup), Path(root)
    try:
        manifest = json.loads((backup / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BackupError(f"{backup}: not a contest backup (no readable {MANIFEST})") from None
    if root.exists() and any(root.iterdir()):
        raise BackupError(f"{root}: exists and is not empty (restore into a new directory)")
    shutil.copytree(backup, root, symlinks=True, dirs_exist_ok=True, ignore=lambda d, n: {MANIFEST} & set(n))
    os.chmod(root, 0o700)
    return dict(manifest)
