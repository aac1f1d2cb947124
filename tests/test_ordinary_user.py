"""The harness run by an ordinary user, with a cgroup v2 subtree delegated to it the way systemd's
``Delegate=yes`` does (``systemd-run --user --scope -p Delegate=yes harness ...``): here a cgroup2
file system is mounted (the same hierarchy as the host's, where the host uses v1 for its
controllers), a subtree made, and it and its ``cgroup.procs``, ``cgroup.subtree_control`` and
``cgroup.threads`` chowned to the user; the harness starts inside it as that user.

Before: as an ordinary user, bots of one user shared ``RLIMIT_NPROC``: a bot forking until refused
made the innocent bot's starts fail (crashes charged to it); without a subtree, a spinning bot made
an innocent one time out in 4 of 4 games. Now: 0 timeouts and 0 crashes for the innocent.

On a host whose controllers are all bound to cgroup v1 (the project machine: only ``hugetlb`` is
left for v2), the subtree gives freezing and the CPU clock (``cgroup.freeze`` and ``cpu.stat``
are core files of every v2 cgroup) but no ``pids`` or ``memory``: the per-bot process count
then comes from ``RLIMIT_NPROC`` inside each bot's own user namespace.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.league.config import load_config
from harness.league.store import LeagueStore
from harness.play.privileges import reachable_paths_mounter

REPO = Path(__file__).resolve().parent.parent
ATTACKER = REPO / "tests" / "bots" / "attacker.py"
RANDOM = REPO / "bots" / "random_bot.py"
USER = "tablebots-ci"


@pytest.fixture(scope="module")
def delegated() -> Iterator[tuple[int, int, Path]]:
    """An ordinary user and a cgroup v2 subtree delegated to it: (uid, gid, subtree)."""
    assert os.geteuid() == 0, "this test creates a user and mounts cgroup2: it runs as root (as CI does)"
    try:
        pwd.getpwnam(USER)
    except KeyError:
        # (another run of this test at the same time may make it first)
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=False)
    user = pwd.getpwnam(USER)
    mount = Path(tempfile.mkdtemp(prefix="tablebots-cgroup2-"))
    subprocess.run(["mount", "-t", "cgroup2", "none", str(mount)], check=True)
    subtree = mount / f"tablebots-ci-{os.getpid()}"
    subtree.mkdir()
    for path in (subtree, *(subtree / f for f in ("cgroup.procs", "cgroup.subtree_control", "cgroup.threads"))):
        os.chown(path, user.pw_uid, user.pw_gid)  # what systemd does for Delegate=yes
    try:
        yield user.pw_uid, user.pw_gid, subtree
    finally:
        for _ in range(50):  # the user's harness removes its own groups when it ends
            leftovers = sorted((p for p in subtree.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
            for p in leftovers:
                try:
                    p.rmdir()
                except OSError:
                    pass
            try:
                subtree.rmdir()
                break
            except OSError:
                import time
                time.sleep(0.1)
        subprocess.run(["umount", str(mount)], check=False)
        mount.rmdir()


def _become(uid: int, gid: int, subtree: Path | None, home: Path) -> Callable[[], None]:
    """What the child runs before exec to be the user, inside the delegated subtree (``None``:
    outside it, as a user without one)."""
    mounter = reachable_paths_mounter([sys.prefix, sys.base_prefix, os.path.realpath(sys.executable), str(REPO),
                                       str(home), *os.environ.get("PYTHONPATH", "").split(":")])

    def become_user() -> None:
        if subtree is not None:
            with open(subtree / "cgroup.procs", "w") as fh:  # as systemd-run --scope puts its command there
                fh.write(str(os.getpid()))
        if mounter is not None:  # (the runtime may live under /root: reachable in a namespace of its own)
            mounter()
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)

    return become_user


def _run_as(uid: int, gid: int, subtree: Path | None, league: Path,
            argv: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``harness run league`` (or ``python ARGV``) as the user (see :func:`_become`)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(league.parent), "LANG": "C.UTF-8",
           **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"}}
    return subprocess.run([sys.executable, *(argv or ("-m", "harness", "run", str(league), "--no-progress"))],
                          cwd=league.parent, env=env, preexec_fn=_become(uid, gid, subtree, league.parent),
                          capture_output=True, text=True, timeout=300)


def _league(uid: int, gid: int, body: str) -> Path:
    home = Path(tempfile.mkdtemp(prefix="tablebots-user-"))
    os.chown(home, uid, gid)
    path = home / "league.yaml"
    path.write_text(f"name: user\nstore: {home / 'user.sqlite'}\nworkers: 1\n" + body)
    os.chown(path, uid, gid)
    return path


def _violations(league: Path) -> dict[tuple[str, str], int]:
    with LeagueStore(load_config(league).store) as store:
        rows = store.db.execute("SELECT b.name, x.kind, count(*) FROM violations x JOIN versions v ON v.id = "
                                "x.version_id JOIN bots b ON b.id = v.bot_id GROUP BY b.name, x.kind").fetchall()
    return {(name, kind): n for name, kind, n in rows}


def _games(league: Path) -> int:
    with LeagueStore(load_config(league).store) as store:
        return int(store.db.execute("SELECT count(*) FROM games").fetchone()[0])


@pytest.mark.serial  # timeouts counted: alone under xdist (tests/conftest.py)
def test_as_an_ordinary_user_a_spinning_bot_makes_no_innocent_bot_time_out(delegated) -> None:  # type: ignore[no-untyped-def]
    uid, gid, subtree = delegated
    league = _league(uid, gid, f"""game: crisps
rounds: 2
options: {{max_turns: 30}}
time: {{move_ms: 100}}
limits: {{sandbox: bwrap}}
bots:
  - {{name: thinker, command: [python3, {ATTACKER}, think, --cpu-ms, '50']}}
  - {{name: spinner, command: [python3, {ATTACKER}, spin, --children, '3']}}
""")
    try:
        done = _run_as(uid, gid, subtree, league)
        assert done.returncode == 0, done.stderr
        # the sandbox and the CPU clock hold; what does not (no memory controller for v2 here) is said
        assert "without a sandbox" not in done.stderr and "frozen between turns" not in done.stderr, done.stderr
        assert _games(league) == 4
        found = _violations(league)
        assert not [k for k in found if k[0] == "thinker"], found
    finally:
        shutil.rmtree(league.parent, ignore_errors=True)


def test_as_an_ordinary_user_a_fork_bomb_does_not_stop_the_innocent_bots_starts(delegated) -> None:  # type: ignore[no-untyped-def]
    uid, gid, subtree = delegated
    league = _league(uid, gid, f"""game: crisps
rounds: 3
options: {{max_turns: 20}}
time: {{move_ms: 2000}}
limits: {{sandbox: bwrap, processes: 40}}
bots:
  - {{name: innocent, command: [python3, {RANDOM}, --seed, '1']}}
  - {{name: bomber, command: [python3, {ATTACKER}, forkbomb]}}
""")
    try:
        done = _run_as(uid, gid, subtree, league)
        assert done.returncode == 0, done.stderr
        assert _games(league) == 6
        found = _violations(league)
        assert not [k for k in found if k[0] == "innocent"], found
        logs = list(league.parent.glob("user.logs/**/bomber.stderr.log*"))
        forked = [int(line.split("forked=")[1]) for log in logs for line in log.read_text().splitlines()
                  if "ATTACK forkbomb" in line]
        assert forked and max(forked) < 40, forked  # its own processes bounded, per bot
    finally:
        shutil.rmtree(league.parent, ignore_errors=True)


def test_harness_doctor_says_what_an_ordinary_user_gets_with_and_without_a_delegated_subtree(delegated) -> None:  # type: ignore[no-untyped-def]
    uid, gid, subtree = delegated
    league = _league(uid, gid, "")
    try:
        alone = _run_as(uid, gid, None, league, ("-m", "harness", "doctor"))
        inside = _run_as(uid, gid, subtree, league, ("-m", "harness", "doctor"))
    finally:
        shutil.rmtree(league.parent, ignore_errors=True)
    assert alone.returncode == 0 and inside.returncode == 0, alone.stderr + inside.stderr
    lines = alone.stdout.splitlines()
    off = lines.index(next(line for line in lines if line.startswith("OFF  frozen between turns")))
    assert lines[off + 1].startswith("     to make it hold: "), alone.stdout  # the command that would do it
    assert "OFF  deadlines in CPU time" in alone.stdout
    for out in (alone.stdout, inside.stdout):  # whatever else is off, an ordinary user has no root power to lose
        assert "ok   bots never hold root's powers: bots run as your user, which holds no root power" in out, out
    assert "ok   frozen between turns" in inside.stdout and "ok   deadlines in CPU time" in inside.stdout, inside.stdout
    # one bot's fork bomb never stops another's: per-namespace RLIMIT_NPROC (or pids.max)
    assert "ok   processes bounds each bot alone" in inside.stdout, inside.stdout
    from harness.play.cgroups import v1_controllers

    if "memory" in v1_controllers():  # (this host: no v2 subtree can offer it, and doctor says why)
        assert "OFF  memory_mb bounds" in inside.stdout, inside.stdout
        assert "binds the memory controller to cgroup v1" in inside.stdout, inside.stdout
    else:  # the subtree offers it: the harness hands it down to its bots
        assert "ok   memory_mb bounds the memory of the bot's whole tree" in inside.stdout, inside.stdout


def test_harness_run_says_plainly_which_guarantees_are_off_for_a_user_without_a_subtree(delegated) -> None:  # type: ignore[no-untyped-def]
    uid, gid, _ = delegated
    league = _league(uid, gid, f"""game: crisps
rounds: 1
options: {{max_turns: 10}}
limits: {{sandbox: bwrap}}
bots:
  - {{name: a, command: [python3, {RANDOM}, --seed, '1']}}
  - {{name: b, command: [python3, {RANDOM}, --seed, '2']}}
""")
    try:
        done = _run_as(uid, gid, None, league)
    finally:
        shutil.rmtree(league.parent, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    [line] = [line for line in done.stderr.splitlines() if "guarantees of docs/security.md do not hold" in line]
    assert "frozen between turns" in line and "deadlines in CPU time" in line and "harness doctor" in line, line


def test_a_subtree_hands_its_controllers_down_to_the_bot_cgroups_once_its_processes_sit_in_a_leaf(
        delegated, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """cgroup v2 lets a cgroup enable controllers for its children only while no process sits in
    it: the harness moves its own processes to a leaf first. Shown with ``hugetlb``, the one
    controller this host leaves to cgroup v2 (``pids`` and ``memory`` go the same way where a
    subtree offers them)."""
    import harness.play.cgroups as cg

    _, _, subtree = delegated
    top = subtree.parent / "cgroup.subtree_control"
    added = "hugetlb" not in top.read_text().split()
    if added:
        top.write_text("+hugetlb")
    (subtree / "cgroup.subtree_control").write_text("+hugetlb")
    own = subtree / "v2-leaf-test"
    own.mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (own / "cgroup.procs").write_text(str(sleeper.pid))  # a process in the harness's own cgroup
        base = own / "tablebots-base"
        base.mkdir()
        monkeypatch.setattr(cg, "V2_CONTROLLERS", ("hugetlb",))
        with pytest.raises(OSError):  # what the kernel refuses, and why the leaf is needed
            (own / "cgroup.subtree_control").write_text("+hugetlb")
        cg._enable_v2(str(own), str(base))
        [leaf] = [p for p in own.iterdir() if p.is_dir() and p.name.startswith("tablebots-harness-")]
        assert (leaf / "cgroup.procs").read_text().split() == [str(sleeper.pid)]
        bot = base / "bot"
        bot.mkdir()
        assert (bot / "hugetlb.2MB.max").exists() or any(p.name.startswith("hugetlb.") for p in bot.iterdir())
        bot.rmdir()
    finally:
        sleeper.kill()
        sleeper.wait()
        for p in sorted((p for p in own.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            p.rmdir()
        own.rmdir()
        (subtree / "cgroup.subtree_control").write_text("-hugetlb")
        if added:
            try:
                top.write_text("-hugetlb")
            except OSError:  # (busy: another run of this test uses it now; it turns it off after)
                pass


BUILDS = r"""
import json, sys
from pathlib import Path
from harness.contest.build import build_upload
from harness.contest.config import Runtime, init_contest, load_contest

root = Path(sys.argv[1]) / "contest"
init_contest(root, "crisps")
cfg = load_contest(root)
fork = ("import os, time\nn = 0\nfor i in range(300):\n    try:\n        pid = os.fork()\n    except OSError:\n"
        "        break\n    if pid == 0:\n        os.close(1); os.close(2); time.sleep(20); os._exit(0)\n    n += 1\n"
        "print('forked', n, flush=True)\n")
cases = {"shadow": ({"py_compile.py": "print('SHADOW RAN')\n"}, cfg.runtimes["python"]),
         "fork": ({"fork.py": fork}, Runtime("fork", "bot.py", ("python3", "fork.py"), ("python3", "bot.py"))),
         "links": ({}, Runtime("links", "bot.py", ("sh", "-c", "ln -s / root-link; mkfifo fifo"), ("python3", "bot.py")))}
out = {}
for i, (name, (files, runtime)) in enumerate(cases.items()):
    workdir = root / "submissions" / str(i + 1)
    workdir.mkdir(parents=True)
    for fname, text in {"bot.py": "print('hi')\n", **files}.items():
        (workdir / fname).write_text(text)
    built, log = build_upload(cfg, runtime, workdir)
    out[name] = {"built": built, "log": log, "left": sorted(p.name for p in workdir.iterdir())}
print(json.dumps(out))
"""


def test_as_an_ordinary_user_a_build_runs_in_its_user_namespace_in_one_envelope(delegated) -> None:  # type: ignore[no-untyped-def]
    """The build path of a harness run by an ordinary user (bubblewrap in a user namespace, which
    root's harness here does not take): the upload's py_compile.py is not imported, its
    processes are bounded inside its namespace, its links and FIFOs do not come back."""
    import json

    uid, gid, subtree = delegated
    league = _league(uid, gid, "")
    script = league.parent / "builds.py"
    script.write_text(BUILDS)
    try:
        done = _run_as(uid, gid, subtree, league, (str(script), str(league.parent)))
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(league.parent, ignore_errors=True)
    assert "without a sandbox" not in out["shadow"]["log"], out["shadow"]  # bubblewrap, as the user
    assert out["shadow"]["built"] and "SHADOW RAN" not in out["shadow"]["log"], out["shadow"]
    forked = int(out["fork"]["log"].split("forked ", 1)[1].split()[0])
    assert forked < 64, out["fork"]
    assert not out["links"]["built"] and out["links"]["left"] == ["bot.py"], out["links"]


PROBE_KILLED = """
import os, subprocess, sys, time
prober, pidfile = sys.argv[1], sys.argv[2]
worker = subprocess.Popen([sys.executable, "-c", prober, "1", pidfile])
deadline = time.monotonic() + 30
while not (os.path.exists(pidfile) and open(pidfile).read().strip()) and time.monotonic() < deadline:
    time.sleep(0.02)
probe = int(open(pidfile).read())
worker.kill()
worker.wait()
def alive():
    try:
        return open(f"/proc/{probe}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
deadline = time.monotonic() + 5
while alive() and time.monotonic() < deadline:
    time.sleep(0.02)
print("alive" if alive() else "gone")
if alive():
    os.kill(probe, 9)
"""


def test_as_an_ordinary_user_a_sandbox_probe_dies_with_the_worker_that_started_it(delegated) -> None:  # type: ignore[no-untyped-def]
    """The sandbox probe of a harness run by an ordinary user (no change of credentials: its
    death signal is set directly) is gone once the process that started it is killed."""
    from test_layers_kill import PROBER

    uid, gid, subtree = delegated
    league = _league(uid, gid, "")
    script = league.parent / "probe_killed.py"
    script.write_text(PROBE_KILLED)
    try:
        done = _run_as(uid, gid, subtree, league, (str(script), PROBER, str(league.parent / "probe.pid")))
        assert done.returncode == 0, done.stderr
    finally:
        shutil.rmtree(league.parent, ignore_errors=True)
    assert done.stdout.split() == ["gone"]
