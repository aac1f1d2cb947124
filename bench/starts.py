"""Where a bot process's start goes: fork/spawn, bwrap, the cgroup, the interpreter, the hello.

One process per deal makes a league start many bot processes (bench/fairplay.py counts them);
this measures one start taken apart, each piece side by side with what it adds to, in one run:

- spawn: ``/bin/true`` started with ``posix_spawn``/``vfork`` (what ``subprocess`` does without a
  ``preexec_fn``) against a ``fork`` of this process (what a ``preexec_fn`` forces: the page
  tables of the harness's whole address space are copied, so the cost grows with its size; this
  process has what a league's worker process loads: the local executor, the referee, no numpy),
  the same fork with numpy and scipy loaded as well (``harness run``'s own process, the contest
  site), and the fork with the referee's own ``preexec_fn`` (cgroup join, uid drop, rlimits);
- bwrap: ``true`` in the sandbox as a bot gets it, minus ``true`` alone;
- cgroup: making a bot's cgroups (pids, freezer, cpuacct) and removing them;
- interpreter: ``python3 -c pass`` minus ``true`` (a Python bot's floor);
- hello: the random bot from its start to its ``ready`` minus the interpreter;
- the whole start as the referee makes it (:class:`BotProcess` + hello + ready), without and
  with the sandbox.

Wall time per start (median of ``--n``) and the CPU time of the children (``RUSAGE_CHILDREN``)
and of this process. Under bwrap the bot's processes are not the harness's children (their CPU
never reaches ``RUSAGE_CHILDREN``), so a second table reads the CPU of each start's whole tree
from a cgroup of its own (``cpuacct``), each piece inside the sandbox as a bot gets it: bwrap
alone, the wrapper bwrap runs the bot under (a shell remounting ``/tmp`` with an inode bound
and ``setpriv`` dropping the uid, or ``prlimit``), the interpreter, its ``site``, the bot's
imports and hello. CPU is what a busy machine pays per start (wall time at a high load is
mostly waiting for a core). The machine is shared: the load is printed beside the figures.

    python bench/starts.py [--n 30] [--tiny]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import harness.league.executors.local  # noqa: F401  (a league worker's size: the fork copies its page tables)
from harness.play import protocol
from harness.play.botproc import BotProcess, StderrLog
from harness.play.cgroups import BotCgroup, cgroup_base
from harness.play.limits import BotSpec, ResourceLimits, limit_setter
from harness.play.privileges import bot_uid, drop_privileges, scratch_mounter
from harness.play.sandbox import (
    bwrap_command,
    bwrap_userns,
    own_dirs,
    sandbox_env,
    scratch_inodes,
    scratch_mount_point,
)
from harness.play.sandbox_etc import etc_args, etc_binds

ROOT = Path(__file__).resolve().parent.parent
RANDOM_BOT = ROOT / "bots" / "random_bot.py"
TRUE = shutil.which("true") or "/bin/true"


def timed(fn: Callable[[], None], n: int) -> tuple[float, float, float]:
    """(median wall ms, children's CPU ms per call, this process's CPU ms per call)."""
    walls = []
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    self0 = time.process_time()
    for _ in range(n):
        start = time.perf_counter()
        fn()
        walls.append((time.perf_counter() - start) * 1000)
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    kids = (kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime) * 1000 / n
    return statistics.median(walls), kids, (time.process_time() - self0) * 1000 / n


def run(argv: list[str], **kw: object) -> None:
    subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, close_fds=True, **kw)  # type: ignore[call-overload]


#: wall ms of each stop (bye, then the tree killed: cgroup, /proc scan, reaping) in start_to_ready
STOPS: list[float] = []


def start_to_ready(limits: ResourceLimits, log: StderrLog) -> None:
    """A random bot started as the referee starts one, until its ready; then stopped (timed apart)."""
    proc = BotProcess(BotSpec("starts", ("python3", str(RANDOM_BOT))), limits, log)
    proc.start()
    hello = protocol.encode(protocol.hello("crisps", {}, 0, 2, 5000, 1000, 0))
    proc.write(hello, proc.started_at + 5)
    code, line = proc.read_line(proc.started_at + 5)
    assert code == 0 and b"ready" in line, (code, line, proc.detail)
    start = time.perf_counter()
    proc.close_politely(protocol.BYE)
    proc.kill("bench")
    STOPS.append((time.perf_counter() - start) * 1000)


HELLO = protocol.encode(protocol.hello("crisps", {}, 0, 2, 5000, 1000, 0)) + protocol.BYE


def tree_cpu(argv: list[str], n: int, stdin: bytes = b"", env: dict[str, str] | None = None,
             drop_uid: int | None = None, before: Callable[[], None] | None = None) -> tuple[float, float]:
    """(median CPU ms, median wall ms) of ``argv`` run to its exit ``n`` times, the CPU of its
    whole tree (every process it started, in or out of a sandbox) read from a cgroup of its own;
    ``drop_uid``: run as that uid (as the referee runs an unprivileged bwrap); ``before``: run in
    the child first (as the referee mounts a root bwrap's scratch)."""
    base = cgroup_base()
    cpus, walls = [], []
    for i in range(n):
        group = BotCgroup.create(base, f"starts-cpu-{os.getpid()}-{i}", 4096)
        if group is None or not group.can_count_cpu:
            return float("nan"), float("nan")
        try:
            start = time.perf_counter()
            def preexec(group: BotCgroup = group) -> None:
                group.join()
                if before is not None:
                    before()
                if drop_uid is not None:
                    drop_privileges(drop_uid)

            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    env=env, preexec_fn=preexec)
            _out, err = proc.communicate(stdin, timeout=60)
            walls.append((time.perf_counter() - start) * 1000)
            if proc.returncode != 0:
                raise SystemExit(f"{argv[-3:]} failed: {err.decode(errors='replace')[-300:]}")
            cpus.append((group.cpu_ns() or 0) / 1e6)
        finally:
            group.kill()
    return statistics.median(cpus), statistics.median(walls)


def cpu_table(n: int) -> None:
    """Each piece of a start, the CPU of its whole tree (cgroup), outside and inside the sandbox."""
    if cgroup_base() is None:
        print("no cgroup here (not root, no writable cgroup tree): the CPU of a start's tree is not measured")
        return
    py = sys.executable
    bot = [py, str(RANDOM_BOT)]
    rows: dict[str, tuple[float, float]] = {}
    rows["true"] = tree_cpu([TRUE], n)
    rows["python3 -S -c pass (no site)"] = tree_cpu([py, "-S", "-c", "pass"], n)
    rows["python3 -c pass"] = tree_cpu([py, "-c", "pass"], n)
    rows["random bot: start, hello, ready, bye"] = tree_cpu(bot, n, HELLO)
    if shutil.which("bwrap"):
        uid = bot_uid("starts")
        userns = bwrap_userns()
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            env = sandbox_env(dict(os.environ))

            # as the referee starts a bot: where bwrap runs as root, the child mounts the scratch
            # (bounded in files) and setpriv alone is the wrapper (wrapped: the shell and mount of
            # the other way, measured beside it)
            at = scratch_mount_point() if not userns and os.geteuid() == 0 else None
            mount = scratch_mounter(at, 64, scratch_inodes(64)) if at else None
            at = at if mount is not None else None

            def boxed(words: list[str], scratch: str | None = at) -> list[str]:
                return bwrap_command(words, str(ROOT), own_dirs(bot, str(ROOT), None), 64, userns, uid, 64, scratch)

            plain = boxed([TRUE])
            cut = plain.index("--") + 1  # bwrap's own arguments end here; then the wrapper, then the command
            drop = uid if userns else None  # (else bwrap runs as root and setpriv drops the bot)
            rows["sandbox: bwrap, true"] = tree_cpu([*plain[:cut], TRUE], n, env=env, drop_uid=drop, before=mount)
            etc = list(etc_args())  # the one bind of the prepared copy of /etc's public files
            etc_at = next((i for i in range(cut) if plain[i:i + len(etc)] == etc), None)
            if etc and etc_at is not None:
                rows["sandbox: bwrap, true, /etc file by file"] = tree_cpu(
                    [*plain[:etc_at], *etc_binds(), *plain[etc_at + len(etc):cut], TRUE], n, env=env, drop_uid=drop,
                    before=mount)
            if at is not None:
                rows["sandbox: bwrap, the wrapper of a shell and mount, true"] = tree_cpu(
                    boxed([TRUE], None), n, env=env, drop_uid=drop)
            rows["sandbox: bwrap, its wrapper, true"] = tree_cpu(plain, n, env=env, drop_uid=drop, before=mount)
            rows["sandbox: python3 -c pass"] = tree_cpu(boxed([py, "-c", "pass"]), n, env=env, drop_uid=drop,
                                                        before=mount)
            rows["sandbox: random bot: start, hello, ready, bye"] = tree_cpu(boxed(bot), n, HELLO, env=env,
                                                                              drop_uid=drop, before=mount)
    print(f"\nCPU of each start's whole tree (cgroup cpuacct), median of {n}; load {os.getloadavg()[0]:.2f}; "
          f"bwrap {'in a user namespace of its own' if bwrap_userns() else 'as root, the bot dropped by setpriv'}")
    print(f"  {'':<46} {'CPU ms':>8} {'wall ms':>8}")
    for label, (cpu, wall) in rows.items():
        print(f"  {label:<46} {cpu:>8.1f} {wall:>8.1f}")
    c = {k: v[0] for k, v in rows.items()}
    print("a start's CPU, piece by piece (ms):")
    pieces = [("exec of a program (true)", c["true"]),
              ("the interpreter without site", c["python3 -S -c pass (no site)"] - c["true"]),
              ("site (the venv's .pth files)", c["python3 -c pass"] - c["python3 -S -c pass (no site)"]),
              ("the random bot's imports, hello, ready, bye", c["random bot: start, hello, ready, bye"]
               - c["python3 -c pass"])]
    if "sandbox: bwrap, true" in c:
        pieces += [("bwrap (namespaces, mounts)", c["sandbox: bwrap, true"] - c["true"]),
                   ("  /etc's public files bound one by one instead of one copy (saved)",
                    c.get("sandbox: bwrap, true, /etc file by file", c["sandbox: bwrap, true"]) - c["sandbox: bwrap, true"]),
                   ("the wrapper inside the sandbox (setpriv / prlimit; the child mounts the scratch)",
                    c["sandbox: bwrap, its wrapper, true"] - c["sandbox: bwrap, true"]),
                   ("  the other way's wrapper (sh, mount, setpriv) instead (saved)",
                    c.get("sandbox: bwrap, the wrapper of a shell and mount, true", c["sandbox: bwrap, its wrapper, true"])
                    - c["sandbox: bwrap, its wrapper, true"]),
                   ("the interpreter in the sandbox, beyond outside",
                    c["sandbox: python3 -c pass"] - c["sandbox: bwrap, its wrapper, true"] - c["python3 -c pass"]
                    + c["true"])]
        whole = c["sandbox: random bot: start, hello, ready, bye"]
    else:
        whole = c["random bot: start, hello, ready, bye"]
    for label, ms in pieces:
        print(f"  {label:<66} {ms:7.1f}")
    print(f"  {'the whole start of the random bot, its tree':<66} {whole:7.1f}  (plus the harness's own CPU: above)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=30, help="starts per row")
    parser.add_argument("--tiny", action="store_true", help="a run of seconds (CI checks the bench still works; "
                        "its figures mean nothing)")
    args = parser.parse_args()
    n = 3 if args.tiny else args.n
    rss = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; this process {rss} MB resident "
          f"(a league worker's modules); "
          f"median wall ms per start of {n}, CPU ms per start (children / this process)")
    base = cgroup_base()
    limits = ResourceLimits()
    uid = bot_uid("starts")
    rows: dict[str, tuple[float, float, float]] = {}
    rows["spawn: true (posix_spawn/vfork)"] = timed(lambda: run([TRUE]), n)
    rows["spawn: true (fork of this process)"] = timed(lambda: run([TRUE], preexec_fn=lambda: None), n)
    rows["spawn: true (fork + the referee's preexec)"] = timed(
        lambda: run([TRUE], preexec_fn=limit_setter(limits, None, uid)), n)
    import numpy  # noqa: F401
    import scipy.optimize  # noqa: F401

    rss_big = int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) // 1024
    rows[f"spawn: true (fork, numpy+scipy loaded: {rss_big} MB)"] = timed(
        lambda: run([TRUE], preexec_fn=lambda: None), n)
    count = iter(range(10**9))

    def cgroup() -> None:
        group = BotCgroup.create(base, f"starts-{os.getpid()}-{next(count)}", 4096)
        if group is not None:
            group.kill()

    rows["cgroup: make + remove"] = timed(cgroup, n) if base is not None else (0.0, 0.0, 0.0)
    if shutil.which("bwrap"):
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            argv = bwrap_command([TRUE], tmp, own_dirs([TRUE], tmp, tmp), 64, bwrap_userns(), uid)
            env = sandbox_env(dict(os.environ))
            rows["bwrap: true in the sandbox"] = timed(lambda: run(argv, env=env, cwd=tmp), n)
    rows["interpreter: python3 -c pass"] = timed(lambda: run([sys.executable, "-c", "pass"]), n)
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        log = StderrLog(tmp, "starts", 1 << 20)
        rows["whole start to ready + stop, no sandbox"] = timed(lambda: start_to_ready(limits, log), n)
        rows["  of which the stop (bye, kill the tree)"] = (statistics.median(STOPS), 0.0, 0.0)
        STOPS.clear()
        if shutil.which("bwrap"):
            boxed = ResourceLimits(sandbox="bwrap")
            rows["whole start to ready + stop, sandbox"] = timed(lambda: start_to_ready(boxed, log), n)
            rows["  of which the stop (bye, kill the tree) "] = (statistics.median(STOPS), 0.0, 0.0)
        log.close()
    print(f"  {'':<46} {'wall ms':>8} {'children CPU':>13} {'own CPU':>8}")
    for label, (wall, kids, own) in rows.items():
        print(f"  {label:<46} {wall:>8.1f} {kids:>13.1f} {own:>8.1f}")
    spawn = rows["spawn: true (posix_spawn/vfork)"][0]
    print("added by each piece (wall ms):")
    print(f"  fork of this process instead of spawn  {rows['spawn: true (fork of this process)'][0] - spawn:7.1f}")
    print(f"  the referee's preexec (cgroup-less)    {rows['spawn: true (fork + the referee' + chr(39) + 's preexec)'][0] - rows['spawn: true (fork of this process)'][0]:7.1f}")
    print(f"  a cgroup made and removed              {rows['cgroup: make + remove'][0]:7.1f}")
    if "bwrap: true in the sandbox" in rows:
        print(f"  bwrap                                  {rows['bwrap: true in the sandbox'][0] - spawn:7.1f}")
    print(f"  the Python interpreter                 {rows['interpreter: python3 -c pass'][0] - spawn:7.1f}")
    whole = rows["whole start to ready + stop, no sandbox"][0] - rows["  of which the stop (bye, kill the tree)"][0]
    print(f"  the bot's imports and hello -> ready   {whole - rows['interpreter: python3 -c pass'][0]:7.1f}  "
          f"(the whole start without the sandbox minus the interpreter: includes fork, cgroup, preexec)")
    cpu_table(n)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
