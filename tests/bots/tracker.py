#!/usr/bin/env python3
"""A Crisps bot with a bug that only shows late in a game: the kind replays must reproduce.

It tracks the cards played in the current game from the events it is sent. Once it has seen
six or more cards played, it "knows" the Queens are gone and leads five Queens: an illegal
play. With ``--fixed`` it answers a legal action (the first offered) instead.
"""

import json
import sys

FIXED = "--fixed" in sys.argv
seen = 0
for line in sys.stdin:
    msg = json.loads(line)
    kind = msg["type"]
    if kind == "hello":
        print(json.dumps({"type": "ready", "name": "tracker-fixed" if FIXED else "tracker"}), flush=True)
    elif kind == "start":
        seen = 0
    elif kind == "request":
        seen += sum(len(e.get("cards", [])) for e in msg["events"] if e.get("type") == "play")
        if seen >= 6 and not FIXED:
            sys.stderr.write(f"tracker: {seen} cards seen, leading the Queens\n")
            sys.stderr.flush()
            answer = {"type": "action", "id": msg["id"], "action": {"type": "play", "cards": ["Q"] * 5}}
        else:
            answer = {"type": "action", "id": msg["id"], "index": 0}
        print(json.dumps(answer), flush=True)
    elif kind == "bye":
        break
