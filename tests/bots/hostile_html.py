#!/usr/bin/env python3
"""A test bot that tries to run script in the HTML report: markup in its ready name, its stderr
and its answers (an illegal action whose fields are markup), then plays by index."""

import json
import sys

PAYLOAD = '<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>'
sys.stderr.write("stderr " + PAYLOAD + "\n")
sys.stderr.flush()
asked = 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "hello":
        print(json.dumps({"type": "ready", "name": PAYLOAD}), flush=True)
    elif msg["type"] == "request":
        asked += 1
        if asked % 5 == 3:
            answer = {"type": "action", "id": msg["id"], "action": {"type": "play", "cards": [PAYLOAD]}}
        else:
            answer = {"type": "action", "id": msg["id"], "index": 0}
        print(json.dumps(answer), flush=True)
    elif msg["type"] == "bye":
        break
