"""Java and Go out of the box: uploads built and checked in the contest's default sandbox and
memory limit (real javac, JVM, go toolchain and processes), the JVM sized to the limit, and a
runtime's start-up failure reported with every line it printed."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from harness.cli import cli
from harness.play.jvm import with_jvm_flags

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_contest import _bearer, _client, _contest, _wait  # noqa: E402

from harness.contest.auth import add_team  # noqa: E402
from harness.contest.db import ContestDB  # noqa: E402

STARTERS = Path(__file__).resolve().parent.parent / "bots" / "starters"


def test_a_runtime_that_dies_at_start_up_is_reported_with_every_line_it_printed(tmp_path: Path) -> None:
    bot = tmp_path / "dying.py"
    bot.write_text("print('Error occurred during initialization of VM', flush=True)\n"
                   "print('Could not allocate compressed class space: 1073741824 bytes', flush=True)\n"
                   "raise SystemExit(1)\n")
    out = CliRunner().invoke(cli, ["check-bot", "crisps", f"{sys.executable} {bot}", "--games", "1"])
    assert out.exit_code == 1
    assert "(and 1 more line(s): see what it sent)" in out.output
    assert "Could not allocate compressed class space" in out.output  # the reason, on the second line


def test_the_jvm_flags_let_java_start_under_the_contests_memory_limit(tmp_path: Path) -> None:
    (tmp_path / "Bot.java").write_bytes((STARTERS / "java" / "Bot.java").read_bytes())
    subprocess.run(["javac", "Bot.java"], cwd=tmp_path, check=True, timeout=300, capture_output=True)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1024 * 1024 * 1024, 1024 * 1024 * 1024))

    def start(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=tmp_path, input='{"type":"hello","game":"crisps","seat":0}\n{"type":"bye"}\n',
                              capture_output=True, text=True, timeout=120, preexec_fn=limited)
    plain = start(["java", "-cp", ".", "Bot"])
    assert '{"type":"ready"' not in plain.stdout and "Error occurred during initialization of VM" in plain.stdout
    sized = start(with_jvm_flags(["java", "-cp", ".", "Bot"], 1024))
    assert '{"type":"ready"' in sized.stdout, sized.stdout + sized.stderr


def test_the_jvm_heap_is_three_eighths_of_memory_mb_and_never_under_32_mb() -> None:
    """The rest of memory_mb goes to the class space, code cache, metaspace and stacks; under
    ~86 MB the heap stays at 32 MB (a JVM with less does not start a bot)."""
    from harness.play.jvm import jvm_flags

    assert [jvm_flags(mb)[0] for mb in (1024, 256, 86, 85, 64, 1)] == \
        ["-Xmx384m", "-Xmx96m", "-Xmx32m", "-Xmx32m", "-Xmx32m", "-Xmx32m"]


def test_java_and_go_uploads_build_and_pass_conformance_in_the_default_sandbox(tmp_path: Path) -> None:
    root = _contest(tmp_path)
    text = (root / "contest.yaml").read_text()
    assert "sandbox: auto" in text and "memory_mb: 1024" in text  # the defaults init writes
    (root / "contest.yaml").write_text(text.replace("workers: 1", "workers: 1\nconformance_games: 2"))
    db = ContestDB(root / "contest.sqlite")
    token = add_team(db, "alpha")
    db.close()
    with _client(root, worker=True) as client:
        for runtime, name, source in (("java", "Bot.java", STARTERS / "java" / "Bot.java"),
                                      ("go", "bot.go", STARTERS / "go" / "bot.go")):
            r = client.post("/api/submissions", headers=_bearer(token), data={"runtime": runtime},
                            files={"file": (name, source.read_bytes())})
            assert r.status_code == 201, r.text
            state = _wait(client, r.json()["id"], token)
            assert state["status"] == "active", state["build_log"] + state["check_log"]
            assert "build ok" in state["build_log"] and "conformance passed" in state["check_log"]
