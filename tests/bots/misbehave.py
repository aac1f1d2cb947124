#!/usr/bin/env python3
"""A test bot that plays correctly (seeded random, by index) until a chosen request, then misbehaves.

    python3 tests/bots/misbehave.py MODE [--at N] [--times K] [--once] [--pidfile FILE] [--marker TEXT]

``--at N``: misbehave at the N-th request this process receives (1-based, default 2).
``--times K``: misbehave at K consecutive requests from there (default 1; modes whose
misbehaviour ends the process only ever misbehave once). ``--once``: misbehave only if no
process of this pid file misbehaved before (so a restarted bot plays correctly). ``--pidfile`` appends
``<pid> <role>`` lines (roles: start, bad, grandchild) so a test can check that
every process it started is gone. ``--marker`` is ignored: it only tags the
command line so a test can find stray processes in /proc.

Modes (the violation kind a referee should record is in brackets):
  ok          never misbehaves                                             [none]
  hang        stops answering, sleeps forever                              [timeout]
  slow        computes --delay-ms, then answers correctly                   [timeout past move_ms + bank]
  garbage     answers a line that is not JSON                              [malformed]
  shape       answers JSON of the wrong shape (no action, no index)        [malformed]
  illegal     answers an action that was not offered                       [illegal]
  badindex    answers an index past the end of the offered list            [illegal]
  bigline     writes a 100 MB line without a newline, then sleeps          [oversize]
  longline    writes a 2 MiB line with its newline, then plays on          [oversize]
  notobject   answers valid JSON that is not an object (a list)            [malformed]
  stderr      writes 50 MB to stderr, then answers correctly               [none: stderr is only logged, capped]
  exit        exits with status 3                                          [crash]
  closeout    closes its stdout and keeps running                          [crash]
  fork        forks a grandchild that keeps the pipes open forever, exits  [crash]
  forksetsid  the same, and the grandchild setsid()s out of the group      [crash]
  escape      the same, and the grandchild also execs with an empty environment   [crash]
  daemon      double-forks a daemon (setsid, no pipes, empty environment), exits  [crash]
  forkplay    at start forks a setsid() grandchild holding the pipes, plays on correctly [none]
  deep        answers JSON nested 100,000 deep                             [malformed]
  badutf8     answers a line that is not UTF-8                             [malformed]
  wrongid     answers with the wrong request id                            [protocol]
  early       answers, then at once sends a second line nobody asked for   [protocol]
  noready     answers hello with something that is not ready               [protocol]
  mute        never answers hello                                          [timeout]
  memory      allocates (and touches) memory until it fails, up to 4 GiB   [crash]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

MODES = ("ok hang slow garbage shape notobject illegal badindex bigline longline stderr exit closeout fork forksetsid escape daemon forkplay "
         "deep badutf8 wrongid early noready mute memory").split()


def host_pid() -> int:
    """This process's pid as the harness sees it, even inside a PID namespace.

    ``/proc/self`` resolves in the namespace of the /proc mount: under ``unshare --pid`` (no new
    /proc) that is the harness's, so a test can find us; under bwrap's own /proc it is the
    sandbox's (tests of the sandbox find processes by marker instead).
    """
    try:
        return int(os.readlink("/proc/self"))
    except (OSError, ValueError):
        return os.getpid()


def note(pidfile: str | None, role: str, pid: int | None = None) -> None:
    """Record a pid and its role in the pid file; in a sandbox, where the bot's directory is
    read-only, on stderr instead (``PIDNOTE <pidfile> <pid> <role>``: the test reads the log)."""
    if pidfile:
        try:
            with open(pidfile, "a") as f:
                f.write(f"{pid or host_pid()} {role}\n")
        except OSError:
            sys.stderr.write(f"PIDNOTE {pidfile} {pid or host_pid()} {role}\n")
            sys.stderr.flush()


def sleep_forever() -> None:
    while True:
        time.sleep(3600)


def spawn_grandchild(pidfile: str | None, setsid: bool, scrub_env: list[str] | None = None,
                     daemon: bool = False) -> None:
    """Fork a grandchild that keeps stdin/stdout/stderr open and never exits.

    With ``scrub_env`` (extra argv, e.g. the marker) the grandchild then execs a fresh Python
    sleeping forever with an empty environment: nothing inherited marks it as the bot's.
    With ``daemon`` it is a classic daemon instead: double fork, ``setsid``, stdin/stdout/stderr
    replaced by /dev/null (so it holds none of the bot's pipes), then the same scrubbed exec.
    The grandchild sends its pid back once it is set up, so the parent goes on only then (no
    race) and records it before answering again.
    """
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        if setsid:
            os.setsid()
        if daemon:
            if os.fork() != 0:
                os._exit(0)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(null)
        if scrub_env is not None:
            # the exec closes nothing: stdin/stdout/stderr stay the bot's pipes (unless daemon)
            os.set_inheritable(ready_w, True)
            code = (f"import os,time\nos.write({ready_w}, os.readlink('/proc/self').encode() + b'\\n')\n"
                    f"os.close({ready_w})\nwhile True: time.sleep(3600)")
            os.execve(sys.executable, [sys.executable, "-c", code, *scrub_env], {})
        os.write(ready_w, f"{host_pid()}\n".encode())
        sleep_forever()
    os.close(ready_w)
    with os.fdopen(ready_r) as f:
        pid = int(f.readline())
    note(pidfile, "grandchild", pid)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--at", type=int, default=2)
    parser.add_argument("--times", type=int, default=1)
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--delay-ms", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pidfile")
    parser.add_argument("--marker")
    args = parser.parse_args()
    mode = args.mode
    rng = random.Random(args.seed)
    out = sys.stdout.buffer
    if args.once and args.pidfile and os.path.exists(args.pidfile):
        with open(args.pidfile) as f:
            if any(line.split()[1] == "bad" for line in f if line.strip()):
                mode = "ok"
    note(args.pidfile, "start")

    def send(data: bytes) -> None:
        out.write(data)
        out.flush()

    def send_json(obj: object) -> None:
        send(json.dumps(obj).encode() + b"\n")

    requests = 0
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        msg = json.loads(raw)
        kind = msg.get("type")
        if kind == "hello":
            if mode == "mute":
                note(args.pidfile, "bad")
                sleep_forever()
            if mode == "noready":
                note(args.pidfile, "bad")
                send_json({"type": "hi", "name": "misbehave-noready"})
            else:
                send_json({"type": "ready", "name": f"misbehave-{mode}"})
            if mode == "forkplay":
                spawn_grandchild(args.pidfile, setsid=True)
            continue
        if kind == "bye":
            return 0
        if kind != "request":
            continue
        requests += 1
        rid, actions = msg["id"], msg["actions"]
        good = {"type": "action", "id": rid, "index": rng.randrange(len(actions))}
        if not args.at <= requests < args.at + args.times or mode in ("ok", "forkplay", "noready", "mute"):
            send_json(good)
            continue
        note(args.pidfile, "bad")
        if mode == "hang":
            sleep_forever()
        elif mode == "slow":  # computing: deadlines count CPU time where the harness freezes bots
            end = time.process_time() + args.delay_ms / 1000
            while time.process_time() < end:
                pass
            send_json(good)
        elif mode == "garbage":
            send(b"this is not json {\n")
        elif mode == "notobject":
            send_json(["action", rid, 0])
        elif mode == "longline":
            send(json.dumps({"type": "action", "id": rid, "index": 0, "pad": "y" * (2 << 20)}).encode() + b"\n")
        elif mode == "shape":
            send_json({"type": "action", "id": rid})
        elif mode == "illegal":
            send_json({"type": "action", "id": rid, "action": {"type": "no-such-action", "x": 12345}})
        elif mode == "badindex":
            send_json({"type": "action", "id": rid, "index": len(actions)})
        elif mode == "bigline":
            chunk = b"x" * (1 << 20)
            for _ in range(100):
                out.write(chunk)
            out.flush()
            sleep_forever()
        elif mode == "stderr":
            err = sys.stderr.buffer
            chunk = (b"flood " * 170 + b"\n") * 1024  # ~1 MiB
            for _ in range(50):
                err.write(chunk)
            err.flush()
            send_json(good)
        elif mode == "exit":
            os._exit(3)
        elif mode == "closeout":
            out.close()
            os.close(1)
            sleep_forever()
        elif mode in ("fork", "forksetsid", "escape", "daemon"):
            spawn_grandchild(args.pidfile, setsid=mode != "fork", daemon=mode == "daemon",
                             scrub_env=["--marker", args.marker or ""] if mode in ("escape", "daemon") else None)
            os._exit(0)
        elif mode == "deep":
            depth = 100_000
            send(b'{"type":"action","id":%d,"action":' % rid + b"[" * depth + b"]" * depth + b"}\n")
        elif mode == "badutf8":
            send(b'{"type":"action","id":%d,"index":0,"note":"\xff\xfe\xc3"}\n' % rid)
        elif mode == "wrongid":
            send_json({"type": "action", "id": rid + 1000, "index": 0})
        elif mode == "early":
            send_json(good)
            send_json({"type": "action", "id": rid + 1, "index": 0})
        elif mode == "memory":
            hoard = []
            for _ in range(256):  # 256 x 16 MiB = 4 GiB, every page touched
                hoard.append(b"\x01" * (16 << 20))
            sleep_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
