"""The bot author's loop, end to end with real processes: a bot with a bug that depends on what
it saw earlier in the game is found with `violations`, reproduced with `--replay` (exit 1),
fixed, and the fix confirmed with `--replay --command` (exit 0); the store is found from any
current directory; an illegal answer says why."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli

REPO = Path(__file__).resolve().parent.parent
TRACKER = REPO / "tests" / "bots" / "tracker.py"
RANDOM = REPO / "bots" / "random_bot.py"


def invoke(*args: object, code: int = 0) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.output


def make_league(tmp_path: Path) -> Path:
    leagues = tmp_path / "leagues"
    leagues.mkdir()
    config = leagues / "story.yaml"
    config.write_text("name: story\ngame: crisps\nrounds: 2\nworkers: 1\npolicy: strikes\nstrikes: 50\n"
                      f"bots:\n  - {{name: tracker, command: {sys.executable} {TRACKER}}}\n"
                      f"  - {{name: random, command: {sys.executable} {RANDOM}}}\n")
    return config


def test_the_debugging_story_of_a_bot_that_goes_wrong_late_in_a_game(tmp_path, monkeypatch):
    config = make_league(tmp_path)
    monkeypatch.chdir(tmp_path)
    out = invoke("run", config, "--no-progress")
    assert "results: leagues/runs/story.sqlite" in out  # beside the config, whatever the current directory
    lines = invoke("violations", config).splitlines()
    assert lines and all(" tracker@" in line and " illegal " in line for line in lines)
    # the detail says why, in the game's words, not only "not among the offered actions"
    assert "Q Q Q Q Q is no play: there are only four cards of each rank" in lines[0]
    first = lines[0].split()[0].lstrip("#")
    # the same bug again: the replay sends the seat's whole game up to the violation, so the bot
    # has seen its six cards again and leads the Queens: still a violation, exit 1
    again = invoke("violations", config, "--replay", first, code=1)
    assert "verdict: still a violation" in again and "leading the Queens" in again
    # the fixed bot answers legally: exit 0, and its different earlier answers are only reported
    fixed = invoke("violations", config, "--replay", first, "--command",
                   f"{sys.executable} {TRACKER} --fixed")
    assert "verdict: a legal answer" in fixed
    # a bot that cannot start is no fix
    missing = invoke("violations", config, "--replay", first, "--command", str(tmp_path / "nope"), code=1)
    assert "does not start" in missing


def test_the_store_is_found_from_the_config_directory(tmp_path, monkeypatch):
    config = make_league(tmp_path)
    monkeypatch.chdir(tmp_path)
    invoke("run", config, "--no-progress", "--rounds", "1")
    os.chdir(config.parent)  # `cd leagues && harness violations story.yaml`
    assert " tracker@" in invoke("violations", "story.yaml")
    assert "story (crisps)" in invoke("table", "story.yaml")
    assert not (config.parent / "leagues").exists() and not (tmp_path / "runs").exists()
