"""Adaptive leagues end to end: real bot processes, `harness run` killed with SIGKILL, a roster that changes.

The bots are the deterministic greedy Crisps bots (Python and JavaScript), so a game's result
depends only on its deal and seats: a league killed and resumed must then play exactly the
games, with the same results, of the same league played without a stop.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli
from harness.league.config import load_config
from harness.league.store import LeagueStore

REPO = Path(__file__).resolve().parent.parent
BOTS = REPO / "bots"
HARNESS = [str(Path(sys.executable).parent / "harness")]


def league(dir_: Path, budget: int, bots: list[str], extra: str = "") -> Path:
    dir_.mkdir(exist_ok=True)
    lines = "\n".join(f"  - {{name: {b}, command: {cmd}}}" for b, cmd in (_bot(name) for name in bots))
    path = dir_ / "ladder.yaml"
    path.write_text(f"name: ladder\ngame: crisps\noptions: {{max_turns: 60}}\nworkers: 2\nseed: 3\n"
                    f"schedule: {{kind: adaptive, games: {budget}}}\nstore: {dir_ / 'ladder.sqlite'}\n{extra}"
                    f"bots:\n{lines}\n")
    return path


def _bot(name: str) -> tuple[str, str]:
    if name.startswith("js"):
        return name, f"node {BOTS}/crisps_greedy.js"
    return name, f"python3 {BOTS}/crisps_greedy.py --name {name}"


def done(store: Path) -> int:
    if not store.exists():
        return 0
    db = sqlite3.connect(store, timeout=10)
    try:
        return db.execute("SELECT count(*) FROM games WHERE status = 'done'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def results(path: Path) -> list[tuple[str, str, str]]:
    with LeagueStore(load_config(path).store) as store:
        return sorted((r[0], r[1], str(r[2])) for r in store.db.execute(
            "SELECT id, status, (SELECT group_concat(rank) FROM seats WHERE game_seq = seq) FROM games"))


def run(path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["run", str(path), "--no-progress", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_killed_with_sigkill_and_run_again_it_plays_the_games_of_an_uninterrupted_league(tmp_path: Path) -> None:
    bots = ["a", "b", "c", "js1", "js2"]
    # 120 games: a few adaptive rounds on each side of both kills (each played twice: whole, killed)
    whole = league(tmp_path / "whole", 120, bots)
    killed = league(tmp_path / "killed", 120, bots)
    out = run(whole)
    assert "played 120 games" in out and "finished: the budget of 120 games is played (schedule.games)" in out
    store = Path(load_config(killed).store)
    # Deals come from each store's own secret: the killed league is given the whole one's, so that
    # the same results choose the same games (the property under test)
    with LeagueStore(load_config(whole).store, create=False) as st:
        secret = st.deal_secret()
    with LeagueStore(str(store)) as st:
        st.set_meta("deal_secret", secret or "")
    for stop_at in (20, 60):  # killed twice, mid-round
        runner = subprocess.Popen(HARNESS + ["run", str(killed), "--no-progress"], cwd=tmp_path,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while done(store) < stop_at and time.monotonic() < deadline and runner.poll() is None:
            time.sleep(0.02)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        assert stop_at <= done(store) < 120, "the runner finished before it could be killed"
    before = done(store)
    out = run(killed)
    assert f"played {120 - before} games" in out  # nothing played twice, nothing lost
    assert results(killed) == results(whole)  # the same games chosen, with the same results
    with LeagueStore(str(store)) as st:
        assert st.counts() == {"pending": 0, "done": 120, "dropped": 0}
    table = json.loads(CliRunner().invoke(cli, ["table", str(killed), "--format", "json"]).output)["table"]
    games = [row["games"] for row in table]
    assert sum(games) == 2 * 120 and max(games) <= 1.25 * min(games)


def test_a_bot_joins_and_one_leaves_while_the_ladder_plays(tmp_path: Path) -> None:
    path = league(tmp_path / "live", 100_000, ["a", "b", "c", "js1"])
    store = Path(load_config(path).store)
    runner = subprocess.Popen(HARNESS + ["run", str(path), "--no-progress", "--forever"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while done(store) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        text = path.read_text()
        # as `harness submit` does: the whole file replaced at once
        edited = text.replace("  - {name: c, command: python3", "  - {name: newbie, command: python3 "
                              f"{BOTS}/crisps_greedy.py --name newbie}}\n  - {{name: c, command: python3")
        edited = edited.replace("  - {name: b, command: python3 " + f"{BOTS}/crisps_greedy.py --name b}}\n", "")
        assert edited.count("name:") == text.count("name:")  # one in, one out
        tmp = path.with_suffix(".tmp")
        tmp.write_text(edited)
        os.replace(tmp, path)
        mark = done(store)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _games_of(store, "newbie") < 30:
            time.sleep(0.05)
        assert _games_of(store, "newbie") >= 30, "the new bot did not join"
        b_games = _games_of(store, "b")
        played_since = done(store) - mark
        more = done(store) + 30  # the ladder goes on: 30 more games, none of them b's
        while done(store) < more and time.monotonic() < deadline:
            time.sleep(0.05)
        assert done(store) >= more
        assert _games_of(store, "b") == b_games, "a bot that left is still chosen"
    finally:
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=60)
    assert "joined: newbie@" in err and "left: b@" in err and "(its games and rating stay)" in err
    assert played_since >= 30
    with LeagueStore(str(store)) as st:
        assert st.counts()["pending"] == 0 or all(
            "b" not in [r.name for r in st.game_seats(g.seq)] for g in st.pending_games())
    table = json.loads(CliRunner().invoke(cli, ["table", str(path), "--format", "json"]).output)["table"]
    assert {row["bot"] for row in table} == {"a", "b", "c", "js1", "newbie"}  # b keeps its games and rating


def _games_of(store: Path, name: str) -> int:
    db = sqlite3.connect(store, timeout=10)
    try:
        return db.execute("SELECT count(*) FROM seats s JOIN versions v ON v.id = s.version_id JOIN bots b "
                          "ON b.id = v.bot_id WHERE b.name = ?", (name,)).fetchone()[0]
    finally:
        db.close()
