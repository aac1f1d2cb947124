"""The request and session examples of protocol.md and docs/rules/dominoes.md are real states.

Each example names its game and seed; this test replays that game in the engine and checks that
the hand, the table, the offered actions (in canonical order) and the events the example shows are
exactly the engine's. An example that offers an action its hand cannot make fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.games import get_game

ROOT = Path(__file__).resolve().parents[1]


def json_blocks(text: str, after: str, count: int) -> list[dict]:
    """The first ``count`` ```json blocks of ``text`` after the heading ``after``, parsed."""
    rest = text[text.index(after):]
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)```", rest, re.S)[:count]]


def crisps_seed_37_after_two_plays():
    """Protocol.md's game: Crisps, seed 37; seat 0 leads 5, seat 1 follows with 8."""
    game = get_game("crisps")
    state = game.new_state(2, 37, {})
    first_hand = state.observation(0)["hand"]
    first_legal = state.legal_actions()
    state.apply({"type": "play", "cards": ["5"]})
    state.apply({"type": "play", "cards": ["8"]})
    return state, first_hand, first_legal


def test_protocol_request_example_is_a_real_crisps_request():
    request = json_blocks((ROOT / "protocol.md").read_text(), "### request", 1)[0]
    state, _, _ = crisps_seed_37_after_two_plays()
    obs = state.observation(0)
    shown = {k: v for k, v in request["observation"].items() if k != "..."}
    assert shown == {k: obs[k] for k in shown}
    assert request["actions"] == state.legal_actions()
    assert request["events"] == [{k: v for k, v in e.items()} for e in state.events[-2:]]


def test_protocol_session_example_follows_the_same_game_in_canonical_order():
    text = (ROOT / "protocol.md").read_text()
    session = text[text.index("## A complete session"):text.index("## A minimal bot")]
    lines = [line[2:] for line in session.splitlines() if line.startswith(("> {", "< {"))]
    state, first_hand, first_legal = crisps_seed_37_after_two_plays()
    request1 = next(line for line in lines if '"type":"request","id":1' in line)
    assert f'"hand":{json.dumps(first_hand, separators=(",", ":"))}' in request1
    listed = [json.loads(m) for m in re.findall(r'\{"type":"play","cards":\[[^\]]*\]\}', request1)]
    # shortened with "...", but what is shown is the start and the end of the canonical list
    assert listed[:-1] == first_legal[:len(listed) - 1] and listed[-1] == first_legal[-1]
    answer1 = json.loads(next(line for line in lines if '"id":1,"index"' in line))
    assert first_legal[answer1["index"]] == {"type": "play", "cards": ["5"]}
    request3 = next(line for line in lines if '"type":"request","id":3' in line)
    actions3 = json.loads(re.search(r'"actions":(\[.*?\]),"events"', request3).group(1))
    assert actions3 == state.legal_actions()
    answer3 = json.loads(next(line for line in lines if '"id":3,"action"' in line))
    assert answer3["action"] in actions3


def test_dominoes_doc_observation_and_request_are_real():
    observation, request = json_blocks((ROOT / "docs/rules/dominoes.md").read_text(),
                                       "### Example: an observation and a request", 2)
    game = get_game("dominoes")
    state = game.new_state(3, 4, {})
    for text in ("6-6", "6-0 left", "6-1 right", "3-1 right"):
        # the lead and 6-0 are the only legal actions (the referee plays them, C2)
        state.apply(game.parse_action(text))
    assert observation == state.observation(0)
    shown = {k: v for k, v in request["observation"].items() if k != "..."}
    assert shown == {k: observation[k] for k in shown}
    assert request["actions"] == state.legal_actions()
    assert request["events"] == state.events
    assert state.legal_actions()[1] == {"type": "play", "tile": [4, 0], "end": "left"}


# ---- the command examples of the help texts and the docs, run ----------------------------------

def _help_texts() -> dict[str, str]:
    """Every command's --help, by command name."""
    import click
    from click.testing import CliRunner

    from harness.cli import cli

    texts = {}
    for name, command in cli.commands.items():
        out = CliRunner().invoke(cli, [name, "--help"], terminal_width=200)
        assert out.exit_code == 0, out.output
        texts[name] = out.output
        assert isinstance(command, click.Command)
    return texts


def _example_lines(text: str) -> list[str]:
    """The `harness ...` command lines of a help text (continuation lines joined)."""
    lines, joined = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if joined:
            joined += " " + line.rstrip("\\").strip()
            if not line.endswith("\\"):
                lines.append(joined)
                joined = ""
        elif line.startswith("harness "):
            if line.endswith("\\"):
                joined = line.rstrip("\\").strip()
            else:
                lines.append(line)
    return lines


def _doc_examples() -> list[str]:
    """The `harness ...` lines of the shell blocks of README.md, protocol.md, docs/ and bots/."""
    found = []
    for path in [ROOT / "README.md", ROOT / "protocol.md", *sorted((ROOT / "docs").glob("*.md")),
                 *sorted((ROOT / "bots").rglob("README.md"))]:
        for block in re.findall(r"```(?:sh|bash|console)?\n(.*?)```", path.read_text(), re.S):
            found += [line.split("  #")[0].strip() for line in _example_lines(block.replace("$ ", ""))]
    return found


def test_every_help_and_docs_example_parses_as_its_command_line():
    """Each `harness ...` example in a --help text and in the docs' shell blocks names a real
    command with options it takes (parsed by click itself, up to running it)."""
    import shlex

    import click

    from harness.cli import cli

    seen = 0
    examples = [e for text in _help_texts().values() for e in _example_lines(text)] + _doc_examples()
    for example in examples:
        if "[" in example or "..." in example:  # a synopsis (`[--port 8000]`, `...`), not a command
            continue
        for part in re.split(r"\s(?:&&|&|;|\|)\s", example):  # `harness run X && harness table X`
            if not part.strip().startswith("harness "):
                continue
            argv = shlex.split(re.split(r"\s[<>]\s?", part)[0])[1:]
            command = cli.commands.get(argv[0])
            assert command is not None, example
            try:
                command.make_context(argv[0], argv[1:])
            except click.UsageError as exc:
                raise AssertionError(f"{example}: {exc}") from None
            seen += 1
    assert seen >= 30


def _small_league(tmp_path: Path) -> Path:
    import sys

    from click.testing import CliRunner

    from harness.cli import cli

    leagues = tmp_path / "leagues"
    leagues.mkdir()
    config = leagues / "demo.yaml"
    random_bot = ROOT / "bots" / "random_bot.py"
    config.write_text(f"name: demo\ngame: crisps\nrounds: 1\nworkers: 1\nbots:\n"
                      f"  - {{name: a, command: {sys.executable} {random_bot}}}\n"
                      f"  - {{name: b, command: {sys.executable} {random_bot} --seed 2}}\n")
    out = CliRunner().invoke(cli, ["run", str(config), "--no-progress"])
    assert out.exit_code == 0, out.output
    return config


def test_the_pandas_examples_of_export_help_and_the_docs_run(tmp_path):
    import os
    import subprocess
    import sys

    _small_league(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    help_text = _help_texts()["export"]
    after = help_text[help_text.index("For pandas:"):help_text.index("Options:")]
    shell_lines = [line.strip() for line in after.splitlines()[1:] if line.strip()]
    assert len(shell_lines) == 2 and "pandas" in shell_lines[1]
    for line in shell_lines:  # as a user types them, in a shell, in the directory of leagues/
        result = subprocess.run(line.replace("python3 ", f"{sys.executable} ", 1), shell=True, cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, f"{line}: {result.stderr}"
    assert "rank" in result.stdout and "a " in result.stdout and "b " in result.stdout
    block = re.search(r"For pandas:\n\n```python\n(.*?)```", (ROOT / "docs" / "leagues.md").read_text(), re.S)
    assert block is not None
    subprocess.run("harness export leagues/demo.yaml games --format csv > games.csv", shell=True, cwd=tmp_path,
                   env=env, check=True)
    result = subprocess.run([sys.executable, "-c", block.group(1)], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "bot" in result.stdout
