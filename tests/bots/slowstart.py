#!/usr/bin/env python3
"""A test bot that misbehaves at start-up only, then (if it ever starts) plays by index 0.

    python3 tests/bots/slowstart.py KIND [--late-ms MS] [--marker TEXT]

Kinds: ``mute`` never answers hello; ``garbage`` answers hello with a line that is not JSON;
``forks`` forks 300 children that sleep, then never answers; ``flood`` writes 20 MB to stderr
and never answers; ``late`` answers ready after ``--late-ms`` (past init_ms). ``--marker`` only
tags the command line so a test can find stray processes.
"""

import json
import os
import sys
import time


def main() -> None:
    kind = sys.argv[1]
    late_ms = int(sys.argv[sys.argv.index("--late-ms") + 1]) if "--late-ms" in sys.argv else 2500
    sys.stdin.readline()  # hello
    if kind == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
    elif kind == "forks":
        for _ in range(300):
            try:
                if os.fork() == 0:
                    time.sleep(120)
                    os._exit(0)
            except OSError:
                break
    elif kind == "flood":
        chunk = b"x" * 65536 + b"\n"
        for _ in range(320):
            os.write(2, chunk)
    elif kind == "late":
        time.sleep(late_ms / 1000)
        sys.stdout.write(json.dumps({"type": "ready", "name": "late"}) + "\n")
        sys.stdout.flush()
        for line in sys.stdin:
            msg = json.loads(line)
            if msg["type"] == "request":
                sys.stdout.write(json.dumps({"type": "action", "id": msg["id"], "index": 0}) + "\n")
                sys.stdout.flush()
            elif msg["type"] == "bye":
                return
        return
    time.sleep(120)


if __name__ == "__main__":
    main()
