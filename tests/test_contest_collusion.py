"""The contest's collusion page (/organizer/collusion): the organizer alone reads it; it lists the
flagged pair of a ladder where two teams play for each other, with its evidence, in headless
Chromium against a real `harness contest serve`. The ladder's games come from the league runner
with a stand-in player (the report reads results; real colluding bots: tests/test_collusion.py).
Screenshots go to $TABLEBOTS_SCREENSHOTS when set (else the test's tmp dir)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from kit import checked_version, set_keys
from league_fakes import TEAMS, colluding_play, fake_pool
from selenium.webdriver.common.by import By
from test_contest_backup import _free_port, _harness, _stop, _until
from test_contest_browser import shoot
from test_contest_ops import _signin, _site

from harness.cli import cli
from harness.contest.config import load_contest
from harness.contest.db import ContestDB
from harness.contest.ladder import write_ladder_config
from harness.league.runner import GamePlayer, run_league

REPO = Path(__file__).resolve().parent.parent


def _contest(tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """A Dominoes contest at tables of 3, six teams with a version each, 8 rounds of its ladder played."""
    root = tmp_path / "course"
    out = CliRunner().invoke(cli, ["contest", "init", str(root), "--game", "dominoes"])
    org_token = out.output.strip().splitlines()[-1]
    set_keys(root, players="[3]", ladder="{schedule: round_robin, games_per_hour: null}")
    tokens = {}
    for team in TEAMS:
        out = CliRunner().invoke(cli, ["contest", "team", "add", str(root), team])
        tokens[team] = out.output.strip().splitlines()[-1]
    cfg = load_contest(root)
    db = ContestDB(cfg.db_path)
    for team in TEAMS:
        checked_version(root, db, team, {"bot.py": (REPO / "bots" / "random_bot.py").read_bytes()})
    league = write_ladder_config(cfg, db, rounds=8)
    db.close()
    assert league is not None
    run_league(league, player=GamePlayer(play=colluding_play, make_pool=fake_pool), progress=False)
    return root, org_token, tokens


def test_only_the_organizer_reads_the_collusion_page_which_flags_the_pair_that_plays_for_each_other(
        browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root, org_token, tokens = _contest(tmp_path)
    with _site(root) as nobody, _site(root) as team, _site(root) as org:
        assert nobody.get("/organizer/collusion").status_code == 403
        assert _signin(team, tokens["alpha"]).headers["location"] == "/me"
        refused = team.get("/organizer/collusion")
        assert refused.status_code == 403 and "beta" not in refused.text
        assert _signin(org, org_token).headers["location"] == "/organizer"
        page = org.get("/organizer/collusion")
        assert page.status_code == 200 and 'data-pair="alpha+beta" class="flagged"' in page.text
        assert page.text.count('class="flagged"') == 1, page.text  # the honest pairs are listed, not flagged
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    site = _harness("contest", "serve", str(root), "--port", str(port))
    try:
        _until(lambda: _page_up(base), 30, "the site")
        browser.get(base + "/signin")
        browser.find_element(By.ID, "token").send_keys(org_token)
        browser.find_element(By.ID, "signin-button").click()
        _until(lambda: browser.current_url == base + "/organizer", 10, "the organizer's page")
        browser.find_element(By.LINK_TEXT, "collusion").click()
        _until(lambda: browser.current_url == base + "/organizer/collusion", 10, "the collusion page")
        summary = browser.find_element(By.ID, "collusion-summary").text
        assert summary.startswith("160 duplicate sets at tables of 3 or more; 15 pairs with at least 5 shared sets."), summary
        assert "A pair is flagged past |z| >" in summary
        flagged = browser.find_elements(By.CSS_SELECTOR, "#collusion tr.flagged")
        assert [r.get_attribute("data-pair") for r in flagged] == ["alpha+beta"]
        cells = [td.text for td in flagged[0].find_elements(By.TAG_NAME, "td")]
        assert cells[0] == "FLAGGED" and cells[1].startswith("alpha@") and "& beta@" in cells[1] and cells[2] == "32"
        assert float(cells[4]) > 4 and "alpha@s1 gains against the third seats what beta@s2 loses" in cells[6]
        assert len(flagged[0].find_elements(By.CSS_SELECTOR, "td:last-child a")) == 12  # its latest games together
        shoot(browser, tmp_path, "org-10-collusion")
        flagged[0].find_element(By.CSS_SELECTOR, "td:last-child a").click()
        _until(lambda: "/games/" in browser.current_url, 10, "a game of the pair")
    finally:
        _stop(site)


def _page_up(base: str) -> bool:
    import httpx

    try:
        return httpx.get(base + "/signin", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
