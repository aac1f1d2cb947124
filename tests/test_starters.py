"""The starter bots in bots/starters/: each is built as its README says and passes `harness
check-bot` at every game (Dominoes at 3 seats too), real compilers and processes."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli

STARTERS = Path(__file__).resolve().parent.parent / "bots" / "starters"


def build_command(language: str, tool: str | None = None) -> list[str]:
    """The build command as the starter's README gives it (so the README cannot go stale)."""
    readme = (STARTERS / language / "README.md").read_text()
    tool = tool or {"cpp": "g++", "rust": "rustc"}[language]
    line = next(x.strip() for x in readme.splitlines() if x.strip().startswith(tool + " "))
    return line.split()


def build_in_place(language: str, out: Path, tools: tuple[str, ...], sources: tuple[str, ...]) -> Path:
    """Copy a starter's sources into ``out/language`` and run its README's build lines there."""
    folder = out / language
    folder.mkdir()
    for source in sources:
        (folder / source).write_bytes((STARTERS / language / source).read_bytes())
    for tool in tools:
        argv = build_command(language, tool)
        argv = [w for a in argv for w in (sorted(p.name for p in folder.glob(a)) if "*" in a else [a])]
        subprocess.run(argv, check=True, capture_output=True, timeout=300, cwd=folder)
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """Each starter's command line, compiled ones built into a temporary directory."""
    out = tmp_path_factory.mktemp("starters")
    commands = {"python": f"{sys.executable} {STARTERS / 'python' / 'starter.py'}",
                "js": f"node {STARTERS / 'js' / 'starter.js'}"}

    def compile_alone(language: str, source: str) -> str:
        argv = build_command(language)
        argv[argv.index("starter")] = str(out / language)  # -o starter: into the temporary directory
        argv[argv.index(source)] = str(STARTERS / language / source)
        subprocess.run(argv, check=True, capture_output=True, timeout=300)
        return str(out / language)

    # the four builds side by side (the compilers wait on each other's disk and on the other
    # tests' processes as much as they compute): the slowest's time, not their sum
    with ThreadPoolExecutor(4) as builds:
        cpp = builds.submit(compile_alone, "cpp", "starter.cpp")
        rust = builds.submit(compile_alone, "rust", "starter.rs")
        java = builds.submit(build_in_place, "java", out, ("javac", "jar"), ("Bot.java",))
        go = builds.submit(build_in_place, "go", out, ("go",), ("bot.go",))
        commands["cpp"], commands["rust"] = cpp.result(), rust.result()
        # Java runs from its jar (`java -jar` names its file: the sandbox shows the bot that directory)
        commands["java"] = f"java -jar {java.result() / 'bot.jar'}"
        commands["go"] = str(go.result() / "bot")
    return commands


@pytest.mark.parametrize("language", ["python", "cpp", "js", "rust", "java", "go"])
@pytest.mark.parametrize("game,players", [("crisps", 2), ("dominoes", 3), ("epizodiak", 3)])
def test_each_starter_passes_check_bot(built, language, game, players):
    out = CliRunner().invoke(cli, ["check-bot", game, built[language], "--players", str(players), "--games", str(players)])
    assert out.exit_code == 0, out.output
    assert "no violations: ok" in out.output
    assert len(re.findall(r"^game \d/\d", out.output, re.M)) == players


def test_the_rust_starters_json_reader_passes_its_test(tmp_path):
    binary = tmp_path / "json_test"
    subprocess.run(["rustc", "--edition", "2021", "--test", "-o", str(binary), str(STARTERS / "rust" / "starter.rs")],
                   check=True, capture_output=True, timeout=300)
    result = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout + result.stderr
