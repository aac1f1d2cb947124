#!/usr/bin/env python3
"""Reference random bot for every tablebots game (protocol v1, stdlib only).

Answers ``hello`` with ``ready`` and every ``request`` with a uniformly random
offered action, by index. Exits on ``bye`` or end of input.

    python3 bots/random_bot.py [--seed N] [--name NAME]
"""

from __future__ import annotations

import argparse
import json
import random
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description="Plays a uniformly random legal action.")
    parser.add_argument("--seed", type=int, default=None, help="seed of the bot's own RNG (default: random)")
    parser.add_argument("--name", default="random-py", help="name sent in the ready message")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            out.write(json.dumps({"type": "ready", "name": args.name}) + "\n")
            out.flush()
        elif kind == "request":
            index = rng.randrange(len(msg["actions"]))
            out.write(json.dumps({"type": "action", "id": msg["id"], "index": index}) + "\n")
            out.flush()
        elif kind == "bye":
            break
        # start and result need no answer
    return 0


if __name__ == "__main__":
    sys.exit(main())
