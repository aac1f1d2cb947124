"""Games as plug-ins: a game in another installed package, registered by an entry point in the
group ``tablebots.games``, works everywhere a built-in game does.

The package is built here as an installer would leave it: a module and a ``.dist-info`` with
its ``entry_points.txt``, on PYTHONPATH. Everything runs as real ``harness`` processes (the
league's workers are processes of their own): play, check-bot, match, a league (run, table,
export, replay), the report and its replay viewer in Chromium, showing the game as text since
the viewer has no drawing of it. A broken plug-in is one clear error, and stops no other game.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RANDOM = f"{sys.executable} {REPO / 'bots' / 'random_bot.py'}"

ENTRY_POINTS = """\
[tablebots.games]
toy = tablebots_toy:ToyGame
broken = tablebots_toy:NoSuchGame
misnamed = tablebots_toy:ToyGame
crisps = tablebots_toy:ToyGame
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> dict[str, str]:
    """An environment in which the package ``tablebots-toy`` is installed: the toy game of
    tests/toygame.py registered as ``toy``, and three bad entries (a class that does not exist, a
    name that is not the game's, a built-in game's name)."""
    site = tmp_path_factory.mktemp("site")
    (site / "tablebots_toy").mkdir()
    shutil.copy(REPO / "tests" / "toygame.py", site / "tablebots_toy" / "__init__.py")
    info = site / "tablebots_toy-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tablebots-toy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def harness(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_the_plugin_game_is_listed_and_plays_and_checks_a_bot(plugin):
    result = harness(plugin, "play", "toy", "--bot", RANDOM, "--bot", RANDOM, "--games", "2", "-o", "pile=9")
    assert result.returncode == 0, result.stderr
    assert "game 1/2 toy" in result.stdout and "total:" in result.stdout
    # check-bot: the reference random bot is the opponent (there is no greedy bot for this game)
    result = harness(plugin, "check-bot", "toy", RANDOM, "--games", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "random-py" in result.stdout and "no violations: ok" in result.stdout
    # a bad option is named with the plug-in's own options
    result = harness(plugin, "play", "toy", "--bot", RANDOM, "--bot", RANDOM, "-o", "nope=1")
    assert result.returncode == 2 and "known options: max_turns, pile" in result.stderr


def test_a_match_between_two_bots_at_the_plugin_game(plugin, tmp_path):
    result = harness(plugin, "match", "toy", "--bot", RANDOM, "--bot", RANDOM, "--games", "6",
                     "--dir", str(tmp_path / "m"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "games: 6 in 3 duplicate sets of 2" in result.stdout and "SPRT" in result.stdout


def test_a_broken_plugin_is_one_clear_error_and_stops_no_other_game(plugin, tmp_path):
    result = harness(plugin, "play", "broken", "--bot", RANDOM, "--bot", RANDOM)
    assert result.returncode == 2
    assert "'broken' (tablebots_toy:NoSuchGame) cannot be loaded" in result.stderr
    assert "Traceback" not in result.stderr
    result = harness(plugin, "play", "misnamed", "--bot", RANDOM, "--bot", RANDOM)
    assert result.returncode == 2 and "is not a harness.games.Game named 'misnamed'" in result.stderr
    # a plug-in cannot take over a built-in game's name: this is still Crisps
    result = harness(plugin, "play", "crisps", "--bot", RANDOM, "--bot", RANDOM)
    assert result.returncode == 0, result.stderr
    assert "game 1/1 crisps" in result.stdout
    # a league of a broken game: one line naming the config key and the entry point
    config = tmp_path / "broken.yaml"
    config.write_text(f"name: b\ngame: broken\nbots:\n  - {{name: a, command: {RANDOM}}}\n"
                      f"  - {{name: b, command: {RANDOM}}}\n")
    result = harness(plugin, "run", str(config))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "game: game 'broken' (tablebots_toy:NoSuchGame) cannot be loaded" in result.stderr


def test_a_league_of_the_plugin_game_runs_rates_exports_and_reports(plugin, tmp_path):
    config = tmp_path / "toy.yaml"
    config.write_text("name: toy-league\ngame: toy\nrounds: 2\nworkers: 2\noptions: {pile: 15}\nbots:\n"
                      f"  - {{name: a, command: {RANDOM}}}\n  - {{name: b, command: {RANDOM}}}\n"
                      f"  - {{name: c, command: {RANDOM}}}\n")
    result = harness(plugin, "run", str(config), "--quiet")
    assert result.returncode == 0, result.stdout + result.stderr
    table = harness(plugin, "table", str(config))
    assert table.returncode == 0 and all(f" {b} " in table.stdout or f"{b}@" in table.stdout for b in "abc")
    seats = harness(plugin, "export", str(config), "seats")
    rows = [json.loads(line) for line in seats.stdout.splitlines()]
    assert seats.returncode == 0 and rows and {r["bot"] for r in rows} == {"a", "b", "c"}
    games = {r["game_id"] for r in rows}
    replay = harness(plugin, "replay", str(config), sorted(games)[0])
    assert replay.returncode == 0, replay.stderr
    assert "pile" in replay.stdout
    out = tmp_path / "site"
    result = harness(plugin, "report", str(config), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert sorted((out / "games").glob("*.html"))


def test_the_report_shows_a_plugin_game_as_text(plugin, tmp_path, browser):
    from selenium.webdriver.common.by import By

    config = tmp_path / "toy.yaml"
    config.write_text("name: toy-view\ngame: toy\nrounds: 1\nworkers: 1\nbots:\n"
                      f"  - {{name: a, command: {RANDOM}}}\n  - {{name: b, command: {RANDOM}}}\n")
    assert harness(plugin, "run", str(config), "--quiet").returncode == 0
    out = tmp_path / "site"
    assert harness(plugin, "report", str(config), "-o", str(out)).returncode == 0
    page = sorted((out / "games").glob("*.html"))[0]
    browser.get(page.as_uri())
    picture = browser.find_element(By.ID, "picture")
    assert picture.find_element(By.TAG_NAME, "pre").text.startswith("pile 21, turn 0")  # the engine's render()
    browser.find_element(By.ID, "last").click()
    assert "game over" in browser.find_element(By.ID, "move-panel").text
    assert "pile 0" in picture.text
    assert "take: seat " in browser.find_element(By.ID, "move-panel").text  # the event, as text
    scores = [td.text for td in browser.find_elements(By.CSS_SELECTOR, "#seats-table td.score")]
    assert sorted(scores) == ["0", "1"]
    # a seat's view: its own observation, as readable text (its secret number, no JSON braces)
    browser.find_element(By.CSS_SELECTOR, "#view option[value='1']").click()
    text = picture.find_element(By.TAG_NAME, "pre").text
    assert "secret: " in text and "pile: " in text and "{" not in text
    where = Path(os.environ.get("TABLEBOTS_SCREENSHOTS", tmp_path))
    where.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(where / "plugin-replay-seat-view.png"))
    assert not browser.get_log("browser") or all(e["level"] != "SEVERE" for e in browser.get_log("browser"))


def test_a_plugin_game_is_checked_by_the_game_kit(plugin):
    """harness.games.testing, as a plug-in author calls it: the contract and observations that leak nothing."""
    code = ("from harness.games import get_game\n"
            "from harness.games.testing import check_game, check_observations\n"
            "game = get_game('toy')\n"
            "check_game(game, playouts=10)\n"
            "print('redealt', check_observations(game, positions=10))\n")
    result = subprocess.run([sys.executable, "-c", code], env=plugin, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("redealt ") and int(result.stdout.split()[1]) > 0
