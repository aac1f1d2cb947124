#!/usr/bin/env python3
"""Mutation run: how many small planted bugs does the test suite catch, per package?

    python tools/mutate.py [--package games|play|league|report|cli ...] [--sample N] [--seed S]
                           [--timeout-factor F] [--list]

Run it before a release (not in CI: each mutant is a pytest run). The tree is copied once to a
temporary directory; there, one mutation at a time is planted in one module (the module is
re-written from its AST with a single node changed), the package's tests run against the copy
(``python -m pytest -x``, the copy first on ``PYTHONPATH``), and the original module is put back.
A mutant is *killed* when the tests fail or time out (``--timeout-factor`` times the clean run),
and *survives* when they pass. The working tree is never touched.

Design choice: our own small script rather than mutmut. mutmut 3 rewrites every function into
trampolines inside a ``mutants/`` copy and runs the whole suite per mutant with its own test
selection, which does not fit bot subprocesses started by the tests nor our package layout; a
sampled AST mutator with per-package test lists is ~200 lines and reports exactly the figure we
record in docs/testing.md. Operators (the kinds of slips the suite must catch): comparison flips
(``<`` and ``<=``, ``>`` and ``>=``, ``==`` and ``!=``, ``in`` and ``not in``), arithmetic
(``+`` and ``-``, ``*`` and ``//``), integer constants ``n -> n+1``, ``True``/``False``,
``and``/``or``, and ``not x -> x``. Mutation sites are listed from the AST, so a sample is
reproducible from ``--seed``.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# the tests that exercise each package (a mutant is judged by these only: faster than the whole suite)
TESTS = {
    "games": ["tests/test_epizodiak_rules.py", "tests/test_epizodiak_properties.py", "tests/test_dominoes_rules.py",
              "tests/test_dominoes_properties.py", "tests/test_crisps_rules.py", "tests/test_crisps_properties.py",
              "tests/test_games_generic.py", "tests/test_rare_branches.py"],
    "play": ["tests/test_referee_unit.py", "tests/test_deadlines.py", "tests/test_botproc_pins.py",
             "tests/test_referee_e2e.py"],
    "league": ["tests/test_league_config.py", "tests/test_league_schedule.py", "tests/test_schedule_pins.py",
               "tests/test_ratings_known.py", "tests/test_league_runner.py", "tests/test_league_e2e.py"],
    "report": ["tests/test_league_reports.py"],
    "cli": ["tests/test_cli_play.py", "tests/test_league_reports.py"],
}

_CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
             ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In}
_BIN_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult}


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the root
    index: int  # the index-th mutation site of the module, in ast.walk order
    line: int
    what: str


def _sites(tree: ast.AST) -> list[tuple[ast.AST, int, str]]:
    """(node, sub-index, description) of every mutation site, in a stable order."""
    out: list[tuple[ast.AST, int, str]] = []
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  and n.body and isinstance(n.body[0], ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _CMP_SWAP:
                    out.append((node, i, f"{type(op).__name__} -> {_CMP_SWAP[type(op)].__name__}"))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
            out.append((node, 0, f"{type(node.op).__name__} -> {_BIN_SWAP[type(node.op)].__name__}"))
        elif isinstance(node, ast.Constant) and id(node) not in docstrings:
            if isinstance(node.value, bool):
                out.append((node, 0, f"{node.value} -> {not node.value}"))
            elif isinstance(node.value, int):
                out.append((node, 0, f"{node.value} -> {node.value + 1}"))
        elif isinstance(node, ast.BoolOp):
            out.append((node, 0, f"{type(node.op).__name__} -> {'Or' if isinstance(node.op, ast.And) else 'And'}"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            out.append((node, 0, "not x -> x"))
    return out


def _apply(node: ast.AST, sub: int, parent_of: dict[int, tuple[ast.AST, str, int | None]]) -> None:
    if isinstance(node, ast.Compare):
        node.ops[sub] = _CMP_SWAP[type(node.ops[sub])]()
    elif isinstance(node, ast.BinOp):
        node.op = _BIN_SWAP[type(node.op)]()
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):  # bool is an int too
        node.value = (not node.value) if isinstance(node.value, bool) else node.value + 1
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.UnaryOp):
        parent, field, pos = parent_of[id(node)]
        if pos is None:
            setattr(parent, field, node.operand)
        else:
            getattr(parent, field)[pos] = node.operand


def list_mutants(package: str) -> list[Mutant]:
    """Every mutation site of every module of ``harness/<package>``."""
    out = []
    for path in sorted((ROOT / "harness" / package).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        for i, (node, _sub, what) in enumerate(_sites(ast.parse(path.read_text()))):
            out.append(Mutant(rel, i, getattr(node, "lineno", 0), what))
    return out


def mutated_source(source: str, index: int) -> str:
    """``source`` with its ``index``-th mutation site changed."""
    tree = ast.parse(source)
    parent_of: dict[int, tuple[ast.AST, str, int | None]] = {}
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for pos, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        parent_of[id(child)] = (parent, field, pos)
            elif isinstance(value, ast.AST):
                parent_of[id(value)] = (parent, field, None)
    node, sub, _ = _sites(tree)[index]
    _apply(node, sub, parent_of)
    return ast.unparse(tree) + "\n"


def run_tests(copy: Path, tests: list[str], timeout: float | None) -> tuple[bool, float]:
    """(passed, seconds) of the package's tests against the copy; a timeout counts as failed."""
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
    t0 = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=copy, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout, start_new_session=True)
    except subprocess.TimeoutExpired:
        return False, time.monotonic() - t0
    return done.returncode == 0, time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", action="append", choices=sorted(TESTS),
                        help="package under harness/ to mutate (repeatable; default: games, play, league)")
    parser.add_argument("--sample", type=int, default=30, help="mutants per package, drawn at random (0: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--timeout-factor", type=float, default=3.0,
                        help="a mutant whose tests take this many times the clean run is killed (a hang)")
    parser.add_argument("--tests", action="append", metavar="FILE",
                        help="test file to judge mutants by (repeatable; default: the package's list)")
    parser.add_argument("--list", action="store_true", help="only count the mutation sites per package")
    args = parser.parse_args()
    # a SIGTERM (or Ctrl-C) unwinds normally: the temporary copy is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    packages = args.package or ["games", "play", "league"]
    if args.list:
        for package in packages:
            print(f"{package}: {len(list_mutants(package))} mutation sites")
        return 0
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="tablebots-mutate-") as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info",
                                                                   ".mypy_cache", ".ruff_cache", ".pytest_cache"))
        summary = []
        for package in packages:
            mutants = list_mutants(package)
            chosen = mutants if not args.sample or args.sample >= len(mutants) else rng.sample(mutants, args.sample)
            tests = args.tests or TESTS[package]
            ok, clean = run_tests(copy, tests, None)
            if not ok:
                print(f"{package}: the tests fail without any mutation; fix that first", file=sys.stderr)
                return 2
            print(f"{package}: {len(mutants)} sites, {len(chosen)} sampled; clean run {clean:.0f} s", flush=True)
            killed = 0
            for m in chosen:
                target = copy / m.path
                original = target.read_text()
                target.write_text(mutated_source(original, m.index))
                try:
                    passed, secs = run_tests(copy, tests, max(60.0, clean * args.timeout_factor))
                finally:
                    target.write_text(original)
                killed += not passed
                print(f"  {'killed  ' if not passed else 'SURVIVED'} {m.path}:{m.line} {m.what} ({secs:.0f} s)",
                      flush=True)
            summary.append((package, killed, len(chosen)))
        for package, killed, total in summary:
            print(f"{package}: {killed}/{total} killed ({100 * killed / total:.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
