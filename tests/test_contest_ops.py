"""Running a contest for weeks: the ladder's pace, the game logs' retention, `harness contest status`
(real ladders of real bot processes; the pace's arithmetic on a fake clock)."""

from __future__ import annotations

import re
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

warnings.filterwarnings("ignore", message=".*httpx.*")

from harness.cli import cli  # noqa: E402
from harness.contest.auth import add_team  # noqa: E402
from harness.contest.config import LogRetention, init_contest, load_contest  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402
from harness.contest.pace import Pace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BOTS = {"alpha": REPO / "bots" / "random_bot.py", "beta": REPO / "tests" / "bots" / "contest_late_violator.py"}


def make_contest(tmp_path: Path, ladder: str = "round_robin", pace: int | None = 36, extra: str = "") -> Path:
    """A contest of crisps at two seats whose teams have a checked version each (no site needed)."""
    root = tmp_path / "course"
    init_contest(root, "crisps")
    text = (root / "contest.yaml").read_text()
    text = re.sub(r"^players: .*$", "players: [2]", text, flags=re.M)
    pace_text = "null" if pace is None else str(pace)
    text = re.sub(r"^ladder: .*$", f"ladder: {{schedule: {ladder}, games_per_hour: {pace_text}}}", text, flags=re.M)
    (root / "contest.yaml").write_text(text + extra)
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    for team, bot in BOTS.items():
        add_team(db, team)
        team_id = db.team_by_name(team)["id"]
        sid, _ = db.admit_submission(team_id, "python", "bot.py", 10, per_hour=10, in_progress=10)
        (cfg.submissions_dir / str(sid)).mkdir(parents=True)
        (cfg.submissions_dir / str(sid) / "bot.py").write_bytes(bot.read_bytes())
        db.activate(sid)
    db.close()
    return root


def test_the_pace_bucket_holds_ten_minutes_and_refills_at_the_pace() -> None:
    now = [0.0]
    pace = Pace(60, clock=lambda: now[0])  # one a minute, ten at once
    for _ in range(10):
        assert not pace.exhausted()
        pace.take()
    assert pace.exhausted() and round(pace.wait_seconds()) == 60
    pace.take()  # a game that was in flight: the wait grows by one game's time
    assert round(pace.wait_seconds()) == 120
    now[0] = 120.0
    assert not pace.exhausted()
    now[0] = 10 ** 6  # a long rest never holds more than the bucket
    for _ in range(10):
        pace.take()
    assert pace.exhausted()
    unlimited = Pace(None, clock=lambda: now[0])
    for _ in range(1000):
        unlimited.take()
    assert not unlimited.exhausted() and unlimited.wait_seconds() == 0


def _ladder_until_paced(root: Path, while_paced: Callable[[], None] | None = None) -> int:
    """Run the ladder (real bot processes) until it rests for its pace (``while_paced()`` is
    called then, the ladder resting); the games it played."""
    from harness.contest.ladder import LADDER_STORE, Standings, play_ladder

    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    standings = Standings(db, root / LADDER_STORE)
    lines: list[str] = []
    deadline = time.monotonic() + 120

    def stop() -> bool:
        paced = any("at the pace of" in line for line in lines)
        if paced and while_paced is not None:
            while_paced()
        return paced or time.monotonic() > deadline

    played = play_ladder(cfg, db, should_stop=stop, on_game=standings.on_game, echo=lines.append)
    standings.stop()
    db.close()
    assert any("at the pace of 36 games an hour: the next game in" in line for line in lines), lines
    return played


def test_the_ladder_keeps_to_its_pace_and_status_says_so(tmp_path: Path) -> None:
    root = make_contest(tmp_path)  # 36 games an hour: a bucket of 6
    outputs: list[str] = []
    played = _ladder_until_paced(root, lambda: outputs.append(CliRunner().invoke(cli, ["contest", "status",
                                                                                        str(root)]).output))
    assert 6 <= played <= 7  # the bucket, and at most the one game in flight with one worker
    out = CliRunner().invoke(cli, ["contest", "status", str(root)])
    assert out.exit_code == 0, out.output
    assert "ladder: stopped" in out.output
    out = CliRunner().invoke(cli, ["contest", "status", str(root)])
    assert f"games: {played} played, {played} in the last hour, " in out.output
    assert re.search(r"ladder: paced: the next game in \d+ s; 36 games an hour at most", outputs[0])
    assert "teams: 2 (2 with a checked version)" in out.output
    assert f"game logs: {played} kept" in out.output and "ladder.sqlite-logs" in out.output
    assert "kept 14 days, 90 days with a violation, within 2,048 MB" in out.output


def test_retention_drops_old_logs_keeps_violations_longer_and_keeps_to_the_disk_budget(tmp_path: Path) -> None:
    from harness.contest.ladder import LADDER_STORE
    from harness.contest.retention import prune_logs
    from harness.league.store import LeagueStore

    root = make_contest(tmp_path)
    played = _ladder_until_paced(root)
    store_path = root / LADDER_STORE
    with LeagueStore(store_path, create=False) as store:
        violated = {r[0] for r in store.db.execute("SELECT game_seq FROM violations")}
        done = [r[0] for r in store.db.execute("SELECT seq FROM games WHERE status = 'done'")]
    assert violated and len(done) == played  # the late violator broke a rule in one game
    keep = LogRetention(keep_days=14, violations_days=90, disk_mb=2048)
    assert prune_logs(store_path, keep).expired == 0  # nothing is old yet
    pruned = prune_logs(store_path, keep, now=time.time() + 20 * 86400)
    assert pruned.expired == played - len(violated)
    with LeagueStore(store_path, create=False) as store:
        kept = {s for s in done if store.game_log(s) is not None}
        assert kept == violated
        assert store.counts()["done"] == played  # results are never dropped
    assert prune_logs(store_path, keep, now=time.time() + 91 * 86400).expired == len(violated)
    # the disk budget: a fresh ladder whose logs are over it loses the oldest, violations last
    root2 = make_contest(tmp_path / "two")
    _ladder_until_paced(root2)
    pruned = prune_logs(root2 / LADDER_STORE, LogRetention(disk_mb=1024))
    assert pruned.over_budget == 0
    pruned = prune_logs(root2 / LADDER_STORE, LogRetention(disk_mb=0))
    assert pruned.over_budget > 0
    with LeagueStore(root2 / LADDER_STORE, create=False) as store:
        assert store.logs.count() == 0


def test_a_game_whose_log_was_dropped_keeps_its_result_and_its_page_says_why(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from harness.contest.ladder import LADDER_STORE
    from harness.contest.retention import prune_logs
    from harness.contest.server import create_app
    from harness.league.store import LeagueStore

    root = make_contest(tmp_path)
    _ladder_until_paced(root)
    prune_logs(root / LADDER_STORE, LogRetention(disk_mb=0))
    with LeagueStore(root / LADDER_STORE, create=False) as store:
        game_id = store.db.execute("SELECT id FROM games WHERE status = 'done' LIMIT 1").fetchone()[0]
    page = TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1").get(f"/games/{game_id}")
    assert page.status_code == 200
    assert "log of this game was dropped" in page.text and "14 days" in page.text


def test_a_paced_ladder_stops_when_asked_while_it_rests(tmp_path: Path) -> None:
    from harness.contest.ladder import play_ladder

    root = make_contest(tmp_path, pace=1)  # a bucket of one game, then an hour's wait
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    stop = threading.Event()
    lines: list[str] = []

    def echo(line: str) -> None:
        lines.append(line)
        if "the next game in" in line:  # resting for an hour: Ctrl-C comes a moment later
            threading.Timer(0.3, stop.set).start()

    played = play_ladder(cfg, db, should_stop=stop.is_set, echo=echo)
    assert 1 <= played <= 2  # the hour's one token, and the game in flight when it ran out
    waits = [int(m.group(1)) for line in lines if (m := re.search(r"the next game in (\d+) s", line))]
    assert waits and 3590 * played <= waits[0] <= 3600 * played, lines
    db.close()
