"""Every benchmark still runs: each script in bench/ at its tiny size (``--tiny``, seconds) exits 0.

A benchmark measures the code as it is; when the code changes under it, it breaks without
anyone noticing until someone wants its figures (bench/referee.py and bench/contest.py did).
This runs every file in bench/, so a new benchmark cannot be left out: a script (it has a
``__main__`` block) must accept ``--tiny``; a module without one is a library of the scripts,
which must import and be imported by a script. The figures of a tiny run mean nothing and are
not checked: timing is for the benchmarks to print, never for a test to assert.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
#: the scripts whose tiny run takes longest (4-13 s each alone on a quiet machine, two to three
#: times that in the suite), slowest first: they go first, as each test here is a unit of xdist's
#: work of its own (tests/conftest.py: SPLIT_FILES)
SLOW = ("fairplay", "ratings_exact", "contest", "ratings", "matchmaking", "table", "league", "scale", "collusion")
SCRIPTS = sorted(BENCH.glob("*.py"), key=lambda p: (SLOW.index(p.stem) if p.stem in SLOW else len(SLOW), p.name))


def is_script(path: Path) -> bool:
    return re.search(r'^if __name__ == "__main__":', path.read_text(), re.M) is not None


def test_bench_has_files() -> None:
    assert len(SCRIPTS) >= 10 and any(is_script(p) for p in SCRIPTS)


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_bench_runs_tiny(path: Path) -> None:
    if not is_script(path):
        users = [p.name for p in SCRIPTS if p != path and re.search(rf"\b(import {path.stem}\b|from {path.stem} import)",
                                                                    p.read_text())]
        assert users, f"bench/{path.name} is neither a script (no __main__ block) nor imported by one"
        got = subprocess.run([sys.executable, "-c", f"import {path.stem}"], cwd=BENCH, capture_output=True,
                             text=True, timeout=120)
        assert got.returncode == 0, got.stderr[-3000:]
        return
    got = subprocess.run([sys.executable, str(path), "--tiny"], cwd=REPO, capture_output=True, text=True, timeout=540)
    assert got.returncode == 0, (f"bench/{path.name} --tiny exited {got.returncode}\n--- stdout (end)\n"
                                 f"{got.stdout[-2000:]}\n--- stderr (end)\n{got.stderr[-4000:]}")
    assert got.stdout.strip(), f"bench/{path.name} --tiny printed nothing"
