"""Each layer of the bots' defences on its own (docs/security.md, docs/testing.md "Layers"): a
real bot process (tests/bots/layers_probe.py) measures the layer from inside, so that removing
it fails a test even while another layer still stops the attack.

- Frozen between turns and right after ``ready``: the CPU-time deadline alone stays fair without
  the freezer (a bot's background CPU is not charged to its opponent's clock), so only the bot
  can tell whether it was frozen: a thread of it spins and notes the wall-clock stretches in
  which it did not run; every opponent turn must fall inside one of them.
- Privileges: the bot tries to become root again and reports its real, effective and saved ids,
  its groups and its capabilities, sandboxed and not.
- A starved bot's wall-clock cap: a bot that is always runnable (it spins) but gets almost no CPU
  (a cgroup CPU quota of 1%, whatever the load) runs out at the hard cap, 20x its budget, not at
  the sleeper's 3x; the recorded detail and clock say so.

No test asserts a duration: the freeze is checked by the order of events on one clock (the
opponent's turn starts after the bot was frozen and ends before it is thawed, so a frozen bot
cannot see it, however loaded the machine), the cap by what the referee recorded.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import re
import sys
import time
from pathlib import Path

import pytest
from cgroup_probe import needs_cpu_clock

from harness.games import get_game
from harness.play.cpuclock import HARD_FACTOR
from harness.play.limits import BotSpec, ResourceLimits, TimeControls
from harness.play.pool import BotPool
from harness.play.privileges import BOT_UID_RANGE, bot_uid
from harness.play.referee import GameRecord, RefereeConfig, play_game
from harness.play.sandbox import bwrap_problem

PROBE = Path(__file__).resolve().parent / "bots" / "layers_probe.py"




def needs_bwrap() -> None:
    """The sandbox must work here (CI installs bubblewrap): a sandbox broken by a change fails the
    test instead of skipping it."""
    assert bwrap_problem() is None, f"bubblewrap unusable: {bwrap_problem()}"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the harness drops privileges only when it runs as root")


def probe(tmp_path: Path, name: str, mode: str, *args: str) -> BotSpec:
    return BotSpec(name=name, command=(sys.executable, str(PROBE), mode, *args), cwd=str(tmp_path))


def play(tmp_path: Path, seats: list[BotSpec], sandbox: str | None, move_ms: int = 1000,
         max_turns: int = 8) -> GameRecord:
    config = RefereeConfig(time=TimeControls(move_ms=move_ms), log_dir=str(tmp_path / "logs"),
                           limits=dataclasses.replace(ResourceLimits(), sandbox=sandbox))  # type: ignore[arg-type]
    with BotPool(config) as pool:
        return play_game(get_game("crisps"), {"max_turns": max_turns}, 1, "g-layers", seats, pool, config)


def findings(tmp_path: Path, bot: str, what: str) -> list[dict[str, str]]:
    """The ``LAYERS what k=v ...`` lines ``bot`` wrote to its stderr log, in order."""
    out = []
    for log in sorted((tmp_path / "logs").glob(f"{bot}.stderr.log*"), reverse=True):  # .1 (older) first
        for line in log.read_text(errors="replace").splitlines():
            m = re.match(rf"LAYERS {what} (.*)", line)
            if m:
                out.append(dict(kv.split("=", 1) for kv in m.group(1).split()))
    return out


# -- frozen between turns ------------------------------------------------------------------------

def _gaps(text: str) -> list[tuple[float, float]]:
    return [] if text == "-" else [(float(a), float(b)) for a, b in (g.split(":") for g in text.split(","))]


@needs_cpu_clock
def test_a_bot_is_frozen_through_every_opponent_turn_and_from_its_ready_on(tmp_path):
    """The prober sits at seat 1: its first window runs from its ``ready`` to its first request
    and holds the opponent's first turn (frozen after ready), the others from each answer to the
    next request (frozen after each answer). Each opponent turn (a sleep of 150 ms, while the
    cores are free) must fall inside a stretch in which the prober's spinning thread did not
    run, and the CPU time the prober used in a window can only have been used outside the
    opponent's turns (at most its two threads, on as many cores)."""
    needs_bwrap()
    record = play(tmp_path, [probe(tmp_path, "opponent", "turns", "--ms", "150"), probe(tmp_path, "prober", "frozen")],
                  "bwrap")
    assert record.violations == []
    turns = [(float(t["o1"]), float(t["o2"])) for t in findings(tmp_path, "opponent", "turn")]
    windows = findings(tmp_path, "prober", "window")
    assert len(turns) >= 3 and len(windows) >= 3, (turns, windows)
    first_turn = turns[0]
    first = windows[0]  # from its ready to the first message it reads (start, sent while it was frozen)
    assert float(first["a"]) < first_turn[0] and first_turn[1] < float(first["r"]), (first, first_turn)
    seen = 0
    for w in windows:
        a, r = float(w["a"]), float(w["r"])
        inside = [(o1, o2) for o1, o2 in turns if a < o1 and o2 < r]
        gaps = _gaps(w["gaps"])
        for o1, o2 in inside:
            # the spinner saw no moment of the opponent's turn: one stretch without it covers it all
            assert any(g0 <= o1 and o2 <= g1 for g0, g1 in gaps), (f"the prober ran during the opponent's turn "
                                                                 f"{o1:.6f}-{o2:.6f}", w)
            seen += 1
        outside = (r - a) - sum(o2 - o1 for o1, o2 in inside)
        threads = min(2, os.cpu_count() or 1)
        assert float(w["cpu_ms"]) <= 1000 * threads * outside + 2.0, (w, inside)
    assert seen == len([t for t in turns if t[1] < float(windows[-1]["r"])]) and seen >= 3


# -- privileges -----------------------------------------------------------------------------------

def _privileges(tmp_path: Path, sandbox: str | None) -> dict[str, str]:
    """What the ``privs`` prober found, started by a harness that holds supplementary groups (root's
    own group and another), as a root login shell does: a bot must not inherit them."""
    before = os.getgroups()
    os.setgroups([0, 4242])
    try:
        record = play(tmp_path, [probe(tmp_path, "privs", "privs"), probe(tmp_path, "other", "plain")], sandbox,
                      max_turns=2)
    finally:
        os.setgroups(before)
    assert record.violations == []
    [facts] = findings(tmp_path, "privs", "privs")
    return facts


@needs_root
def test_a_sandboxed_bot_cannot_become_root_again_and_holds_no_capability(tmp_path):
    """Inside the sandbox (setpriv inside bwrap, or bwrap in a user namespace where it can run
    unprivileged): every way back to uid 0 fails, real, effective and saved ids are one
    unprivileged id, no supplementary group, no capability in any set (the bounding set too,
    so none can come back through an exec), and no new privileges. (The saved ids are also
    reset by the exec itself, and bwrap sets no-new-privileges on its own: layers the tests
    cannot remove.)"""
    needs_bwrap()
    facts = _privileges(tmp_path, "bwrap")
    for attempt in ("setuid", "setresuid", "setgid", "setresgid", "setgroups"):
        assert facts[attempt] == "blocked(1)", (attempt, facts)
    uids = facts["resuid"].split(",")
    assert len(set(uids)) == 1 and uids[0] != "0", facts  # a saved uid of 0 would let setresuid undo the drop
    assert facts["resgid"].split(",") == uids, facts
    assert facts["groups"] == "-", facts  # root's group 0 kept as a supplementary group would be a way back
    for caps in ("CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd"):
        assert int(facts[caps], 16) == 0, (caps, facts)
    assert facts["NoNewPrivs"] == "1", facts


@needs_root
def test_an_unsandboxed_bot_started_by_root_runs_as_its_own_uid_for_good(tmp_path):
    """Without the sandbox the harness (root) drops the bot to its own uid between fork and exec:
    real, effective and saved uid and gid all the bot's (a hash of its name in an unused range),
    no supplementary group, no capability; every way back to root fails."""
    facts = _privileges(tmp_path, None)
    for attempt in ("setuid", "setresuid", "setgid", "setresgid", "setgroups"):
        assert facts[attempt] == "blocked(1)", (attempt, facts)
    uid = bot_uid("privs")
    assert uid is not None and BOT_UID_RANGE[0] <= uid < BOT_UID_RANGE[1]
    assert facts["resuid"] == facts["resgid"] == f"{uid},{uid},{uid}", facts
    assert facts["groups"] == "-", facts
    for caps in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
        assert int(facts[caps], 16) == 0, (caps, facts)


# -- a starved bot's wall-clock cap ------------------------------------------------------------------

def _quota_cgroup() -> str | None:
    """A cgroup v1 ``cpu`` directory of the smallest weight (``cpu.shares`` 2, against 1024 for
    everything else) that any user may join, else None. (A CFS quota would starve the bot too,
    but a throttled thread is not waiting for a CPU: the kernel dequeues it, and its wait is
    not counted as time kept from running.)"""
    for line in open("/proc/self/mounts"):
        parts = line.split()
        if parts[2] == "cgroup" and "cpu" in parts[3].split(","):
            path = os.path.join(parts[1], f"tablebots-starve-{os.getpid()}")
            try:
                os.makedirs(path, exist_ok=True)
                with open(os.path.join(path, "cpu.shares"), "w") as fh:
                    fh.write("2")
                for name in ("cgroup.procs", "tasks"):
                    os.chmod(os.path.join(path, name), 0o666)  # the bot (an unprivileged uid) joins it itself
            except OSError:
                return None
            return path
    return None


def _spin_on_cpu0(seconds: float) -> None:
    os.sched_setaffinity(0, {0})
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


@pytest.fixture
def starving_cgroup():
    path = _quota_cgroup()
    if path is None:
        pytest.skip("no cgroup v1 cpu controller to set a CPU weight in (not root)")
    hog = multiprocessing.get_context("fork").Process(target=_spin_on_cpu0, args=(60.0,), daemon=True)
    hog.start()  # CPU 0 always busy at full weight: the bot, pinned there at weight 2, waits
    yield path
    hog.kill()
    hog.join()
    try:
        os.rmdir(path)
    except OSError:
        pass


@needs_cpu_clock
def test_a_runnable_but_starved_bot_runs_out_at_the_hard_cap_not_the_sleepers(tmp_path, starving_cgroup):
    """A bot that spins (always runnable) at the smallest CPU weight, on a core another process
    keeps busy: at move_ms 100 it would need minutes of wall-clock time to use its CPU budget. It is kept from running nearly all
    the time (runnable, throttled), so its wall time minus that never reaches the budget either;
    at 20 x 100 ms it is out of time, and the record says so (its clock: ``hard``, its CPU time
    far below the budget)."""
    record = play(tmp_path, [probe(tmp_path, "starved", "starve", "--cgroup", starving_cgroup),
                             probe(tmp_path, "other", "plain")], None, move_ms=100, max_turns=2)
    [moved] = findings(tmp_path, "starved", "starve")
    assert os.path.basename(starving_cgroup) in moved["cgroup"]
    [v] = [v for v in record.violations if v["seat"] == 0]
    assert v["kind"] == "timeout", v
    assert v["clock"]["ran_out"] == "hard", v["clock"]
    assert f"no answer after {HARD_FACTOR} x 100 ms of wall-clock time" in v["detail"], v["detail"]
    assert "not counting the time it was kept from running" not in v["detail"] and HARD_FACTOR == 20
    assert v["clock"]["wall_ms"] >= HARD_FACTOR * 100  # the cap cannot come early: a fact, not a timing
    assert v["clock"]["cpu_ms"] < 100, v["clock"]  # not its CPU budget: the quota starved it
    assert [v for v in record.violations if v["seat"] == 1] == []


# -- the sandbox's walls, one by one ----------------------------------------------------------------

def test_a_sandboxed_bot_has_its_own_namespaces_and_only_its_scratch_is_writable(tmp_path):
    """Each wall of the sandbox on its own (the attacks in tests/test_fair_play.py are stopped by
    several at once: an unprivileged uid cannot write /proc/sys whether or not it is read-only,
    and cannot talk over SysV memory if its IPC namespace is shared but the key is taken...):
    the bot's network, IPC, PID, UTS and mount namespaces are not the harness's (its user
    namespace is its own where bwrap runs in one); ``/``, ``/proc/sys``, ``/dev`` and its own
    directory are mounted read-only, and ``/tmp`` is a tmpfs of ``scratch_mb``."""
    from harness.play.sandbox import bwrap_userns

    needs_bwrap()
    config = RefereeConfig(time=TimeControls(move_ms=1000), log_dir=str(tmp_path / "logs"),
                           limits=dataclasses.replace(ResourceLimits(), sandbox="bwrap", scratch_mb=16))
    with BotPool(config) as pool:
        record = play_game(get_game("crisps"), {"max_turns": 2}, 1, "g-walls",
                           [probe(tmp_path, "walls", "sandbox"), probe(tmp_path, "other", "plain")], pool, config)
    assert record.violations == []
    [facts] = findings(tmp_path, "walls", "sandbox")
    for ns in ("net", "ipc", "pid", "uts", "mnt"):
        assert facts[f"ns_{ns}"] != os.readlink(f"/proc/self/ns/{ns}"), (ns, facts)
    assert (facts["ns_user"] != os.readlink("/proc/self/ns/user")) == bwrap_userns(), facts
    for key in ("root", "proc_sys", "dev", "cwd"):
        assert facts[f"mnt_{key}"].startswith("ro,"), (key, facts)
    assert facts["mnt_tmp"] == f"rw,tmpfs,size={16 * 1024}k", facts


# -- what a timeout records ---------------------------------------------------------------------

def test_a_timeout_says_the_host_was_overloaded_only_above_one_runnable_task_per_core():
    """The load average is compared with the cores strictly (2.0 on 2 cores is a full host, not
    an overloaded one), and the detail says so, with both figures, only then; each of the three
    ways time runs out names its own cap."""
    from harness.play.botproc import BotProcess, StderrLog
    from harness.play.cpuclock import Clock

    assert Clock(load=2.01, cores=2).overloaded and not Clock(load=2.0, cores=2).overloaded
    assert not Clock(load=5.0, cores=0).overloaded  # cores unknown: no claim
    assert Clock(load=2.5, cores=2, ran_out="hard").to_json()["host_overloaded"] is True
    proc = BotProcess(BotSpec(name="x", command=("true",)), ResourceLimits(), StderrLog(None, "x", 1024))
    busy = proc._ran_out_detail(Clock(cpu_ms=3, wall_ms=2000, kept_ms=1990, ran_out="hard", load=2.5, cores=2), 100)
    assert busy == ("no answer after 20 x 100 ms of wall-clock time (3 ms of CPU time in 2000 ms, 1990 ms of them "
                    "kept from running by other processes); the host was overloaded (load 2.5 on 2 cores)")
    calm = proc._ran_out_detail(Clock(cpu_ms=1, wall_ms=120, ran_out="wall", load=2.0, cores=2), 100)
    assert calm == ("no answer after 100 ms of wall-clock time not counting the time it was kept from running "
                    "(sleeping, blocked or computing: 1 ms of CPU time in 120 ms, 0 ms of them kept from running "
                    "by other processes)")
    spent = proc._ran_out_detail(Clock(cpu_ms=101, wall_ms=120, ran_out="cpu", load=0.5, cores=2), 100)
    assert spent == ("used its 100 ms of CPU time without answering (101 ms of CPU time in 120 ms, 0 ms of them "
                     "kept from running by other processes)")


def test_the_sandbox_command_drops_every_privilege_on_both_paths():
    """The words of the two ways a root harness sandboxes a bot, for the path this machine cannot
    run and for the layers the kernel or bwrap also enforce here (no new privileges, an empty
    inheritable set): in a user namespace, bwrap runs as the bot's uid (dropped before it, in
    the child) and drops every capability inside; without one, setpriv inside the sandbox sets
    the bot's uid and gid, clears the groups, empties the inheritable and bounding sets and
    forbids new privileges, right before the bot's own command."""
    from harness.play.privileges import setpriv_prefix
    from harness.play.sandbox import INNER_UID, bwrap_command

    argv = ["python3", "bot.py"]
    userns = bwrap_command(argv, "/", ["/srv/bot"], 64, userns=True, uid=0x5A000001)
    assert userns[userns.index("--unshare-user"):userns.index("--unshare-user") + 5] == [
        "--unshare-user", "--uid", str(INNER_UID), "--gid", str(INNER_UID)]
    assert userns[userns.index("--cap-drop"):userns.index("--cap-drop") + 2] == ["--cap-drop", "ALL"]
    assert not any("setpriv" in w for w in userns) and userns[-2:] == argv
    plain = bwrap_command(argv, "/", ["/srv/bot"], 64, userns=False, uid=0x5A000001)
    assert "--unshare-user" not in plain and "--cap-drop" not in plain
    words = setpriv_prefix(0x5A000001)
    assert plain[-len(words) - 2:] == [*words, *argv]
    assert "/bin/sh" in plain and any("nr_inodes=" in w for w in plain)  # the shell bounds the files
    # the scratch mounted (bounded in files) by the bot's child: bound as /tmp, setpriv alone wraps the bot
    mounted = bwrap_command(argv, "/", ["/srv/bot"], 64, userns=False, uid=0x5A000001, scratch_at="/x/scratch")
    assert mounted[mounted.index("--bind"):mounted.index("--bind") + 3] == ["--bind", "/x/scratch", "/tmp"]
    assert "/tmp" not in [mounted[i + 1] for i, w in enumerate(mounted) if w == "--tmpfs"]  # not bwrap's own
    assert mounted[mounted.index("--") + 1:] == [*words, *argv]
    uid = str(0x5A000001)
    assert words[1:] == [f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                         "--bounding-set=-all", "--no-new-privs", "--"]
    assert setpriv_prefix(None) == []


# -- the league's files: their owner's eyes only -----------------------------------------------------

@needs_root
def test_an_unsandboxed_bot_can_read_none_of_the_leagues_files(tmp_path):
    """Without the sandbox (which shows a bot none of them), the store (every seat's hands, the
    deal secret), its -wal, the logs file and every stderr log are its owner's alone (0600): a
    bot, run as its own uid, walks the league's directory, which it may enter, and can open
    only the config (and the runner's lock file, which holds its pid)."""
    import tempfile

    from harness.league.config import load_config
    from harness.league.runner import run_league

    work = Path(tempfile.mkdtemp(prefix="tblayer-"))
    try:
        work.chmod(0o755)  # the bot may enter it and list it: only the files' modes stand in its way
        path = work / "league.yaml"
        path.write_text(f"name: files\ngame: crisps\nrounds: 1\noptions: {{max_turns: 4}}\nstore: {work}/league.sqlite\n"
                        f"limits: {{sandbox: none}}\nbots:\n"
                        f"  - {{name: reader, command: [python3, {PROBE}, read, --root, {work}]}}\n"
                        f"  - {{name: other, command: [python3, {PROBE}, plain]}}\n")
        summary = run_league(load_config(path), progress=False)
        assert not summary.errors, summary.errors
        files = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file())
        assert any(f.endswith(".stderr.log") for f in files) and "league.sqlite" in files, files
        reports = []
        for log in work.rglob("reader.stderr.log*"):
            reports += [dict(kv.split("=", 1) for kv in line.split()[2:])
                        for line in log.read_text().splitlines() if line.startswith("LAYERS read ")]
        assert reports, files
        public = {"league.yaml", "league.sqlite.lock"}  # the config, and the runner's lock (its pid only)
        for facts in reports:
            assert set(facts["readable"].split(",")) <= public, (facts, files)
            assert int(facts["denied"]) >= 4, facts  # the store, its logs file, two stderr logs at least
        for f in files:
            if f not in public:
                assert (work / f).stat().st_mode & 0o077 == 0, (f, oct((work / f).stat().st_mode))
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


@needs_root
def test_the_tmpfs_that_makes_a_blocked_path_reachable_is_read_only() -> None:
    """Without the sandbox, a bot's path under a directory others may not enter is bound back in
    on a small tmpfs over that directory, in the bot's own mount namespace; the tmpfs is
    remounted read-only (and root's 0755), so the bot can read the path and write nothing
    beside it: the layer seen from inside, by the mount's options."""
    import shutil
    import subprocess
    import tempfile

    from harness.play.privileges import blocked_ancestors, drop_privileges, reachable_paths_mounter

    base = Path(tempfile.mkdtemp(prefix="tablebots-reach-", dir="/tmp"))  # pytest's own tmp is closed higher up
    base.chmod(0o755)
    try:
        closed = base / "closed"
        (closed / "open").mkdir(parents=True)
        (closed / "open" / "data.txt").write_text("visible\n")
        closed.chmod(0o700)
        assert list(blocked_ancestors([str(closed / "open")])) == [str(closed)]
        mounter = reachable_paths_mounter([str(closed / "open")])
        assert mounter is not None
        uid = bot_uid("layer-probe")
        assert uid is not None

        def child() -> None:
            mounter()
            drop_privileges(uid)

        probe = ("import sys\n"
                 "top = sys.argv[1]\n"
                 "line = [l.split() for l in open('/proc/self/mountinfo') if l.split()[4] == top][-1]\n"
                 "print(line[5], open(sys.argv[2]).read().strip())\n"
                 "try:\n    open(top + '/planted', 'w')\n    print('wrote')\nexcept OSError as e:\n    print('refused', e.errno)\n")
        out = subprocess.run(["/usr/bin/python3", "-c", probe, str(closed), str(closed / "open" / "data.txt")],
                             preexec_fn=child, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        (options, seen), write = out.stdout.splitlines()[0].split(), out.stdout.splitlines()[1]
        assert "ro" in options.split(",") and seen == "visible" and write.startswith("refused"), out.stdout
        assert not (closed / "planted").exists()
    finally:
        shutil.rmtree(base)
