"""A participant's loop on the contest site, end to end with real bot processes: its games and
violations downloaded from its own seat, reproduced at home with `harness reproduce`, fixed and
confirmed; and nothing a team can see (pages, downloads, logs) holds a server path or a sandbox
command line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

warnings.filterwarnings("ignore", message=".*httpx.*")
from kit import checked_version, served  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

import harness  # noqa: E402
from harness.contest.auth import add_team  # noqa: E402
from harness.contest.config import init_contest, load_contest  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402
from harness.contest.server import create_app  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TRACKER = REPO / "tests" / "bots" / "tracker.py"
RANDOM = REPO / "bots" / "random_bot.py"


def activate(root: Path, db: ContestDB, team: str, code: bytes) -> int:
    """A checked version of ``team``'s bot.py made current directly (the build and check are tested elsewhere)."""
    return checked_version(root, db, team, {"bot.py": code})


def play(root: Path, games: int, pause: bool = False) -> None:
    from harness.contest.autopause import pause_failing
    from harness.contest.ladder import LADDER_STORE, Standings, play_ladder

    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    standings = Standings(db, root / LADDER_STORE, after_flush=(lambda: pause_failing(db, cfg.pause)) if pause else None)
    assert play_ladder(cfg, db, should_stop=lambda: False, on_game=standings.on_game, max_games=games,
                       echo=lambda line: None) == games
    standings.stop()
    db.close()


def _new_contest(root: Path, extra: str = "") -> None:
    init_contest(root, "crisps")
    text = (root / "contest.yaml").read_text().replace("ladder: adaptive", "ladder: round_robin")
    text = re.sub(r"^players: .*$", "players: [2]", text, flags=re.M)
    (root / "contest.yaml").write_text(re.sub(r"^pause: .*$", "", text, flags=re.M) + extra)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A crisps contest: alpha's bot has a late bug (tracker.py), beta plays at random; 4 games."""
    root = tmp_path_factory.mktemp("participant") / "course"
    _new_contest(root)
    db = ContestDB(root / "contest.sqlite")
    tokens = {name: add_team(db, name) for name in ("alpha", "beta")}
    activate(root, db, "alpha", TRACKER.read_bytes())
    activate(root, db, "beta", RANDOM.read_bytes())
    db.close()
    play(root, 4)
    return {"root": root, "tokens": tokens}


def _client(root: Path) -> TestClient:
    return TestClient(create_app(root, start_worker=False), base_url="http://127.0.0.1")


def _sign_in(client: TestClient, token: str) -> None:
    page = client.get("/signin")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    assert client.post("/signin", data={"csrf": csrf, "token": token}, follow_redirects=False).status_code == 303


def _reproduce(file: Path, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "reproduce", str(file), "--command", command],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_participant_downloads_a_violation_reproduces_it_fixes_its_bot_and_the_fix_passes(
        played: dict[str, Any], tmp_path: Path) -> None:
    with _client(played["root"]) as client:
        _sign_in(client, played["tokens"]["alpha"])
        me = client.get("/me").text
        link = re.search(r'href="/me/violations/(\d+)"', me)
        assert link, "alpha's violation is listed on its page"
        page = client.get(f"/me/violations/{link.group(1)}").text
        url = re.search(r'href="(/me/violations/\d+/download)"', page).group(1)
        # the replay opens on the frame that shows the violation (the move after its decision)
        start = int(re.search(r'data-start="(\d+)"', page).group(1))
        frames = json.loads(re.search(r'id="replay-data">(.*?)</script>', page, re.S).group(1))["frames"]
        assert start < len(frames) - 1, "the game went on after the violation (the seat's moves played for it)"
        assert [v["id"] for v in frames[start]["violations"]] == [int(link.group(1))]
        assert "harness reproduce violation-" in page  # the page says how
        r = client.get(url)
        assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
        data = r.json()
        # beta may not download alpha's violation
        other = _client(played["root"])
        _sign_in(other, played["tokens"]["beta"])
        assert other.get(url).status_code == 403
    assert data["violation"]["kind"] == "illegal" and "snapshot" not in json.dumps(data)
    assert data["lines"][-1]["dir"] == "sent" and json.loads(data["lines"][-1]["line"])["type"] == "request"
    assert data["time"] == load_contest(played["root"]).time
    home = tmp_path / "home"
    home.mkdir()
    (home / "bot.py").write_text(TRACKER.read_text())
    saved = home / "violation.json"
    saved.write_text(json.dumps(data))
    still = _reproduce(saved, "python3 bot.py", home)
    assert still.returncode == 1, still.stdout + still.stderr
    assert "verdict: still a violation" in still.stdout and "Queens" in still.stdout  # its stderr
    # the fix: the bot's author edits its bot; the replay now passes
    (home / "bot.py").write_text(TRACKER.read_text().replace('FIXED = "--fixed" in sys.argv', "FIXED = True"))
    fixed = _reproduce(saved, "python3 bot.py", home)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "verdict: a legal answer" in fixed.stdout


def test_a_game_without_a_violation_downloads_and_replays_and_says_where_answers_differ(
        played: dict[str, Any], tmp_path: Path) -> None:
    with _client(played["root"]) as client:
        _sign_in(client, played["tokens"]["beta"])
        seat = re.search(r'href="(/me/games/([^/"]+)/seat/(\d+))"', client.get("/me").text)
        page = client.get(seat.group(1)).text
        assert f'href="{seat.group(1)}/download"' in page
        data = client.get(seat.group(1) + "/download").json()
        assert client.get(seat.group(1).replace("/seat/", "/seat/9") + "/download").status_code in (403, 404)
    assert data["violation"] is None and data["seat"] == int(seat.group(3))
    hello = json.loads(data["lines"][0]["line"])
    assert hello["type"] == "hello" and hello["seat"] == data["seat"]  # only what this seat was sent
    file = tmp_path / "game.json"
    file.write_text(json.dumps(data))
    (tmp_path / "bot.py").write_text(RANDOM.read_text())
    same = _reproduce(file, "python3 bot.py --seed 99", tmp_path)  # another seed: other answers
    assert same.returncode == 0, same.stdout + same.stderr
    assert "recorded" in same.stdout and "verdict: a legal answer" in same.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    refused = _reproduce(bad, "python3 bot.py", tmp_path)
    assert refused.returncode == 2 and "not a game downloaded from a seat" in refused.stderr
    bad.write_text("{not json")
    refused = _reproduce(bad, "python3 bot.py", tmp_path)
    assert refused.returncode == 2 and f"{bad}: not a seat file (not JSON" in refused.stderr
    assert "Traceback" not in refused.stderr


def _visible(client: TestClient, team: str) -> dict[str, str]:
    """Every page and download a signed-in team can reach from its own page, by URL."""
    out: dict[str, str] = {}
    todo = ["/me", "/", "/games", "/me/stderr", "/help"]
    while todo and len(out) < 80:
        url = todo.pop()
        if url in out:
            continue
        r = client.get(url)
        if r.status_code != 200:
            continue
        out[url] = r.text
        for link in re.findall(r'href="(/[^"#?]*)"', r.text):
            if link.startswith(("/me", "/games", "/teams", "/help")) and link not in out and "/signout" not in link:
                todo.append(link)
    return out


def test_nothing_a_team_sees_holds_a_server_path_or_the_sandbox_command(played: dict[str, Any]) -> None:
    root = played["root"]
    secrets = [str(root.resolve()), str(Path(harness.__file__).resolve().parent.parent), sys.prefix, "--ro-bind",
               "--unshare"]
    # the bots ran: their logs exist, the harness's own log has the command line
    harness_logs = list((root / "ladder.logs").rglob("*.harness.log"))
    assert harness_logs and any("bwrap" in p.read_text() or str(root) in p.read_text() for p in harness_logs)
    with _client(root) as client:
        _sign_in(client, played["tokens"]["alpha"])
        pages = _visible(client, "alpha")
        assert any(u.endswith("/download") for u in pages) and "/me/stderr" in pages
        assert "started pid" in pages["/me/stderr"]
        assert "/help/protocol" in pages and "/teams/beta" in pages  # the crawl reached the help and team pages
        for url, text in pages.items():
            for secret in secrets + ([] if url.startswith("/help") else ["bwrap"]):  # the docs may name the sandbox
                assert secret not in text, f"{url} shows {secret!r}"


def test_a_version_over_the_violation_rate_is_paused_and_its_team_sees_why_and_what_to_do(tmp_path: Path) -> None:
    root = tmp_path / "course"
    _new_contest(root, "pause: {min_games: 3, forfeit_rate: null, violation_rate: 0.5}\n")
    db = ContestDB(root / "contest.sqlite")
    tokens = {name: add_team(db, name) for name in ("alpha", "beta", "gamma")}
    alpha = activate(root, db, "alpha", TRACKER.read_bytes())  # a violation in every game
    activate(root, db, "beta", RANDOM.read_bytes())
    activate(root, db, "gamma", RANDOM.read_bytes())
    play(root, 6, pause=True)  # a round: alpha plays 4 of the 6 games
    assert db.submission(alpha).status == "paused"
    assert [r.team for r in db.roster()] == ["beta", "gamma"]  # the ladder no longer plays it
    from click.testing import CliRunner

    from harness.cli import cli

    listed = CliRunner().invoke(cli, ["contest", "team", "list", str(root)]).output  # the organizer sees it
    assert "alpha: version s1 (paused: it committed 4 violations in its 4 ladder games" in listed
    assert "beta: version s2\n" in listed
    games_then = db.db.execute("SELECT games FROM standings WHERE submission_id = ?", (alpha,)).fetchone()[0]
    play(root, 2, pause=True)
    assert db.db.execute("SELECT games FROM standings WHERE submission_id = ?", (alpha,)).fetchone()[0] == games_then
    with _client(root) as client:
        _sign_in(client, tokens["alpha"])
        notice = re.search(r'<div class="notice" id="pause-notice">(.*?)</div>', client.get("/me").text, re.S).group(1)
        assert "is paused" in notice and "violations in its 4 ladder games" in notice
        assert "harness reproduce" in notice and "upload the fixed version" in notice
        assert 'id="paused"' in client.get("/teams/alpha").text
        assert 'id="pause-notice"' not in _client(root).get("/teams/beta").text
    # a fixed version makes the team current again; the paused one is replaced
    fixed = activate(root, db, "alpha", TRACKER.read_bytes().replace(b'FIXED = "--fixed" in sys.argv', b"FIXED = True"))
    assert db.submission(alpha).status == "replaced" and "alpha" in [r.team for r in db.roster()]
    assert db.submission(fixed).status == "active"
    db.close()


def test_the_team_page_and_own_games_say_why_a_team_loses(played: dict[str, Any]) -> None:
    with _client(played["root"]) as client:
        page = client.get("/teams/alpha").text  # public
        opponents = re.search(r'<table id="team-opponents">(.*?)</table>', page, re.S).group(1)
        # beta's row: 4 games together, each one ahead, behind or level, the behind share of those 4
        beta = re.search(r'<tr><td><a href="/teams/beta">beta</a></td>(.*?)</tr>', opponents, re.S).group(1)
        games, ahead, behind, level, share = re.findall(r'<td class="num[^"]*">([^<]*)</td>', beta)
        assert games == "4" and int(ahead) + int(behind) + int(level) == 4, beta
        assert share == f"{100 * int(behind) / 4:.0f}%", beta
        assert "s1" in page and re.search(r'<table id="team-sizes">.*?<td class="num">2</td>', page, re.S)
        missing = client.get("/teams/nobody")  # refused in the page, answered by the app's handler
        assert missing.status_code == 404 and "<h1>Not found</h1>" in missing.text
        assert "no team &#39;nobody&#39; in this contest" in missing.text
        _sign_in(client, played["tokens"]["alpha"])
        lost = client.get("/me?result=lost").text
        won = client.get("/me?result=won").text
        rows = re.compile(r'<td class="(good|bad)">(won|lost)</td>')
        assert {m[1] for m in rows.findall(lost)} <= {"lost"} and {m[1] for m in rows.findall(won)} <= {"won"}
        assert len(rows.findall(lost)) + len(rows.findall(won)) == 4
        assert len(rows.findall(client.get("/me?opponent=beta").text)) == 4
        assert len(rows.findall(client.get("/me?players=3").text)) == 0
        groups = re.search(r'<table id="violation-groups">(.*?)</table>', client.get("/me").text, re.S).group(1)
        assert groups.count("<tr>") == 2 and "illegal" in groups, groups  # the header and one group: the same bug
        # a replay's links to its bots lead to their team pages
        seat = re.search(r'href="(/me/games/[^/"]+)/seat/\d+"', client.get("/me").text).group(1)
        r = client.get(seat + "/bots/1.html", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/teams/")
        for url in ("/help", "/help/protocol", "/help/rules", "/help/starters/python/starter.py"):
            assert client.get(url).status_code == 200, url
        assert client.get("/help/../../etc/passwd").status_code == 404
        missing = client.get("/help/nothing")
        assert missing.status_code == 404 and "no such help page (see /help)" in missing.text
        assert 'id="my-team"' in missing.text  # the page keeps its visitor's session (the app's handler)


def test_the_api_and_the_command_line_client_against_a_served_site(played: dict[str, Any], tmp_path: Path) -> None:
    import time
    import urllib.request

    root, tokens = played["root"], played["tokens"]
    token_file = tmp_path / "token"
    token_file.write_text(tokens["alpha"] + "\n")

    def client(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness", "contest", *args[:1], base, *args[1:],
                               "--token-file", str(token_file)], capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)
    with served(root) as base:
        for _ in range(120):
            try:
                urllib.request.urlopen(base + "/", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        req = urllib.request.Request(base + "/api/submissions", headers={"Authorization": f"Bearer {tokens['alpha']}"})
        own = json.loads(urllib.request.urlopen(req, timeout=10).read())
        assert [s["version"] for s in own] == ["s1"] and own[0]["current"]
        games = client("games", "--result", "lost")
        assert games.returncode == 0 and games.stdout.count(" lost ") >= 1 and " won " not in games.stdout
        listed = json.loads(client("games", "--json").stdout)
        assert len(listed) == 4 and all(g["downloads"] for g in listed)
        violations = client("violations")
        assert violations.returncode == 0 and "illegal" in violations.stdout
        vid = re.search(r"newest #(\d+)", violations.stdout).group(1)
        saved = client("download", "--violation", vid)
        assert saved.returncode == 0, saved.stderr
        assert json.loads((tmp_path / f"violation-{vid}.json").read_text())["violation"]["id"] == int(vid)
        # beta's token gets 403 for alpha's violation
        other = urllib.request.Request(base + f"/api/violations/{vid}", headers={"Authorization": f"Bearer {tokens['beta']}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(other, timeout=10)
        assert refused.value.code == 403
        asked = client("challenge", "--against", "beta", "--games", "2")
        assert asked.returncode == 0 and "2 games against beta, pending" in asked.stdout, asked.stderr
        assert "alpha@s1, beta@s2: 0/2 played (pending)" in client("challenges").stdout
        wrong = client("challenge", "--against", "nobody", "--games", "2")
        assert wrong.returncode == 1 and "'nobody' has no current version" in wrong.stderr
        (tmp_path / "bot.py").write_text(RANDOM.read_text())
        up = client("submit", str(tmp_path / "bot.py"))
        assert up.returncode == 0, up.stdout + up.stderr
        assert "conformance passed" in up.stdout and "(your current version)" in up.stdout
        broken = tmp_path / "broken.py"
        broken.write_text("def play(:\n")
        failed = client("submit", str(broken))
        assert failed.returncode == 1 and "SyntaxError" in failed.stdout and ": failed" in failed.stdout


def test_the_upload_flow_says_what_happens_and_refuses_a_file_of_another_language(tmp_path: Path) -> None:
    root = tmp_path / "course"
    _new_contest(root)
    db = ContestDB(root / "contest.sqlite")
    token = add_team(db, "alpha")
    with _client(root) as client:  # no build worker: the upload stays "building"
        headers = {"Authorization": f"Bearer {token}"}
        wrong = client.post("/api/submissions", headers=headers, data={"runtime": "python"},
                            files={"file": ("bot.cpp", b"int main() {}\n")})
        assert wrong.status_code == 400 and "bot.cpp is not a .py file" in wrong.json()["error"]
        assert not any((root / "submissions").glob("*/bot.py"))  # nothing renamed and kept
        sid = client.post("/api/submissions", headers=headers, data={"runtime": "python"},
                          files={"file": ("bot.py", RANDOM.read_bytes())}).json()["id"]
        _sign_in(client, token)
        page = client.get(f"/me/submissions/{sid}").text
        assert "Being built" in page and "builded" not in page
        assert '<meta http-equiv="refresh" content="3">' in page  # the page reloads itself
        assert "(not played yet: they start once the build is done)" in page
        db.set_status(sid, "failed", build_log="SyntaxError: invalid syntax\nbuild failed")
        page = client.get(f"/me/submissions/{sid}").text
        assert 'http-equiv="refresh"' not in page and "(not played: the build failed" in page
        assert "not checked yet" not in page
    db.close()


def test_a_bot_printing_its_paths_shows_its_team_none_of_the_servers(tmp_path: Path) -> None:
    root = tmp_path / "course"
    _new_contest(root)
    db = ContestDB(root / "contest.sqlite")
    tokens = {name: add_team(db, name) for name in ("alpha", "beta")}
    # a bot that writes where it runs (the contest's directory), its interpreter and a traceback
    # to stderr, then answers an index that is not offered
    leaky = (b"import json, os, sys, traceback\n"
             b"for line in sys.stdin:\n"
             b"    msg = json.loads(line)\n"
             b"    if msg['type'] == 'hello':\n"
             b"        print(json.dumps({'type': 'ready'}), flush=True)\n"
             b"    elif msg['type'] == 'request':\n"
             b"        print('cwd', os.getcwd(), 'exe', sys.executable, 'file', os.path.abspath(__file__), file=sys.stderr)\n"
             b"        traceback.print_stack(file=sys.stderr)\n"
             b"        print(json.dumps({'type': 'action', 'id': msg['id'], 'index': 999}), flush=True)\n"
             b"    elif msg['type'] == 'bye':\n"
             b"        break\n")
    activate(root, db, "alpha", leaky)
    activate(root, db, "beta", RANDOM.read_bytes())
    db.close()
    play(root, 2)
    secrets = [str(root.resolve()), str(Path(harness.__file__).resolve().parent.parent), sys.prefix]
    with _client(root) as client:
        _sign_in(client, tokens["alpha"])
        pages = _visible(client, "alpha")
        assert any("/download" in u for u in pages) and "&lt;contest&gt;/submissions/" in pages["/me/stderr"]
        assert "&lt;python&gt;" in pages["/me/stderr"]  # the bot's own output is kept, its paths named
        for url, text in pages.items():
            for secret in secrets:
                assert secret not in text, f"{url} shows {secret!r}"
        api = client.get("/api/stderr", headers={"Authorization": f"Bearer {tokens['alpha']}"}).text
        assert "cwd <contest>/submissions/" in api and not any(s in api for s in secrets)


def test_a_challenge_is_asked_limited_played_between_ladder_rounds_unranked_and_shown(tmp_path: Path) -> None:
    from harness.contest.challenges import play_challenges
    from harness.contest.ladder import LADDER_STORE, Standings, play_ladder

    root = tmp_path / "course"
    _new_contest(root, "challenges: {per_hour: 1, max_games: 5}\n")
    db = ContestDB(root / "contest.sqlite")
    tokens = {name: add_team(db, name) for name in ("alpha", "beta")}
    activate(root, db, "alpha", RANDOM.read_bytes())
    activate(root, db, "beta", RANDOM.read_bytes())
    with _client(root) as client:
        _sign_in(client, tokens["alpha"])
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/me").text).group(1)
        too_many = client.post("/me/challenges", data={"csrf": csrf, "opponents": "beta", "games": "6"})
        assert too_many.status_code == 400 and "games: from 1 to 5" in too_many.text
        nobody = client.post("/me/challenges", data={"csrf": csrf, "games": "3"})
        assert nobody.status_code == 400 and "choose one or more other teams" in nobody.text
        assert client.post("/me/challenges", data={"opponents": "beta", "games": "3"}).status_code == 403  # no CSRF
        ok = client.post("/me/challenges", data={"csrf": csrf, "opponents": "beta", "games": "3"},
                         follow_redirects=False)
        assert ok.status_code == 303
        again = client.post("/me/challenges", data={"csrf": csrf, "opponents": "beta", "games": "3"})
        assert again.status_code == 400 and "challenge quota reached: 1 an hour" in again.text
        assert "0 / 3" in client.get("/me").text
        cfg = load_contest(root)
        standings = Standings(db, root / LADDER_STORE)
        calls: list[int] = []
        played = play_ladder(cfg, db, should_stop=lambda: False, on_game=standings.on_game, max_games=2,
                             echo=lambda line: None,
                             between_rounds=lambda: calls.append(play_challenges(cfg, db, max_games=2)))
        standings.stop()
        assert played == 2 and calls[0] == 2  # two challenge games before the ladder's round
        assert play_challenges(cfg, db) == 1 and play_challenges(cfg, db) == 0  # the third, then none
        page = client.get("/me").text
        table = re.search(r'<table id="my-challenges">(.*?)</table>', page, re.S).group(1)
        assert "3 / 3" in table and "alpha@s1, beta@s2" in table
        ahead, behind, level = map(int, re.search(r"beta: (\d+) / (\d+) / (\d+)", table).groups())
        assert ahead + behind + level == 3
        # unranked: the ladder's standings count only the ladder's games
        assert db.db.execute("SELECT sum(games) FROM standings").fetchone()[0] == 4
    db.close()
