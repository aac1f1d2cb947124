"""A bot that plays at two-player tables and exits at larger ones (a bug only a 3-seat game shows)."""

import json
import sys

for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("players", 2) > 2:
        sys.exit(3)
    if msg["type"] == "hello":
        print(json.dumps({"type": "ready", "name": "two-only"}), flush=True)
    elif msg["type"] == "request":
        print(json.dumps({"type": "action", "id": msg["id"], "index": 0}), flush=True)
    elif msg["type"] == "bye":
        break
