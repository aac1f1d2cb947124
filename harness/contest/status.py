"""``harness contest status DIR``: games, pace, queue, disk, and what the log retention drops.

Read-only and safe while the site and the ladder run (each read is one short query; the disk
figures are file sizes). :func:`contest_status` returns the figures as data; :func:`format_status`
the lines the command prints.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from harness.contest import db_ops, ladder_sql
from harness.contest.config import ContestConfig
from harness.contest.db import ContestDB
from harness.contest.ladder import LADDER_STORE
from harness.contest.retention import Pruned, due
from harness.league.logstore import logs_path

__all__ = ["contest_status", "format_status", "record_pruned"]




def _size(path: Path) -> int:
    """Bytes of a file with its -wal and -shm, or of every file under a directory."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())
    return sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal", "-shm") if Path(f"{path}{s}").is_file())


def record_pruned(db: ContestDB) -> Any:
    """A Pruner's ``record``: adds what a pass dropped to the contest's counters (shown by status)."""
    def record(pruned: Pruned) -> None:
        for key, n in (("logs_dropped_expired", pruned.expired), ("logs_dropped_budget", pruned.over_budget)):
            db.set_meta(key, str(int(db.get_meta(key, "0") or 0) + n))
        db.set_meta("logs_pruned_at", str(time.time()))
    return record


def _games(store: Path, now: float) -> dict[str, int]:
    import sqlite3

    if not store.exists():
        return {"done": 0, "pending": 0, "last_hour": 0}
    db = sqlite3.connect(store, timeout=30.0)
    try:
        return ladder_sql.game_counts(db, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 3600)))
    finally:
        db.close()


def contest_status(cfg: ContestConfig, db: ContestDB, now: float | None = None) -> dict[str, Any]:
    """Every figure ``status`` shows, as data."""
    now = time.time() if now is None else now
    root = cfg.root
    store = root / LADDER_STORE
    queue = {s: db_ops.submissions_in(db, s) for s in ("building", "checking")}
    teams = db.teams()
    disk = {"contest.sqlite": _size(cfg.db_path), "ladder.sqlite": _size(store),
            "ladder.sqlite-logs": _size(logs_path(store)), "ladder.logs/": _size(root / "ladder.logs"),
            "submissions/": _size(cfg.submissions_dir), "finals/": _size(root / "finals")}
    state = json.loads(db.get_meta("ladder_state") or "{}")
    logs = due(store, cfg.retention, now)
    return {"teams": len(teams), "with_version": sum(1 for t in teams if t.current_submission),
            "queue": queue, "games": _games(store, now), "pace": cfg.games_per_hour, "ladder": state,
            "disk": disk, "free": shutil.disk_usage(root).free, "logs": logs, "retention": cfg.retention,
            "dropped": {"expired": int(db.get_meta("logs_dropped_expired", "0") or 0),
                        "over_budget": int(db.get_meta("logs_dropped_budget", "0") or 0),
                        "at": float(db.get_meta("logs_pruned_at", "0") or 0) or None}}


def _mb(n: float) -> str:
    return f"{n / 1024 / 1024:,.1f} MB"


def format_status(s: dict[str, Any], now: float | None = None) -> list[str]:
    """The lines of ``harness contest status``."""
    now = time.time() if now is None else now
    g, logs, keep = s["games"], s["logs"], s["retention"]
    pace = f"{s['pace']:,} games an hour at most" if s["pace"] else "no pace (as fast as the workers play)"
    state = s["ladder"].get("state", "not started")
    if state == "paced" and s["ladder"].get("until", 0) > now:
        state = f"paced: the next game in {s['ladder']['until'] - now:.0f} s"
    elif state == "settled":
        state = (f"resting: the order is settled at {s['ladder'].get('confidence')} (it plays again when a team's "
                 f"version changes)")
    elif state == "stopped":
        state = "stopped " + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(s["ladder"].get("at", now)))
    lines = [f"teams: {s['teams']} ({s['with_version']} with a checked version)",
             f"uploads queued: {s['queue']['building']} building, {s['queue']['checking']} being checked",
             f"games: {g['done']:,} played, {g['last_hour']:,} in the last hour, {g['pending']:,} planned",
             f"ladder: {state}; {pace}", "disk:"]
    lines += [f"  {name:<20} {_mb(size):>12}" for name, size in s["disk"].items()]
    lines.append(f"  {'free':<20} {_mb(s['free']):>12}")
    per_log = logs["in_use"] / logs["logs"] if logs["logs"] else 0
    lines.append(f"game logs: {logs['logs']:,} kept ({_mb(logs['in_use'])} in use, {per_log / 1024:,.1f} KB a game), "
                 f"oldest from {logs['oldest'] or '-'}")
    lines.append(f"  kept {keep.keep_days} days, {keep.violations_days} days with a violation, within "
                 f"{keep.disk_mb:,} MB (the finals' logs are never dropped)")
    if s["pace"] and per_log:
        lines.append(f"  at the pace: about {_mb(per_log * s['pace'] * 24)} of logs a day")
    dropped = s["dropped"]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(dropped["at"])) if dropped["at"] else "never"
    lines.append(f"  being dropped: {logs['expired']:,} past their time at the next pass; dropped so far "
                 f"{dropped['expired']:,} past their time and {dropped['over_budget']:,} over the disk budget "
                 f"(last: {when})")
    return lines
