#!/usr/bin/env python3
"""Reference greedy bot for Epizodiak (protocol v1, stdlib only, no ``import harness``).

It scores every offered action with a one-move heuristic and plays the best: empty the hand
when possible, contest (a free set and four tiles out of the opponents' hands), discard sets,
pick up a tile that completes a set, place long runs without breaking pairs or sets, and draw
only when nothing else is worth doing. Observation and action formats: docs/rules/epizodiak.md.

    python3 bots/epizodiak_greedy.py [--name NAME]
"""

from __future__ import annotations

import json
import sys
from collections import Counter

TYPE_CHECKING = False
if TYPE_CHECKING:  # (annotations only: importing typing costs every start ~5 ms)
    from typing import Any


def score_action(observation: dict[str, Any], action: dict[str, Any]) -> float:
    """Heuristic value of one offered action (higher is better)."""
    hand = Counter(observation.get("hand", []))
    size = sum(hand.values())
    kind = action.get("type")
    if kind == "place":
        tiles = action["tiles"]
        if len(tiles) >= size:
            return 1000.0  # empties the hand: the round is won
        value = 10.0 * len(tiles)
        singles = set(observation.get("singles", []))
        for t in tiles:
            if t in singles:
                value += 5.0   # a single tile can never join a set: get rid of it
            elif hand[t] >= 3:
                value -= 40.0  # would break a set that could be discarded for a point
            elif hand[t] == 2:
                value -= 6.0   # would break a pair (a set in the making)
        return value
    if kind == "discard":
        return 1000.0 if size == 3 else 60.0
    if kind == "contest":
        return 70.0
    if kind == "pickup":
        laid = observation.get("last_laid") or {}
        return 45.0 if hand[laid.get("value")] >= 2 else 3.0
    if kind == "pass":
        return 0.5 if observation.get("phase") == "drawn" else 0.0
    if kind == "draw":
        return 5.0   # better than a lone tile that breaks a pair, worse than a real run
    return -1.0


def choose(observation: dict[str, Any], actions: list[dict[str, Any]]) -> int:
    """Index of the best offered action; the first one wins ties (the list is in canonical order)."""
    best, best_value = 0, float("-inf")
    for i, action in enumerate(actions):
        value = score_action(observation, action)
        if value > best_value:
            best, best_value = i, value
    return best


def bot_name(argv: list[str], default: str, description: str) -> str:
    """``--name NAME`` (or ``--name=NAME``), read by hand: argparse's imports cost every start
    ~3 ms, and a league may start a process of a bot for every deal. Anything else, ``--help``
    included, goes to argparse, which prints the help and explains mistakes."""
    if not argv:
        return default
    if len(argv) == 1 and argv[0].startswith("--name="):
        return argv[0].removeprefix("--name=")
    if len(argv) == 2 and argv[0] == "--name" and not argv[1].startswith("-"):
        return argv[1]
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--name", default=default, help="name sent in the ready message")
    return str(parser.parse_args(argv).name)


def main() -> int:
    name = bot_name(sys.argv[1:], "epizodiak-greedy-py", "Greedy one-move Epizodiak bot (protocol v1).")
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            print(f"ignoring unreadable line: {line[:80]!r}", file=sys.stderr)
            continue
        kind = msg.get("type") if isinstance(msg, dict) else None
        if kind == "hello":
            out.write(json.dumps({"type": "ready", "name": name}) + "\n")
            out.flush()
        elif kind == "request":
            index = choose(msg.get("observation") or {}, msg["actions"])
            out.write(json.dumps({"type": "action", "id": msg["id"], "index": index}) + "\n")
            out.flush()
        elif kind == "bye":
            break
        # start and result need no answer
    return 0


if __name__ == "__main__":
    sys.exit(main())
