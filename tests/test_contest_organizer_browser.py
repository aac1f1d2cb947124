"""The organizer end to end: `harness contest init` (the organizer's token), `team import`, the site
and the ladder as real processes, the organizer in headless Chromium: announces, disables a team
(the ladder stops choosing it, the team reads why), reads every team's versions and the audit.
Screenshots go to $TABLEBOTS_SCREENSHOTS when set (else the test's tmp dir)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import yaml
from click.testing import CliRunner
from kit import checked_version, set_keys
from selenium.webdriver.common.by import By
from test_contest_backup import _free_port, _harness, _stop, _until
from test_contest_browser import shoot

from harness.cli import cli
from harness.contest.db import ContestDB

REPO = Path(__file__).resolve().parent.parent


def _setup(tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    root = tmp_path / "course"
    out = CliRunner().invoke(cli, ["contest", "init", str(root), "--game", "crisps"])
    org_token = out.output.strip().splitlines()[-1]
    set_keys(root, players="[2]", ladder="{schedule: round_robin, games_per_hour: null}")
    csv = tmp_path / "teams.csv"
    csv.write_text("name,members\nalpha,Ann\nbeta,Bo\ngamma,Cy\ndelta,Di\n")
    tokens_file = tmp_path / "tokens.csv"
    out = CliRunner().invoke(cli, ["contest", "team", "import", str(root), str(csv), "--out", str(tokens_file)])
    assert out.exit_code == 0, out.output
    tokens = dict(line.split(",") for line in tokens_file.read_text().splitlines()[1:])
    db = ContestDB(root / "contest.sqlite")
    for team in ("alpha", "beta", "gamma"):  # delta has uploaded nothing yet
        checked_version(root, db, team, {"bot.py": (REPO / "bots" / "random_bot.py").read_bytes()},
                        build_log="compiled bot.py", check_log="conformance passed")
    db.close()
    return root, org_token, tokens


def _done(browser) -> str:  # type: ignore[no-untyped-def]
    """The organizer page's line saying what the last action did ("" while the page changes)."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    try:
        return str(browser.find_element(By.ID, "done").text)
    except (NoSuchElementException, StaleElementReferenceException):
        return ""


def _gamma_games_after(store: Path, seq: int) -> int:
    db = sqlite3.connect(store, timeout=10)
    try:
        return int(db.execute("SELECT count(*) FROM seats s JOIN versions v ON v.id = s.version_id JOIN bots b ON "
                              "b.id = v.bot_id WHERE b.name = 'gamma' AND s.game_seq > ?", (seq,)).fetchone()[0])
    except sqlite3.OperationalError:  # the ladder's store is being created
        return 0
    finally:
        db.close()


def _max_seq(store: Path) -> int:
    db = sqlite3.connect(store)
    try:
        return int(db.execute("SELECT coalesce(max(seq), 0) FROM games WHERE status = 'done'").fetchone()[0])
    finally:
        db.close()


def test_the_organizer_announces_disables_a_team_and_the_ladder_and_the_team_follow(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root, org_token, tokens = _setup(tmp_path)
    store = root / "ladder.sqlite"
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    site = _harness("contest", "serve", str(root), "--port", str(port))
    ladder = _harness("contest", "run", str(root), "--no-progress")
    try:
        _until(lambda: store.exists() and _gamma_games_after(store, 0) > 0, 90, "gamma's first games")
        _until(lambda: _up(base), 30, "the site")  # (the ladder's games may come before the site listens)
        browser.get(base + "/signin")
        browser.find_element(By.ID, "token").send_keys(org_token)
        browser.find_element(By.ID, "signin-button").click()
        _until(lambda: browser.current_url == base + "/organizer", 10, "the organizer's page")
        rows = {r.get_attribute("data-team"): r.text for r in browser.find_elements(By.CSS_SELECTOR, "#org-teams tbody tr")}
        assert set(rows) == {"alpha", "beta", "gamma", "delta"} and "no version yet" in rows["delta"]
        shoot(browser, tmp_path, "org-01-teams")

        browser.find_element(By.CSS_SELECTOR, "#announce-form textarea").send_keys("Finals: Friday 14:00 UTC")
        browser.find_element(By.CSS_SELECTOR, "#announce-form button").click()
        _until(lambda: "announced" in _done(browser), 10, "the announcement")

        row = browser.find_element(By.CSS_SELECTOR, '#org-teams tr[data-team="gamma"]')
        row.find_element(By.NAME, "reason").send_keys("its bot writes 1 GB to stderr")
        row.find_element(By.CSS_SELECTOR, 'button[value="disable"]').click()
        _until(lambda: "team gamma disabled" in _done(browser), 10, "the disable")
        disabled_at = _max_seq(store)
        shoot(browser, tmp_path, "org-02-gamma-disabled")

        # the ladder re-plans without gamma at its next look at the roster
        _until(lambda: "gamma" not in [b["name"] for b in yaml.safe_load((root / "ladder.yaml").read_text())["bots"]],
               30, "ladder.yaml without gamma")
        replanned_at = _max_seq(store) + 2  # a game or two in flight when it re-planned are recorded
        _until(lambda: _max_seq(store) > replanned_at + 5, 60, "games after the re-plan")
        assert _gamma_games_after(store, replanned_at) == 0
        assert _gamma_games_after(store, 0) > 0 and disabled_at > 0  # its games so far stay

        browser.get(base + "/organizer/teams/gamma")
        assert "disabled: its bot writes 1 GB to stderr" in browser.page_source
        assert "conformance passed" in browser.page_source  # every version's build and check logs
        shoot(browser, tmp_path, "org-03-team-page")
        browser.get(base + "/organizer/audit")
        audit = browser.find_element(By.ID, "audit").text
        assert "disable team team gamma: its bot writes 1 GB to stderr" in audit
        assert "announce Finals: Friday 14:00 UTC" in audit and "organizer (site, 127.0.0.1)" in audit
        shoot(browser, tmp_path, "org-04-audit")
        browser.find_element(By.CSS_SELECTOR, "#org-nav button").click()  # sign out
        # its answer sends the browser to the index: wait for it, or it can land after the next page
        _until(lambda: browser.current_url.rstrip("/") == base and "org-nav" not in browser.page_source, 10,
               "the sign-out's redirect to the index")

        # gamma signs in and reads why; everyone sees the announcement
        browser.get(base + "/signin")
        browser.find_element(By.ID, "token").send_keys(tokens["gamma"])
        browser.find_element(By.ID, "signin-button").click()
        _until(lambda: browser.current_url == base + "/me", 10, "gamma's page")
        blocked = browser.find_element(By.CSS_SELECTOR, "p.blocked").text
        assert blocked == "your team is out of the ladder, disabled by the organizer: its bot writes 1 GB to stderr"
        assert "Finals: Friday 14:00 UTC" in browser.find_element(By.CSS_SELECTOR, "p.announcement").text
        shoot(browser, tmp_path, "org-05-gamma-sees-why")
        browser.get(base + "/")
        board = {r.get_attribute("data-team"): r.text for r in browser.find_elements(By.CSS_SELECTOR,
                                                                                    "#leaderboard tbody tr")}
        assert set(board) == {"alpha", "beta", "gamma", "delta"}
        assert "disabled" in board["gamma"] and "no version yet" in board["delta"]
        # the ladder refits harness table's batch fit in the background: the page says so
        _until(lambda: browser.refresh() or "the batch fit of harness table, over" in
               browser.find_element(By.ID, "rating-kind").text, 30, "the leaderboard's batch fit")
        board = {r.get_attribute("data-team"): r.text for r in browser.find_elements(By.CSS_SELECTOR,
                                                                                    "#leaderboard tbody tr")}
        shoot(browser, tmp_path, "org-06-leaderboard")
        assert "relative to the mean of the versions in the fit" in browser.find_element(By.TAG_NAME, "body").text
        first = browser.find_element(By.CSS_SELECTOR, "#games tbody tr td:nth-child(3)").text
        assert re.fullmatch(r"\w+@s\d (won|tied 1st) with \d+ points?, \w+@s\d (lost|tied 1st) with \d+ points?", first), first

        # head to head: a matrix of the best teams, opening on two different teams
        browser.get(base + "/h2h")
        picked = [e.get_attribute("value") or e.text for e in
                  browser.find_elements(By.CSS_SELECTOR, "select option:checked")]
        assert len(picked) == 2 and picked[0] != picked[1]
        cells = {r.get_attribute("data-team"): [c.text for c in r.find_elements(By.TAG_NAME, "td")]
                 for r in browser.find_elements(By.CSS_SELECTOR, "#h2h-matrix tbody tr")}
        columns = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "#h2h-matrix thead th")][1:]
        assert set(cells) == set(columns) == {"alpha", "beta", "gamma"}
        assert all(cells[t][columns.index(t)] == "–" for t in columns)  # never a team against itself
        a, b = columns.index("alpha"), columns.index("beta")
        ahead, games = map(int, re.fullmatch(r"(\d+) of (\d+)", cells["alpha"][b]).groups())
        back, games_back = map(int, re.fullmatch(r"(\d+) of (\d+)", cells["beta"][a]).groups())
        assert games == games_back and ahead + back <= games  # alpha against beta, seen from both sides
        assert "games together" in browser.find_element(By.ID, "h2h-summary").text
        shoot(browser, tmp_path, "org-07-h2h")
    finally:
        out = _stop(ladder)
        _stop(site)
    assert "Traceback" not in out, out


def test_the_finals_page_shows_the_order_each_champion_probability_and_an_unsettled_order(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from test_contest_ops import make_contest

    root = make_contest(tmp_path)
    out = CliRunner().invoke(cli, ["contest", "finals", str(root), "--top", "2", "--rounds", "1", "--confidence",
                                   "0.99", "--max-games", "4"])
    assert out.exit_code == 0, out.output
    port = _free_port()
    site = _harness("contest", "serve", str(root), "--port", str(port))
    base = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: _up(base), 30, "the site")
        browser.get(base + "/finals")
        state = browser.find_element(By.ID, "finals-state").text
        assert state.startswith("The order is not settled: the finals' budget of 4 games ran out")
        rows = browser.find_elements(By.CSS_SELECTOR, "#finals-table tbody tr")
        champion = [float(r.find_elements(By.TAG_NAME, "td")[6].text) for r in rows]
        assert len(rows) == 2 and abs(sum(champion) - 1) < 0.011 and champion[0] >= champion[1]
        assert len(browser.find_elements(By.CSS_SELECTOR, "#games tbody tr")) == 4
        shoot(browser, tmp_path, "org-08-finals")
        browser.find_element(By.CSS_SELECTOR, "#games tbody tr a").click()
        _until(lambda: "/finals/games/" in browser.current_url, 10, "a finals game's replay")
        shoot(browser, tmp_path, "org-09-finals-game")
    finally:
        _stop(site)


def _up(base: str) -> bool:
    import httpx

    try:
        return httpx.get(base + "/").status_code == 200
    except httpx.HTTPError:
        return False
