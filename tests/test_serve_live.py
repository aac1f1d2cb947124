"""`harness serve` end to end: a real server on 127.0.0.1, started before the league's store
exists, a league recorded by real `harness run` processes while it serves, the page checked in
headless Chromium. The page waits for the store and then shows the league by itself; the table
(not only the counts) follows the games without a reload; a bot edited between runs shows its
new version as the current one and the old one marked old, because the server reads the config
again; a config broken on disk keeps the last good one and says why."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By

REPO = Path(__file__).resolve().parent.parent
HARNESS = str(Path(sys.executable).parent / "harness")


def wait_for(what: Callable[[], Any], seconds: float = 60.0, every: float = 0.25) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        try:
            value = what()
        except Exception:  # noqa: BLE001 - the page is being replaced: try again
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {seconds} s: {what}")
        time.sleep(every)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # as Ctrl-C: the run keeps what it recorded
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def table(browser) -> dict[tuple[str, str], dict[str, Any]]:
    """The page's table now: (bot, version) -> games and whether it is marked old."""
    out = {}
    for row in browser.find_elements(By.CSS_SELECTOR, "#standings tbody tr"):
        cells = row.find_elements(By.TAG_NAME, "td")
        version = cells[2].text.replace("old", "").strip()
        out[(row.get_attribute("data-bot"), version)] = {"games": int(cells[6].text), "old": "old" in cells[2].text}
    return out


def test_serve_follows_a_league_that_starts_after_it_and_a_bot_that_changes(browser, tmp_path):
    bot = tmp_path / "bot_b.py"
    shutil.copy(REPO / "bots" / "random_bot.py", bot)
    config = tmp_path / "live.yaml"
    config.write_text(f"name: live\ngame: crisps\nrounds: 400\nworkers: 1\nbots:\n"
                      f"  - {{name: a, command: {sys.executable} {REPO}/bots/random_bot.py --seed 1}}\n"
                      f"  - {{name: b, command: {sys.executable} bot_b.py --seed 2}}\n")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    serve = subprocess.Popen([HARNESS, "serve", str(config), "--port", "0"], stdout=subprocess.PIPE, text=True, env=env)
    runs: list[subprocess.Popen] = []
    try:
        first = serve.stdout.readline() if serve.stdout else ""
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
        assert found, first
        url = found.group(0)
        assert not (tmp_path / "runs").exists()
        browser.get(url)
        assert "No results yet" in browser.find_element(By.ID, "waiting").text

        runs.append(subprocess.Popen([HARNESS, "run", str(config), "--quiet"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL))
        # the waiting page sees the store appear and shows the league by itself
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#standings tbody tr"))
        browser.execute_script("window.sameDocument = 1")  # a reload would lose it
        before = wait_for(lambda: table(browser))
        a_games = before[next(k for k in before if k[0] == "a")]["games"]
        # the table itself follows the games (the old page refreshed only the counts)
        wait_for(lambda: table(browser)[next(k for k in table(browser) if k[0] == "a")]["games"] > a_games + 5)
        stop(runs[-1])

        def settled() -> tuple[int, dict[tuple[str, str], dict[str, Any]]] | None:
            done, rows = int(browser.find_element(By.ID, "games-done").text), table(browser)
            return (done, rows) if sum(r["games"] for r in rows.values()) == 2 * done else None

        _, rows = wait_for(settled)  # the run stopped: the table comes to agree with the count (two seats a game)
        old_version = next(k for k in rows if k[0] == "b")[1]

        # a bot edited between runs: its new version is the current one, the old one is marked old
        with bot.open("a") as fh:
            fh.write("# the second version\n")
        runs.append(subprocess.Popen([HARNESS, "run", str(config), "--quiet"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL))

        def two_versions_of_b() -> bool:
            rows = table(browser)
            b = {v: r for (name, v), r in rows.items() if name == "b"}
            return len(b) == 2 and b[old_version]["old"] and any(not r["old"] and r["games"] > 0
                                                                 for v, r in b.items() if v != old_version)

        wait_for(two_versions_of_b)
        stop(runs[-1])
        assert browser.execute_script("return window.sameDocument") == 1
        browser.save_screenshot(str(tmp_path / "live.png"))

        # a config broken on disk: the last good one stays, and the page says what is wrong
        good = config.read_text()
        config.write_text(good + "rounds: [\n")
        wait_for(lambda: "does not load" in browser.find_element(By.ID, "config-problem").text)
        assert table(browser)  # still the league
        config.write_text(good)
        wait_for(lambda: not browser.find_elements(By.ID, "config-problem"))
        assert browser.execute_script("return window.sameDocument") == 1
    finally:
        for run in runs:
            stop(run)
        serve.terminate()
        serve.wait(timeout=20)
