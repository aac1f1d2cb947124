#!/usr/bin/env python3
"""The walk of a league's config through ``harness run``: which modules a reader follows, in order.

    python tools/walk.py [CONFIG] [--adaptive] [--show]

Runs ``harness run`` on a copy of CONFIG (default: leagues/demo.yaml; ``--adaptive`` makes its
schedule adaptive) in a temporary directory, with a profiler on, from the command's first line
until the runner hands its executor the first games (then it stops the run). Each harness
function is counted once, the first time it is called, as a reader reads it once: the walk is
the sequence of their modules. A *stop* is a module entered (consecutive functions of one
module are one stop); a stop is *back* when the walk was in that module before. Comprehensions,
lambdas and module bodies (imports) are left out. ``--show`` prints the walk, one stop a line.

Not a benchmark: it measures the code's shape, not its speed, and is the same on any machine.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PACKAGE = str(ROOT / "harness")


class Dispatched(Exception):
    """The first games reached the executor: the walk ends here."""


def _module_of(filename: str) -> str | None:
    if not filename.startswith(PACKAGE):
        return None
    rel = Path(filename).relative_to(ROOT).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts)


def walk(config: Path, adaptive: bool) -> list[tuple[str, str]]:
    """(module, function) of every harness function in the order first called, up to the first dispatch."""
    from harness.cli.league import run
    from harness.league.executors.local import LocalExecutor

    seen: set[Any] = set()
    order: list[tuple[str, str]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code in seen or code.co_name.startswith("<"):
            return
        module = _module_of(code.co_filename)
        if module is None:
            return
        seen.add(code)
        order.append((module, code.co_qualname if hasattr(code, "co_qualname") else code.co_name))

    def submit(self: LocalExecutor, games: list[Any]) -> None:
        sys.setprofile(None)
        raise Dispatched

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "leagues"
        shutil.copytree(config.parent, target, ignore=shutil.ignore_patterns("runs", "*.db*"))
        bots = ROOT / "bots"
        shutil.copytree(bots, Path(tmp) / "bots")
        path = target / config.name
        if adaptive:
            path.write_text(path.read_text().replace("rounds: 30", "") + "\nschedule: adaptive\n")
        original = LocalExecutor.submit
        LocalExecutor.submit = submit  # type: ignore[method-assign]
        sys.setprofile(profile)
        try:
            run.main([str(path), "--quiet", "--workers", "1"], standalone_mode=False)
        except Dispatched:
            pass
        finally:
            sys.setprofile(None)
            LocalExecutor.submit = original  # type: ignore[method-assign]
    return order


def stops(order: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """The walk's stops: (module, its functions read there), a new stop at each change of module."""
    out: list[tuple[str, list[str]]] = []
    for module, function in order:
        if out and out[-1][0] == module:
            out[-1][1].append(function)
        else:
            out.append((module, [function]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", nargs="?", default=str(ROOT / "leagues" / "demo.yaml"))
    parser.add_argument("--adaptive", action="store_true", help="the league with an adaptive schedule")
    parser.add_argument("--show", action="store_true", help="print the walk, one stop a line")
    args = parser.parse_args()
    order = walk(Path(args.config).resolve(), args.adaptive)
    kind = "adaptive" if args.adaptive else "round robin"
    start = next((i for i, (m, f) in enumerate(order) if f == "run_league"), 0)
    for part, functions in ((f"{kind}, the whole command", order), (f"{kind}, from run_league", order[start:])):
        print(part + ": " + summary(functions, args.show))


def summary(order: list[tuple[str, str]], show: bool) -> str:
    """One line: functions, stops, modules, stops back in a module already left, the busiest modules."""
    walked = stops(order)
    visited: set[str] = set()
    back = 0
    for module, functions in walked:
        back += module in visited
        visited.add(module)
        if show:
            print(f"  {module:40} {', '.join(functions)}")
    per_module = collections.Counter(m for m, _ in walked)
    busiest = ", ".join(f"{m.removeprefix('harness.')} {n}" for m, n in per_module.most_common(3))
    return (f"{len(order)} functions, {len(walked)} stops in {len(visited)} modules, {back} of them back in a "
            f"module already left; most stops: {busiest}")

if __name__ == "__main__":
    main()
