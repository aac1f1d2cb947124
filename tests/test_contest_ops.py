"""Running a contest for weeks: the ladder's pace, the game logs' retention, `harness contest status`
(real ladders of real bot processes; the pace's arithmetic on a fake clock)."""

from __future__ import annotations

import json
import re
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

warnings.filterwarnings("ignore", message=".*httpx.*")

from kit import checked_version, set_keys  # noqa: E402

from harness.cli import cli  # noqa: E402
from harness.contest.auth import add_team  # noqa: E402
from harness.contest.config import LogRetention, init_contest, load_contest  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402
from harness.contest.pace import Pace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BOTS = {"alpha": REPO / "bots" / "random_bot.py", "beta": REPO / "tests" / "bots" / "contest_late_violator.py"}


def make_contest(tmp_path: Path, ladder: str = "round_robin", pace: int | None = 36, extra: str = "",
                 bots: dict[str, Path] | None = None) -> Path:
    """A contest of crisps at two seats whose teams have a checked version each (no site needed)."""
    root = tmp_path / "course"
    init_contest(root, "crisps")
    pace_text = "null" if pace is None else str(pace)
    set_keys(root, players="[2]", ladder=f"{{schedule: {ladder}, games_per_hour: {pace_text}}}")
    if "pause:" not in extra:  # beta violates now and then: these tests want it playing, not auto-paused
        set_keys(root, pause="{forfeit_rate: null, violation_rate: null}")
    with (root / "contest.yaml").open("a") as f:
        f.write(extra)
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    for team, bot in (bots or BOTS).items():
        add_team(db, team)
        checked_version(root, db, team, {"bot.py": bot.read_bytes()})
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


# -- the organizer -------------------------------------------------------------------------------
def _site(root: Path):  # type: ignore[no-untyped-def]
    from starlette.testclient import TestClient

    from harness.contest.server import create_app

    return TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1")


def _signin(client, token: str):  # type: ignore[no-untyped-def]
    page = client.get("/signin")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    return client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False)


def _org_csrf(client) -> str:  # type: ignore[no-untyped-def]
    return re.search(r'name="csrf" value="([^"]+)"', client.get("/organizer").text).group(1)


def test_init_prints_the_organizer_token_which_alone_opens_the_organizer_pages(tmp_path: Path) -> None:
    root = tmp_path / "course"
    out = CliRunner().invoke(cli, ["contest", "init", str(root), "--game", "crisps"])
    assert out.exit_code == 0, out.output
    org_token = out.output.strip().splitlines()[-1]
    assert org_token.startswith("tbo_")
    team_token = CliRunner().invoke(cli, ["contest", "team", "add", str(root), "alpha"]).output.strip().splitlines()[-1]
    with _site(root) as nobody, _site(root) as team, _site(root) as org:
        assert nobody.get("/organizer").status_code == 403
        assert _signin(team, team_token).headers["location"] == "/me"
        assert team.get("/organizer").status_code == 403 and team.get("/organizer/audit").status_code == 403
        assert _signin(org, "tbo_" + "x" * 43).status_code == 401  # a wrong organizer token
        r = _signin(org, org_token)
        assert r.status_code == 303 and r.headers["location"] == "/organizer"
        cookie = r.headers["set-cookie"]
        assert "contest_organizer=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        page = org.get("/organizer")
        assert page.status_code == 200 and 'data-team="alpha"' in page.text and "no version yet" in page.text
        assert "teams: 1 (0 with a checked version)" in page.text and "game logs: 0 kept" in page.text
        # an action without the session's CSRF token is refused and does nothing
        r = org.post("/organizer/act", data={"action": "announce", "text": "FORGED"})
        assert r.status_code == 403
        r = team.post("/organizer/act", data={"action": "announce", "text": "FORGED", "csrf": "x"})
        assert r.status_code == 403
        assert "FORGED" not in nobody.get("/").text
        # a new organizer token signs the old session out
        new = CliRunner().invoke(cli, ["contest", "organizer-token", str(root)]).output.strip().splitlines()[-1]
        assert org.get("/organizer").status_code == 403 and _signin(org, org_token).status_code == 401
        assert _signin(org, new).headers["location"] == "/organizer"


def test_disable_reset_remove_announce_and_the_audit(tmp_path: Path) -> None:
    from harness.contest.ladder import roster_key

    root = make_contest(tmp_path)
    _ladder_until_paced(root)  # games to keep
    db = ContestDB(root / "contest.sqlite")
    from harness.contest.auth import renew_token
    from harness.contest.controls import new_organizer_token

    org_token = new_organizer_token(db, "test")
    beta_token = renew_token(db, "beta")
    assert [t for t, _ in roster_key(db)] == ["alpha", "beta"]
    with _site(root) as org, _site(root) as beta, _site(root) as public:
        _signin(org, org_token)
        _signin(beta, beta_token)
        csrf = _org_csrf(org)
        r = org.post("/organizer/act", data={"csrf": csrf, "action": "disable", "team": "beta",
                                             "reason": "its bot opens network sockets"})
        assert r.status_code == 200 and "team beta disabled" in r.text
        assert [t for t, _ in roster_key(db)] == ["alpha"]  # the ladder's next look leaves it out
        assert "out of the ladder, disabled by the organizer: its bot opens network sockets" in beta.get("/me").text
        assert "its bot opens network sockets" not in public.get("/games").text.split("<main>")[1][:400]
        assert "disabled" in public.get("/").text  # marked on the leaderboard
        org.post("/organizer/act", data={"csrf": csrf, "action": "enable", "team": "beta"})
        assert [t for t, _ in roster_key(db)] == ["alpha", "beta"]
        org.post("/organizer/act", data={"csrf": csrf, "action": "disable", "version": "s2", "reason": "crashes"})
        assert [t for t, _ in roster_key(db)] == ["alpha"]
        assert "your version s2 is out of the ladder" in beta.get("/me").text
        org.post("/organizer/act", data={"csrf": csrf, "action": "announce", "text": "Finals on Friday 14:00"})
        for client in (public, beta):
            assert "Finals on Friday 14:00" in client.get("/").text
        # reset: no version until the next upload; its games stay, marked on the organizer's page
        assert "before the reset" not in org.get("/organizer/teams/alpha").text
        time.sleep(1.0)  # the games' finishing times are whole seconds: the reset comes after theirs
        org.post("/organizer/act", data={"csrf": csrf, "action": "reset", "team": "alpha", "reason": "asked"})
        assert roster_key(db) == ()
        assert "before the reset" in org.get("/organizer/teams/alpha").text
        row = re.search(r'<tr data-team="alpha" class="no-version">.*?</tr>', public.get("/").text, re.S)
        assert row and "no version yet" in row.group(0)
        # remove: only with the name typed again; then signed out, token dead, off the leaderboard
        r = org.post("/organizer/act", data={"csrf": csrf, "action": "remove", "team": "beta", "confirm": "bet"})
        assert r.status_code == 400 and "type its name" in r.text
        r = org.post("/organizer/act", data={"csrf": csrf, "action": "remove", "team": "beta", "confirm": "beta",
                                             "reason": "left the course"})
        assert "team beta removed" in r.text
        assert beta.get("/me", follow_redirects=False).status_code == 303  # signed out
        assert _signin(beta, beta_token).status_code == 401
        assert 'data-team="beta"' not in public.get("/").text
        games = public.get("/games").text  # its games stay, marked
        assert "beta@s2</b> (removed) won" in games or "beta@s2 (removed) lost" in games
        audit = org.get("/organizer/audit").text
        for action in ("disable team", "enable team", "disable version", "announce", "reset team", "remove team"):
            assert f"<td>{action}</td>" in audit
        assert "organizer (site, testclient)" in audit
    out = CliRunner().invoke(cli, ["contest", "disable", str(root), "--team", "nosuch", "--reason", "x"])
    assert out.exit_code != 0 and "no team named 'nosuch'" in out.output
    out = CliRunner().invoke(cli, ["contest", "announce", str(root), "From the terminal"])
    assert out.exit_code == 0 and "announced" in out.output
    out = CliRunner().invoke(cli, ["contest", "audit", str(root)])
    assert re.search(r"UTC  cli \(\w+\)  announce: From the terminal", out.output), out.output
    db.close()


def test_phases_close_and_open_uploads_and_the_organizer_reopens_them(tmp_path: Path) -> None:
    from harness.contest.phases import upload_state

    root = make_contest(tmp_path, extra="")
    text = (root / "contest.yaml").read_text()
    (root / "contest.yaml").write_text(text.replace("phases: {opens: null, uploads_close: null, finals: null}",
                                                    "phases: {opens: 2030-01-12 09:00, uploads_close: 2030-03-01 "
                                                    "17:00+01:00, finals: '2030-03-02 10:00'}"))
    cfg = load_contest(root)
    assert cfg.phases.uploads_close == 1898611200.0  # 2030-03-01 16:00 UTC
    db = ContestDB(cfg.db_path)
    state = upload_state(cfg, db)
    assert not state.open and state.line == ("uploads closed: the contest opens 2030-01-12 09:00 UTC; the finals "
                                             "are planned for 2030-03-02 10:00 UTC")
    assert upload_state(cfg, db, now=1896134400).open  # 2030-02-01: in between
    closed = upload_state(cfg, db, now=1898611200)
    assert not closed.open and closed.line.startswith("uploads closed since 2030-03-01 16:00 UTC")
    token = CliRunner().invoke(cli, ["contest", "team", "token", str(root), "alpha"]).output.strip().splitlines()[-1]
    with _site(root) as client:
        r = client.post("/api/submissions", headers={"Authorization": f"Bearer {token}"}, data={"runtime": "python"},
                        files={"file": ("bot.py", b"print(1)\n")})
        assert r.status_code == 403 and "the contest opens 2030-01-12 09:00 UTC" in r.json()["error"]
        assert CliRunner().invoke(cli, ["contest", "reopen", str(root), "--hours", "2"]).exit_code == 0
        assert upload_state(cfg, db).line.startswith("uploads open (reopened by the organizer until ")
        r = client.post("/api/submissions", headers={"Authorization": f"Bearer {token}"}, data={"runtime": "python"},
                        files={"file": ("bot.py", b"print(1)\n")})
        assert r.status_code == 201
        assert CliRunner().invoke(cli, ["contest", "close", str(root)]).exit_code == 0
        r = client.post("/api/submissions", headers={"Authorization": f"Bearer {token}"}, data={"runtime": "python"},
                        files={"file": ("bot.py", b"print(1)\n")})
        assert r.status_code == 403 and "closed by the organizer" in r.json()["error"]
        assert "uploads closed by the organizer" in client.get("/").text
    db.close()


def test_team_import_adds_every_team_and_writes_tokens_only_the_organizer_can_read(tmp_path: Path) -> None:
    root = tmp_path / "course"
    CliRunner().invoke(cli, ["contest", "init", str(root), "--game", "crisps"])
    bad = tmp_path / "bad.csv"
    bad.write_text("name,members\nred,Ann\nblue team,Bo\n")
    out = CliRunner().invoke(cli, ["contest", "team", "import", str(root), str(bad)])
    assert out.exit_code != 0 and "bad.csv:3: 'blue team' is not allowed" in out.output
    assert ContestDB(root / "contest.sqlite").teams() == []  # nothing added
    good = tmp_path / "teams.csv"
    good.write_text("name,members\nred,Ann\n\nblue,Bo;Cy\ngreen\n")
    tokens = tmp_path / "tokens.csv"
    out = CliRunner().invoke(cli, ["contest", "team", "import", str(root), str(good), "--out", str(tokens)])
    assert out.exit_code == 0 and "3 teams added" in out.output and "tb" not in out.output.split("tokens are")[0]
    assert tokens.stat().st_mode & 0o777 == 0o600
    lines = tokens.read_text().splitlines()
    assert lines[0] == "team,token" and [line.split(",")[0] for line in lines[1:]] == ["red", "blue", "green"]
    with _site(root) as client:
        assert _signin(client, lines[2].split(",")[1]).headers["location"] == "/me"
    out = CliRunner().invoke(cli, ["contest", "team", "import", str(root), str(good), "--out", str(tokens)])
    assert out.exit_code != 0 and "exists already" in out.output  # red is taken; the file is never overwritten


def test_the_leaderboard_shows_harness_tables_fit_and_its_age(tmp_path: Path) -> None:
    import json

    from harness.contest.board_fit import refit

    root = make_contest(tmp_path)
    played = _ladder_until_paced(root)
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    with _site(root) as client:
        assert "until the ladder&#39;s first batch fit" in client.get("/").text
        assert refit(cfg, db) == played
        board = client.get("/api/leaderboard").json()
        page = client.get("/").text
    out = CliRunner().invoke(cli, ["table", str(root / "ladder.yaml"), "--format", "json"])
    assert out.exit_code == 0, out.output
    table = [r for r in json.loads(out.output)["table"] if r["current"]]
    assert [r["bot"] for r in board["table"]] == [r["bot"] for r in table]
    for mine, theirs in zip(board["table"], table):
        assert abs(mine["mu"] - theirs["mu"]) < 1e-9 and abs(mine["sigma"] - theirs["sigma"]) < 1e-9
        assert (mine["noisy"], mine["widened"]) == (theirs["noisy"], theirs["widened"])
    assert board["table"][0]["p_better"] == table[0]["p_better"] and board["table"][1]["p_better"] is None
    assert f"the batch fit of harness table, over {played} games, made " in page
    assert f"{table[0]['mu']:.2f}" in page and f"{table[0]['p_better']:.2f}" in page
    db.close()


def test_finals_play_until_the_order_is_settled_or_say_the_budget_ran_out(tmp_path: Path) -> None:
    greedy = {"house": REPO / "bots" / "crisps_greedy.py", "alpha": REPO / "bots" / "random_bot.py"}
    root = make_contest(tmp_path / "settled", bots=greedy)
    out = CliRunner().invoke(cli, ["contest", "finals", str(root), "--top", "2", "--rounds", "4", "--confidence",
                                   "0.9", "--max-games", "100"])
    assert out.exit_code == 0, out.output
    assert "the order is settled: every finalist above the next with probability >= 0.90" in out.output
    result = json.loads((root / "finals" / "result.json").read_text())
    assert result["settled"] and result["games"] < 100
    house, alpha = result["finalists"]
    assert house["team"] == "house" and house["p_better"] >= 0.9 and house["p_champion"] > 0.9
    assert abs(house["p_champion"] + alpha["p_champion"] - 1) < 1e-9
    with _site(root) as client:
        page = client.get("/finals").text
        assert "The order is settled" in page and 'data-team="house"' in page
        game_id = re.search(r'href="/finals/games/([^"]+)"', page).group(1)
        replay = client.get(f"/finals/games/{game_id}")
        assert replay.status_code == 200 and "stderr_tail" not in replay.text
    # two random bots: the budget runs out first, and the page says the order is not settled
    root = make_contest(tmp_path / "budget")
    out = CliRunner().invoke(cli, ["contest", "finals", str(root), "--top", "2", "--rounds", "1", "--confidence",
                                   "0.99", "--max-games", "4"])
    assert out.exit_code == 0, out.output
    assert "the game budget (4 games) ran out before the order was settled at 0.99" in out.output
    with _site(root) as client:
        page = client.get("/finals").text
        assert "The order is not settled" in page and "budget of 4 games ran out" in page


def test_an_adaptive_ladder_keeps_to_its_pace_and_drops_a_disabled_team_at_its_next_round(tmp_path: Path) -> None:
    from harness.contest.controls import disable
    from harness.contest.ladder import play_ladder

    three = {**BOTS, "gamma": REPO / "bots" / "random_bot.py"}
    root = make_contest(tmp_path, ladder="adaptive", pace=72, bots=three)  # a bucket of 12 games
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    lines: list[str] = []
    seen: list[tuple[int, frozenset[str]]] = []
    disabled_at: list[int] = []

    def on_game(seq: int, outcome: object) -> None:
        from harness.league.store import LeagueStore

        with LeagueStore(root / "ladder.sqlite", create=False) as store:
            seats = store.db.execute("SELECT v.version FROM games g JOIN seats s ON s.game_seq = g.seq JOIN versions v "
                                     "ON v.id = s.version_id WHERE g.seq = ?", (seq,)).fetchall()
        seen.append((len(seen), frozenset(r[0] for r in seats)))
        if len(seen) == 4 and not disabled_at:
            disable(db, "test", team="gamma", reason="testing")
            disabled_at.append(len(seen))

    def stop() -> bool:
        return any("at the pace of 72 games an hour" in line for line in lines)

    played = play_ladder(cfg, db, should_stop=stop, on_game=on_game, echo=lines.append)
    db.close()
    assert 12 <= played <= 13, lines
    gamma = "s3"
    # the games of the round being played when gamma was disabled (3 pairs of 3 teams) may still
    # seat it; none after
    later = [versions for i, versions in seen[disabled_at[0] + 3:]]
    assert later and all(gamma not in versions for versions in later), seen
    assert "left: gamma@s3 (its games and rating stay)" in lines


@pytest.mark.parametrize(("line", "message"), [
    ("ladder: {schedule: adaptive, games_per_hour: 0}", "ladder.games_per_hour: 0 is not allowed (allowed: an integer >= 1)"),
    ("ladder: {schedule: adaptive, pace: 5}", "ladder.pace: unknown key; allowed keys: schedule, games_per_hour, "
                                              "settle_confidence"),
    ("ladder: {schedule: adaptive, settle_confidence: 1.5}", "ladder.settle_confidence: 1.5 is not allowed"),
    ("ladder: {schedule: swiss}", "ladder: 'swiss' is not allowed (allowed: round_robin, adaptive)"),
    ("logs: {keep_days: -1}", "logs.keep_days: -1 is not allowed (allowed: an integer >= 1)"),
    ("logs: {days: 3}", "logs: expected a mapping of game_kb, budget_mb, keep_days, violations_days, disk_mb"),
    ("logs: {disk_mb: 4096}", "logs.disk_mb: 4096 must be below logs.budget_mb (4096)"),
    ("phases: {opens: next monday}", "phases.opens: 'next monday' is not a time (write it as 2026-01-12 09:00"),
    ("phases: {opens: 2027-02-01 09:00, uploads_close: 2027-01-01 09:00}", "phases.uploads_close: must be after "
                                                                          "phases.opens"),
])
def test_the_new_keys_are_checked_with_one_line_naming_the_key(tmp_path: Path, line: str, message: str) -> None:
    from harness.contest.config import ContestConfigError

    root = tmp_path / "course"
    init_contest(root, "crisps")
    key = line.split(":")[0]
    text = re.sub(rf"^{key}: .*$", line, (root / "contest.yaml").read_text(), flags=re.M)
    (root / "contest.yaml").write_text(text)
    with pytest.raises(ContestConfigError) as caught:
        load_contest(root)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_default_pace_and_a_pace_switched_off(tmp_path: Path) -> None:
    root = tmp_path / "course"
    init_contest(root, "crisps")
    assert load_contest(root).games_per_hour == 600  # init's "ladder: NAME": the default pace
    text = (root / "contest.yaml").read_text()
    (root / "contest.yaml").write_text(re.sub(r"^ladder: .*$", "ladder: {schedule: adaptive, games_per_hour: null}",
                                              text, flags=re.M))
    cfg = load_contest(root)
    assert cfg.games_per_hour is None and cfg.ladder == "adaptive"


def test_a_ladder_whose_order_is_settled_rests_until_a_version_changes(tmp_path: Path) -> None:
    from harness.contest.board_fit import refit
    from harness.contest.ladder import order_settled, play_ladder

    greedy = {"house": REPO / "bots" / "crisps_greedy.py", "alpha": REPO / "bots" / "random_bot.py"}
    root = make_contest(tmp_path, pace=None, bots=greedy)
    text = (root / "contest.yaml").read_text().replace("games_per_hour: null}", "games_per_hour: null, "
                                                                                "settle_confidence: 0.9}")
    (root / "contest.yaml").write_text(text)
    cfg = load_contest(root)
    assert cfg.settle_confidence == 0.9
    db = ContestDB(cfg.db_path)
    lines: list[str] = []
    games: list[int] = []
    outputs: list[str] = []

    def on_game(seq: int, outcome: object) -> None:  # the ladder's Refitter, every 4 games here
        games.append(seq)
        if len(games) % 4 == 0:
            refit(cfg, db)

    settled_at: list[tuple[float, int]] = []  # when the ladder first said so, and the games then

    def stop() -> bool:
        if not settled_at and any("the order is settled" in line for line in lines):
            settled_at.append((time.monotonic(), len(games)))
        if settled_at and time.monotonic() - settled_at[0][0] > 1.5:  # let it rest a while (it polls every 0.2 s)
            outputs.append(CliRunner().invoke(cli, ["contest", "status", str(root)]).output)
            return True
        return len(games) >= 200

    play_ladder(cfg, db, should_stop=stop, on_game=on_game, echo=lines.append)
    settles = [line for line in lines if "the order is settled" in line]
    assert settles and "(every team above the next with probability >= 0.9)" in settles[0], lines
    # it rests: one sleep until a version changes, not a loop waking at once to say it again
    assert len(settles) == 1, f"said {len(settles)} times in 1.5 s of rest"
    assert len(games) == settled_at[0][1] < 200  # no game played while resting
    assert "resting: the order is settled at 0.9" in outputs[0]
    assert order_settled(db, 0.9)
    team_id = db.team_by_name("alpha").id
    sid, _ = db.admit_submission(team_id, "python", "bot.py", 10, per_hour=10, in_progress=10)
    db.activate(sid)  # a new version: the order is open again
    assert not order_settled(db, 0.9)
    db.close()
