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


def test_a_start_up_violation_is_replayed_by_starting_the_bot_and_a_fix_is_confirmed(tmp_path, monkeypatch):
    slowstart = REPO / "tests" / "bots" / "slowstart.py"
    config = tmp_path / "startup.yaml"
    config.write_text("name: startup\ngame: crisps\nrounds: 1\nworkers: 1\ntime: {init_ms: 1000}\n"
                      f"bots:\n  - {{name: garbled, command: {sys.executable} {slowstart} garbage}}\n"
                      f"  - {{name: random, command: {sys.executable} {RANDOM}}}\n")
    monkeypatch.chdir(tmp_path)
    invoke("run", config, "--no-progress")
    lines = invoke("violations", config).splitlines()
    assert lines and all(" garbled@" in line for line in lines), lines
    first = lines[0].split()[0].lstrip("#")
    again = invoke("violations", config, "--replay", first, code=1)
    assert "verdict: still a violation (at start-up)" in again
    fixed = invoke("violations", config, "--replay", first, "--command", f"{sys.executable} {RANDOM}")
    assert "verdict: the bot now starts correctly" in fixed and "still a violation" not in fixed


def test_the_store_is_found_from_the_config_directory(tmp_path, monkeypatch):
    config = make_league(tmp_path)
    monkeypatch.chdir(tmp_path)
    invoke("run", config, "--no-progress", "--rounds", "1")
    os.chdir(config.parent)  # `cd leagues && harness violations story.yaml`
    assert " tracker@" in invoke("violations", "story.yaml")
    assert "story (crisps)" in invoke("table", "story.yaml")
    assert not (config.parent / "leagues").exists() and not (tmp_path / "runs").exists()


def test_run_off_a_terminal_prints_progress_lines_and_quiet_prints_none(tmp_path):
    import subprocess

    config = make_league(tmp_path)
    harness = str(Path(sys.executable).parent / "harness")
    env = {**os.environ, "TABLEBOTS_PROGRESS_SECONDS": "0.05"}
    out = subprocess.run([harness, "run", str(config), "--rounds", "3"], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("story: ")]
    assert lines, out.stderr  # stderr is a pipe here: lines, not a bar
    assert all(" games, " in line and " games/s, " in line and " left" in line for line in lines)
    assert "\r" not in out.stderr  # no bar redrawing over itself
    quiet = subprocess.run([harness, "run", str(config), "--rounds", "6", "--quiet"], capture_output=True,
                           text=True, env=env, timeout=300)
    assert quiet.returncode == 0 and not [line for line in quiet.stderr.splitlines() if line.startswith("story: ")]
    assert "played" in quiet.stdout


def test_option_values_are_what_the_docs_say_true_false_not_yes_on(tmp_path):
    bot = f"{sys.executable} {RANDOM}"
    for value in ("yes", "on", "y", "off"):
        out = CliRunner().invoke(cli, ["play", "crisps", "--bot", bot, "--bot", bot, "-o", f"jacks={value}"])
        assert out.exit_code == 2 and "allowed: true, false" in out.output, out.output
    assert CliRunner().invoke(cli, ["selfplay", "crisps", "-o", "jacks=true"]).exit_code == 0
    config = tmp_path / "opts.yaml"
    config.write_text(f"name: opts\ngame: crisps\noptions: {{jacks: yes}}\nbots:\n  - {{name: a, command: {bot}}}\n"
                      f"  - {{name: b, command: {bot}}}\n")
    out = CliRunner().invoke(cli, ["run", str(config)])
    assert out.exit_code != 0 and "options.jacks: 'yes' is not allowed" in out.output, out.output
    config.write_text(config.read_text().replace("jacks: yes", "jacks: true"))
    from harness.league.config import load_config
    assert load_config(config).options["jacks"] is True


def test_export_writes_every_table_as_jsonl_and_csv(tmp_path):
    import csv
    import io
    import json

    config = make_league(tmp_path)
    invoke("run", config, "--no-progress", "--rounds", "1")
    games = [json.loads(line) for line in invoke("export", config, "games").splitlines()]
    assert len(games) == 2 and [g["bots"][0].split("@")[0] for g in games] == ["tracker", "random"]
    assert all(set(g) == {"game_id", "round", "seed", "players", "bots", "ranking", "scores", "ended_by",
                          "decisions", "seconds"} for g in games)
    seats = list(csv.DictReader(io.StringIO(invoke("export", config, "seats", "--format", "csv"))))
    assert len(seats) == 4 and {s["bot"] for s in seats} == {"tracker", "random"}
    assert sorted(s["rank"] for s in seats) == ["0", "0", "1", "1"]
    violations = [json.loads(line) for line in invoke("export", config, "violations").splitlines()]
    assert violations and all(v["bot"] == "tracker" and v["kind"] == "illegal" and '"type":"request"' in
                              v["request"].replace(" ", "") and v["move"] >= 1 for v in violations)
    logs = [json.loads(line) for line in invoke("export", config, "logs").splitlines()]
    assert [e["type"] for e in logs].count("game") == 2 and [e["type"] for e in logs].count("game_result") == 2
    assert any(e.get("type") == "send" and e["msg"]["type"] == "request" for e in logs)
    result = CliRunner().invoke(cli, ["export", str(config), "logs", "--format", "csv"])
    assert result.exit_code == 2 and "--format" in result.output


def test_check_bot_names_every_seat_groups_repeats_logs_and_refuses_a_missing_file(tmp_path):
    import json

    out = CliRunner().invoke(cli, ["check-bot", "dominoes", f"{sys.executable} {RANDOM}", "--players", "4",
                                   "--games", "2"])
    assert out.exit_code == 0, out.output
    games = [line for line in out.output.splitlines() if line.startswith("game ")]
    assert len(games) == 2 and all(line.count(": YOU") == 1 and line.count(", ") >= 3 for line in games)
    assert all(" vs " in line and "rank " in line for line in games)  # you vs them, rank from 1
    log = tmp_path / "check.jsonl"
    out = CliRunner().invoke(cli, ["check-bot", "crisps", f"{sys.executable} {TRACKER}", "--games", "3",
                                   "--opponent", f"{sys.executable} {RANDOM} --seed 4", "--log", str(log)])
    assert out.exit_code == 1, out.output
    assert "3 violation(s), 1 different:" in out.output and "3x illegal: Q Q Q Q Q is no play" in out.output
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["type"] for e in entries].count("game") == 3
    assert all("random_bot.py" in " ".join(e["bots"]) for e in entries if e["type"] == "game")
    missing = CliRunner().invoke(cli, ["check-bot", "crisps", f"{sys.executable} {tmp_path / 'mybot.py'}"])
    assert missing.exit_code == 2 and "mybot.py" in missing.output and "not found" in missing.output
    assert "game 1/" not in missing.output  # refused up front, no forfeited games


def test_submit_adds_a_passing_bot_keeping_comments_and_refuses_a_failing_one(tmp_path):
    config = tmp_path / "league.yaml"
    original = ("# my league: comments and order must survive\nname: sub\ngame: crisps  # the game\n"
                f"bots:\n  - {{name: random, command: {sys.executable} {RANDOM}}}\n"
                f"  - {{name: random2, command: {sys.executable} {RANDOM} --seed 2}}\nrounds: 1\n")
    config.write_text(original)
    bad = CliRunner().invoke(cli, ["submit", str(config), "tracker", f"{sys.executable} {TRACKER}", "--games", "2"])
    assert bad.exit_code == 1 and "not submitted" in bad.output
    assert config.read_text() == original  # untouched
    good = invoke("submit", config, "fixed", f"{sys.executable} {TRACKER} --fixed", "--games", "2")
    assert "submitted: fixed added" in good
    text = config.read_text()
    assert text.startswith("# my league: comments and order must survive\nname: sub\ngame: crisps  # the game\n")
    assert f"  - {{name: fixed, command: {sys.executable} {TRACKER} --fixed}}" in text and text.endswith("rounds: 1\n")
    dup = CliRunner().invoke(cli, ["submit", str(config), "fixed", f"{sys.executable} {RANDOM}"])
    assert dup.exit_code == 2 and "already has a bot named 'fixed'" in dup.output
    out = invoke("run", config, "--no-progress")
    assert "played 6 games" in out  # the three pairs, both seat orders
    # a new version of a bot (here a version label): the old one stays in the table, --current hides it
    config.write_text(config.read_text().replace(f"{RANDOM} --seed 2}}", f"{RANDOM} --seed 2, version: v2}}"))
    import json
    rows = json.loads(invoke("table", config, "--format", "json"))["table"]
    old = [r for r in rows if not r["current"]]
    assert len(old) == 1 and old[0]["bot"] == "random2" and old[0]["games"] == 4
    current = json.loads(invoke("table", config, "--format", "json", "--current"))["table"]
    assert sorted((r["bot"], r["version"]) for r in current) == sorted(
        (r["bot"], r["version"]) for r in rows if r["current"])
    assert "random2" not in [r["bot"] for r in current]  # its only played version is old (v2 has not played)


def test_submit_plays_every_table_size_the_league_plays(tmp_path):
    two_only = REPO / "tests" / "bots" / "two_only.py"
    config = tmp_path / "league.yaml"
    original = (f"name: sizes\ngame: dominoes\nplayers: [2, 3]\nbots:\n  - {{name: r1, command: {sys.executable} {RANDOM}}}\n"
                f"  - {{name: r2, command: {sys.executable} {RANDOM} --seed 2}}\n"
                f"  - {{name: r3, command: {sys.executable} {RANDOM} --seed 3}}\nrounds: 1\n")
    config.write_text(original)
    bad = CliRunner().invoke(cli, ["submit", str(config), "two", f"{sys.executable} {two_only}", "--games", "2"])
    assert bad.exit_code == 1, bad.output
    assert "2-player tables:" in bad.output and "3-player tables:" in bad.output and "crash" in bad.output
    assert "game 3/3 (seats 0: " in bad.output  # one game per seat at the 3-player table
    assert config.read_text() == original
    good = invoke("submit", config, "r4", f"{sys.executable} {RANDOM} --seed 4", "--games", "2")
    assert "submitted: r4 added" in good and "3-player tables:" in good
