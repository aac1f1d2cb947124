#!/usr/bin/env python3
"""A league test bot: plays a random offered action, but misbehaves at some requests.

    python3 flaky_bot.py [--every N] [--kinds illegal,garbage,hang,exit]

At every N-th request (default 5) of a process it misbehaves in one of the kinds, picked by a
hash of the game id: answers an index that was not offered (illegal), a line that is not JSON
(malformed), nothing at all (timeout), or exits (crash). Stdlib only, like a real bot.
"""

import argparse
import json
import random
import sys
import time
import zlib


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--kinds", default="illegal,garbage,hang,exit")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    rng = random.Random(1)
    requests = 0
    game_id = ""
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            print(json.dumps({"type": "ready", "name": "flaky"}), flush=True)
        elif kind == "start":
            game_id = msg["game_id"]
        elif kind == "request":
            requests += 1
            if requests % args.every == 0:
                what = kinds[zlib.crc32(game_id.encode()) % len(kinds)]
                print(f"flaky: misbehaving ({what}) at request {msg['id']}", file=sys.stderr, flush=True)
                if what == "illegal":
                    print(json.dumps({"type": "action", "id": msg["id"], "index": len(msg["actions"]) + 7}),
                          flush=True)
                    continue
                if what == "garbage":
                    print("this is not json", flush=True)
                    continue
                if what == "hang":
                    time.sleep(3600)
                if what == "exit":
                    sys.exit(3)
            index = rng.randrange(len(msg["actions"]))
            print(json.dumps({"type": "action", "id": msg["id"], "index": index}), flush=True)
        elif kind == "bye":
            break


if __name__ == "__main__":
    main()
