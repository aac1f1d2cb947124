"""The HTML report and the live server in a real browser (headless Debian Chromium via Selenium):
the table and the matrix, a replay stepped to its end with the stored final scores, a hostile
bot's markup shown as text and never run, and `harness serve` counting games while a league
plays. Screenshots go to $TABLEBOTS_SCREENSHOTS when set (else the test's tmp dir)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from harness.cli import cli
from harness.league.config import load_config
from harness.league.store import LeagueStore

REPO = Path(__file__).resolve().parent.parent
BOTS = REPO / "bots"
HOSTILE = REPO / "tests" / "bots" / "hostile_html.py"


def shoot(browser, tmp_path: Path, name: str) -> None:
    where = Path(os.environ.get("TABLEBOTS_SCREENSHOTS", tmp_path))
    where.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(where / f"{name}.png"))


@pytest.fixture(scope="module")
def league(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    config = tmp / "r.yaml"
    config.write_text(f"name: r\ngame: crisps\nrounds: 2\nworkers: 2\npolicy: strikes\nstrikes: 3\nbots:\n"
                      f"  - {{name: greedy, command: {sys.executable} {BOTS}/crisps_greedy.py}}\n"
                      f"  - {{name: random, command: {sys.executable} {BOTS}/random_bot.py}}\n"
                      f"  - {{name: hostile, command: {sys.executable} {HOSTILE}}}\n")
    assert CliRunner().invoke(cli, ["run", str(config), "--quiet"]).exit_code == 0
    out = tmp / "site"
    result = CliRunner().invoke(cli, ["report", str(config), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return config, out


def test_index_shows_the_table_and_the_matrix(browser, league, tmp_path):
    config, out = league
    browser.get((out / "index.html").as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "#standings tbody tr")
    assert sorted(r.get_attribute("data-bot") for r in rows) == ["greedy", "hostile", "random"]
    assert rows[0].get_attribute("data-bot") == "greedy"
    # what mu is relative to, said where the table is read; and true of this table
    assert "relative to the mean of this table's bots" in browser.find_element(By.TAG_NAME, "body").text
    mus = [float(r.find_elements(By.TAG_NAME, "td")[3].text) for r in rows]
    assert abs(sum(mus) / len(mus) - 25) < 0.05, mus
    cells = browser.find_elements(By.CSS_SELECTOR, "#h2h tbody td")
    assert len(cells) == 9 and sum(c.text == "–" for c in cells) == 3  # a bot does not meet itself
    assert browser.find_element(By.ID, "history").is_displayed()
    assert browser.execute_script("return window.pwned") is None
    shoot(browser, tmp_path, "index")
    # a table row links to the bot's games, which link to their replays
    rows[0].find_element(By.TAG_NAME, "a").click()
    assert browser.find_elements(By.CSS_SELECTOR, "#bot-games tbody tr")
    shoot(browser, tmp_path, "bot")


def test_every_replay_steps_to_the_stored_final_scores(browser, league, tmp_path):
    config, out = league
    cfg = load_config(config)
    with LeagueStore(cfg.store) as store:
        games = {game_id: [s.score for s in store.game_seats(seq)]
                 for game_id, seq in store.db.execute("SELECT id, seq FROM games WHERE status = 'done'")}
    checked = 0
    for page in sorted((out / "games").glob("*.html"))[:6]:
        browser.get(page.as_uri())
        body = browser.find_element(By.TAG_NAME, "body")
        label = browser.find_element(By.ID, "move-label")
        total = int(label.text.split("/")[1])
        for _ in range(3):
            body.send_keys(Keys.ARROW_RIGHT)
        assert label.text.startswith("move 3 /")
        browser.find_element(By.ID, "last").click()
        assert label.text == f"move {total} / {total}"
        shown = [float(td.text) for td in browser.find_elements(By.CSS_SELECTOR, "#seats-table td.score")]
        assert shown == [float(x) for x in games[page.stem]], page.stem
        assert "Game over" in browser.find_element(By.ID, "move-panel").text
        checked += 1
        if checked == 1:
            shoot(browser, tmp_path, "replay-end")
            # a seat's view shows exactly its observation
            browser.find_element(By.CSS_SELECTOR, "#view option[value='0']").click()
            assert "request id" in browser.find_element(By.ID, "observation").text
            shoot(browser, tmp_path, "replay-seat-view")
    assert checked >= 3
    assert browser.execute_script("return window.pwned") is None


def test_a_hostile_bots_markup_is_shown_as_text_and_runs_nothing(browser, league, tmp_path):
    config, out = league
    pages = sorted((out / "violations").glob("*.html"))
    assert pages, "the hostile bot's illegal answers must be violations"
    browser.get(pages[0].as_uri())
    received = browser.find_element(By.ID, "v-received").text
    assert "<script>window.pwned=1</script>" in received and "onerror" in received  # literally, as text
    assert "<img" in browser.find_element(By.ID, "v-stderr").text
    assert browser.execute_script("return window.pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#violation-panel img, #violation-panel script")
    # the violation opens the replay at its move, drawn, with the violation in red
    assert browser.find_elements(By.CSS_SELECTOR, "#move-panel .violation")
    shoot(browser, tmp_path, "violation")


def test_serve_shows_the_count_of_games_growing_while_a_league_plays(browser, tmp_path):
    from harness.report.serve import make_server

    config = tmp_path / "live.yaml"
    config.write_text(f"name: live\ngame: crisps\nrounds: 400\nworkers: 1\nbots:\n"
                      f"  - {{name: a, command: {sys.executable} {BOTS}/random_bot.py}}\n"
                      f"  - {{name: b, command: {sys.executable} {BOTS}/random_bot.py --seed 2}}\n")
    harness = str(Path(sys.executable).parent / "harness")
    run = subprocess.Popen([harness, "run", str(config), "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = make_server(load_config(config, strict=False), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        deadline = time.monotonic() + 60
        while not (tmp_path / "runs" / "live.sqlite").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)
        browser.get(url)

        def games_done() -> int | None:
            try:  # the live page replaces itself as games finish (and waits while the store is created)
                return int(browser.find_element(By.ID, "games-done").text)
            except (NoSuchElementException, StaleElementReferenceException):
                return None

        first = None
        while first is None and time.monotonic() < deadline:
            first = games_done()
            time.sleep(0.2)
        assert first is not None
        grown = first
        while grown <= first and time.monotonic() < deadline:
            time.sleep(1.0)
            grown = games_done() or grown  # the page refreshes itself
        assert grown > first, (first, grown)
        shoot(browser, tmp_path, "live")
        status = json.loads(browser.execute_script("return fetch('api/status').then(r => r.text())"))
        assert status["done"] >= grown and status["latest"]
    finally:
        run.kill()
        run.wait()
        server.shutdown()
        server.server_close()
