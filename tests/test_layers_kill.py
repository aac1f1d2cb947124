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
The bots are tests/bots/misbehave.py; a process is found by the marker in its command line.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.games import get_game
from harness.play import botproc
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.referee import BotPool, RefereeConfig, play_game
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
