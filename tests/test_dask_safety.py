"""Dask mode when things go wrong, with real processes on 127.0.0.1: the client killed (SIGKILL or
Ctrl-C), the scheduler lost, a worker with other bot files; and `harness match --dask`.

Each test checks what the issue asks: no recorded game lost or doubled, no bot process left,
the league resumes, and one clear line where the run stops.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.league.config import load_config
from harness.league.schedule_roundrobin import build_schedule

REPO = Path(__file__).resolve().parent.parent
BOTS = REPO / "bots"
DASK = str(Path(sys.executable).parent / "dask")


def league(tmp_path: Path, rounds: int) -> tuple[Path, Path]:
    """A Crisps league of two copies of the random bot at a path unique to this test (their bot
    processes live across games in the workers' pools: ~80 games a second on one worker)."""
    bot = tmp_path / "marked_safety_bot.py"
    shutil.copy(BOTS / "random_bot.py", bot)
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nstore: {tmp_path / 's.sqlite'}\ngame: crisps\nrounds: {rounds}\n"
                    f"options: {{max_turns: 30}}\nbots:\n  - {{name: a, command: python3 {bot}}}\n"
                    f"  - {{name: b, command: python3 {bot} --name b}}\n")
    return path, bot


#: the client's wait for a lost scheduler (20 s by default): the same path, sooner
ENV = {**os.environ, "TABLEBOTS_DASK_CONNECT_SECONDS": "3"}


def harness(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "harness", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env=ENV)


def done(store: Path) -> int:
    if not store.exists():
        return 0
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=10)
    try:
        return int(db.execute("SELECT count(*) FROM games WHERE status = 'done'").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        db.close()


def wait_for(condition, seconds: float, what: str) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def processes_with(text: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if text in line and "ps -eo" not in line]


def assert_each_game_once(config_path: Path) -> None:
    """The store holds the whole schedule, each game done once with a rank at every seat."""
    cfg = load_config(config_path)
    total = len(build_schedule(cfg))
    db = sqlite3.connect(cfg.store)
    assert db.execute("SELECT status, count(*) FROM games GROUP BY status").fetchall() == [("done", total)]
    assert db.execute("SELECT count(*), count(rank) FROM seats").fetchone() == (2 * total, 2 * total)
    assert db.execute("SELECT count(DISTINCT id) FROM games").fetchone()[0] == total
    db.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def cluster(tmp_path: Path, worker_wrapper: tuple[str, ...] = ()) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A `dask scheduler` and one `dask worker` on 127.0.0.1 (the worker optionally wrapped)."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / f"cluster-{port}"
    logs.mkdir()
    scheduler = subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                                 stdout=subprocess.DEVNULL, stderr=open(logs / "scheduler.log", "wb"))
    worker = subprocess.Popen([*worker_wrapper, DASK, "worker", address, "--nthreads", "1", "--nworkers", "1",
                               "--no-dashboard", "--host", "127.0.0.1"],
                              stdout=subprocess.DEVNULL, stderr=open(logs / "worker.log", "wb"))
    try:
        wait_for(lambda: b"Starting established connection" in (logs / "worker.log").read_bytes()
                 or b"Registered to" in (logs / "worker.log").read_bytes(), 60, "the Dask worker to register")
        yield address, scheduler
    finally:
        # the worker first: stopped while its scheduler closes too, it hung 8 s before its nanny killed it
        for p in (worker, scheduler):
            if p.poll() is None:
                p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_a_killed_or_interrupted_client_keeps_every_recorded_game_leaves_no_bot_and_resumes(tmp_path, how):
    # 400 games: the first batch is 64 (harness.league.executors.dask.batches), recorded at once;
    # stopped at 20 or more, with 300-odd games (seconds) still to play; the rest resumes
    path, bot = league(tmp_path, rounds=200)
    run = harness("run", str(path), "--no-progress", "--dask", "local:1")
    store = tmp_path / "s.sqlite"
    try:
        wait_for(lambda: done(store) >= 20, 120, "20 games recorded")
        if how == "SIGKILL":
            os.kill(run.pid, signal.SIGKILL)  # the client alone: its LocalCluster and bots must not outlive it
            run.wait(30)
        else:
            run.send_signal(signal.SIGINT)
            _, err = run.communicate(timeout=60)
            assert run.returncode == 130 and "stopped:" in err and "run the same command again" in err, err
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    kept = done(store)
    assert 20 <= kept < 400, kept  # stopped mid-run, not after the last game
    wait_for(lambda: processes_with(str(bot)) == [], 30, "the bots to be gone")
    again = harness("run", str(path), "--no-progress", "--dask", "local:1")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"played {400 - kept} games" in out
    assert_each_game_once(path)
    assert processes_with(str(bot)) == []


def test_a_lost_scheduler_stops_the_run_in_one_line_and_the_league_resumes_on_a_new_cluster(tmp_path):
    path, bot = league(tmp_path, rounds=200)  # 400 games: the kill comes at 10 (the first batch), the rest resumes
    store = tmp_path / "s.sqlite"
    with cluster(tmp_path) as (address, scheduler):
        run = harness("run", str(path), "--no-progress", "--dask", address)
        try:
            wait_for(lambda: done(store) >= 10, 120, "10 games recorded")
            scheduler.kill()
            out, err = run.communicate(timeout=120)
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
                run.wait()
    assert run.returncode == 1
    stops = [line for line in err.splitlines() if line.startswith("stopped:")]
    assert len(stops) == 1 and "lost the Dask scheduler" in stops[0] and address in stops[0], err
    assert "Traceback" not in err
    kept = done(store)
    assert kept >= 10
    wait_for(lambda: processes_with(str(bot)) == [], 60, "the bots to be gone with their worker")
    with cluster(tmp_path) as (address, _):
        again = harness("run", str(path), "--no-progress", "--dask", address)
        out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"played {400 - kept} games" in out
    assert_each_game_once(path)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap (.ci/run installs it)")
def test_a_worker_whose_bot_file_differs_is_refused_naming_the_worker_and_the_file(tmp_path):
    path, bot = league(tmp_path, rounds=2)
    other = tmp_path / "other_version.py"
    other.write_text(bot.read_text() + "\n# another version\n")
    # the worker sees another file at the bot's path, as a machine with a stale copy would
    wrapper = ("bwrap", "--dev-bind", "/", "/", "--bind", str(other), str(bot), "--")
    with cluster(tmp_path, wrapper) as (address, _):
        run = harness("run", str(path), "--no-progress", "--dask", address)
        out, err = run.communicate(timeout=120)
    assert run.returncode == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: worker tcp://127.0.0.1:"), err
    assert f"bot file {bot} differs from the client's copy" in lines[0]
    assert done(tmp_path / "s.sqlite") == 0


def test_match_plays_on_dask_and_stops_when_the_test_decides(tmp_path):
    # greedy scores ~0.8 against random: at elo1=50 (s1 = 0.57, far below 0.8) the exact GSPRT
    # decides H1 within the first Dask batch of 64 games (about 25 sets at 5% error rates; at 1%
    # it needed ~40 sets, past the first two batches, by when the worker had played them all)
    run = harness("match", "crisps", "--bot", f"python3 {BOTS}/crisps_greedy.py", "--bot", f"python3 {BOTS}/random_bot.py",
                  "--games", "400", "--dask", "local:1", "--option", "max_turns=40", "--format", "json",
                  "--sprt", "elo0=0,elo1=50,alpha=0.05,beta=0.05", "--dir", str(tmp_path / "runs"))
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err
    summary = json.loads(out)
    assert summary["verdict"] == "H1" and summary["score"] > 0.7
    # stopped early: the batches left were cancelled, not played; the verdict is the deciding set's
    assert summary["games"] + summary["after_decision"]["games"] < 400
    assert summary["games"] == 2 * summary["sets"] and summary["llr"] >= summary["llr_bounds"][1]
