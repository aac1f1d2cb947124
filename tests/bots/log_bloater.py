#!/usr/bin/env python3
"""A test bot that plays random legal moves and tries to fill the league's disk through its logs.

    python3 tests/bots/log_bloater.py [--pad-kib N] [--stderr-bytes N] [--violate-in-seat S]

- ``--pad-kib N``: every answer carries an unknown field of N KiB (the referee ignores unknown
  fields; the log used to keep them);
- ``--stderr-bytes N``: write N random (incompressible) bytes to stderr, hex, while deciding;
- ``--violate-in-seat S``: in every game where it sits in seat S (-1: in every game), answer its
  3rd request with an index out of range (an ``illegal`` violation).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pad-kib", type=int, default=0)
    parser.add_argument("--stderr-bytes", type=int, default=0)
    parser.add_argument("--violate-in-seat", type=int, default=None)
    args = parser.parse_args()
    pad = "x" * (args.pad_kib * 1024)
    rng = random.Random(7)
    seat = -1
    asked = 0
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            print(json.dumps({"type": "ready", "name": "bloater"}), flush=True)
        elif kind == "start":
            seat = msg["seat"]
            asked = 0
        elif kind == "request":
            asked += 1
            if args.stderr_bytes:
                sys.stderr.write(os.urandom(args.stderr_bytes // 2).hex() + "\n")
                sys.stderr.flush()
            index = rng.randrange(len(msg["actions"]))
            if args.violate_in_seat in (-1, seat) and asked == 3:
                index = len(msg["actions"]) + 5
            answer: dict = {"type": "action", "id": msg["id"], "index": index}
            if pad:
                answer["pad"] = pad
            print(json.dumps(answer), flush=True)
        elif kind == "bye":
            break


if __name__ == "__main__":
    main()
