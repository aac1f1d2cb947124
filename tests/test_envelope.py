"""One envelope per bot process tree: real hostile bots (tests/bots/attacker.py) in real games,
sandboxed as leagues are by default.

Before: at ``memory_mb: 256`` a bot with 6 children held 1,275 MB (the bound was per process);
300,000 empty files in a "64 MB" ``/tmp`` took 600 MB of kernel memory (a tmpfs bounded in
bytes, not inodes).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness.games import get_game
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.privileges import drop_privileges
from harness.play.referee import FairPlay, GameRecord, RefereeConfig, play_game

REPO = Path(__file__).resolve().parent.parent
ATTACKER = REPO / "tests" / "bots" / "attacker.py"
RANDOM = BotSpec(name="random", command=("python3", str(REPO / "bots" / "random_bot.py"), "--seed", "1"),
                 cwd=str(REPO))


ALL_RULES = FairPlay()


def play_attacker(tmp_path: Path, mode: str, *args: str, fair_play: FairPlay = ALL_RULES,
                  **limits: object) -> tuple[GameRecord, list[dict[str, str]]]:
    """One sandboxed game of the attacker against the random bot: its record and the findings."""
    config = RefereeConfig(time=TimeControls(move_ms=3000), log_dir=str(tmp_path / "logs"), fair_play=fair_play,
                           limits=dataclasses.replace(ResourceLimits(), sandbox="bwrap", **limits))  # type: ignore[arg-type]
    attacker = BotSpec(name=f"attacker-{mode}", command=("python3", str(ATTACKER), mode, *args), cwd=str(tmp_path))
    with BotPool(config) as pool:
        record = play_game(get_game("crisps"), {"max_turns": 40}, 1, f"g-{mode}", [attacker, RANDOM], pool, config)
    out = []
    for log in (tmp_path / "logs").glob(f"attacker-{mode}.stderr.log*"):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith(f"ATTACK {mode} "):
                out.append(dict(kv.split("=", 1) for kv in line.split()[2:]))
    return record, out


@pytest.mark.parametrize("clock", ["cpu", "wall"])
def test_a_bot_whose_children_hold_more_than_memory_mb_together_is_stopped(tmp_path: Path, clock: str) -> None:
    """Six children of 200 MB each, at memory_mb 256: the tree goes over its bound, the kernel
    stops processes of it, and the harness stops the bot with a violation; the game goes on.
    With the CPU clock and with wall-clock deadlines (a host whose cgroups cannot freeze): the
    bot's main process still answers, so the check is made on every answer, not only at a timeout."""
    record, facts = play_attacker(tmp_path, "hog", "--children", "6", "--mb", "200", memory_mb=256,
                                  fair_play=FairPlay(cpu_clock=clock == "cpu"))
    assert facts, "the hog never reported"
    seats = [v for v in record.violations if v["seat"] == 0]
    assert seats and seats[0]["kind"] == "crash" and "went over 320 MB" in seats[0]["detail"], record.violations
    assert not [v for v in record.violations if v["seat"] == 1]  # the innocent opponent is never charged
    assert record.ended_by != "error"


def test_a_bot_whose_children_go_over_memory_mb_mid_game_is_stopped_at_that_turn(tmp_path: Path) -> None:
    """The same at the bot's second request, while its main process answers in time: the memory
    cgroup's OOM event (watched in the poll of the bot's pipes, not read every turn) ends that
    turn with a crash saying so; the opponent is not charged."""
    record, _ = play_attacker(tmp_path, "hog-later", "--children", "6", "--mb", "200", memory_mb=256)
    seats = [v for v in record.violations if v["seat"] == 0]
    assert seats and seats[0]["kind"] == "crash" and "went over 320 MB" in seats[0]["detail"], record.violations
    assert "ATTACK hog held=" in seats[0]["stderr_tail"], seats  # (its hog ran, then it answered)
    assert seats[0]["decision"] >= 2, seats  # (its second request: the first was answered and accepted)
    assert not [v for v in record.violations if v["seat"] == 1]
    assert record.ended_by != "error"


def test_a_bots_scratch_is_bounded_in_files_too(tmp_path: Path) -> None:
    """300,000 empty files in a 64 MB /tmp: refused long before. Where root's bubblewrap starts
    the bot, by its tmpfs's ``nr_inodes`` (one file per 4 KB of scratch: ENOSPC); where bubblewrap
    runs in a user namespace (it cannot bound inodes), by the memory bound of the bot's tree,
    which counts the files' kernel memory (the bot is stopped)."""
    from harness.play.sandbox import bwrap_userns

    record, facts = play_attacker(tmp_path, "inodes", "--files", "300000", memory_mb=128)
    if not bwrap_userns():
        [found] = facts
        assert found["error"] == "28" and int(found["made"]) <= 64 * 256, found  # ENOSPC
    else:
        assert not facts or int(facts[0]["made"]) < 300000, facts
        assert [v for v in record.violations if v["seat"] == 0 and "went over" in v["detail"]] or facts, record
    assert not [v for v in record.violations if v["seat"] == 1]


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (CI runs as root): another user's directory")


@needs_root
def test_a_directory_planted_where_the_copy_of_etc_goes_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy of /etc's public files that sandboxes bind is reused from a predictable name.
    Another user makes that directory first, with a passwd and an ld.so.cache of their own: a
    sandboxed program still sees the real ones (the directory is not the harness user's)."""
    from harness.play import sandbox_etc
    from harness.play.privileges import bot_uid
    from harness.play.sandbox import bwrap_command, bwrap_userns

    stamp = ((os.getpid(), time.monotonic_ns(), 1),)  # a state of /etc of its own: the real copy stays
    monkeypatch.setattr(sandbox_etc, "_stamp", lambda: stamp)
    monkeypatch.setattr(sandbox_etc, "_checked", (-1e9, ()))
    planted = [os.path.join(parent, sandbox_etc.copy_name(stamp)) for parent in sandbox_etc.copy_parents()]
    try:
        for path in planted:
            os.makedirs(path, mode=0o755)
            Path(path, "passwd").write_text("planted:x:0:0::/:/bin/sh\n")
            os.chown(path, 0x5A000007, 0x5A000007)  # a bot's uid
        args = sandbox_etc.etc_args()
        assert not set(args) & set(planted), args
        uid = bot_uid("etc-planted")
        cmd = bwrap_command(["/bin/cat", "/etc/passwd"], "/", [], 16, bwrap_userns(), uid)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False,
                              preexec_fn=(lambda: drop_privileges(uid)) if bwrap_userns() and uid else None)
        assert done.returncode == 0 and "root:" in done.stdout and "planted" not in done.stdout, done
    finally:
        for path in planted:
            shutil.rmtree(path, ignore_errors=True)
        for parent in sandbox_etc.copy_parents():  # (the copy made for this stamp, if any)
            for name in os.listdir(parent):
                if name.startswith("tablebots-etc-new-"):
                    continue
                if name == sandbox_etc.copy_name(stamp):
                    shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


@needs_root
def test_a_copy_of_etc_replaced_after_it_was_made_is_not_used_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy is checked again at every start, not only when made: removed (a /tmp cleaner)
    and made again at its name by another user, it is never bound."""
    from harness.play import sandbox_etc

    stamp = ((os.getpid(), time.monotonic_ns(), 2),)
    monkeypatch.setattr(sandbox_etc, "_stamp", lambda: stamp)
    monkeypatch.setattr(sandbox_etc, "_checked", (-1e9, ()))
    made = []
    try:
        first = sandbox_etc.etc_args()
        assert first[0] == "--ro-bind" and first[2] == "/etc", first
        copy = first[1]
        made.append(copy)
        shutil.rmtree(copy)
        os.makedirs(copy, mode=0o755)
        Path(copy, "passwd").write_text("planted:x:0:0::/:/bin/sh\n")
        os.chown(copy, 0x5A000007, 0x5A000007)  # a bot's uid
        again = sandbox_etc.etc_args()
        assert copy not in again, again
        made.extend(a for a in again if a.startswith(tuple(sandbox_etc.copy_parents())))
    finally:
        for path in made:
            shutil.rmtree(path, ignore_errors=True)


def test_a_bots_scratch_is_mounted_out_of_the_hosts_sight(tmp_path: Path) -> None:
    """Where root's bubblewrap starts a bot, its child mounts the bot's scratch in a mount
    namespace of its own: while the bot runs, the host's mount table holds nothing of it, and the
    bot's /tmp is that bounded tmpfs (its size and files as the limits say)."""
    from harness.play import protocol
    from harness.play.botproc import BotProcess, StderrLog

    log = StderrLog(str(tmp_path), "scratch", 1 << 20)
    code = ("import sys; sys.stdin.readline(); "
            "sys.stderr.write('TMP ' + ''.join(x for x in open('/proc/self/mountinfo') if ' /tmp ' in x)); "
            "sys.stderr.flush(); print('{\"type\": \"ready\"}', flush=True); sys.stdin.read()")
    proc = BotProcess(BotSpec("scratch", ("python3", "-c", code)), ResourceLimits(sandbox="bwrap", scratch_mb=8), log)
    proc.start()
    try:
        hello = protocol.encode(protocol.hello("crisps", {}, 0, 2, 5000, 1000, 0))
        assert proc.write(hello, time.monotonic() + 10) == 0
        code, line = proc.read_line(time.monotonic() + 30)
        assert code == 0, (line, proc.detail, proc.stderr_tail())
        with open("/proc/self/mountinfo") as fh:
            host = fh.read()
        assert "tablebots-scratch" not in host and "nr_inodes=2048" not in host
        proc.drain_stderr()
        tmp = [x for x in proc.stderr_tail().splitlines() if x.startswith("TMP ")]
        assert tmp and "size=8192k" in tmp[0] and "nr_inodes=2048" in tmp[0], proc.stderr_tail()
    finally:
        proc.kill()
        log.close()


def test_ranked_play_names_a_contest_without_the_sandbox_even_where_bwrap_works():
    """`harness contest run` refuses ranked play on what this lists: a contest whose sandbox is
    off is listed although bubblewrap works here, and one with it is not."""
    from harness.play.doctor import ranked_play_problems
    from harness.play.sandbox import bwrap_problem

    assert bwrap_problem() is None  # .ci/run installs bubblewrap
    assert ranked_play_problems(None)[0] == "no sandbox (sandbox: none): bots can read the store and each other"
    assert not any(p.startswith("no sandbox") for p in ranked_play_problems("bwrap"))
