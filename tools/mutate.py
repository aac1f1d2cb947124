#!/usr/bin/env python3
"""Mutation run: how many small planted bugs does the test suite catch, per package?

    python tools/mutate.py [--package games|play|contest|league|report|cli ...] [--sample N] [--seed S]
                           [--part K/N] [--skip N] [--timeout-factor F] [--retry-timeouts F] [--confirm-kills]
                           [--uncovered run|skip] [--no-select] [--list]

Run it before a release (not in CI: each mutant is a pytest run). The tree is copied once to a
temporary directory; there, one mutation at a time is planted in one module (the module is
re-written from its AST with a single node changed), tests run against the copy (``python -m
pytest -x``, the copy first on ``PYTHONPATH``), and the original module is put back. A mutant is
*killed* when a test fails (the first failing test is named), and *survives* when they pass. A run
over ``--timeout-factor`` times what those tests took in the clean run is printed TIMEOUT and not
counted: on a loaded machine slow is not hung, so it is run again with ``--retry-timeouts F``
times the time (a TIMEOUT left after that is a hang, or a machine too loaded to judge). With
``--confirm-kills`` the test that failed is run once more without the mutant: when it fails
there too the mutant is printed FLAKY, not killed. The working tree is never touched.

Per-mutant test selection: the package's tests run once, clean, under coverage.py with one
context per test (a small pytest plugin calls ``Coverage.switch_context(nodeid)``; Python
subprocesses started by a test are measured too, through coverage's ``COVERAGE_PROCESS_START``
start-up hook, with the test's id as their static context). A mutant is then judged only by the
tests that executed its line. Lines run only while modules are imported or tests collected (context
``""``: signatures' defaults, module constants) are judged by the whole list. A line no test executed is *not
covered*: by default (``--uncovered run``) it is judged by the whole list all the same, because
some lines run where coverage cannot see (a ``preexec_fn`` between fork and exec, a sandboxed
bot with a scrubbed environment) and are still tested; ``--uncovered skip`` reports it as NOT
COVERED without running anything and counts it as surviving. On the play tests the selection
cuts a mutant's run from minutes to seconds: most lines are run by a handful of tests.

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
import contextlib
import json
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# the tests that exercise each package: the coverage run runs all of them, a mutant only those that
# ran its line (so a broad list costs only the clean run); tests/test_layout.py checks that every
# test file is in a list or in UNLISTED, so a new test file cannot be forgotten
TESTS = {
    "games": ["tests/test_epizodiak_rules.py", "tests/test_epizodiak_properties.py", "tests/test_dominoes_rules.py",
              "tests/test_dominoes_properties.py", "tests/test_crisps_rules.py", "tests/test_crisps_properties.py",
              "tests/test_games_generic.py", "tests/test_rare_branches.py", "tests/test_sampling.py",
              "tests/test_dominoes_event_log.py", "tests/test_epizodiak_event_log.py", "tests/test_game_plugins.py"],
    "play": ["tests/test_referee_unit.py", "tests/test_deadlines.py", "tests/test_botproc_pins.py",
             "tests/test_referee_e2e.py", "tests/test_fair_play.py", "tests/test_fairness.py",
             "tests/test_bot_pool_bound.py", "tests/test_cli_play.py", "tests/test_author_loop.py",
             "tests/test_author_fixes.py", "tests/test_terminal_safety.py", "tests/test_sdk.py",
             "tests/test_layers_play.py", "tests/test_layers_kill.py", "tests/test_envelope.py",
             "tests/test_ordinary_user.py", "tests/test_bot_versions.py", "tests/test_contest_participant.py",
             "tests/test_runtimes.py", "tests/test_fair_time.py", "tests/test_fair_play_ids.py"],
    "contest": ["tests/test_contest.py", "tests/test_contest_browser.py", "tests/test_contest_limits.py",
                "tests/test_layers_contest.py", "tests/test_build_envelope.py", "tests/test_contest_ops.py",
                "tests/test_contest_backup.py", "tests/test_contest_organizer_browser.py",
                "tests/test_contest_deploy.py", "tests/test_contest_participant.py", "tests/test_runtimes.py",
                "tests/test_participant_browser.py", "tests/test_contest_collusion.py", "tests/test_contest_pins.py"],
    "league": ["tests/test_league_config.py", "tests/test_league_schedule.py", "tests/test_schedule_pins.py",
               "tests/test_ratings_known.py", "tests/test_league_runner.py", "tests/test_league_e2e.py",
               "tests/test_matchmaking.py", "tests/test_adaptive_schedule.py", "tests/test_adaptive_resume.py",
               "tests/test_adaptive_league_e2e.py", "tests/test_planning.py", "tests/test_match.py",
               "tests/test_deal_order.py", "tests/test_logstore.py", "tests/test_store_owner.py",
               "tests/test_rating_history.py", "tests/test_statistics.py", "tests/test_league_dask.py",
               "tests/test_dask_safety.py", "tests/test_log_caps.py", "tests/test_layers_schedule.py",
               "tests/test_ratings_model.py", "tests/test_bot_versions.py", "tests/test_fair_play_ids.py",
               "tests/test_fair_play_deals.py", "tests/test_live_standing.py",
               "tests/test_ratings_noise.py", "tests/test_ratings_swaps.py", "tests/test_ratings_triples.py",
               "tests/test_ratings_local.py"],
    "report": ["tests/test_league_reports.py", "tests/test_sprt_exact.py", "tests/test_statistics.py", "tests/test_statistics_arrays.py",
               "tests/test_rating_history.py", "tests/test_index_renderer.py", "tests/test_report_browser.py",
               "tests/test_replay_viewer.py", "tests/test_serve_live.py", "tests/test_store_owner.py", "tests/test_live_standing.py",
               "tests/test_match.py", "tests/test_fair_play.py", "tests/test_layers_contest.py",
               "tests/test_collusion.py", "tests/test_contest_collusion.py"],
    "cli": ["tests/test_cli_play.py", "tests/test_league_reports.py", "tests/test_docs_examples.py",
            "tests/test_starters.py"],
}

# test files that judge no package's mutants, and why
UNLISTED = {
    "tests/test_layout.py": "the source tree's shape (module sizes, imports), not behaviour",
    "tests/test_greedy_mix.py": "the benchmark's in-process bots (bench/greedy_mix.py), not harness code",
    "tests/test_matchmaking_headline.py": "the benchmark's headline statistics (bench/matchmaking_headline.py), "
                                          "not harness code",
    "tests/test_bench_tiny.py": "that every bench/ script still runs (minutes for each mutant), not what it computes",
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
    lines: tuple[int, ...] = ()  # the lines whose execution reaches the site: its own and its statement's first
    #: evaluated when its module is imported (a module constant, a signature's default, a class
    #: attribute), not in a function's body: a test in the pytest process reads it without running it
    at_import: bool = False

    @property
    def key(self) -> str:
        """``path#index``, what ``--only`` takes to run this mutant again."""
        return f"{self.path}#{self.index}"


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


def _statement_lines(tree: ast.AST) -> dict[int, int]:
    """id(node) -> first line of the innermost statement holding it (a compound statement's header)."""
    owner: dict[int, int] = {}
    for stmt in ast.walk(tree):  # outer statements come first, so inner ones overwrite them
        if isinstance(stmt, ast.stmt):
            for child in ast.walk(stmt):
                owner[id(child)] = stmt.lineno
    return owner


def _in_bodies(tree: ast.AST) -> set[int]:
    """id(node) of every node inside a function's or a lambda's body (run when called, not at import)."""
    inside: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(n) for stmt in fn.body for n in ast.walk(stmt))
        elif isinstance(fn, ast.Lambda):
            inside.update(id(n) for n in ast.walk(fn.body))
    return inside


def list_mutants(package: str) -> list[Mutant]:
    """Every mutation site of every module of ``harness/<package>``."""
    out = []
    for path in sorted((ROOT / "harness" / package).rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text())
        owner = _statement_lines(tree)
        bodies = _in_bodies(tree)
        for i, (node, _sub, what) in enumerate(_sites(tree)):
            first = getattr(node, "lineno", 0)
            last = getattr(node, "end_lineno", None) or first
            lines = set(range(first, last + 1)) | ({owner[id(node)]} if id(node) in owner else set())
            out.append(Mutant(rel, i, first, what, tuple(sorted(lines)), id(node) not in bodies))
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


@dataclass
class Outcome:
    """What one pytest run against the copy did."""

    passed: bool
    seconds: float
    timed_out: bool = False
    failed: str = ""  # the first failing test's id, when pytest named one


def run_tests(copy: Path, tests: list[str], timeout: float | None,
              deselect: list[str] | tuple[str, ...] = ()) -> Outcome:
    """Run ``tests`` against the copy (``-x``); a timeout is not a pass. The whole process group is
    killed on a timeout: a test's bots and servers must not go on loading the machine."""
    env = dict(os.environ, PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-rfE", "-p", "no:cacheprovider", *tests,
           *(f"--deselect={t}" for t in deselect)]
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, cwd=copy, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except BaseException as exc:  # the timeout, or this run stopped (SIGTERM, Ctrl-C): the tests too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if not isinstance(exc, subprocess.TimeoutExpired):
                raise
            return Outcome(False, time.monotonic() - t0, timed_out=True)
        out.seek(0)
        # "FAILED <node id> - <message>": a node id holds spaces when a parameter does ("[60-1 min]")
        failed = next((line.split(" ", 1)[1].rstrip("\n").split(" - ", 1)[0] for line in out
                       if line.startswith(("FAILED ", "ERROR "))), "")
    return Outcome(code == 0, time.monotonic() - t0, failed=failed)


# The pytest plugin of the coverage run: one coverage context per test, named by its node id, in this
# process (a dynamic context) and in the Python subprocesses the test starts (the static context of
# the configuration below, read from the environment by each subprocess as it starts).
_PLUGIN = '''
import json, os
import coverage
import pytest

_durations: dict = {}
_failed: list = []


def _switch(context):
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(context)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    os.environ["MUTATE_CONTEXT"] = item.nodeid
    _switch(item.nodeid)


def pytest_runtest_logreport(report):
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration
    if report.failed and report.nodeid not in _failed:
        _failed.append(report.nodeid)


def pytest_runtest_logfinish(nodeid, location):
    os.environ.pop("MUTATE_CONTEXT", None)
    _switch("")


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["MUTATE_REPORT"], "w") as f:
        json.dump({"durations": _durations, "failed": _failed}, f)
'''

# sigterm: a subprocess that ends by SIGTERM saves its data too (uvicorn re-raises the SIGTERM it
# was stopped by once it has shut down: without this, no line the contest site ran in a test's
# server process was seen, and its mutants were judged without the tests that attack the site)
_RCFILE = '''[run]
data_file = {data}
parallel = True
sigterm = True
source_pkgs = harness.{package}
context = ${{MUTATE_CONTEXT}}
'''


@dataclass
class TestMap:
    """What the clean coverage run of a package's tests found."""

    contexts: dict[str, dict[int, set[str]]]  # path relative to the copy -> line -> test ids that ran it
    durations: dict[str, float]  # test id -> seconds (under coverage), in the order the tests ran
    startup: float  # seconds of the run outside any test (imports, collection)
    broken: list[str]  # tests that fail without any mutation: left out

    def select(self, mutant: Mutant) -> tuple[list[str] | None, str]:
        """The test ids that ran the mutant's line (None: the whole list) and why."""
        by_line = self.contexts.get(mutant.path, {})
        ran: set[str] = set().union(*(by_line.get(line, set()) for line in mutant.lines))
        if not ran:
            return None, "not covered"
        if ran == {""} or ("" in ran and mutant.at_import):
            # run only at import or collection, or a module-level value the pytest process imported
            # at collection (the other contexts are subprocesses importing it again): every test
            # of the process may read it without running its line
            return None, "import time"
        # also run at collection (a test module probing what the host can do): the tests that ran
        # it are the ones it matters to; a mutant that changes what is collected fails their ids
        ran -= {""} | set(self.broken)
        if not ran:
            return None, "not covered (only by tests that fail clean)"
        return self.order(ran), "selected"

    def order(self, tests: set[str]) -> list[str]:
        """Quickest first (pytest keeps the order of the ids given; ``-x`` stops at the first
        failure, and most mutants are killed by the first test that sees them), grouped by file:
        pytest tears a module-scoped fixture down whenever the next test is in another file, so
        interleaving files would build a browser or a played league again for each test."""
        by_file: dict[str, list[str]] = {}
        for test in tests:
            by_file.setdefault(test.split("::", 1)[0], []).append(test)
        cost = {f: sum(self.durations.get(t, 0.0) for t in ids) for f, ids in by_file.items()}
        return [t for f in sorted(by_file, key=lambda f: (cost[f], f))
                for t in sorted(by_file[f], key=lambda t: (self.durations.get(t, 0.0), t))]

    def seconds(self, tests: list[str] | None) -> float:
        chosen = self.durations.values() if tests is None else (self.durations.get(t, 0.0) for t in tests)
        return self.startup + sum(chosen)


def _pytest_report(copy: Path, work: Path, tests: list[str], log: Path, **env_extra: str) -> dict[str, Any]:
    """Run ``tests`` (all of them, no ``-x``) with the contexts plugin; its report: durations, failed."""
    env = {k: v for k, v in os.environ.items() if k != "MUTATE_CONTEXT"}
    env.update(PYTHONPATH=os.pathsep.join([str(copy), str(work)]), PYTHONDONTWRITEBYTECODE="1",
               MUTATE_REPORT=str(work / "report.json"), **env_extra)
    cmd = [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-p", "_mutate_contexts", *tests]
    with log.open("w") as out:
        subprocess.run(cmd, cwd=copy, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    report: dict[str, Any] = json.loads((work / "report.json").read_text())
    return report


def coverage_run(copy: Path, package: str, tests: list[str]) -> TestMap:
    """Run ``tests`` once against the clean copy under coverage.py, one context per test. Tests that
    fail there are run again without coverage (tracing slows a process: a timing test may fail under
    coverage only); those that fail again are ``broken``, left out of every mutant's run."""
    import coverage  # the test extra has it; imported here so --list works without it

    work = Path(tempfile.mkdtemp(prefix="cov-", dir=copy.parent))
    (work / "_mutate_contexts.py").write_text(_PLUGIN)
    # coverage's .pth hook starts measuring any Python process that has COVERAGE_PROCESS_START;
    # sitecustomize does the same where that hook is not installed (process_startup runs once)
    (work / "sitecustomize.py").write_text("import coverage\ncoverage.process_startup()\n")
    rc = work / "coveragerc"
    rc.write_text(_RCFILE.format(data=work / "data" / ".coverage", package=package))
    (work / "data").mkdir()
    log = Path(tempfile.gettempdir()) / f"tablebots-mutate-{package}-clean.log"
    t0 = time.monotonic()
    report = _pytest_report(copy, work, tests, log, COVERAGE_PROCESS_START=str(rc))
    wall = time.monotonic() - t0
    cov = coverage.Coverage(config_file=str(rc), data_file=str(work / "data" / ".coverage"))
    cov.combine(strict=True)
    data = coverage.CoverageData(basename=str(work / "data" / ".coverage"))
    data.read()
    contexts: dict[str, dict[int, set[str]]] = {}
    for filename in data.measured_files():
        rel = str(Path(filename).resolve().relative_to(copy.resolve()))
        contexts[rel] = {line: set(ctxs) for line, ctxs in data.contexts_by_lineno(filename).items()}
    durations: dict[str, float] = report["durations"]
    broken: list[str] = []
    if report["failed"]:
        relog = log.with_name(f"tablebots-mutate-{package}-rerun.log")
        broken = _pytest_report(copy, work, report["failed"], relog)["failed"]
        print(f"{package}: {len(report['failed'])} tests failed under coverage ({log}); without it "
              f"{len(broken)} fail again ({relog}), left out: {', '.join(broken[:5])}", file=sys.stderr, flush=True)
    shutil.rmtree(work, ignore_errors=True)
    return TestMap(contexts, durations, max(0.0, wall - sum(durations.values())), broken)


def _check_clean(copy: Path, package: str, tests: list[str], select: bool) -> TestMap | None:
    """The clean run (under coverage when selecting); None when the tests fail without a mutation."""
    if not select:
        clean = run_tests(copy, tests, None)
        return TestMap({}, {}, clean.seconds, []) if clean.passed else None
    tmap = coverage_run(copy, package, tests)
    return None if set(tmap.durations) <= set(tmap.broken) else tmap


def judge(copy: Path, m: Mutant, tmap: TestMap, all_tests: list[str], args: argparse.Namespace) -> str:
    """Plant the mutant, run its tests, restore the module; the verdict line printed for it."""
    chosen, why = tmap.select(m) if tmap.contexts else (None, "--no-select")
    where = f"{m.path}:{m.line} {m.what} [{m.key}]"
    if chosen is None and why.startswith("not covered") and args.uncovered == "skip":
        return f"  NOT COVERED {where}"
    tests = all_tests if chosen is None else chosen
    timeout = max(60.0, args.timeout_factor * tmap.seconds(chosen))
    target = copy / m.path
    original = target.read_text()
    target.write_text(mutated_source(original, m.index))
    try:
        deselect = tmap.broken if chosen is None else ()
        run = run_tests(copy, tests, timeout, deselect=deselect)
        if run.timed_out and args.retry_timeouts > 1:
            # on a loaded machine a slow run is not yet a hang: once more, with more time
            first = run.seconds
            run = run_tests(copy, tests, timeout * args.retry_timeouts, deselect=deselect)
            run.seconds += first
    finally:
        target.write_text(original)
    judged_by = f"{len(tests)} tests" if chosen is not None else f"the whole list: {why}"
    if run.passed:
        return f"  SURVIVED {where} ({judged_by}, {run.seconds:.0f} s)"
    if run.timed_out:
        # a timeout under load can be the load: marked, so it is re-run before it is counted
        return f"  TIMEOUT  {where} ({judged_by}, {run.seconds:.0f} s; over {timeout:.0f} s)"
    if args.confirm_kills and run.failed:
        # the failing test once more, without the mutant: a test that fails clean too (a timing
        # test on a loaded machine) killed nothing
        clean = run_tests(copy, [run.failed], timeout)
        if not clean.passed:
            return f"  FLAKY    {where} ({judged_by}, {run.seconds:.0f} s; {run.failed} fails without it too)"
    return f"  killed   {where} ({judged_by}, {run.seconds:.0f} s; {run.failed or 'no test named'})"


def _part(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"{text!r}: expected K/N with 1 <= K <= N, e.g. 2/3")
    return int(k), int(n)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", action="append", choices=sorted(TESTS),
                        help="package under harness/ to mutate (repeatable; default: games, play, league)")
    parser.add_argument("--sample", type=int, default=30, help="mutants per package, drawn at random (0: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample")
    parser.add_argument("--part", type=_part, metavar="K/N",
                        help="judge only the K-th of N contiguous parts of the sample (runs side by side: on a "
                             "machine loaded by others, each process of this run gets its own share of the CPU)")
    parser.add_argument("--skip", type=int, default=0, metavar="N",
                        help="leave out the first N mutants of the sample (or of its part): go on with a run "
                             "that was stopped after N, on an unchanged package (the same sites, the same sample)")
    parser.add_argument("--only", action="append", metavar="PATH#INDEX",
                        help="run just this mutant (as printed in brackets; repeatable): re-judge survivors")
    parser.add_argument("--timeout-factor", type=float, default=3.0,
                        help="a mutant whose tests take this many times their clean run is killed (a hang)")
    parser.add_argument("--retry-timeouts", type=float, default=0.0, metavar="F",
                        help="a mutant whose tests time out is run again with F times the timeout before it "
                             "is judged (a loaded machine is slow, not hung); unjudged timeouts print TIMEOUT")
    parser.add_argument("--confirm-kills", action="store_true",
                        help="run a mutant's failing test again without the mutant; if it fails there too the "
                             "mutant is printed FLAKY, not killed (a loaded machine fails timing tests)")
    parser.add_argument("--tests", action="append", metavar="FILE",
                        help="test file to judge mutants by (repeatable; default: the package's list)")
    parser.add_argument("--uncovered", choices=["run", "skip"], default="run",
                        help="a mutant on a line no test ran: judge it by the whole list (run) or report it "
                             "NOT COVERED, counted as surviving (skip)")
    parser.add_argument("--no-select", dest="select", action="store_false",
                        help="judge every mutant by the whole list (no coverage run)")
    parser.add_argument("--list", action="store_true", help="only count the mutation sites per package")
    return parser.parse_args()


def main() -> int:
    args = _parse_args()
    # a SIGTERM (or Ctrl-C) unwinds normally: the temporary copy is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    packages = args.package or ["games", "play", "league"]
    if args.list:
        for package in packages:
            print(f"{package}: {len(list_mutants(package))} mutation sites")
        return 0
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="tablebots-mutate-") as tmp:
        # readable by all, as a checkout is: as root, sandboxed bots run as an unprivileged uid and
        # must read their scripts in the copy (TemporaryDirectory makes a 0700 directory)
        os.chmod(tmp, 0o755)
        copy = Path(tmp) / "tree"
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info",
                                                                   ".mypy_cache", ".ruff_cache", ".pytest_cache"))
        summary = []
        for package in packages:
            mutants = list_mutants(package)
            if args.only:
                chosen = [m for m in mutants if m.key in args.only]
            else:
                chosen = mutants if not args.sample or args.sample >= len(mutants) else rng.sample(mutants, args.sample)
            if args.part:
                # one contiguous part of the sample, so that separate runs share one sample
                k, n = args.part
                chosen = chosen[(k - 1) * len(chosen) // n: k * len(chosen) // n]
            chosen = chosen[args.skip:]
            if not chosen:
                continue
            tests = args.tests or TESTS[package]
            t0 = time.monotonic()
            tmap = _check_clean(copy, package, tests, args.select)
            if tmap is None:
                print(f"{package}: the tests fail without any mutation; fix that first", file=sys.stderr)
                return 2
            print(f"{package}: {len(mutants)} sites, {len(chosen)} sampled; clean run "
                  f"{time.monotonic() - t0:.0f} s{' under coverage' if args.select else ''}", flush=True)
            killed = uncovered = timeouts = 0
            for m in chosen:
                line = judge(copy, m, tmap, tests, args)
                killed += "killed" in line
                timeouts += "TIMEOUT" in line or "FLAKY" in line
                uncovered += "whole list: not covered" in line or "NOT COVERED" in line
                print(line, flush=True)
            summary.append((package, killed, len(chosen), uncovered, timeouts))
        for package, killed, total, uncovered, timeouts in summary:
            print(f"{package}: {killed}/{total} killed ({100 * killed / total:.0f}%); "
                  f"{timeouts} timed out or flaky (not counted: re-run them); {uncovered} on lines no test ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
