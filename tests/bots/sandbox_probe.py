#!/usr/bin/env python3
"""A test bot that probes its sandbox at start-up, then plays random legal actions by index.

    python3 tests/bots/sandbox_probe.py --port PORT --outside FILE [--read NAME=FILE ...] [--marker TEXT]

Before answering hello it tries (1) to open a TCP connection to 127.0.0.1:PORT, (2) to create
FILE (a path outside its working directory), (3) to create a file in its working directory,
(4) to create a file in /tmp (its scratch) and (5) to read each ``--read`` file. It reports each
outcome as ``PROBE net=... outside=... inside=... scratch=... NAME=...`` on stderr and in the
name it sends with ready, each value being ``ok`` or ``blocked``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import sys


def try_connect(port: int) -> str:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return "ok"
    except OSError:
        return "blocked"


def try_write(path: str) -> str:
    try:
        with open(path, "w") as f:
            f.write("written by sandbox_probe\n")
        return "ok"
    except OSError:
        return "blocked"


def try_read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.read(16)
        return "ok"
    except OSError:
        return "blocked"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--outside", required=True)
    parser.add_argument("--read", action="append", default=[])
    parser.add_argument("--marker")
    args = parser.parse_args()
    result = {"net": try_connect(args.port), "outside": try_write(args.outside),
              "inside": try_write(os.path.join(os.getcwd(), "probe-inside.txt")),
              "scratch": try_write(os.path.join("/tmp", f"probe-scratch-{os.getpid()}.txt"))}
    for item in args.read:
        name, _, path = item.partition("=")
        result[name] = try_read(path)
    summary = ",".join(f"{k}={v}" for k, v in result.items())
    sys.stderr.write(f"PROBE {summary.replace(',', ' ')}\n")
    sys.stderr.flush()
    rng = random.Random(0)
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if msg["type"] == "hello":
            reply = {"type": "ready", "name": f"probe:{summary}"}
        elif msg["type"] == "request":
            reply = {"type": "action", "id": msg["id"], "index": rng.randrange(len(msg["actions"]))}
        elif msg["type"] == "bye":
            return 0
        else:
            continue
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
