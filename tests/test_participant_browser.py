"""A participant in headless Chromium against `harness contest serve` (a real process), after a
ladder played with real bots: its version was paused, it filters its lost games, opens its
violation, downloads it, reproduces it with `harness reproduce`, fixes its bot, sees the fix pass,
uploads it and watches the version page refresh itself until it is active; then its public page
and the help page. Screenshots go to $TABLEBOTS_SCREENSHOTS when set (else the test's tmp dir)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit import served  # noqa: E402
from test_contest_participant import RANDOM, TRACKER, _new_contest, activate, play  # noqa: E402

from harness.contest.auth import add_team  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser_prefs(downloads: Path) -> dict[str, object]:
    return {"download.default_directory": str(downloads), "download.prompt_for_download": False}


def shoot(browser: Any, tmp_path: Path, name: str) -> None:
    where = Path(os.environ.get("TABLEBOTS_SCREENSHOTS", tmp_path))
    where.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(where / f"participant-{name}.png"))


def _until(check: Any, seconds: float, what: str, every: float = 0.5) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = check()
        except StaleElementReferenceException:  # the page reloaded itself between finding and reading
            value = None
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")


def _reproduce(file: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "reproduce", str(file), "--command", "python3 bot.py"],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_a_participant_learns_why_it_fails_reproduces_it_at_home_and_uploads_the_fix(
        browser: Any, downloads: Path, tmp_path: Path) -> None:
    root = tmp_path / "course"
    _new_contest(root, "conformance_games: 2\npause: {min_games: 3, forfeit_rate: null, violation_rate: 0.5}\n")
    db = ContestDB(root / "contest.sqlite")
    tokens = {name: add_team(db, name) for name in ("alpha", "beta", "gamma")}
    activate(root, db, "alpha", TRACKER.read_bytes())
    activate(root, db, "beta", RANDOM.read_bytes())
    activate(root, db, "gamma", RANDOM.read_bytes())
    db.close()
    play(root, 6, pause=True)
    with served(root) as base:
        def up() -> bool:
            try:
                browser.get(base + "/signin")
                return bool(browser.find_elements(By.ID, "token"))
            except Exception:  # noqa: BLE001 - not listening yet
                return False
        _until(up, 60, "the site")
        browser.find_element(By.ID, "token").send_keys(tokens["alpha"])
        browser.find_element(By.ID, "signin-button").click()
        _until(lambda: browser.current_url == base + "/me", 10, "alpha's page")
        notice = browser.find_element(By.ID, "pause-notice").text
        assert "is paused" in notice and "harness reproduce" in notice
        groups = browser.find_element(By.ID, "violation-groups").text
        assert "illegal" in groups and "Q Q Q Q Q is no play" in groups
        shoot(browser, tmp_path, "01-me-paused")

        Select(browser.find_element(By.ID, "filter-result")).select_by_value("lost")
        browser.find_element(By.ID, "filter-button").click()
        _until(lambda: "result=lost" in browser.current_url, 10, "the filtered games")
        results = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#my-games tbody td:nth-child(2)")]
        assert results and set(results) == {"lost"}
        shoot(browser, tmp_path, "02-lost-games")

        browser.find_element(By.CSS_SELECTOR, "#violation-groups a").click()
        _until(lambda: browser.find_elements(By.ID, "reproduce"), 10, "the violation's page")
        assert "harness reproduce violation-" in browser.find_element(By.ID, "reproduce-command").text
        shoot(browser, tmp_path, "03-violation")
        browser.find_element(By.ID, "seat-download").click()
        saved = _until(lambda: next(iter(downloads.glob("violation-*.json")), None), 20, "the download")
        time.sleep(0.5)  # the browser renames the finished download into place: let it settle
        data = json.loads(saved.read_text())
        assert data["violation"]["kind"] == "illegal"

        home = tmp_path / "home"
        home.mkdir()
        (home / "bot.py").write_text(TRACKER.read_text())
        still = _reproduce(saved, home)
        assert still.returncode == 1 and "verdict: still a violation" in still.stdout
        fixed_text = TRACKER.read_text().replace('FIXED = "--fixed" in sys.argv', "FIXED = True")
        (home / "bot.py").write_text(fixed_text)
        fixed = _reproduce(saved, home)
        assert fixed.returncode == 0 and "verdict: a legal answer" in fixed.stdout, fixed.stdout

        browser.get(base + "/me")
        Select(browser.find_element(By.ID, "runtime")).select_by_value("python")
        browser.find_element(By.ID, "file").send_keys(str(home / "bot.py"))
        browser.find_element(By.ID, "upload-button").click()
        _until(lambda: "/me/submissions/" in browser.current_url, 20, "the version's page")
        shoot(browser, tmp_path, "04-being-built")
        # no reload from here: the page refreshes itself until the result is in
        _until(lambda: browser.find_element(By.ID, "status").text == "active", 180, "the fixed version to pass")
        assert "conformance passed" in browser.find_element(By.ID, "check-log").text
        shoot(browser, tmp_path, "05-fixed-active")
        browser.get(base + "/me")
        assert not browser.find_elements(By.ID, "pause-notice")

        browser.find_element(By.ID, "public-page").click()
        _until(lambda: browser.find_elements(By.ID, "team-opponents"), 10, "alpha's public page")
        assert browser.find_elements(By.CSS_SELECTOR, "#rating-chart circle")
        opponents = browser.find_element(By.ID, "team-opponents").text
        assert "beta" in opponents and "gamma" in opponents
        shoot(browser, tmp_path, "06-team-page")
        browser.find_element(By.ID, "help-link").click()
        _until(lambda: browser.find_elements(By.ID, "help-protocol"), 10, "the help page")
        shoot(browser, tmp_path, "07-help")
        browser.find_element(By.ID, "help-protocol").click()
        assert "protocol" in browser.page_source.lower() and "hello" in browser.page_source
