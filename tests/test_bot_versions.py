"""A bot's version covers every file of its directory, and `harness submit` plays under the
league's own limits and time controls: real files, real processes."""

from __future__ import annotations

import sys
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli
from harness.league.config import load_config

REPO = Path(__file__).resolve().parent.parent
RANDOM = REPO / "bots" / "random_bot.py"


def _league(tmp_path: Path, bot_line: str, extra: str = "") -> Path:
    config = tmp_path / "league.yaml"
    config.write_text(f"name: v\ngame: crisps\nrounds: 1\n{extra}bots:\n  - {bot_line}\n"
                      f"  - {{name: random, command: {sys.executable} {RANDOM}}}\n")
    return config


def test_a_rebuild_of_a_bot_whose_command_names_no_file_is_a_new_version(tmp_path: Path) -> None:
    # like `java -cp . Bot`: the command names no file; the bot's files are in its cwd
    bot = tmp_path / "mybot"
    (bot / "pkg").mkdir(parents=True)
    (bot / "pkg" / "__init__.py").write_text("")
    (bot / "pkg" / "__main__.py").write_text(RANDOM.read_text())
    (bot / "Bot.class").write_bytes(b"\xca\xfe\xba\xbe one")
    config = _league(tmp_path, f"{{name: mine, command: {sys.executable} -m pkg, cwd: mybot}}")
    first = load_config(config).bots[0]
    assert str(bot / "Bot.class") in first.files
    (bot / "Bot.class").write_bytes(b"\xca\xfe\xba\xbe two")  # a rebuild
    second = load_config(config).bots[0]
    assert second.version != first.version
    # caches a run writes itself do not make a new version
    (bot / "pkg" / "__pycache__").mkdir()
    (bot / "pkg" / "__pycache__" / "__main__.cpython-311.pyc").write_bytes(b"cache")
    assert load_config(config).bots[0].version == second.version
    (bot / "Bot.class").rename(bot / "Main.class")  # a renamed file is a new version too
    assert load_config(config).bots[0].version != second.version


def test_a_bot_without_cwd_is_versioned_by_its_programs_directory(tmp_path: Path) -> None:
    bot = tmp_path / "bots"
    bot.mkdir()
    (bot / "main.py").write_text("import helper\n" + RANDOM.read_text())
    (bot / "helper.py").write_text("X = 1\n")
    config = _league(tmp_path, f"{{name: mine, command: {sys.executable} bots/main.py}}")
    before = load_config(config).bots[0].version
    (bot / "helper.py").write_text("X = 2\n")  # a file the command does not name
    assert load_config(config).bots[0].version != before
    # the config's own directory (the store, the logs) is never hashed whole
    (tmp_path / "bot.py").write_text(RANDOM.read_text())
    config = _league(tmp_path, f"{{name: mine, command: {sys.executable} bot.py}}")
    version = load_config(config).bots[0].version
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "v.sqlite").write_bytes(b"results")
    assert load_config(config).bots[0].version == version


def test_submit_plays_under_the_leagues_memory_limit(tmp_path: Path) -> None:
    hog = tmp_path / "hog.py"
    (tmp_path / "random_bot.py").write_text(RANDOM.read_text())  # beside it: the sandbox shows its directory only
    hog.write_text("import os, runpy\nheld = bytearray(400 * 1024 * 1024)\n"
                   "runpy.run_path(os.path.join(os.path.dirname(__file__), 'random_bot.py'), run_name='__main__')\n")
    config = _league(tmp_path, f"{{name: other, command: {sys.executable} {RANDOM} --seed 3}}",
                     "limits: {memory_mb: 200}\n")
    original = config.read_text()
    result = CliRunner().invoke(cli, ["submit", str(config), "hog", f"{sys.executable} {hog}", "--games", "2"])
    # under the default limit (2048 MB) it would pass: the league's 200 MB is what stops it
    assert result.exit_code == 1, result.output
    assert "not submitted" in result.output and config.read_text() == original


def test_a_bots_stderr_log_holds_no_command_line_or_path_and_the_harness_log_does(tmp_path: Path) -> None:
    bot = tmp_path / "secretdir"
    bot.mkdir()
    (bot / "bot.py").write_text("import sys\nprint('my own line', file=sys.stderr, flush=True)\n" + "import runpy, os\n"
                                "runpy.run_path(os.path.join(os.path.dirname(__file__), 'r.py'), run_name='__main__')\n")
    (bot / "r.py").write_text(RANDOM.read_text())
    logs = tmp_path / "logs"
    result = CliRunner().invoke(cli, ["play", "crisps", "--bot", f"{sys.executable} {bot / 'bot.py'}",
                                      "--bot", f"{sys.executable} {bot / 'r.py'}", "--games", "2", "--sandbox", "bwrap", "--stderr-dir", str(logs)])
    assert result.exit_code == 0, result.output
    own = (logs / "bot.py.stderr.log").read_text()
    assert "my own line" in own and "# tablebots: started pid" in own
    assert str(tmp_path) not in own and sys.prefix not in own and "bwrap" not in own
    harness_log = (logs / "bot.py.harness.log").read_text()
    assert str(bot) in harness_log  # the organizer's own log keeps the command line
