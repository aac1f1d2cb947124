"""Leagues end to end: real bot processes under the real referee, through the `harness` commands."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.games import get_game
from harness.league import queries
from harness.league.config import load_config
from harness.league.schedule_roundrobin import build_schedule
from harness.league.store import LeagueStore
from harness.report.tables import replay_actions

REPO = Path(__file__).resolve().parent.parent
BOTS = REPO / "bots"
FLAKY = Path(__file__).resolve().parent / "league_bots" / "flaky_bot.py"
HARNESS = [str(Path(sys.executable).parent / "harness")]


def league(tmp_path: Path, body: str, name: str = "t") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nstore: {tmp_path / (name + '.sqlite')}\nworkers: 2\n" + body)
    return path


def invoke(*args: str):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def check_games_replay(path: Path) -> None:
    """Every stored log replays, from the seed, to the stored result."""
    cfg = load_config(path)
    game = get_game(cfg.game)
    with LeagueStore(cfg.store) as store:
        for row in queries.done_games(store):
            seats = store.game_seats(row.seq)
            state = game.new_state(len(seats), row.seed, cfg.options)
            for _seat, action, _how in replay_actions(store.game_log(row.seq)):
                state.apply(action)
            assert state.is_terminal()
            if not any(s.forfeited for s in seats):
                assert state.result()["ranking"] == [s.rank for s in seats]


GAMES = {
    "epizodiak": f"""game: epizodiak
options: {{max_turns: 40}}
bots:
  - {{name: py, command: python3 {BOTS}/random_bot.py}}
  - {{name: js, command: node {BOTS}/random_bot.js}}
  - {{name: py2, command: [python3, {BOTS}/random_bot.py]}}
""",
    "dominoes": f"""game: dominoes
players: [2, 4]
options: {{max_turns: 16}}
bots:
  - {{name: a, command: python3 {BOTS}/random_bot.py}}
  - {{name: b, command: node {BOTS}/random_bot.js}}
  - {{name: c, command: python3 {BOTS}/random_bot.py}}
  - {{name: d, command: node {BOTS}/random_bot.js}}
""",
    "crisps": f"""game: crisps
rounds: 2
options: {{max_turns: 40}}
bots:
  - {{name: py, command: python3 {BOTS}/random_bot.py}}
  - {{name: js, command: node {BOTS}/random_bot.js}}
""",
}


@pytest.mark.parametrize("game", list(GAMES))
def test_a_small_league_of_each_game_runs_and_tables(tmp_path: Path, game: str) -> None:
    path = league(tmp_path, GAMES[game])
    out = invoke("run", path, "--no-progress").output
    cfg = load_config(path)
    total = len(build_schedule(cfg))
    assert f"played {total} games" in out and "0 violations" in out
    table = invoke("table", path, "--format", "json").output
    data = json.loads(table)
    assert data["games_done"] == total and data["games_pending"] == 0
    assert {r["bot"] for r in data["table"]} == {b.name for b in cfg.bots}
    seats = sum(r["games"] for r in data["table"])
    assert seats == sum(len(g.seats) for g in build_schedule(cfg))
    assert all(r["violations"] == 0 for r in data["table"])
    check_games_replay(path)
    with LeagueStore(cfg.store) as store:
        first = store.db.execute("SELECT id FROM games ORDER BY seq LIMIT 1").fetchone()[0]
    text = invoke("replay", path, first[:8]).output
    assert text.startswith(f"game {first}: {game}") and "result (" in text and "1. seat " in text
    assert "does not replay" not in text


def test_greedy_is_rated_above_random(tmp_path: Path) -> None:
    """Crisps greedy beats random in ~95% of games: 60 games put it far above, whatever the order.

    The deals and the bots' seeds are fixed, but which games each persistent random process plays
    (so its random draws) depends on the workers' timing: a game or two may go either way.
    """
    path = league(tmp_path, f"""game: crisps
rounds: 30
bots:
  - {{name: random, command: python3 {BOTS}/random_bot.py --seed 1}}
  - {{name: greedy, command: python3 {BOTS}/crisps_greedy.py}}
""")
    invoke("run", path, "--no-progress")
    rows = json.loads(invoke("table", path, "--format", "json").output)["table"]
    assert [r["bot"] for r in rows] == ["greedy", "random"]  # by mu - 3 sigma
    assert rows[0]["wins"] >= 0.85 * rows[0]["games"] == 0.85 * 60
    assert rows[0]["mu"] - rows[1]["mu"] > 5 and rows[0]["rating"] > rows[1]["rating"] + 5


def test_a_misbehaving_bot_forfeits_and_the_league_completes(tmp_path: Path) -> None:
    path = league(tmp_path, f"""game: crisps
rounds: 3
time: {{move_ms: 1000}}  # the hang costs a second; a loaded machine must not time out the others
bots:
  - {{name: flaky, command: python3 {FLAKY} --every 4}}
  - {{name: random, command: python3 {BOTS}/random_bot.py}}
""")
    out = invoke("run", path, "--no-progress").output
    assert "played 6 games" in out and "harness violations" in out
    cfg = load_config(path)
    with LeagueStore(cfg.store) as store:
        games = store.db.execute("SELECT seq FROM games WHERE status = 'done'").fetchall()
        assert len(games) == 6
        for (seq,) in games:
            seats = {s.name: s for s in store.game_seats(seq)}
            assert seats["flaky"].forfeited == 1 and seats["flaky"].rank == 1
            assert seats["random"].rank == 0
    lines = invoke("violations", path).stdout.splitlines()
    assert len(lines) == 6  # one per game: the first violation forfeits
    kinds = {line.split()[7] for line in lines}
    assert kinds <= {"illegal", "malformed", "timeout", "crash"} and len(kinds) >= 2
    assert all(" flaky@" in line for line in lines)
    first_id = lines[0].split()[0].lstrip("#")
    shown = invoke("violations", path, "--show", first_id).output
    assert '"type":"request"' in shown.replace(" ", "") and "flaky: misbehaving" in shown  # its stderr tail
    # replayed to a fresh process of the same bot (the seat's game up to the violation, so the bot
    # misbehaves again: exit 1) and to another bot (a legal answer: exit 0)
    again = CliRunner().invoke(cli, ["violations", str(path), "--replay", first_id])
    assert again.exit_code == 1 and "verdict: still a violation" in again.output, again.output
    other = invoke("violations", path, "--replay", first_id, "--bot",
                   f"{sys.executable} {BOTS}/random_bot.py").output
    assert "verdict: a legal answer" in other
    rows = json.loads(invoke("table", path, "--format", "json").output)["table"]
    assert rows[-1]["bot"] == "flaky" and rows[-1]["violations"] == 6
    assert invoke("violations", path, "--bot", "random").stdout == ""


def _processes_with(text: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def _done(store: Path) -> int:
    if not store.exists():
        return 0
    db = sqlite3.connect(store, timeout=10)
    try:
        return db.execute("SELECT count(*) FROM games WHERE status = 'done'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def test_resume_after_kill_9_plays_the_rest_exactly_once(tmp_path: Path) -> None:
    bot = tmp_path / "marked_random_bot.py"  # a unique path: find its processes afterwards
    shutil.copy(BOTS / "random_bot.py", bot)
    path = league(tmp_path, f"""game: crisps
rounds: 30
options: {{max_turns: 40}}
bots:
  - {{name: a, command: python3 {bot}}}
  - {{name: b, command: python3 {bot} }}
  - {{name: c, command: node {BOTS}/random_bot.js}}
""")
    cfg = load_config(path)
    store = Path(cfg.store)
    total = len(build_schedule(cfg))
    runner = subprocess.Popen(HARNESS + ["run", str(path), "--no-progress"], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while _done(store) < 10 and time.monotonic() < deadline and runner.poll() is None:
        time.sleep(0.05)
    os.kill(runner.pid, signal.SIGKILL)
    runner.wait()
    first = _done(store)
    assert 10 <= first < total, "the runner finished before it could be killed: make the league longer"
    # the orphaned workers notice and kill their bots
    deadline = time.monotonic() + 10
    while _processes_with(str(bot)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(str(bot)) == []
    out = invoke("run", path, "--no-progress").output
    with LeagueStore(cfg.store) as st:
        assert st.counts() == {"pending": 0, "done": total, "dropped": 0}
        ids = [r[0] for r in st.db.execute("SELECT id FROM games")]
        assert len(ids) == len(set(ids)) == total
        assert {g.game_id for g in build_schedule(cfg, id_key=st.id_key())} == set(ids)
        unranked = st.db.execute("SELECT count(*) FROM seats WHERE rank IS NULL").fetchone()[0]
        assert unranked == 0
        assert st.get_meta("rated_upto") == str(total)
    played = int(out.split("played ")[1].split()[0])
    assert played == total - first  # nothing replayed, nothing counted twice
    seats = sum(r["games"] for r in json.loads(invoke("table", path, "--format", "json").output)["table"])
    assert seats == 2 * total


def test_ctrl_c_stops_cleanly_and_a_rerun_finishes(tmp_path: Path) -> None:
    bot = tmp_path / "marked_for_sigint.py"
    shutil.copy(BOTS / "random_bot.py", bot)
    path = league(tmp_path, f"""game: crisps
rounds: 15
options: {{max_turns: 40}}
bots:
  - {{name: a, command: python3 {bot}}}
  - {{name: b, command: python3 {bot} --seed 2}}
  - {{name: c, command: python3 {bot} --seed 3}}
""")
    cfg = load_config(path)
    total = len(build_schedule(cfg))
    runner = subprocess.Popen(HARNESS + ["run", str(path), "--no-progress"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while _done(Path(cfg.store)) < 5 and time.monotonic() < deadline and runner.poll() is None:
        time.sleep(0.05)
    runner.send_signal(signal.SIGINT)
    out, err = runner.communicate(timeout=30)
    assert runner.returncode == 130, (out, err)
    assert "run the same command again to resume" in err and "Traceback" not in err
    recorded = int(err.split("stopped: ")[1].split()[0])
    assert recorded == _done(Path(cfg.store)) < total
    assert _processes_with(str(bot)) == []  # every bot was killed on the way out
    out = invoke("run", path, "--no-progress").output
    assert f"played {total - recorded} games" in out and f"{total} done, 0 left" in out


def test_strikes_policy_and_sandbox_reach_the_referee(tmp_path: Path) -> None:
    """With `policy: strikes` a misbehaving bot keeps its seat; `limits.sandbox: bwrap` runs every bot sandboxed."""
    assert shutil.which("bwrap"), "bubblewrap is needed (.ci/run installs it)"
    path = league(tmp_path, f"""game: crisps
policy: strikes
strikes: 1000
limits: {{sandbox: bwrap}}
bots:
  - {{name: flaky, command: [python3, "{FLAKY}", --every, "4", --kinds, "illegal,garbage"]}}
  - {{name: random, command: python3 {BOTS}/random_bot.py}}
""")
    invoke("run", path, "--no-progress")
    cfg = load_config(path)
    with LeagueStore(cfg.store) as store:
        games = [r[0] for r in store.db.execute("SELECT seq FROM games WHERE status = 'done'")]
        assert len(games) == 2
        for seq in games:
            assert not any(s.forfeited for s in store.game_seats(seq))
            assert len(store.violations(game_seq=seq)) >= 3  # every 4th request, and the game went on
        assert {r.kind for r in store.violations()} <= {"illegal", "malformed"}
        log = store.game_log(games[0])
    started = [e for e in log if e.get("type") == "send" and e["msg"].get("type") == "hello"]
    assert started  # the bots were started for this game (inside bwrap: see the harness's own log of each bot)
    logs = list((tmp_path / "t.logs").rglob("*.harness.log"))
    assert logs and any("bwrap" in p.read_text(errors="replace") for p in logs)
    # the bot's stderr log has its own output and a short line per start, never the command line
    assert not any("bwrap" in p.read_text(errors="replace") for p in (tmp_path / "t.logs").rglob("*.stderr.log"))


def test_pairs_ahead_counts_per_ordered_pair_the_games_one_finished_ahead_and_those_shared(tmp_path: Path) -> None:
    """queries.pairs_ahead (the contest's head to head): per ordered pair of the versions asked,
    the games one finished ahead of the other and the games they shared; a pair that never
    met has no row, and a version not asked is left out."""
    import json

    from harness.league.bot_entries import BotEntry
    from harness.league.queries import pair_ranks, pairs_ahead
    from harness.league.store import GameOutcome, LeagueStore

    with LeagueStore(tmp_path / "l.sqlite") as store:
        ids = store.register_versions([BotEntry(n, ("x",), "/", "v1") for n in ("a", "b", "c", "d")])
        a, b, c, d = ids["a@v1"], ids["b@v1"], ids["c@v1"], ids["d@v1"]
        store.plan_rows([[("g1", 1, 2, 7, json.dumps([a, b])), ("g2", 1, 2, 8, json.dumps([b, a])),
                          ("g3", 1, 2, 9, json.dumps([a, c])), ("g4", 1, 2, 10, json.dumps([c, d]))]])
        for game_id, ranking in (("g1", [0, 1]), ("g2", [1, 0]), ("g3", [1, 0]), ("g4", [0, 1])):
            store.record(store.game(game_id).seq, GameOutcome(game_id, ranking=ranking, scores=[1, 0], ended_by="rules"))
        rows = {(x, y): (ahead, shared) for x, y, ahead, shared in pairs_ahead(store, [a, b, c])}
        g1, g2 = store.game("g1").seq, store.game("g2").seq
        assert pair_ranks(store, [a], [b]) == [(g2, 0, 1), (g1, 0, 1)]  # latest first: a ahead in both
        assert pair_ranks(store, [], [b]) == pair_ranks(store, [a], []) == []
    assert rows == {(a, b): (2, 2), (b, a): (0, 2), (a, c): (0, 1), (c, a): (1, 1)}


def test_a_store_is_ready_only_once_it_exists_with_its_schema(tmp_path: Path) -> None:
    """StoreBase.ready (what `harness serve` and the contest site wait on) never creates a file:
    a missing path and an empty file are not ready; a store that was opened once is."""
    from harness.league.store import LeagueStore
    from harness.league.store_base import StoreBase

    path = tmp_path / "l.sqlite"
    assert not StoreBase.ready(path) and not path.exists()
    path.write_bytes(b"")
    assert not StoreBase.ready(path)
    path.unlink()
    with LeagueStore(path):
        pass
    assert StoreBase.ready(path)


def test_finished_after_gives_each_done_games_ranks_and_a_pending_games_versions_without_ranks(tmp_path: Path) -> None:
    """store.finished_after (what the incremental ratings replay): games after a seq in order,
    each (seq, status, [(version, rank) by seat]); a game not done yet has its planned versions
    with no ranks; ``limit`` cuts the list."""
    import json

    from harness.league.bot_entries import BotEntry
    from harness.league.store import GameOutcome, LeagueStore

    with LeagueStore(tmp_path / "l.sqlite") as store:
        ids = store.register_versions([BotEntry(n, ("x",), "/", "v1") for n in ("a", "b")])
        a, b = ids["a@v1"], ids["b@v1"]
        store.plan_rows([[("g1", 1, 2, 7, json.dumps([a, b])), ("g2", 1, 2, 8, json.dumps([b, a]))]])
        first = store.game("g1").seq
        store.record(first, GameOutcome("g1", ranking=[1, 0], scores=[0, 1], ended_by="rules"))
        assert list(store.finished_after(0)) == [(first, "done", [(a, 1), (b, 0)]),
                                                  (first + 1, "pending", [(b, None), (a, None)])]
        assert list(store.finished_after(first)) == [(first + 1, "pending", [(b, None), (a, None)])]
        assert list(store.finished_after(0, limit=1)) == [(first, "done", [(a, 1), (b, 0)])]
