"""What several test files set up or read alike: a contest's keys rewritten, checked versions put
straight into its database (the build and check have tests of their own), the contest site served
in a process of its own, and the ``ATTACK`` lines an attacking bot (tests/bots/attacker.py) wrote
to its stderr logs."""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.contest.db import ContestDB


def set_keys(root: Path, **values: str) -> None:
    """Rewrite top-level keys of ``root/contest.yaml`` as written by ``contest init`` (each value as YAML text)."""
    path = root / "contest.yaml"
    text = path.read_text()
    for key, value in values.items():
        text, found = re.subn(rf"^{key}: .*$", f"{key}: {value}", text, flags=re.M)
        assert found == 1, f"contest.yaml has no line of its own for {key}"
    path.write_text(text)


def checked_version(root: Path, db: ContestDB, team: str, files: dict[str, bytes], *, activate: bool = True,
                    build_log: str | None = None, check_log: str | None = None) -> int:
    """A version of ``team`` with ``files``, checked (and its team's current one if ``activate``): its id."""
    row = db.team_by_name(team)
    assert row is not None, team
    sid, why = db.admit_submission(row.id, "python", "bot.py", sum(map(len, files.values())), per_hour=1000,
                                   in_progress=1000)
    assert sid is not None, why
    folder = root / "submissions" / str(sid)
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    db.set_status(sid, "checking", build_log=build_log, check_log=check_log)
    if activate:
        db.activate(sid)
    return sid


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def served(root: Path) -> Iterator[str]:
    """``harness contest serve root`` on a free port, in its own process group: its base URL (the
    caller waits for it to answer), stopped as Ctrl-C would (killed if it does not stop in 20 s)."""
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "harness", "contest", "serve", str(root), "--port", str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()


def burn(seconds: float) -> None:
    """Spin on a core for ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@contextmanager
def busy(processes: int, seconds: float, start: str = "spawn") -> Iterator[None]:
    """``processes`` processes spinning beside the test (as on a shared machine), killed at its end."""
    ctx = mp.get_context(start)
    burners = [ctx.Process(target=burn, args=(seconds,), daemon=True) for _ in range(processes)]
    for b in burners:
        b.start()
    try:
        yield
    finally:
        for b in burners:
            b.kill()
            b.join()


def attack_lines(logs: Path, bot: str, mode: str) -> list[dict[str, str]]:
    """The ``ATTACK mode k=v ...`` lines ``bot`` wrote to its stderr logs anywhere below ``logs``."""
    out = []
    for log in sorted(logs.glob(f"**/{bot}.stderr.log*")):
        for line in log.read_text(errors="replace").splitlines():
            m = re.match(rf"ATTACK {re.escape(mode)} (.*)", line)
            if m:
                out.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
    return out
