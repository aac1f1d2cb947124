"""Shared test set-up.

Where the tests run as root (as CI does), every bot runs as an unprivileged uid of its own
(docs/security.md), which may not enter pytest's private (0700) temporary directories: a test
that puts a bot there opens its directory to others, as a bot author's directory is.

The browser tests share one `browser` fixture: headless Debian Chromium with the flags this
machine needs and a fresh profile per test module.

The suite runs on four processes on two cores (pytest-xdist, ``-n 4 --dist loadfile``: each file
on one of them; most tests wait on processes, so two left the cores idle). A test that measures time against a deadline (a bot's answer at 0.3x or 3x of
``move_ms``, a replay playing for a second) would see the other process's load in its figures,
so it runs alone: the files in :data:`SERIAL_FILES`, and any test marked ``serial``, take the
whole machine (an exclusive lock that the other processes' tests wait for); every other test
holds it shared. Each time a serial test takes the lock it first waits for every other
process's running test to end, the cores idling more as each ends; so the lock is taken as
rarely as can be: the files of :data:`SERIAL_FILES` are one unit of xdist's work, run back to
back by one process at the start of the run (:func:`pytest_xdist_make_scheduler`; the other
processes' first tests wait until it has begun, so that none of them delays it), with the tests
of :data:`SERIAL_ELSEWHERE`; any other test marked ``serial`` (one that shares a module fixture
with its file) runs with the others so marked at the end of its file.
Without xdist nothing is locked.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: test files whose tests measure wall-clock time against deadlines: each of their tests runs alone
SERIAL_FILES = frozenset({
    "test_deadlines.py",  # a bot's answer at chosen fractions of move_ms, the bank to the millisecond
    "test_referee_unit.py",  # deadlines of 100-500 ms on real processes
    "test_fair_time.py",  # sleepers' timeouts, the bank, bots never charged on a busy host
    "test_fairness.py",  # timeouts counted per seat
    "test_botproc_pins.py",  # the exchange's deadlines pinned
    "test_ordinary_user.py",  # a spinning bot beside an innocent one at move_ms 100; it mounts cgroup2
})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "serial: the test measures time; under xdist it runs alone (tests/conftest.py)")


#: files that take longest (leagues, browsers, compilers, nginx: tens of seconds each whatever
#: their number of tests), longest first, as measured in the whole suite's runs (a file's tests
#: summed; for the files of :data:`SPLIT_FILES`, shared out test by test, their longest test's
#: place). xdist hands out files in collection order (``.ci/run`` passes
#: ``--no-loadscope-reorder``); these go first so that the processes do not end with one of them
#: alone on a long file while the others have nothing left.
LONG_FILES = (
    "test_bench_tiny.py", "test_contest.py", "test_starters.py", "test_epizodiak_properties.py",
    "test_dask_safety.py", "test_fair_play.py", "test_replay_viewer.py", "test_statistics.py",
    "test_dominoes_properties.py", "test_crisps_properties.py", "test_contest_organizer_browser.py",
    "test_contest_ops.py", "test_contest_participant.py", "test_author_loop.py", "test_referee_e2e.py",
    "test_league_runner.py", "test_game_plugins.py", "test_adaptive_schedule.py", "test_league_dask.py",
    "test_contest_limits.py", "test_league_e2e.py", "test_participant_browser.py", "test_match.py",
    "test_layout.py", "test_report_browser.py", "test_contest_browser.py", "test_adaptive_league_e2e.py",
    "test_ratings_model.py", "test_runtimes.py", "test_serve_live.py", "test_store_owner.py",
    "test_contest_backup.py", "test_statistics_arrays.py", "test_contest_collusion.py", "test_contest_deploy.py",
)

#: long files whose tests share no module fixture: each of their tests is a unit of xdist's work
#: of its own, so the processes share them out (test_bench_tiny.py alone is ~150 s on CI, its
#: slowest scripts first: a unit that long, started late, would end the run alone)
SPLIT_FILES = frozenset({
    "test_bench_tiny.py", "test_adaptive_league_e2e.py", "test_dask_safety.py",
    "test_crisps_properties.py", "test_epizodiak_properties.py", "test_dominoes_properties.py",
})


#: the name of the unit of xdist's work that holds every file of :data:`SERIAL_FILES`
SERIAL_UNIT = "serial files"

#: tests marked ``serial`` in other files that share no module fixture with the rest of their
#: file, by name (every parametrization) or by node name (one of them): they join the serial unit
#: (its process runs them right after the serial files, while the others wait anyway) instead of
#: taking the machine alone at the end of their file, which first waits for every other
#: process's running test to end (4-6 s at load 7, the cores emptying meanwhile). A test listed
#: here is marked ``serial`` whatever its file says.
SERIAL_ELSEWHERE = {
    "test_fair_play.py": frozenset({
        "test_bots_using_half_their_time_are_never_charged_for_the_hosts_load",
        "test_a_bot_whose_children_spin_takes_no_cpu_from_its_opponent",
        "test_a_bots_deadline_counts_the_cpu_time_of_its_children",
    }),
    "test_referee_e2e.py": frozenset({
        "test_misbehaving_bot_gets_the_right_violation_and_forfeits[hang-plain]",
        "test_misbehaving_bot_gets_the_right_violation_and_forfeits[hang-pidns]",
        "test_misbehaving_bot_gets_the_right_violation_and_forfeits[mute-plain]",
        "test_misbehaving_bot_gets_the_right_violation_and_forfeits[mute-pidns]",
        "test_forfeited_bot_is_restarted_for_its_next_game_and_good_bots_persist",
        "test_a_timeout_within_the_strikes_kills_and_restarts_the_bot_mid_game",
        "test_the_time_bank_covers_a_slow_move",
        "test_bwrap_sandboxed_misbehaving_bot_leaves_no_process",
    }),
}


def _joins_serial_unit(file: str, name: str) -> bool:
    """Whether the test ``name`` (``function[params]``) of ``file`` runs in the serial unit."""
    listed = SERIAL_ELSEWHERE.get(file, frozenset())
    return file in SERIAL_FILES or name in listed or name.split("[", 1)[0] in listed


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's ``loadfile`` scheduling, with the files of :data:`SERIAL_FILES` and the tests of
    :data:`SERIAL_ELSEWHERE` as one unit of work (their tests run back to back: the lock is taken
    once for all of them) and each test of
    :data:`SPLIT_FILES` a unit of its own. Units are handed out in collection order (``.ci/run``
    passes ``--no-loadscope-reorder``)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SerialFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path, _, test = nodeid.partition("::")
            name = Path(path).name
            return SERIAL_UNIT if _joins_serial_unit(name, test) else nodeid if name in SPLIT_FILES else path

    return SerialFilesTogether(config, log)


def _schedule_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """The serial files first, then the long files, then the others by number of tests (xdist's
    own default order); within a file, its tests marked ``serial`` last."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item.path.name] = counts.get(item.path.name, 0) + 1
    rank = {name: i for i, name in enumerate(LONG_FILES)}
    firsts = {name: i for i, name in reversed(list(enumerate(item.path.name for item in items)))}

    def key(item: pytest.Item) -> tuple[bool, int, int, int, bool]:
        name = item.path.name
        return (name not in SERIAL_FILES, rank.get(name, len(rank)), -counts[name], firsts[name],
                _is_serial(item))
    return sorted(items, key=key)  # stable: a file's tests keep their order


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _joins_serial_unit(item.path.name, item.name):
            item.add_marker(pytest.mark.serial)
    items[:] = _schedule_order(items)


def _run_file(name: str) -> Path | None:
    """This xdist run's file ``name`` (a lock, or the flag that the serial unit has begun); None
    outside xdist."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    return Path(tempfile.gettempdir(), f"tablebots-pytest-{run}.{name}") if run else None


def _lock_files() -> tuple[int, int] | None:
    """The turnstile and the room of this xdist run (None outside xdist): one pair per run."""
    paths = [_run_file(name) for name in ("turnstile", "room")]
    if paths[0] is None or paths[1] is None:
        return None
    turnstile, room = (os.open(path, os.O_RDWR | os.O_CREAT, 0o600) for path in paths)
    return turnstile, room


_LOCKS = _lock_files()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this run's lock files (the other process keeps its open descriptors: the locks hold)."""
    for name in ("turnstile", "room", "serial-began"):
        path = _run_file(name)
        if path is not None:
            path.unlink(missing_ok=True)


_holding_alone = False  # this process holds the room alone, from one serial test to the next
#: whether this process's next test is its first: it may have to wait for the serial unit to begin
_first_test = True
#: longest wait for the serial unit to begin: a bound in case its process never starts it (a crash)
SERIAL_START_WAIT_S = 120.0


def _await_serial_unit(item: pytest.Item) -> None:
    """Before this process's first test, when the serial unit runs first (the run's first test is
    in :data:`SERIAL_FILES`; xdist hands that unit out at once), wait for it to take the room: if
    another process's first test took the room shared before it, the serial process waited for that
    test to end (a tiny bench: tens of seconds) with the two others queued behind it, the cores
    idle. Polled every 10 ms; the serial process creates the flag file when it holds the room."""
    flag = _run_file("serial-began")
    if (flag is None or item.session.items[0].path.name not in SERIAL_FILES
            or getattr(item.config.option, "loadscopereorder", True)):
        return  # (xdist reordering units by size may hand the serial unit out later)
    deadline = time.monotonic() + SERIAL_START_WAIT_S
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def _is_serial(item: pytest.Item | None) -> bool:
    return item is not None and item.get_closest_marker("serial") is not None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A serial test holds the room alone, every other test shares it (setup, call and teardown,
    so a module fixture's league runs under the same rule as the tests that use it). The
    turnstile keeps a stream of shared tests from starving a serial one. Serial tests that follow
    each other (a serial file's) keep the room from the first to the last: taking it anew for each
    would wait each time for the other processes' running tests to end, with the cores idle."""
    global _holding_alone, _first_test
    if _LOCKS is None:
        yield
        return
    turnstile, room = _LOCKS
    serial = _is_serial(item)
    if _first_test:
        _first_test = False
        if not serial:
            _await_serial_unit(item)
    if not _holding_alone:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(room, fcntl.LOCK_EX if serial else fcntl.LOCK_SH)
        if not serial:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        elif item.path.name in SERIAL_FILES:
            flag = _run_file("serial-began")
            assert flag is not None
            flag.touch()
    _holding_alone = False
    try:
        yield
    finally:
        if serial and _is_serial(nextitem):
            _holding_alone = True
        else:
            fcntl.flock(room, fcntl.LOCK_UN)
            if serial:
                fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _bots_may_enter_tmp_path(request: pytest.FixtureRequest) -> None:
    if os.geteuid() == 0 and "tmp_path" in request.fixturenames:
        request.getfixturevalue("tmp_path").chmod(0o755)


# The flags this machine's Chromium needs to run headless as root in a container, and to stay
# off the network (tests touch only 127.0.0.1): no QUIC, no background fetches, no component
# updates, no sync, no first-run page. Each browser gets a fresh profile of its own, so tests
# never share cookies, caches or downloads with another run.
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync")


@pytest.fixture(scope="module")
def browser_window() -> str:
    """The browser's window size; a test module overrides this fixture to change it."""
    return "1400,1000"


@pytest.fixture(scope="module")
def browser_prefs() -> dict[str, object]:
    """Chromium preferences (e.g. a download folder); a test module overrides this fixture."""
    return {}


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory, browser_window: str,
            browser_prefs: dict[str, object]) -> Iterator[Any]:
    """Headless Debian Chromium driven by Selenium, one per test module."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    assert chromium and driver, "Debian's chromium and chromium-driver are needed (.ci/run installs them)"
    opts = Options()
    for flag in CHROMIUM_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--window-size={browser_window}")
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    if browser_prefs:
        opts.add_experimental_option("prefs", browser_prefs)
    opts.binary_location = chromium
    d = webdriver.Chrome(service=Service(driver), options=opts)
    yield d
    d.quit()
