#!/usr/bin/env python3
"""A contest test bot: plays a random offered action, and after its third finished game answers
one request with an index that is not offered (once), saying so on stderr first. Passes the
conformance games (two games at two seats), then commits one violation in the ladder."""

import json
import random
import sys

rng = random.Random(7)
results = 0
misbehaved = False
for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    kind = msg.get("type")
    if kind == "hello":
        print(json.dumps({"type": "ready", "name": "late-violator"}), flush=True)
    elif kind == "result":
        results += 1
    elif kind == "request":
        index = rng.randrange(len(msg["actions"]))
        if results >= 3 and not misbehaved:
            misbehaved = True
            print(f"late-violator: answering request {msg['id']} with index 999 on purpose", file=sys.stderr, flush=True)
            index = 999
        print(json.dumps({"type": "action", "id": msg["id"], "index": index}), flush=True)
    elif kind == "bye":
        break
