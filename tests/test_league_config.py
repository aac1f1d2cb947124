"""League configs: every kind of mistake is refused with one line naming the file and the key."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.league.config import ConfigError, load_config

REPO = Path(__file__).resolve().parent.parent
RANDOM_BOT = REPO / "bots" / "random_bot.py"

GOOD = """\
name: t
game: crisps
bots:
  - {name: a, command: python3 bot.py}
  - {name: b, command: [python3, bot.py, --seed, "2"]}
rounds: 2
"""


@pytest.fixture
def league_dir(tmp_path: Path) -> Path:
    (tmp_path / "bot.py").write_text(RANDOM_BOT.read_text())
    return tmp_path


def write(dir_: Path, text: str, name: str = "x.yaml") -> Path:
    path = dir_ / name
    path.write_text(textwrap.dedent(text))
    return path


def run_cli(path: Path, *args: str):
    result = CliRunner().invoke(cli, ["run", str(path), "--no-progress", *args])
    return result


def test_a_good_config_loads_with_defaults_filled(league_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(league_dir.parent)
    cfg = load_config(write(league_dir, GOOD))
    assert cfg.name == "t" and cfg.game == "crisps" and cfg.table_sizes == (2,)
    assert cfg.bots[0].command == ("python3", "bot.py")
    assert cfg.bots[1].command == ("python3", "bot.py", "--seed", "2")
    assert cfg.bots[0].cwd == str(league_dir)  # commands run in the config file's directory
    assert cfg.bots[0].files == (str(league_dir / "bot.py"),)
    assert cfg.options["max_turns"] == 2000  # the engine's defaults are filled in
    assert cfg.time == {"init_ms": 5000, "move_ms": 1000, "bank_ms": 0, "jitter_ms": 0}
    # the store is beside the config file, whatever the current directory
    assert cfg.store == str(league_dir.resolve() / "runs" / "t.sqlite") and cfg.policy == "forfeit"
    assert cfg.strikes == 0 and cfg.workers >= 1 and cfg.rounds == 2
    assert cfg.limits == {"sandbox": "auto"} and cfg.rating.tau == 0.0  # the defaults


def test_version_is_a_hash_of_the_bot_files_unless_fixed(league_dir: Path) -> None:
    path = write(league_dir, GOOD)
    before = load_config(path).bots[0].version
    assert load_config(path).bots[0].version == before  # stable
    (league_dir / "bot.py").write_text(RANDOM_BOT.read_text() + "\n# changed\n")
    assert load_config(path).bots[0].version != before
    fixed = write(league_dir, GOOD.replace("command: python3 bot.py}", "command: python3 bot.py, version: v1}"))
    assert load_config(fixed).bots[0].version == "v1"


CASES = [
    # (what is wrong, the config text, the key named, words of the message)
    ("unknown top key", GOOD + "round: 3\n", "round:", ["unknown key", "did you mean 'rounds'"]),
    ("unknown bot key", GOOD.replace("{name: a,", "{nmae: x, name: a,"), "bots[0].nmae",
     ["did you mean 'name'"]),
    ("missing bot file", GOOD.replace("python3 bot.py}", "python3 nope.py}"), "bots[0].command",
     ["nope.py not found"]),
    ("missing executable", GOOD.replace("python3 bot.py}", "no-such-interpreter-xyz bot.py}"), "bots[0].command",
     ["not found on PATH"]),
    ("bad game", GOOD.replace("game: crisps", "game: crips"), "game:", ["did you mean 'crisps'", "epizodiak"]),
    ("missing game", GOOD.replace("game: crisps\n", ""), "game:", ["missing"]),
    ("players not allowed", GOOD.replace("game: crisps", "game: dominoes") + "players: 5\n", "players:",
     ["5 is not allowed for dominoes", "allowed: 2, 3, 4"]),
    ("table bigger than the league", GOOD.replace("game: crisps", "game: dominoes") + "players: [2, 3]\n",
     "players:", ["need at least 3 bots"]),
    ("unknown game option", GOOD + "options: {jokers: true}\n", "options.jokers", ["unknown key"]),
    ("bad option value", GOOD + "options: {max_turns: lots}\n", "options.max_turns",
     ["'lots' is not allowed", "integer from 1"]),
    ("bad rounds", GOOD.replace("rounds: 2", "rounds: 0"), "rounds:", ["0 is not allowed", ">= 1"]),
    ("bool is not a number", GOOD.replace("rounds: 2", "rounds: true"), "rounds:", ["true is not allowed"]),
    ("yes is text, not true", GOOD.replace("rounds: 2", "rounds: yes"), "rounds:", ["'yes' is not allowed"]),
    ("bad time", GOOD + "time: {move_ms: -5}\n", "time.move_ms", ["-5 is not allowed"]),
    ("unknown time key", GOOD + "time: {move: 5}\n", "time.move", ["did you mean 'move_ms'"]),
    ("bad limit", GOOD + "limits: {memory_mb: big}\n", "limits.memory_mb", ["'big' is not allowed"]),
    ("bad policy", GOOD + "policy: lenient\n", "policy:", ["allowed: forfeit, strikes"]),
    ("strikes without the policy", GOOD + "strikes: 2\n", "strikes:", ["policy: strikes"]),
    ("bad rating", GOOD + "rating: {draw_probability: 2}\n", "rating.draw_probability", ["between 0 and 1"]),
    ("duplicate bot", GOOD.replace("{name: b,", "{name: a,"), "bots[1].name", ["already the name of bots[0]"]),
    ("one bot", "game: crisps\nbots:\n  - {name: a, command: python3 bot.py}\n", "bots:", ["at least 2 bots"]),
    ("bad bot name", GOOD.replace("{name: b,", "{name: 'b c',"), "bots[1].name", ["letters, digits"]),
    ("command of the wrong type", GOOD.replace("command: python3 bot.py}", "command: {x: 1}}"),
     "bots[0].command", ["expected a command line"]),
    ("not executable", GOOD.replace("command: python3 bot.py}", "command: ./bot.py}"), "bots[0].command",
     ["not an executable file"]),
    ("bad workers", GOOD + "workers: 0\n", "workers:", ["0 is not allowed"]),
    ("not a mapping", "- just\n- a list\n", "x.yaml:", ["expected a mapping"]),
]


@pytest.mark.parametrize("what,text,key,words", CASES, ids=[c[0] for c in CASES])
def test_config_errors_name_the_file_and_key(league_dir: Path, what: str, text: str, key: str,
                                             words: list[str]) -> None:
    path = write(league_dir, text)
    os.chmod(league_dir / "bot.py", 0o644)
    result = run_cli(path)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output  # one clear line, no traceback
    line = lines[0]
    assert line.startswith(f"Error: {path}: ")
    assert key in line, line
    for word in words:
        assert word in line, line
    assert not (league_dir / "runs").exists()  # refused before anything ran


def test_yaml_syntax_errors_give_the_line(league_dir: Path) -> None:
    path = write(league_dir, GOOD + "time: {move_ms: 5\nseed: 3\n")
    result = run_cli(path)
    assert result.exit_code == 2
    assert f"{path}: line " in result.output and "YAML syntax error" in result.output
    assert "Traceback" not in result.output


def test_a_yaml_error_names_its_own_line_and_column(league_dir: Path) -> None:
    # line 4 is indented under a scalar: the parser stops at its colon, column 7 (both 1-based)
    path = write(league_dir, "name: t\ngame: crisps\nrounds: 2\n  seed: 3\nbots: []\n")
    with pytest.raises(ConfigError, match=r": line 4, column 7: YAML syntax error: mapping values are not allowed"):
        load_config(path)


def test_too_many_rounds_says_how_many_games_and_how_many_rounds_fit(league_dir: Path) -> None:
    path = write(league_dir, GOOD.replace("rounds: 2", "rounds: 200000000"))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "200000000 rounds of 2 games make 400,000,000 games" in str(err.value)
    assert "at most 50,000,000 rounds" in str(err.value)


def test_the_rating_defaults_are_trueskills(league_dir: Path) -> None:
    cfg = load_config(write(league_dir, GOOD))
    assert (cfg.rating.mu, cfg.rating.sigma, cfg.rating.beta, cfg.rating.tau) == (25.0, 25.0 / 3, 25.0 / 6, 0.0)
    assert cfg.rating.draw_probability == 0.10


def test_missing_config_file(tmp_path: Path) -> None:
    result = run_cli(tmp_path / "nope.yaml")
    assert result.exit_code == 2 and "no such file" in result.output


def test_a_path_relative_to_the_wrong_directory_gets_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bots").mkdir()
    (tmp_path / "bots" / "b.py").write_text("print()")
    (tmp_path / "leagues").mkdir()
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "leagues", GOOD.replace("bot.py", "bots/b.py"))
    with pytest.raises(ConfigError, match=r"bots\[0\]\.command: bots/b.py not found .*did you mean \.\./bots/b.py"):
        load_config(path)
    load_config(write(tmp_path / "leagues", GOOD.replace("bot.py", "../bots/b.py")))


def test_overrides_from_flags_are_checked(league_dir: Path) -> None:
    path = write(league_dir, GOOD)
    assert load_config(path, rounds=7, workers=3).rounds == 7
    with pytest.raises(ConfigError, match="--rounds"):
        load_config(path, rounds=0)


def test_the_shipped_leagues_load() -> None:
    shipped = sorted((REPO / "leagues").glob("*.yaml"))
    assert any(p.name == "demo.yaml" for p in shipped)
    for path in shipped:
        cfg = load_config(path)
        assert len(cfg.bots) >= 2, path


def test_an_unusable_store_is_one_clear_line(league_dir: Path) -> None:
    (league_dir / "a-directory").mkdir()
    (league_dir / "not-a-db").write_text("garbage")
    for store, words in (("a-directory", "cannot open the store"), ("not-a-db", "not a league store")):
        path = write(league_dir, GOOD + f"store: {league_dir / store}\n")
        result = run_cli(path)
        assert result.exit_code == 2, result.output
        assert result.output.strip() == f"Error: {league_dir / store}: " + result.output.split(": ", 2)[2].strip()
        assert words in result.output and "Traceback" not in result.output


def test_the_rating_parameters_take_every_value_up_to_their_bounds_and_none_past(league_dir: Path) -> None:
    """sigma and beta any number > 0 (under 1 too), tau >= 0, draw_probability strictly between 0 and 1."""
    cfg = load_config(write(league_dir, GOOD + "rating: {sigma: 0.5, beta: 0.5, tau: 0, draw_probability: 0.999}\n"))
    assert (cfg.rating.sigma, cfg.rating.beta, cfg.rating.tau, cfg.rating.draw_probability) == (0.5, 0.5, 0.0, 0.999)
    for key, bad in (("sigma", 0), ("beta", 0), ("tau", -0.001), ("draw_probability", 1), ("draw_probability", 0)):
        with pytest.raises(ConfigError, match=f"rating.{key}"):
            load_config(write(league_dir, GOOD + f"rating: {{{key}: {bad}}}\n"))


def test_a_command_word_naming_a_file_longer_than_a_name_may_be_is_shown_cut_to_60_characters(league_dir: Path) -> None:
    """The error names the word; one longer than 60 characters is cut to its first 57 and ``...``
    (the line stays readable)."""
    for word, shown in [("d/" + "x" * 256, "d/" + "x" * 55 + "..."), ("y" * 253 + ".py", "y" * 57 + "...")]:
        path = write(league_dir, GOOD.replace("command: python3 bot.py}", f"command: python3 {word}}}"))
        result = run_cli(path)
        assert result.exit_code == 2, result.output
        assert f"'{shown}' names a file of 256 bytes, longer than a file name may be (255 bytes)" in result.output, \
            result.output
