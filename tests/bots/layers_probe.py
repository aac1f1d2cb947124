#!/usr/bin/env python3
"""A test bot that measures one layer of a defence from inside, and plays index 0.

    python3 tests/bots/layers_probe.py MODE [--ms N]

Every finding is one stderr line ``LAYERS <what> key=value ...`` (times are
``time.monotonic()`` seconds, the same clock in every process of the machine). Modes:

- ``frozen``: a thread spins from start-up on, noting every stretch of wall-clock time it did
  not run (a gap over 5 ms); at its ``ready`` and at each answer it notes the moment and its
  process CPU time, and at the next message it reads says ``window a=.. r=.. cpu_ms=..`` (what
  it used meanwhile) and the gaps seen so far (``gaps=start:end,...``, those that ended after its answer). A frozen bot's spinner
  sees nothing of an opponent's turn.
- ``turns --ms N``: at each request says ``turn o1=.. o2=..`` around a sleep of N ms (the
  opponent's turn, which a frozen bot must not see any of).
- ``privs``: at hello, tries to become root again (``setuid(0)``, ``setresuid(0,0,0)``,
  ``setgid(0)``, ``setgroups([0])``) and says what each did and what it holds: real, effective
  and saved uids and gids, its groups, and the ``CapEff``/``CapPrm``/``CapBnd``/``CapInh``/
  ``CapAmb``/``NoNewPrivs`` lines of ``/proc/self/status``.
- ``starve --cgroup DIR``: at hello, moves itself into the cgroup ``DIR`` (the test made it,
  with a CPU quota of a few per cent, and let any user join it); at a request, spins forever:
  a bot always runnable, yet starved of CPU whatever the load.
- ``sandbox``: at hello, says which namespaces it is in (``ns_net=net:[inode]`` ..., to compare
  with the harness's own) and how each of ``/``, ``/proc/sys``, ``/dev``, ``/tmp`` and its own
  directory is mounted as it sees them (``mnt_tmp=ro|rw,fstype,size``; ``absent`` if not a mount).
- ``forks --n N``: at hello, forks up to N children that wait, then says how many it made and
  the errno of the first fork refused (``forked=K refused=11``, or ``refused=-``); the children
  end before it answers ``ready``.
- ``read --root DIR``: at each request, walks ``DIR`` and tries to open every file it finds for
  reading; says ``readable=a,b`` (paths relative to ``DIR``, or ``-``) and ``denied=N``.
- ``plain``: only plays.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time


def say(what: str, **facts: object) -> None:
    sys.stderr.write(f"LAYERS {what} " + " ".join(f"{k}={v}" for k, v in facts.items()) + "\n")
    sys.stderr.flush()


class Spinner:
    """A thread that spins and notes the stretches of wall-clock time in which it did not run."""

    GAP = 0.005

    def __init__(self) -> None:
        self.gaps: list[tuple[float, float]] = []
        self.last = time.monotonic()  # the last moment it ran
        self.lock = threading.Lock()
        threading.Thread(target=self.spin, daemon=True).start()

    def spin(self) -> None:
        while True:
            now = time.monotonic()
            if now - self.last > self.GAP:
                with self.lock:
                    self.gaps.append((self.last, now))
            self.last = now

    def report(self, since: float, now: float) -> str:
        """The gaps that ended after ``since``, and the one still going on at ``now`` if the
        spinner has not run since (on a busy machine it may not have run again yet)."""
        with self.lock:
            gaps = [(a, b) for a, b in self.gaps if b > since]
            if now - self.last > self.GAP:
                gaps.append((self.last, now))
        return ",".join(f"{a:.6f}:{b:.6f}" for a, b in gaps) or "-"


def privileges() -> None:
    facts: dict[str, object] = {}
    for name, attempt in (("setuid", lambda: os.setuid(0)), ("setresuid", lambda: os.setresuid(0, 0, 0)),
                          ("setgid", lambda: os.setgid(0)), ("setresgid", lambda: os.setresgid(0, 0, 0)),
                          ("setgroups", lambda: os.setgroups([0]))):
        try:
            attempt()
            facts[name] = "OK"
        except OSError as exc:
            facts[name] = f"blocked({exc.errno})"
    facts["resuid"] = ",".join(map(str, os.getresuid()))
    facts["resgid"] = ",".join(map(str, os.getresgid()))
    facts["groups"] = ",".join(map(str, os.getgroups())) or "-"
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("CapEff", "CapPrm", "CapBnd", "CapInh", "CapAmb", "NoNewPrivs"):
                facts[key] = value.strip()
    say("privs", **facts)


def starve_in(cgroup: str) -> None:
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
        fh.write(str(os.getpid()))
    with open("/proc/self/cgroup") as fh:
        say("starve", cgroup=[line.strip() for line in fh if ":cpu:" in line or ":cpu," in line][0])


NAMESPACES = ("net", "ipc", "pid", "uts", "mnt", "cgroup", "user")


def sandbox_facts() -> None:
    facts: dict[str, object] = {}
    for ns in NAMESPACES:
        try:
            facts[f"ns_{ns}"] = os.readlink(f"/proc/self/ns/{ns}")
        except OSError as exc:
            facts[f"ns_{ns}"] = f"unreadable({exc.errno})"
    mounts: dict[str, str] = {}
    with open("/proc/self/mountinfo") as fh:
        for line in fh:  # a later mount on the same point hides an earlier one: the last one counts
            fields = line.split()
            dash = fields.index("-")
            point, options = fields[4], fields[5].split(",")
            fstype, extra = fields[dash + 1], fields[dash + 3].split(",")
            size = next((o for o in extra if o.startswith("size=")), "size=-")
            mounts[point] = f"{'ro' if 'ro' in options else 'rw'},{fstype},{size}"
    for key, point in (("root", "/"), ("proc_sys", "/proc/sys"), ("dev", "/dev"), ("tmp", "/tmp"),
                       ("cwd", os.getcwd())):
        facts[f"mnt_{key}"] = mounts.get(point, "absent")
    say("sandbox", **facts)


def fork_many(n: int) -> None:
    children: list[int] = []
    refused: object = "-"
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError as exc:
            refused = exc.errno
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    say("forks", forked=len(children), refused=refused)


def read_all(root: str) -> None:
    readable, denied = [], 0
    for here, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(here, name)
            try:
                with open(path, "rb") as fh:
                    fh.read(16)
                readable.append(os.path.relpath(path, root))
            except OSError:
                denied += 1
    say("read", readable=",".join(sorted(readable)) or "-", denied=denied)


def main() -> int:
    mode = sys.argv[1]
    ms = float(sys.argv[sys.argv.index("--ms") + 1]) if "--ms" in sys.argv else 0.0
    spinner = Spinner() if mode == "frozen" else None
    mark: tuple[float, float] | None = None  # (moment, process CPU time) of its last ready or answer
    for line in sys.stdin:
        # CPU time read before the moment, and after it at the mark: the difference never counts
        # CPU time used outside the window, even if this thread is preempted between the reads
        cpu = time.process_time()
        now = time.monotonic()
        msg = json.loads(line)
        kind = msg["type"]
        if spinner is not None and mark is not None:
            say("window", a=f"{mark[0]:.6f}", r=f"{now:.6f}", cpu_ms=f"{(cpu - mark[1]) * 1000:.3f}",
                gaps=spinner.report(mark[0], now))
            mark = None
        if kind == "hello":
            if mode == "privs":
                privileges()
            elif mode == "forks":
                fork_many(int(sys.argv[sys.argv.index("--n") + 1]))
            elif mode == "sandbox":
                sandbox_facts()
            elif mode == "starve":
                starve_in(sys.argv[sys.argv.index("--cgroup") + 1])
            answer = {"type": "ready", "name": f"probe-{mode}"}
        elif kind == "request":
            if mode == "read":
                read_all(sys.argv[sys.argv.index("--root") + 1])
            if mode == "turns":
                o1 = time.monotonic()
                time.sleep(ms / 1000)
                say("turn", o1=f"{o1:.6f}", o2=f"{time.monotonic():.6f}")
            while mode == "starve":
                pass
            answer = {"type": "action", "id": msg["id"], "index": 0}
        elif kind == "bye":
            break
        else:
            continue
        if spinner is not None:
            mark = (time.monotonic(), time.process_time())
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
