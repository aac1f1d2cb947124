"""The contest site end to end: `harness contest serve` and `harness contest run` as real processes
on 127.0.0.1, a participant in headless Chromium (Selenium). Sign in, upload a bot whose build
fails and read why, upload the fixed bot, see it pass conformance and its games appear, read its
own violation (request, answer, stderr); another team is refused (403) that violation.
Screenshots of each page go to $TABLEBOTS_SCREENSHOTS when set (else the test's tmp dir)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

from click.testing import CliRunner
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from harness.cli import cli

warnings.filterwarnings("ignore", message=".*httpx.*")
import httpx  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
LATE_VIOLATOR = REPO / "tests" / "bots" / "contest_late_violator.py"


def shoot(browser, tmp_path: Path, name: str) -> None:
    where = Path(os.environ.get("TABLEBOTS_SCREENSHOTS", tmp_path))
    where.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(where / f"{name}.png"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _until(check, seconds: float, what: str, every: float = 0.5):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")


def _harness(*args: str, **kw) -> subprocess.Popen:  # type: ignore[no-untyped-def]
    return subprocess.Popen([sys.executable, "-m", "harness", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, **kw)


def _status(browser) -> str:  # type: ignore[no-untyped-def]
    browser.refresh()
    return browser.find_element(By.ID, "status").text


def test_participant_end_to_end(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "course"
    runner = CliRunner()
    assert runner.invoke(cli, ["contest", "init", str(root), "--game", "crisps"]).exit_code == 0
    text = (root / "contest.yaml").read_text().replace("workers: 1", "workers: 1\nconformance_games: 2")
    (root / "contest.yaml").write_text(text)
    tokens = {name: runner.invoke(cli, ["contest", "team", "add", str(root), name]).output.strip().splitlines()[-1]
              for name in ("alpha", "house")}
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    serve = _harness("contest", "serve", str(root), "--port", str(port))
    ladder = None
    try:
        _until(lambda: _get(base + "/"), 30, "the site to answer")
        with httpx.Client(base_url=base) as api:
            r = api.post("/api/submissions", headers={"Authorization": f"Bearer {tokens['house']}"},
                         data={"runtime": "python"}, files={"file": ("bot.py", (REPO / "bots" / "random_bot.py").read_bytes())})
            assert r.status_code == 201, r.text
            house = r.json()["id"]
            _until(lambda: api.get(f"/api/submissions/{house}", headers={"Authorization": f"Bearer {tokens['house']}"})
                   .json()["status"] == "active", 120, "the house bot to be checked")
        ladder = _harness("contest", "run", str(root), "--no-progress")

        # sign in
        browser.get(base + "/signin")
        shoot(browser, tmp_path, "01-signin")
        browser.find_element(By.ID, "token").send_keys(tokens["alpha"])
        browser.find_element(By.ID, "signin-button").click()
        _until(lambda: browser.current_url == base + "/me", 10, "the team's page after signing in")
        assert tokens["alpha"] not in browser.current_url
        assert "Team alpha" in browser.page_source

        # a bot whose build fails: the build log says why
        broken = tmp_path / "bot.py"
        broken.write_text("def play(:\n    pass\n")
        Select(browser.find_element(By.ID, "runtime")).select_by_value("python")
        browser.find_element(By.ID, "file").send_keys(str(broken))
        browser.find_element(By.ID, "upload-button").click()
        _until(lambda: "/me/submissions/" in browser.current_url, 20, "the version's page after uploading")
        _until(lambda: _status(browser) == "failed", 120, "the broken build to fail")
        build_log = browser.find_element(By.ID, "build-log").text
        assert "SyntaxError" in build_log and "build failed" in build_log
        shoot(browser, tmp_path, "02-build-failed")

        # the fixed bot: it builds, passes conformance and becomes the current version
        fixed = tmp_path / "fixed" / "bot.py"
        fixed.parent.mkdir()
        shutil.copy(LATE_VIOLATOR, fixed)
        browser.get(base + "/me")
        browser.find_element(By.ID, "file").send_keys(str(fixed))
        browser.find_element(By.ID, "upload-button").click()
        _until(lambda: _status(browser) == "active", 180, "the fixed bot to pass conformance")
        assert "conformance passed" in browser.find_element(By.ID, "check-log").text
        shoot(browser, tmp_path, "03-conformance-passed")

        # its games appear, then its violation
        def my_games() -> bool:
            browser.get(base + "/me")
            return "seat" in browser.find_element(By.ID, "my-games").text
        _until(my_games, 180, "alpha's games in the ladder", every=2)
        shoot(browser, tmp_path, "04-my-team")

        def my_violation():  # type: ignore[no-untyped-def]
            browser.get(base + "/me")
            links = browser.find_elements(By.CSS_SELECTOR, "#my-violations a")
            return links[0].get_attribute("href") if links else None
        violation_url = _until(my_violation, 240, "alpha's violation", every=2)
        shoot(browser, tmp_path, "05-my-violations")
        browser.get(violation_url)
        assert '"type":"request"' in browser.find_element(By.ID, "v-request").text.replace(" ", "")
        assert "999" in browser.find_element(By.ID, "v-received").text
        assert "index 999 on purpose" in browser.find_element(By.ID, "v-stderr").text
        shoot(browser, tmp_path, "06-my-violation")

        browser.get(base + "/me")
        browser.find_element(By.CSS_SELECTOR, "#my-games a[href*='/seat/']").click()
        _until(lambda: "/seat/" in browser.current_url, 10, "the replay from alpha's seat")
        # it opens in alpha's own seat's view (the only seat offered besides the spectator): at the
        # deal, alpha's cards face up and the other seat's face down
        seat = browser.current_url.split("#")[0].rsplit("/seat/", 1)[1]
        view = Select(browser.find_element(By.ID, "view"))
        assert view.first_selected_option.get_attribute("value") == seat
        assert [o.get_attribute("value") for o in view.options] == ["-1", seat]
        browser.find_element(By.ID, "first").click()
        for row in browser.find_elements(By.CSS_SELECTOR, "#seats-table tbody tr"):
            faces = row.find_elements(By.CSS_SELECTOR, "td.hand g.card:not(.back)")
            backs = row.find_elements(By.CSS_SELECTOR, "td.hand g.card.back")
            assert (bool(faces), bool(backs)) == ((True, False) if row.get_attribute("data-seat") == seat else (False, True))
        assert browser.find_element(By.ID, "observation-box").get_attribute("open") is not None
        shoot(browser, tmp_path, "07-replay-from-my-seat")
        browser.get(base + "/me/stderr")
        assert "on purpose" in browser.find_element(By.ID, "stderr").text

        # the public pages
        browser.get(base + "/")
        board = browser.find_element(By.ID, "leaderboard").text
        assert "alpha" in board and "house" in board
        shoot(browser, tmp_path, "08-leaderboard")
        browser.get(base + "/games")
        shoot(browser, tmp_path, "09-games")
        browser.find_element(By.CSS_SELECTOR, "#games a").click()
        assert "late-violator: answering" not in browser.page_source
        view = Select(browser.find_element(By.ID, "view"))  # the public: the spectator's view alone
        assert [o.get_attribute("value") for o in view.options] == ["-1"] and view.first_selected_option.text.startswith("spectator")
        shoot(browser, tmp_path, "10-public-replay")
        browser.get(base + "/h2h?a=alpha&b=house")
        assert "games together" in browser.find_element(By.ID, "h2h-summary").text
        shoot(browser, tmp_path, "11-head-to-head")

        # another team: refused alpha's violation (with its stderr) and alpha's code
        browser.find_element(By.CSS_SELECTOR, "header form button").click()
        _until(lambda: browser.find_elements(By.ID, "signin-link"), 10, "the signed-out page")
        browser.get(base + "/signin")
        _until(lambda: browser.find_elements(By.ID, "token"), 10, "the sign-in form")
        browser.find_element(By.ID, "token").send_keys(tokens["house"])
        browser.find_element(By.ID, "signin-button").click()
        _until(lambda: "Team house" in browser.page_source, 10, "house's page after signing in")
        browser.get(violation_url)
        assert "another team" in browser.find_element(By.ID, "message").text
        assert "on purpose" not in browser.page_source
        shoot(browser, tmp_path, "12-another-team-refused")
        with httpx.Client(base_url=base) as api:
            cookies = {c["name"]: c["value"] for c in browser.get_cookies()}
            assert api.get(violation_url.replace(base, ""), cookies=cookies).status_code == 403
    finally:
        for proc in (ladder, serve):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        for proc in (ladder, serve):
            if proc is not None:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def _get(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
