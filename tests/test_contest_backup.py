"""`harness contest backup` while the site and the ladder run (real processes), and a restore that
brings back every team, upload, game and rating, and plays on."""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

from test_contest_ops import make_contest

warnings.filterwarnings("ignore", message=".*httpx.*")
import httpx  # noqa: E402

from harness.contest.controls import new_organizer_token  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402


def _harness(*args: str) -> subprocess.Popen:  # type: ignore[type-arg]
    return subprocess.Popen([sys.executable, "-m", "harness", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen) -> str:  # type: ignore[type-arg]
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.stdout.read().decode() if proc.stdout else ""


def _rows(path: Path, sql: str) -> list[tuple]:  # type: ignore[type-arg]
    db = sqlite3.connect(path)
    try:
        return [tuple(r) for r in db.execute(sql)]
    finally:
        db.close()


def _games(path: Path) -> int:
    try:
        return _rows(path, "SELECT count(*) FROM games WHERE status = 'done'")[0][0] if path.exists() else 0
    except sqlite3.OperationalError:  # the ladder's store is being created
        return 0


def _answers(url: str) -> bool:
    """Whether ``url`` answers 200 now (a site still starting refuses the connection: not yet)."""
    try:
        return httpx.get(url).status_code == 200
    except httpx.TransportError:
        return False


def _until(check, seconds: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_backup_taken_while_the_site_and_the_ladder_run_restores_everything(tmp_path: Path) -> None:
    root = make_contest(tmp_path, pace=None)
    (root / "submissions" / "1" / "weights.sqlite").write_bytes(b"a team's file, whatever its name")
    db = ContestDB(root / "contest.sqlite")
    new_organizer_token(db, "test")
    db.close()
    port = _free_port()
    site = _harness("contest", "serve", str(root), "--port", str(port))
    ladder = _harness("contest", "run", str(root), "--no-progress")
    backup = tmp_path / "backup"
    try:
        _until(lambda: _games(root / "ladder.sqlite") >= 5, 90, "the ladder's first games")
        _until(lambda: _answers(f"http://127.0.0.1:{port}/"), 30, "the site")
        out = subprocess.run([sys.executable, "-m", "harness", "contest", "backup", str(root), str(backup)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "backup in" in out.stdout and " games (" in out.stdout
        _until(lambda: _games(root / "ladder.sqlite") > _games(backup / "ladder.sqlite"), 60,
               "the ladder to play on after the backup")
    finally:
        ladder_out = _stop(ladder)
        _stop(site)
    assert "Traceback" not in ladder_out, ladder_out
    assert backup.stat().st_mode & 0o777 == 0o700
    assert not list(backup.glob("*-wal"))  # each database one self-contained file
    restored = tmp_path / "restored"
    out = subprocess.run([sys.executable, "-m", "harness", "contest", "restore", str(backup), str(restored)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # every team (with its token's hash), every upload and its files, byte for byte
    for sql in ("SELECT id, name, salt, token_hash, current_submission FROM teams ORDER BY id",
                "SELECT id, team_id, status, build_log, check_log FROM submissions ORDER BY id",
                "SELECT id, text FROM announcements ORDER BY id", "SELECT salt, token_hash FROM organizer"):
        assert _rows(restored / "contest.sqlite", sql) == _rows(root / "contest.sqlite", sql), sql
    for path in (root / "submissions").rglob("*"):
        if path.is_file():
            copy = restored / path.relative_to(root)
            assert hashlib.sha256(copy.read_bytes()).digest() == hashlib.sha256(path.read_bytes()).digest()
    # every game of the snapshot, with its seats' results, as the original has it; and the ratings
    games = _games(restored / "ladder.sqlite")
    assert games >= 5
    seats = "SELECT game_seq, seat, version_id, rank, score FROM seats ORDER BY 1, 2"
    copied = _rows(restored / "ladder.sqlite", seats)
    assert len(copied) == 2 * games and set(copied) <= set(_rows(root / "ladder.sqlite", seats))  # games finish
    # in any order: the copy's are some of the original's, each with the same results
    ratings = _rows(restored / "ladder.sqlite", "SELECT version_id, mu, sigma FROM ratings ORDER BY 1")
    assert len(ratings) == 2 and all(sigma < 25 / 3 for _, _, sigma in ratings)
    # every game of the copy has its log (the store is copied before its logs: the logs' copy may
    # also hold the log of a game recorded after the store's, as after a crash; it is replaced)
    logged = {r[0] for r in _rows(restored / "ladder.sqlite-logs", "SELECT game_seq FROM logs")}
    done = {r[0] for r in _rows(restored / "ladder.sqlite", "SELECT seq FROM games WHERE status = 'done'")}
    assert done <= logged
    # the restored contest serves and plays on
    port = _free_port()
    site = _harness("contest", "serve", str(restored), "--port", str(port))
    ladder = _harness("contest", "run", str(restored), "--no-progress")
    try:
        _until(lambda: _games(restored / "ladder.sqlite") > games, 90, "the restored ladder to play on")
        _until(lambda: _answers(f"http://127.0.0.1:{port}/api/leaderboard"), 30, "the site")
        board = httpx.get(f"http://127.0.0.1:{port}/api/leaderboard").json()
        assert sorted(r["bot"] for r in board["table"]) == ["alpha", "beta"]
        assert board["games_done"] >= games
    finally:
        assert "Traceback" not in _stop(ladder)
        _stop(site)
