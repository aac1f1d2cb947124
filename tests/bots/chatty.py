#!/usr/bin/env python3
"""A test bot that plays a seeded random offered action and writes two stderr lines per request
(the request id and its choice, and a line of markup that a page must show as text)."""

from __future__ import annotations

import json
import random
import sys


def main() -> int:
    rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    for line in sys.stdin:
        msg = json.loads(line) if line.strip() else {}
        if msg.get("type") == "hello":
            print(json.dumps({"type": "ready", "name": "chatty"}), flush=True)
        elif msg.get("type") == "request":
            index = rng.randrange(len(msg["actions"]))
            sys.stderr.write(f"request {msg['id']}: choosing {index} of {len(msg['actions'])}\n"
                             f"<b onmouseover=window.pwned=1>thinking</b>\n")
            sys.stderr.flush()
            print(json.dumps({"type": "action", "id": msg["id"], "index": index}), flush=True)
        elif msg.get("type") == "bye":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
