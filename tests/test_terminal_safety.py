"""No raw control bytes reach a terminal: a hostile bot's stderr, ready name and answers are shown
escaped by every text output (play, check-bot, violations, violations --show, replay), while the
JSON outputs stay exact."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli
from harness.report.safe_text import visible

ROOT = Path(__file__).resolve().parent.parent
ANSI = f"{sys.executable} {ROOT / 'tests' / 'bots' / 'ansi.py'}"
RANDOM = f"{sys.executable} {ROOT / 'bots' / 'random_bot.py'}"
RAW = ["\x1b", "\u009b", "\x07", "\x08", "\r", "\x00", "\x7f"]


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.output


def assert_safe(text: str) -> None:
    found = [repr(c) for c in RAW if c in text]
    assert not found, f"raw control characters {found} in:\n{text!r}"


def test_visible_escapes_every_control_character_and_keeps_tab_and_newline():
    assert visible("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert visible("\u009b31m\x07\x08\r\x00\x7f") == "\\u009b31m\\x07\\x08\\x0d\\x00\\x7f"
    assert visible("tab\tand\nnewline") == "tab\tand\nnewline"
    assert visible("a\nb\tc", one_line=True) == "a\\x0ab\\x09c"
    assert visible("right\u202eto left") == "right\\u202eto left"
    assert visible("plain text, é, 漢字") == "plain text, é, 漢字"


def test_play_and_check_bot_show_a_hostile_bots_text_escaped(tmp_path):
    out = run("play", "crisps", "--bot", ANSI, "--bot", RANDOM, "--games", "1", "--stderr-dir", tmp_path)
    assert "malformed" in out and "\\x1b" in out
    assert_safe(out)
    out = run("check-bot", "crisps", ANSI, "--games", "1")
    assert "\\x1b" in out
    assert_safe(out)


def test_violations_and_replay_show_it_escaped_and_json_stays_exact(tmp_path):
    config = tmp_path / "hostile.yaml"
    config.write_text(f"name: hostile\nstore: {tmp_path / 'h.sqlite'}\ngame: crisps\nrounds: 1\nworkers: 1\n"
                      f"bots:\n  - {{name: ansi, command: {ANSI}}}\n  - {{name: random, command: {RANDOM}}}\n")
    run("run", config, "--no-progress")
    lines = run("violations", config)
    assert_safe(lines)
    first = lines.split()[0].lstrip("#")
    shown = run("violations", config, "--show", first)
    assert "\\x1b]0;pwned\\x07" in shown  # the OSC title sequence, visible and inert
    assert "\\x08\\x0d\\x00\\x7f" in shown  # a CR is shown, not obeyed as a line break
    assert_safe(shown)
    exact = json.loads(run("violations", config, "--show", first, "--json"))
    assert "\x1b]0;pwned\x07" in exact["received"] and "\x1b]0;pwned" in exact["stderr_tail"]  # exact
    games = json.loads(run("table", config, "--format", "json"))
    assert games["games_done"] == 2
    store_ids = run("violations", config).split()
    game_id = next(w for w in store_ids if w.startswith("g-"))
    replay = run("replay", config, game_id)
    assert_safe(replay)
