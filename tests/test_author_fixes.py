"""The author's loop, the small things: each of them end to end through the command line."""

from __future__ import annotations

import csv
import io
import json
import random
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.games import get_game
from harness.league.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parent.parent
RANDOM = ROOT / "bots" / "random_bot.py"
MISBEHAVE = ROOT / "tests" / "bots" / "misbehave.py"
ALPHA, BETA = "a-very-long-bot-name-alpha", "a-very-long-bot-name-beta"


def invoke(*args: object, code: int = 0) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], terminal_width=200)
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture(scope="module")
def league(tmp_path_factory) -> Path:
    """Two bots whose names share their first 20 characters; beta answers illegally once."""
    leagues = tmp_path_factory.mktemp("fixes") / "leagues"
    leagues.mkdir()
    config = leagues / "demo.yaml"
    config.write_text(f"name: demo\ngame: crisps\nrounds: 3\nworkers: 1\npolicy: strikes\nstrikes: 5\nbots:\n"
                      f"  - {{name: {ALPHA}, command: {sys.executable} {RANDOM}}}\n"
                      f"  - {{name: {BETA}, command: {sys.executable} {MISBEHAVE} illegal --at 2}}\n")
    invoke("run", config, "--no-progress")
    return config


def test_h2h_in_the_terminal_shows_whole_names_and_intervals(league):
    out = invoke("h2h", league)
    header, row_a, row_b = out.splitlines()[1:4]
    assert ALPHA in header and BETA in header  # never cut to a shared prefix
    assert row_a.startswith(ALPHA) and row_b.startswith(BETA)
    assert re.search(r"\d\.\d\d \(6\) [+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\]", row_a), row_a


def test_table_csv_writes_each_interval_as_two_numeric_columns(league):
    rows = list(csv.DictReader(io.StringIO(invoke("table", league, "--format", "csv"))))
    for row in rows:
        for name in ("mu", "mean_score", "mean_rank"):
            low, high = float(row[f"{name}_low"]), float(row[f"{name}_high"])
            assert low <= float(row[name]) <= high
        assert not any(v.startswith("[") for v in row.values())


def test_the_seats_export_carries_the_table_size(league):
    rows = [json.loads(line) for line in invoke("export", league, "seats").splitlines()]
    assert rows and all(r["players"] == 2 for r in rows)
    header = invoke("export", league, "seats", "--format", "csv").splitlines()[0]
    assert "players" in header.split(",")


def test_violations_names_an_unknown_bot_and_exits_non_zero(league):
    assert invoke("violations", league, "--bot", BETA).count("illegal") >= 1
    out = invoke("violations", league, "--bot", "a-very-long-bot-name-alpah", code=2)
    assert "no bot named 'a-very-long-bot-name-alpah'" in out and f"did you mean {ALPHA!r}" in out
    out = invoke("violations", league, "--bot", f"{ALPHA}@nosuch", code=2)
    assert "has no version 'nosuch'" in out
    invoke("violations", league, "--bot", ALPHA)  # known, without violations: fine


def test_a_bot_page_lists_its_violations_before_its_games(league, tmp_path):
    out = invoke("report", league)  # the default place, as docs/report.md says
    assert "leagues/runs/demo.report/index.html" in out
    assert "`leagues/runs/demo.report/` for `leagues/demo.yaml`" in (ROOT / "docs" / "report.md").read_text()
    site = league.parent / "runs" / "demo.report"
    pages = [p.read_text() for p in (site / "bots").glob("*.html")]
    beta = next(p for p in pages if BETA in p)
    assert beta.index('id="bot-violations"') < beta.index('id="bot-games"')
    n = len(invoke("violations", league, "--bot", BETA).splitlines())
    assert n >= 1 and f"Violations ({n})" in beta


def test_cmd_in_a_bot_entry_suggests_command_first(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(f"game: crisps\nbots:\n  - {{name: a, cmd: {RANDOM}}}\n  - {{name: b, command: {RANDOM}}}\n")
    with pytest.raises(ConfigError, match=r"did you mean 'command' or 'cwd'\?"):
        load_config(config)


def test_a_missing_bot_file_is_not_found(tmp_path):
    out = invoke("check-bot", "crisps", str(tmp_path / "mybot"), code=2)
    assert "not found" in out and "not an executable file" not in out
    script = tmp_path / "mybot.sh"
    script.write_text("#!/bin/sh\n")
    assert "is not an executable file (chmod +x it" in invoke("check-bot", "crisps", str(script), code=2)


@pytest.mark.parametrize("game_name,players", [("dominoes", 2), ("crisps", 2), ("epizodiak", 3)])
def test_counts_of_one_are_singular_in_the_text_pictures(game_name, players):
    game, seen_one = get_game(game_name), False
    for seed in range(6):
        rng, state = random.Random(seed), game.new_state(players, seed, {})
        while not state.is_terminal():
            text = state.render()
            assert not re.search(r"\b1 (tiles|cards)\b", text), text
            seen_one |= bool(re.search(r"\b1 (tile|card)\b", text))
            state.apply(rng.choice(state.legal_actions()))
    assert seen_one


def test_a_violation_recorded_without_its_request_is_replayed_as_a_start_up(tmp_path):
    """A stored violation whose request is missing or not JSON (nothing was being asked) is
    replayed by starting the bot, not a crash of `harness violations --replay`."""
    from harness.play.limits import BotSpec, ResourceLimits, TimeControls
    from harness.play.reproduce import reproduce_violation

    bot = BotSpec("random", (sys.executable, str(RANDOM)))
    for request in ("", "{not json"):
        violation = {"id": 7, "game_id": "g1", "seat": 1, "kind": "crash", "detail": "exited (code 1)",
                     "request": request}
        rep = reproduce_violation(get_game("crisps"), {}, TimeControls(), ResourceLimits(sandbox="none"), bot,
                                  violation, None, 2)
        assert rep.lines[-1] == "verdict: the bot now starts correctly" and not rep.still_violation, rep.lines
