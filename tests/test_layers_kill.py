"""Each layer of killing a bot's whole tree on its own (harness/play/botproc.py's docstring,
docs/testing.md "Layers"). The layers overlap on purpose: as root every bot has a cgroup, which
alone kills every escape, so the end-to-end tests of tests/test_referee_e2e.py pass with any
other layer gone. Here the other layers are switched off (the cgroup not made, ``killpg`` and
the ``/proc`` scan made no-ops, in this test process only) and each one must still kill the
escape it exists for:

- the process group: a grandchild that stayed in the group (``fork``);
- the ``/proc`` scan by the bot's token: one that left the group (``forksetsid``);
- the ``/proc`` scan by the bot's pipes: one that also execs with an empty environment (``escape``);
- the PID namespace (``pid_namespace``): a daemon (no group, no token, no pipe; ``daemon``);
- the cgroup: the same daemon.

With every layer off the daemon survives: the control that shows a test here can fail.
The same for the ``processes`` limit: ``RLIMIT_NPROC`` (the bot runs as a uid of its own) and the
cgroup's ``pids.max`` each stop a fork bomb alone; and ``PR_SET_PDEATHSIG`` and the cgroup guard
each kill the bots of a harness that was SIGKILLed.
The bots are tests/bots/misbehave.py; a process is found by the marker in its command line.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.games import get_game
from harness.play import botproc
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import RefereeConfig, play_game
from harness.play.remnants import kill_remnants

MISBEHAVE = Path(__file__).resolve().parent / "bots" / "misbehave.py"
RANDOM = Path(__file__).resolve().parents[1] / "bots" / "random_bot.py"


def _marked(marker: str) -> list[int]:
    """Live (not zombie) processes with ``marker`` as a word of their command line."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in words and state != b"Z":
            found.append(int(entry))
    return found


def _gone(marker: str, grace: float = 5.0) -> bool:
    """Whether every marked process dies within ``grace`` s (a SIGKILL is asynchronous)."""
    deadline = time.monotonic() + grace
    while _marked(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _cleanup(marker: str) -> None:
    for pid in _marked(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _no_op(*_args: object, **_kwargs: object) -> int:
    return 0


def _by_token_only(tokens: list[str], pipes: tuple[str, ...] = ()) -> int:
    return kill_remnants(tokens)


def _by_pipes_only(tokens: list[str], pipes: tuple[str, ...] = ()) -> int:
    return kill_remnants([], pipes)


#: layer -> (the escape it must catch, pid_namespace, cgroup on, killpg on, the /proc scan used)
LAYERS: dict[str, tuple[str, bool, bool, bool, Callable[..., int]]] = {
    "process group": ("fork", False, False, True, _no_op),
    "token scan": ("forksetsid", False, False, False, _by_token_only),
    "pipe scan": ("escape", False, False, False, _by_pipes_only),
    "pid namespace": ("daemon", True, False, False, _no_op),
    "cgroup": ("daemon", False, True, False, _no_op),
}


def _cgroups_here() -> bool:
    from harness.play.cgroups import BotCgroup, cgroup_base
    group = BotCgroup.create(cgroup_base(), "probe-kill-layers", None)
    if group is None:
        return False
    group.kill()
    return True


def _play_escape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, pidns: bool, cgroup: bool,
                 killpg: bool, scan: Callable[..., int]) -> str:
    """One game where seat 1 leaves ``mode``'s grandchild behind at its first request, with only
    the layers given on; returns the bot's marker."""
    if not cgroup:
        monkeypatch.setattr(botproc, "cgroup_base", lambda: None)
    if not killpg:
        monkeypatch.setattr(os, "killpg", _no_op)
    monkeypatch.setattr(botproc, "kill_remnants", scan)
    marker = f"tblayer-{uuid.uuid4().hex[:12]}"
    bad = BotSpec(name=f"escaper-{mode}", command=(sys.executable, str(MISBEHAVE), mode, "--at", "1",
                                                     "--marker", marker), cwd=str(tmp_path))
    good = BotSpec(name="random", command=(sys.executable, str(RANDOM), "--seed", "1"), cwd=str(tmp_path))
    limits = dataclasses.replace(ResourceLimits(), sandbox=None, pid_namespace=pidns)
    config = RefereeConfig(time=TimeControls(move_ms=3000), log_dir=str(tmp_path / "logs"), limits=limits)
    with BotPool(config) as pool:
        record = play_game(get_game("crisps"), {"max_turns": 6}, 1, "g-kill", [good, bad], pool, config)
    assert [v["kind"] for v in record.violations] == ["crash"], record.violations
    return marker


@pytest.mark.skipif(os.geteuid() != 0, reason="the pid namespace and the cgroup need root")
@pytest.mark.parametrize("layer", list(LAYERS))
def test_each_layer_alone_kills_the_escape_it_exists_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         layer: str) -> None:
    mode, pidns, cgroup, killpg, scan = LAYERS[layer]
    if cgroup:
        assert _cgroups_here(), "root, yet no bot cgroup can be made"
    marker = ""
    try:
        marker = _play_escape(tmp_path, monkeypatch, mode, pidns, cgroup, killpg, scan)
        assert _gone(marker), f"{layer} alone left {_marked(marker)} of {mode!r} alive"
    finally:
        if marker:
            _cleanup(marker)


def test_with_every_layer_off_a_daemon_escapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the daemon really leaves the group, the token and the pipes behind."""
    marker = ""
    try:
        marker = _play_escape(tmp_path, monkeypatch, "daemon", False, False, False, _no_op)
        assert _marked(marker), "the daemon did not start: the tests above would prove nothing"
        assert not _gone(marker, grace=0.5)
    finally:
        if marker:
            _cleanup(marker)


# -- the process limit: RLIMIT_NPROC and the cgroup's pids.max, each alone ---------------------------

PROBE = Path(__file__).resolve().parent / "bots" / "layers_probe.py"


def _forks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rlimit: bool, cgroup: bool) -> dict[str, str]:
    """What a bot limited to 8 processes found when it tried to fork 20 children, with only the
    layers given on (the uid it runs as, root's harness dropping it, is its own: no other
    process counts against its RLIMIT_NPROC)."""
    if not cgroup:
        monkeypatch.setattr(botproc, "cgroup_base", lambda: None)
    if not rlimit:
        real = botproc.limit_setter

        def without_nproc(limits: ResourceLimits, *args: object, **kwargs: object) -> Callable[[], None]:
            return real(dataclasses.replace(limits, processes=None), *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(botproc, "limit_setter", without_nproc)
    spec = BotSpec(name="forker", command=(sys.executable, str(PROBE), "forks", "--n", "20"), cwd=str(tmp_path))
    other = BotSpec(name="random", command=(sys.executable, str(RANDOM), "--seed", "1"), cwd=str(tmp_path))
    limits = dataclasses.replace(ResourceLimits(), sandbox=None, processes=8)
    config = RefereeConfig(time=TimeControls(move_ms=3000), log_dir=str(tmp_path / "logs"), limits=limits)
    with BotPool(config) as pool:
        record = play_game(get_game("crisps"), {"max_turns": 2}, 1, "g-forks", [spec, other], pool, config)
    assert record.violations == []
    found = []
    for line in (tmp_path / "logs" / "forker.stderr.log").read_text().splitlines():
        if line.startswith("LAYERS forks "):
            found.append(dict(kv.split("=", 1) for kv in line.split()[2:]))
    [facts] = found
    return facts


@pytest.mark.skipif(os.geteuid() != 0, reason="a cgroup and a uid of the bot's own need root")
@pytest.mark.parametrize(("rlimit", "cgroup"), [(True, False), (False, True)], ids=["RLIMIT_NPROC", "pids.max"])
def test_each_process_limit_alone_stops_a_fork_bomb_at_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 rlimit: bool, cgroup: bool) -> None:
    """``processes: 8``: the bot and 7 children, the 8th fork refused with EAGAIN, by either layer."""
    if cgroup:
        assert _cgroups_here(), "root, yet no bot cgroup can be made"
    assert _forks(tmp_path, monkeypatch, rlimit, cgroup) == {"forked": "7", "refused": "11"}


@pytest.mark.skipif(os.geteuid() != 0, reason="a cgroup and a uid of the bot's own need root")
def test_with_neither_process_limit_the_bot_forks_all_it_wants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the same bot makes its 20 children."""
    assert _forks(tmp_path, monkeypatch, False, False) == {"forked": "20", "refused": "-"}


# -- a harness that dies: PR_SET_PDEATHSIG and the cgroup guard, each alone ------------------------

#: A harness that plays one game, with the layers given on, until it is SIGKILLed: seat 0 hangs on
#: its first request (thawed: its turn), seat 1 waits (frozen, where bots are frozen).
HARNESS = """
import dataclasses, sys
from harness.games import get_game
from harness.play import botproc, privileges
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.referee import RefereeConfig, play_game
pdeathsig, guard, misbehave, work, marker = sys.argv[1] == "1", sys.argv[2] == "1", *sys.argv[3:]
if not pdeathsig:
    privileges._prctl = None
if not guard:  # the guard comes with the cgroups: without them, no guard and no freezing
    botproc.cgroup_base = lambda: None
seats = [BotSpec(name=f"b{i}", command=(sys.executable, misbehave, mode, "--at", "1", "--pidfile",
                                        f"{work}/pids-{i}", "--marker", marker), cwd=work)
         for i, mode in enumerate(("hang", "ok"))]
config = RefereeConfig(time=TimeControls(move_ms=120000), log_dir=f"{work}/logs",
                       limits=dataclasses.replace(ResourceLimits(), sandbox=None))
with BotPool(config) as pool:
    play_game(get_game("crisps"), {}, 1, "g-dies", seats, pool, config)
"""


def _kill_the_harness(pdeathsig: bool, guard: bool) -> tuple[str, list[int]]:
    """Start the harness above, SIGKILL it once seat 0 hangs, return the marker and the bots' pids."""
    work = tempfile.mkdtemp(prefix="tblayer-")
    os.chmod(work, 0o777)  # the bots (an unprivileged uid) write their pid files here
    marker = f"tblayer-{uuid.uuid4().hex[:12]}"
    proc = subprocess.Popen([sys.executable, "-c", HARNESS, "1" if pdeathsig else "0", "1" if guard else "0",
                             str(MISBEHAVE), work, marker], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        pidfile = Path(work) / "pids-0"
        while not (pidfile.exists() and " bad" in pidfile.read_text()):  # seat 0 hangs on its request
            assert proc.poll() is None and time.monotonic() < deadline, "the game never reached seat 0's request"
            time.sleep(0.05)
        pids = [int(line.split()[0]) for i in (0, 1) for line in (Path(work) / f"pids-{i}").read_text().splitlines()
                if line.endswith(" start")]
        assert len(pids) == 2
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    return marker, pids


@pytest.mark.skipif(os.geteuid() != 0, reason="the cgroup guard needs root")
@pytest.mark.parametrize(("pdeathsig", "guard"), [(True, False), (False, True)], ids=["PDEATHSIG", "cgroup guard"])
def test_each_layer_alone_kills_the_bots_of_a_killed_harness(pdeathsig: bool, guard: bool) -> None:
    """Without the other: PR_SET_PDEATHSIG kills both bots (none is frozen without the cgroups);
    the guard thaws the frozen one and kills both."""
    if guard:
        assert _cgroups_here(), "root, yet no bot cgroup can be made"
    marker, pids = _kill_the_harness(pdeathsig, guard)
    try:
        assert _gone(marker), f"bots {_marked(marker)} of {pids} outlived the harness"
    finally:
        _cleanup(marker)


def test_with_neither_the_hanging_bot_outlives_a_killed_harness() -> None:
    """The control: seat 0, asleep in its turn, outlives the harness (seat 1 ends by itself at the
    end of its stdin, once it is not frozen)."""
    marker, pids = _kill_the_harness(False, False)
    try:
        assert pids[0] in _marked(marker) and not _gone(marker, grace=0.5)
    finally:
        _cleanup(marker)


PROBER = """
import sys
from harness.play import privileges, sandbox
if sys.argv[1] == "0":
    privileges._prctl = None
sandbox.tool = lambda name: "/bin/sh"  # a probe that hangs: the sandbox's own command, then a sleep
sandbox.bwrap_command = lambda *args, **kwargs: ["sh", "-c", f"echo $$ > {sys.argv[2]}; exec sleep 60"]
sandbox.bwrap_problem()
"""


@pytest.mark.parametrize("pdeathsig", [True, False], ids=["pdeathsig", "without"])
def test_a_sandbox_probe_dies_with_the_process_that_started_it(pdeathsig: bool) -> None:
    """A worker killed while it probes the sandbox (the probe runs bwrap exactly as a bot's start
    would, once per process) leaves no probe behind; without the death signal it would. As root
    the probe runs as a bot's uid (a change of credentials clears the death signal: it is set
    after), so it writes into a directory anyone may."""
    shared = Path(tempfile.mkdtemp(prefix="tablebots-probe-"))
    shared.chmod(0o777)
    pidfile = shared / "probe.pid"
    prober = subprocess.Popen([sys.executable, "-c", PROBER, "1" if pdeathsig else "0", str(pidfile)])
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)
        probe = int(pidfile.read_text())
        prober.kill()
        prober.wait()
        deadline = time.monotonic() + (5 if pdeathsig else 1)  # (a death signal arrives within ms)
        while _alive(probe) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _alive(probe) is not pdeathsig
    finally:
        prober.kill()
        if pidfile.exists() and _alive(int(pidfile.read_text())):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        shutil.rmtree(shared, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed and not yet reaped by init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
