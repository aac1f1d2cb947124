"""The package's layout rules, checked on every module so that they stay true.

- Stages: data flows games -> play -> league -> report -> cli, and imports point down that flow
  (``contest`` sits on league and report, below the command line). A module may import its own
  stage and the stages below it, never one above, not even inside a function.
- No import cycles, counting every import (inside functions and under ``if TYPE_CHECKING`` too):
  two modules that need each other are one module, or share a third below both. Nor anywhere in
  the repository: the scripts of bench/, tools/, tests/ and bots/ are modules too.
- Size: no module of the package over 600 lines, no function over 80 (a longer one is two jobs).
- Every module imports alone, in an interpreter where no other harness module was imported
  first (one fresh subprocess imports each in turn, dropping every harness module between two).
- SQL lives with its owners: a league store's statements in the store modules and the queries
  (a schema change touches those alone), the contest's in its database modules; every other
  module asks them.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "harness"

#: Rank of each stage: a module may import modules of its rank or lower. The bot authors' kit
#: (harness.sdk) sits on the engines only; ``harness`` itself (version) is below everything.
STAGES = {"": 0, "games": 1, "sdk": 2, "play": 3, "league": 4, "report": 5, "contest": 6, "cli": 7,
          "__main__": 8}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(module: str, path: Path) -> tuple[set[str], set[str]]:
    """(every harness module ``module`` imports anywhere, those imported when it is imported)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    everywhere: set[str] = set()
    at_import: set[str] = set()

    def targets(node: ast.Import | ast.ImportFrom) -> set[str]:
        found = set()
        if isinstance(node, ast.Import):
            return {a.name for a in node.names if a.name.split(".")[0] == "harness"}
        base = node.module or ""
        if node.level:
            anchor = package.split(".")
            anchor = anchor[:len(anchor) - node.level + 1]
            base = ".".join(anchor + ([base] if base else []))
        if base.split(".")[0] != "harness":
            return found
        for alias in node.names:
            child = f"{base}.{alias.name}"
            found.add(child if child in MODULES else base)
        return found

    def walk(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                names = targets(child)
                everywhere.update(names)
                if top:
                    at_import.update(names)
            elif isinstance(child, ast.If) and _is_type_checking(child):
                walk(child, False)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(child, False)
            else:
                walk(child, top)

    walk(tree, True)
    return everywhere, at_import


IMPORTS = {m: _imports(m, p) for m, p in MODULES.items()}


def test_every_module_has_a_stage() -> None:
    unknown = sorted(m for m in MODULES if _stage(m) not in STAGES)
    assert not unknown, f"modules outside every stage (add their package to STAGES in this test): {unknown}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_point_down_the_flow(module: str) -> None:
    rank = STAGES.get(_stage(module), 99)
    upward = sorted(t for t in IMPORTS[module][0] if STAGES.get(_stage(t), 99) > rank)
    assert not upward, f"{module} (stage {_stage(module) or 'harness'}) imports a later stage: {upward}"


def test_the_stage_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The check itself: an import from play into league, hidden in a function, is found."""
    path = tmp_path / "x.py"
    path.write_text("def f():\n    from harness.league.store import LeagueStore\n    from . import referee\n")
    found, at_import = _imports("harness.play.x", path)
    assert found == {"harness.league.store", "harness.play.referee"} and not at_import
    assert STAGES[_stage("harness.league.store")] > STAGES[_stage("harness.play.x")]


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import cycle of ``graph`` (module -> the modules it imports), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                return path[path.index(t):] + [t]
            if t not in state:
                found = visit(t)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles() -> None:
    cycle = _cycle({m: {t for t in IMPORTS[m][0] if t in MODULES and t != m} for m in MODULES})
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


#: the folders of scripts beside the package: each file is a module named ``<folder>.<file>``; it
#: imports its siblings by their bare names (a script's folder is on ``sys.path``: Python puts it
#: there for a script, pytest for a test file) and the package by its dotted names
SCRIPT_FOLDERS = ("bench", "tools", "tests", "bots")


def _script_imports(path: Path) -> set[str]:
    """The repository's modules the script ``path`` imports anywhere in it (functions included)."""
    found: set[str] = set()

    def add(name: str) -> None:
        parts = name.split(".")
        if parts[0] == "harness":
            while parts and ".".join(parts) not in MODULES:
                parts.pop()
            if parts:
                found.add(".".join(parts))
        elif (path.parent / f"{parts[0]}.py").exists():
            found.add(f"{path.parent.name}.{parts[0]}")
        elif parts[0] in SCRIPT_FOLDERS and len(parts) > 1 and (ROOT / parts[0] / f"{parts[1]}.py").exists():
            found.add(f"{parts[0]}.{parts[1]}")

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:  # a module of a package, else a name of the module
                child = f"{node.module}.{alias.name}"
                add(child if child in MODULES or child.split(".")[0] in SCRIPT_FOLDERS else node.module)
    return found


def _repository_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Every module of the repository -> the repository's modules it imports anywhere."""
    graph = {m: {t for t in IMPORTS[m][0] if t in MODULES} for m in MODULES}
    for folder in SCRIPT_FOLDERS:
        for path in sorted((root / folder).glob("*.py")):
            graph[f"{folder}.{path.stem}"] = _script_imports(path)
    return {m: {t for t in targets if t in graph and t != m} for m, targets in graph.items()}


def test_no_import_cycles_anywhere_in_the_repository() -> None:
    """The package, the benchmarks, the tools, the tests and the bots: no two files need each
    other, not even through a function (two that do are one module, or share a third)."""
    graph = _repository_graph()
    assert {"bench.matchmaking", "tests.test_layout", "tools.mutate", "bots.random_bot"} <= set(graph)
    assert "bench.matchmaking_model" in graph["bench.matchmaking_real"]  # siblings by their bare names
    cycle = _cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_repository_cycle_check_sees_two_scripts_importing_each_other(tmp_path: Path) -> None:
    """The check itself, on the shape of a circle it once had: a benchmark importing its part's
    module inside a function, which imports the benchmark back at the top."""
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "matchmaking.py").write_text("import numpy\nfrom harness.league import schedule_matchmaker\n"
                                          "def main():\n    from matchmaking_real import part5\n")
    (bench / "matchmaking_real.py").write_text("from matchmaking import ladder, report\n")
    found = _script_imports(bench / "matchmaking.py")
    assert found == {"bench.matchmaking_real", "harness.league.schedule_matchmaker"}
    graph = {"bench.matchmaking": found, "bench.matchmaking_real": _script_imports(bench / "matchmaking_real.py"),
             "harness.league.schedule_matchmaker": set()}
    assert _cycle(graph) == ["bench.matchmaking", "bench.matchmaking_real", "bench.matchmaking"]


def test_the_cycle_check_sees_a_cycle_through_a_function_import(tmp_path: Path) -> None:
    """The check itself, on the shape of a circle it once found: the runner imports the Dask
    executor inside a function, which imports the runner back inside another."""
    runner, dask = tmp_path / "runner.py", tmp_path / "dask.py"
    runner.write_text("from harness.league.store import LeagueStore\n"
                      "def run():\n    from harness.league.executors.dask import play\n")
    dask.write_text("def play():\n    from harness.league.runner import open_pool\n")
    graph = {"harness.league.runner": _imports("harness.league.runner", runner)[0],
             "harness.league.executors.dask": _imports("harness.league.executors.dask", dask)[0],
             "harness.league.store": set()}
    assert _cycle(graph) == ["harness.league.executors.dask", "harness.league.runner", "harness.league.executors.dask"]


IMPORT_ALONE = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "harness" or m.startswith("harness.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except BaseException:
        failed.append(name + ": " + traceback.format_exc(limit=3))
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_alone() -> None:
    names = [m for m in MODULES if m != "harness.__main__"] + ["harness.__main__"]
    done = subprocess.run([sys.executable, "-c", IMPORT_ALONE, *names], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _mutation_lists() -> tuple[dict[str, list[str]], dict[str, str]]:
    """tools/mutate.py's TESTS and UNLISTED, read from its source (the tool is not imported)."""
    values: dict[str, object] = {}
    for node in ast.parse((ROOT / "tools" / "mutate.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("TESTS", "UNLISTED"):
                values[node.targets[0].id] = ast.literal_eval(node.value)
    return values["TESTS"], values["UNLISTED"]  # type: ignore[return-value]


def test_every_test_file_judges_mutants_or_says_why_not() -> None:
    """A test file missing from the mutation tool's lists makes its package's mutants look
    untested (the league's list once lacked the matchmaking and store tests: 27 of 60 sampled
    mutants came out as on lines no test ran)."""
    tests, unlisted = _mutation_lists()
    listed = {path for paths in tests.values() for path in paths}
    present = {f"tests/{p.name}" for p in (ROOT / "tests").glob("test_*.py")}
    assert not (listed | set(unlisted)) - present, "listed in tools/mutate.py but not in tests/"
    assert not present - listed - set(unlisted), "add these to a package's list in tools/mutate.py TESTS (or UNLISTED)"
    assert not listed & set(unlisted)


MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def test_no_module_is_over_600_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert not long, f"split these modules (lines): {long}"


def _long_functions(path: Path) -> dict[str, int]:
    out = {}
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out[f"{name}:{node.lineno} {node.name}"] = length
    return out


def test_no_function_is_over_80_lines() -> None:
    long = {k: v for p in PACKAGE.rglob("*.py") for k, v in _long_functions(p).items()}
    assert not long, f"split these functions (lines): {long}"


def test_the_size_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    path = tmp_path / "m.py"
    path.write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    assert list(_long_functions(path).values()) == [MAX_FUNCTION_LINES + 1]


#: The modules that may hold SQL: a league store's (the store, its base, its recording path, its
#: schema, the logs file, and the reports' read-only queries) and the contest's database modules
#: (its site's, its features', its organizer's, and its read-only queries on the ladder's store).
SQL_OWNERS = {"harness/league/store.py", "harness/league/store_base.py", "harness/league/store_record.py",
              "harness/league/store_schema.py", "harness/league/logstore.py", "harness/league/queries.py",
              "harness/contest/db.py", "harness/contest/db_ops.py", "harness/contest/participant_db.py",
              "harness/contest/migrations.py", "harness/contest/org_db.py", "harness/contest/ladder_sql.py"}
_SQL = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|WITH|REPLACE|VACUUM|ATTACH|DETACH|"
                  r"BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b")


def _sql_lines(source: str) -> list[int]:
    """The lines of ``source`` where a string (plain or an f-string) starts with an SQL keyword."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            node = node.values[0]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.match(node.value):
            found.append(node.lineno)
    return sorted(set(found))


def test_sql_lives_in_the_store_and_query_modules() -> None:
    holders = {str(p.relative_to(ROOT)): lines for p in PACKAGE.rglob("*.py") if (lines := _sql_lines(p.read_text()))}
    strays = {path: lines for path, lines in holders.items() if path not in SQL_OWNERS}
    assert not strays, f"SQL outside its owners (move it into a store or query module, with a typed result): {strays}"


def test_the_sql_check_sees_a_statement_in_a_plain_string_and_in_an_f_string() -> None:
    """The check itself, on the shapes SQL once had outside the store: an f-string UPDATE, a
    read of one column, a PRAGMA; prose and a keyword inside a sentence are not SQL."""
    source = ("def drop(store, prefix):\n"
              "    store.db.execute(f\"UPDATE games SET status = 'dropped' WHERE id NOT LIKE '{prefix}%'\")\n"
              "row = db.execute('SELECT status FROM games WHERE seq = ?', (1,))\n"
              "db.execute(\"PRAGMA user_version\")\n"
              "note = 'select the games to play, then update the table'\n"
              "doc = f'{n} games: DELETE nothing'\n")
    assert _sql_lines(source) == [2, 3, 4]
