#!/usr/bin/env python3
"""A test bot that takes a chosen time to start and to answer each request (clock tests).

    python3 tests/bots/timed.py [--ready-ms N] [--delays MS,MS,...] [--burn] [--blank-after N] [--log FILE]

``--ready-ms``: sleep this long after ``hello`` before sending ``ready`` (default 0).
``--delays``: sleep before answering the 1st, 2nd, ... request; requests past the list answer at
once; the count is kept in ``requests.count`` in the working directory, so a process the
referee restarts goes on down the list rather than starting it again. ``--burn``: spend each
delay computing (CPU time, what deadlines count where the harness can freeze bots) instead of
sleeping. ``--blank-after N``: after answering the N-th request, also write an empty line nobody
asked for (in the same write as the answer, so that it has arrived before the next request). ``--log``: append one JSON line per request received: its id and ``time_left_ms``.
Answers are the first offered action, by index.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ready-ms", type=int, default=0)
    parser.add_argument("--delays", default="")
    parser.add_argument("--blank-after", type=int, default=0)
    parser.add_argument("--log", default=None)
    parser.add_argument("--burn", action="store_true")
    args = parser.parse_args()
    delays = [int(d) for d in args.delays.split(",") if d]
    counter = Path("requests.count")
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            time.sleep(args.ready_ms / 1000)
            print(json.dumps({"type": "ready", "name": "timed"}), flush=True)
        elif kind == "request":
            requests = int(counter.read_text() or 0) + 1 if counter.exists() else 1
            counter.write_text(str(requests))
            if args.log:
                with open(args.log, "a") as f:
                    f.write(json.dumps({"id": msg["id"], "time_left_ms": msg["time_left_ms"]}) + "\n")
            if requests <= len(delays):
                if args.burn:
                    end = time.process_time() + delays[requests - 1] / 1000
                    while time.process_time() < end:
                        pass
                else:
                    time.sleep(delays[requests - 1] / 1000)
            answer = json.dumps({"type": "action", "id": msg["id"], "index": 0})
            if args.blank_after and requests == args.blank_after:
                answer += "\n"  # in the same write: it is there before the referee's next request
            sys.stdout.write(answer + "\n")  # one call: one write(2) even under PYTHONUNBUFFERED
            sys.stdout.flush()
        elif kind == "bye":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
