"""What each measure of "kept from running" charges a bot, side by side (harness/play/cpuclock.py).

A bot is charged the wall time of its turn minus the time it was kept from running (runnable,
waiting for a CPU); never less than its CPU time. Two measures of the time kept from running:

- ``sum`` and ``bound``: the kernel's per-thread run delay (``/proc/<tid>/schedstat``, 2nd
  field) summed over the bot's threads, and the lower bound the harness charges with
  (:func:`harness.play.cpuclock.kept_bound`: max over threads of run + wait, less the CPU time);
- ``pressure``: the cgroup v2 ``cpu.pressure`` ``full`` total of the bot's cgroup: the time every
  non-idle thread of the bot was waiting for a CPU at once (exact by definition).

Each scenario runs a "bot" process for about ``--seconds`` of wall time in a cgroup v2 group
(a cgroup2 file system is mounted at a temporary directory where none is, as root) beside
``--hogs`` spinning processes, and prints wall, CPU, both measures and what each would charge.
A measure is honest when it never charges less than the CPU time and never gives a sleeper its
sleep; the plain sum gives a many-threaded bot more than the wall time. Run as root:

    python3 bench/kept_time.py --seconds 1 --hogs 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from harness.play.cpuclock import kept_bound

SCENARIOS = {
    "1 thread spins": "spin 1",
    "4 threads spin": "spin 4",
    "1 thread sleeps": "sleep",
    "1 sleeps, 1 spins": "mixed",
}

BOT = r"""
import sys, threading, time
kind, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1
end = time.monotonic() + float(sys.argv[3])
def spin():
    while time.monotonic() < end:
        pass
if kind == "spin":
    ts = [threading.Thread(target=spin) for _ in range(n)]
    [t.start() for t in ts]; [t.join() for t in ts]
elif kind == "sleep":
    time.sleep(end - time.monotonic())
else:
    t = threading.Thread(target=spin); t.start(); time.sleep(end - time.monotonic()); t.join()
"""


def _full_us(group: str) -> int:
    with open(os.path.join(group, "cpu.pressure")) as fh:
        for line in fh:
            if line.startswith("full"):
                return int(line.split("total=")[1])
    return 0


def _usage_us(group: str) -> int:
    with open(os.path.join(group, "cpu.stat")) as fh:
        for line in fh:
            if line.startswith("usage_usec"):
                return int(line.split()[1])
    return 0


def _wait_ns(pid: int, seen: dict[int, tuple[int, int]]) -> None:
    """Record the latest (run, run delay) of every thread of ``pid`` into ``seen`` (tid -> ns)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as fh:
                run, wait = fh.read().split()[:2]
                seen[int(tid)] = (int(run), int(wait))
        except (OSError, IndexError, ValueError):
            pass


def run(scenario: str, seconds: float, group: str) -> dict[str, float]:
    kind, _, n = scenario.partition(" ")
    usage0, full0 = _usage_us(group), _full_us(group)
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", BOT, kind, n or "1", str(seconds)])
    with open(os.path.join(group, "cgroup.procs"), "w") as fh:
        fh.write(str(proc.pid))
    waits: dict[int, tuple[int, int]] = {}
    while proc.poll() is None:  # threads' delays read while they live (an exited thread's is gone)
        _wait_ns(proc.pid, waits)
        time.sleep(0.01)
    wall = time.monotonic() - start
    cpu = (_usage_us(group) - usage0) / 1e6
    full = (_full_us(group) - full0) / 1e6
    cpu = max(cpu, sum(r for r, _ in waits.values()) / 1e9)  # (the threads' own run times, where larger)
    wait = sum(w for _, w in waits.values()) / 1e9
    bound = kept_bound(list(waits.values()), cpu * 1e9) / 1e9
    return {"wall": wall, "cpu": cpu, "schedstat": wait, "bound": bound, "pressure": full,
            "charge_bound": max(cpu, wall - bound), "charge_pressure": max(cpu, wall - full)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--hogs", type=int, default=3, help="spinning processes beside the bot (host load)")
    parser.add_argument("--tiny", action="store_true", help="0.1 s a scenario, one hog (does it still run?)")
    args = parser.parse_args()
    if args.tiny:
        args.seconds, args.hogs = 0.1, 1
    if os.geteuid() != 0:
        print("needs root (it mounts a cgroup2 file system to read cpu.pressure): nothing measured")
        return
    mount = tempfile.mkdtemp(prefix="kept-cg2-")
    if subprocess.run(["mount", "-t", "cgroup2", "none", mount], capture_output=True).returncode != 0:
        os.rmdir(mount)
        print("cannot mount a cgroup2 file system here: nothing measured")
        return
    group = os.path.join(mount, f"kept-{os.getpid()}")
    os.mkdir(group)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    try:
        print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {args.hogs} hogs; seconds:")
        print(f"{'scenario':20} {'wall':>6} {'cpu':>6} {'sum':>6} {'bound':>6} {'press':>6} {'chg(b)':>7} {'chg(p)':>7}")
        for name, scenario in SCENARIOS.items():
            r = run(scenario, args.seconds, group)
            print(f"{name:20} {r['wall']:6.2f} {r['cpu']:6.2f} {r['schedstat']:6.2f} {r['bound']:6.2f} "
                  f"{r['pressure']:6.2f} {r['charge_bound']:7.2f} {r['charge_pressure']:7.2f}")
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        time.sleep(0.1)
        os.rmdir(group)
        subprocess.run(["umount", mount], check=False)
        os.rmdir(mount)


if __name__ == "__main__":
    main()
