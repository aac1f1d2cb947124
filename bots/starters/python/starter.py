#!/usr/bin/env python3
"""Starter bot for every tablebots game, on the Python SDK (harness.sdk, docs/bots.md).

Run:  harness check-bot crisps "python3 starter.py"     (needs the harness installed: pip install -e .)

It answers every request with a random offered action. Write your strategy in policy().
Debug output goes to stderr (print(..., file=sys.stderr)), never to stdout.
"""

import random
import sys

from harness.sdk import Decision, run


def policy(d: Decision) -> int:
    """Your strategy: ``d.observation``, ``d.actions``, ``d.events``, ``d.time_left_ms``; return an
    offered action or its index. A bug here shows as a violation (see on_error in docs/bots.md)."""
    index = random.randrange(len(d.actions))
    print(f"{d.game} seat {d.seat}: {d.actions[index]}", file=sys.stderr)
    return index


if __name__ == "__main__":
    run(policy, name="python-starter")
