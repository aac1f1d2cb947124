"""`harness play` and `harness check-bot` through click's CliRunner: exit codes, --help, bad input."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli

ROOT = Path(__file__).resolve().parent.parent
RANDOM = f"python3 {ROOT / 'bots' / 'random_bot.py'}"
GAME = "crisps"  # two players, quick games


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def garbage_bot(tmp_path) -> str:
    script = tmp_path / "garbage.py"
    script.write_text(textwrap.dedent('''
        import json, sys
        for line in sys.stdin:
            msg = json.loads(line)
            if msg["type"] == "hello":
                print(json.dumps({"type": "ready"}), flush=True)
            elif msg["type"] == "request":
                print("garbage here", flush=True)
    '''))
    return f"python3 {script}"


@pytest.mark.parametrize("command", ["play", "check-bot"])
def test_help(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "protocol.md" in result.output or "reference bots" in result.output
    assert "--move-ms" in result.output and "--sandbox" in result.output


@pytest.mark.parametrize("args,needle", [
    (["play", GAME], "--bot"),
    (["play", GAME, "--bot", "no-such-program-xyz", "--bot", RANDOM], "--bot"),
    (["play", GAME, "--bot", "python3 'unbalanced", "--bot", RANDOM], "--bot"),
    (["play", GAME, "--bot", "/etc/passwd", "--bot", RANDOM], "not an executable"),
    (["play", GAME, "--bot", RANDOM], "--bot"),  # one seat is too few
    (["play", GAME, "--bot", RANDOM, "--bot", RANDOM, "-o", "no_such_option=1"], "no_such_option"),
    (["play", GAME, "--bot", RANDOM, "--bot", RANDOM, "--move-ms", "0"], "--move-ms"),
    (["play", GAME, "--bot", RANDOM, "--bot", RANDOM, "--log", "/nonexistent-dir/x.jsonl"], "--log"),
    (["check-bot", GAME, "no-such-program-xyz"], "CMD"),
    (["check-bot", GAME, RANDOM, "--players", "9"], "--players"),
])
def test_bad_input_is_a_usage_error_naming_the_flag(args, needle):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert needle in result.output


def test_sandbox_without_bwrap_is_a_usage_error(monkeypatch, tmp_path):
    import shutil
    python = shutil.which("python3")
    monkeypatch.setenv("PATH", str(tmp_path))
    (tmp_path / "python3").symlink_to(python)
    result = run("play", GAME, "--bot", RANDOM, "--bot", RANDOM, "--sandbox", "bwrap")
    assert result.exit_code == 2
    assert "bubblewrap" in result.output


@pytest.mark.parametrize("command", [["play", GAME, "--bot", RANDOM, "--bot", RANDOM], ["check-bot", GAME, RANDOM,
                                                                                        "--games", "1"]])
def test_sandbox_auto_without_bwrap_warns_once_and_plays(monkeypatch, tmp_path, command):
    import shutil
    python = shutil.which("python3")
    monkeypatch.setenv("PATH", str(tmp_path))
    (tmp_path / "python3").symlink_to(python)
    result = CliRunner().invoke(cli, command)  # the default is --sandbox auto
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "without a sandbox" in warnings[0] and "bubblewrap" in warnings[0]


def test_sandbox_auto_with_bwrap_plays_sandboxed_without_a_warning():
    result = run("play", GAME, "--bot", RANDOM, "--bot", RANDOM)
    assert result.exit_code == 0 and "warning" not in result.output, result.output


def test_play_prints_results_and_writes_a_json_lines_log(tmp_path, garbage_bot):
    log = tmp_path / "play.jsonl"
    result = run("play", GAME, "--bot", RANDOM + " --seed 1", "--bot", garbage_bot, "--games", "2", "--seed", "9",
                 "--log", str(log), "--stderr-dir", str(tmp_path / "stderr"))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "game 1/2" in out and "game 2/2" in out and "seed 9" in out and "seed 10" in out
    assert "FORFEIT" in out and "malformed" in out and "garbage here" in out
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    types = {e["type"] for e in entries}
    assert {"game", "send", "recv", "event", "violation", "game_result"} <= types
    violations = [e for e in entries if e["type"] == "violation"]
    assert [v["kind"] for v in violations] == ["malformed", "malformed"]
    assert all(v["seat"] == 1 and v["bot"] == "garbage.py" for v in violations)
    assert all("ms" in e for e in entries if e["type"] == "recv")
    results = [e for e in entries if e["type"] == "game_result"]
    assert [r["forfeits"] for r in results] == [[1], [1]]
    assert (tmp_path / "stderr" / "garbage.py.stderr.log").exists()


def test_bot_names_come_from_the_script_and_stay_distinct():
    from harness.cli.play import bot_name, unique_specs
    assert bot_name(["python3", "-u", "bots/random_bot.py", "--seed", "1"]) == "random_bot.py"
    assert bot_name(["node", "bots/random_bot.js"]) == "random_bot.js"
    assert bot_name(["./build/mybot", "--fast"]) == "mybot"
    specs = unique_specs([("./a/bot",), ("./b/bot",), ("./a/bot",)])
    assert [s.name for s in specs] == ["bot", "bot-2", "bot"]
    assert specs[0] == specs[2]


def test_same_command_twice_is_two_seats_of_one_bot():
    result = run("play", GAME, "--bot", RANDOM, "--bot", RANDOM)
    assert result.exit_code == 0, result.output
    assert "seat 0  random_bot.py" in result.output and "seat 1  random_bot.py" in result.output
    assert "violation" not in result.output


def test_check_bot_reports_latency_and_passes_a_good_bot():
    result = run("check-bot", GAME, RANDOM, "--games", "2")
    assert result.exit_code == 0, result.output
    assert "start-up" in result.output and "median" in result.output and "p99" in result.output
    assert "no violations" in result.output


def test_check_bot_fails_a_bad_bot_and_lists_its_violations(garbage_bot):
    result = run("check-bot", GAME, garbage_bot, "--games", "2")
    assert result.exit_code == 1
    assert "2 violation(s)" in result.output and "malformed" in result.output


def test_check_bot_finds_the_reference_bots_where_TABLEBOTS_BOTS_says(monkeypatch, tmp_path):
    # an installed harness has no source tree: the directory is looked up, and the variable wins
    (tmp_path / "random_bot.py").write_bytes((ROOT / "bots" / "random_bot.py").read_bytes())
    monkeypatch.setenv("TABLEBOTS_BOTS", str(tmp_path))
    result = run("check-bot", GAME, RANDOM, "--games", "2")
    assert result.exit_code == 0, result.output
    assert "random-py" in result.output and "crisps-greedy" not in result.output  # only what is there
    monkeypatch.setenv("TABLEBOTS_BOTS", str(tmp_path / "empty"))
    result = run("check-bot", GAME, RANDOM, "--games", "2")
    assert result.exit_code == 2
    assert "no reference bots found (set TABLEBOTS_BOTS" in result.output and "--opponent" in result.output


MISBEHAVE = f"python3 {ROOT / 'tests' / 'bots' / 'misbehave.py'}"


def test_check_bot_latency_counts_timeouts_as_their_deadline():
    out = CliRunner().invoke(cli, ["check-bot", GAME, f"{MISBEHAVE} hang --at 2", "--games", "2", "--move-ms", "300",
                                   "--opponent", RANDOM])
    assert out.exit_code == 1, out.output
    line = next(x for x in out.output.splitlines() if x.startswith("decisions:"))
    assert "2 timed out (counted as taking their deadline)" in line
    assert "max >=300 ms" in line  # the timeouts, not the quick answers, are the worst latency


def test_check_bot_hints_that_a_bot_without_ready_did_not_flush(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # as on a beginner's machine: stdout to a pipe is buffered
    bot = tmp_path / "noflush.py"
    bot.write_text("import json, sys\nfor line in sys.stdin:\n"
                   "    msg = json.loads(line)\n"
                   "    if msg['type'] == 'hello':\n        print(json.dumps({'type': 'ready'}))\n"
                   "    elif msg['type'] == 'request':\n        print(json.dumps({'type': 'action', 'id': msg['id'], 'index': 0}))\n")
    out = CliRunner().invoke(cli, ["check-bot", GAME, f"python3 {bot}", "--games", "1", "--init-ms", "500",
                                   "--opponent", RANDOM])
    assert out.exit_code == 1, out.output
    assert "timeout" in out.output and "hint: did the bot flush its output?" in out.output


def test_check_bot_hints_that_debug_text_belongs_on_stderr(tmp_path):
    bot = tmp_path / "chatty.py"
    bot.write_text("import json, sys\nfor line in sys.stdin:\n"
                   "    msg = json.loads(line)\n"
                   "    if msg['type'] == 'hello':\n        print(json.dumps({'type': 'ready'}), flush=True)\n"
                   "    elif msg['type'] == 'request':\n"
                   "        print('thinking about', len(msg['actions']), 'actions', flush=True)\n")
    out = CliRunner().invoke(cli, ["check-bot", GAME, f"python3 {bot}", "--games", "1", "--opponent", RANDOM])
    assert out.exit_code == 1, out.output
    assert "malformed: not JSON: 'thinking about" in out.output
    assert "hint: a line that is not JSON: write debug output to stderr" in out.output


def test_check_bot_names_the_table_sizes_it_did_not_play():
    out = CliRunner().invoke(cli, ["check-bot", "dominoes", RANDOM, "--games", "3", "--players", "3"])
    assert out.exit_code == 0, out.output
    assert "note: 3-player tables only; dominoes is also played at 2 or 4 seats" in out.output
    out = CliRunner().invoke(cli, ["check-bot", GAME, RANDOM, "--games", "1"])
    assert "tables only" not in out.output  # crisps is played by two only


def _random_bot(args: list[str], lines: list[dict], without_c_json: bool = False):
    """The reference random bot run as a process on ``lines``; ``without_c_json``: as on an
    interpreter without ``_json`` (it then reads and writes with the json package)."""
    import subprocess
    import sys

    bot = str(ROOT / "bots" / "random_bot.py")
    code = (f"import sys, runpy; sys.modules['_json'] = None; sys.argv = {[bot, *args]!r}; "
            f"runpy.run_path({bot!r}, run_name='__main__')")
    argv = [sys.executable, "-c", code] if without_c_json else [sys.executable, bot, *args]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, check=False)


def test_the_random_bot_reads_its_options_by_hand_as_argparse_would_and_answers_the_same_without_c_json():
    """It reads --seed and --name itself (argparse's imports cost a start) and leaves anything else
    to argparse: --help, and mistakes explained; its answers are valid JSON either way."""
    game = [{"type": "hello", "protocol": 1},
            *({"type": "request", "id": i, "seat": 0, "actions": list(range(7))} for i in range(1, 9)),
            {"type": "bye"}]
    first = _random_bot(["--seed", "4", "--name", 'r\u00e9"x'], game)
    assert first.returncode == 0, first.stderr
    answers = [json.loads(line) for line in first.stdout.splitlines()]
    assert answers[0] == {"type": "ready", "name": 'r\u00e9"x'}
    assert [a["id"] for a in answers[1:]] == list(range(1, 9)) and all(0 <= a["index"] < 7 for a in answers[1:])
    for args in (["--seed=4", "--name=r\u00e9\"x"], ["--name", 'r\u00e9"x', "--seed", "4"]):
        assert _random_bot(args, game).stdout == first.stdout
    assert _random_bot(["--seed", "4", "--name", 'r\u00e9"x'], game, without_c_json=True).stdout == first.stdout
    helped = _random_bot(["--help"], [])
    assert helped.returncode == 0 and "--seed SEED" in helped.stdout and "--name NAME" in helped.stdout
    for bad, says in ((["--seed"], "expected one argument"), (["--seed", "x"], "invalid int value"),
                      (["--bogus"], "unrecognized arguments"), (["--name", "--seed", "3"], "expected one argument")):
        wrong = _random_bot(bad, game)
        assert wrong.returncode == 2 and says in wrong.stderr, (bad, wrong.stderr)


@pytest.mark.parametrize("game", ["crisps", "dominoes", "epizodiak"])
def test_a_greedy_bot_reads_its_name_by_hand_as_argparse_would(game):
    """--name NAME and --name=NAME read without argparse (its imports cost a start); --help and
    mistakes still go to argparse."""
    import subprocess
    import sys

    bot = str(ROOT / "bots" / f"{game}_greedy.py")
    hello = json.dumps({"type": "hello", "protocol": 1, "game": game, "options": {}}) + "\n"

    def run_bot(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, bot, *args], input=hello, capture_output=True, text=True, timeout=60,
                              check=False)

    assert json.loads(run_bot().stdout) == {"type": "ready", "name": f"{game}-greedy-py"}
    for args in (["--name", 'g\u00e9"x'], ['--name=g\u00e9"x']):
        assert json.loads(run_bot(*args).stdout) == {"type": "ready", "name": 'g\u00e9"x'}, args
    helped = run_bot("--help")
    assert helped.returncode == 0 and "--name NAME" in helped.stdout
    for bad, says in ((["--name"], "expected one argument"), (["--bogus"], "unrecognized arguments"),
                      (["--name", "a", "b"], "unrecognized arguments")):
        wrong = run_bot(*bad)
        assert wrong.returncode == 2 and says in wrong.stderr, (bad, wrong.stderr)
