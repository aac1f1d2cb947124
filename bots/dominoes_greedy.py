#!/usr/bin/env python3
"""Greedy heuristic bot for All-Fives Dominoes (protocol v1, stdlib only).

Strategy, decided from the observation and the offered actions only (see docs/rules/dominoes.md):
- a play that empties the hand (a domino) is always made;
- otherwise the play scoring the most points now (the open-end count, if a multiple of 5);
- then the play that leaves the next player the fewest points to score with one tile (an
  estimate over the tiles this bot cannot see);
- then the heaviest tile (fewer pips left in hand if the hand is won by someone else or
  blocked), doubles first, since they fit only one number.
Draw and pass are forced and never asked of the bot (ruling C2), but are answered if offered.

    python3 bots/dominoes_greedy.py [--name NAME]
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # (annotations only: importing typing costs every start ~5 ms)
    from typing import Any

ALL_TILES = [(a, b) for a in range(6, -1, -1) for b in range(a, -1, -1)]


def end_value(value: int, double: bool) -> int:
    return value * 2 if double else value


def count_after(obs: dict[str, Any], tile: list[int], end: str | None) -> tuple[int, tuple[int, bool, int, bool]]:
    """The open-end count after playing ``tile`` at ``end``, and the new ends (value, double) x 2."""
    a, b = tile
    line = obs["line"]
    if not line:
        return a + b, (a, a == b, b, a == b)
    left, right = line[0][0], line[-1][1]
    left_double = line[0][0] == line[0][1]
    right_double = line[-1][0] == line[-1][1]
    if end == "left":
        left = b if a == left else a
        left_double = a == b
    else:
        right = b if a == right else a
        right_double = a == b
    ends = (left, left_double, right, right_double)
    return end_value(left, left_double) + end_value(right, right_double), ends


def best_reply(ends: tuple[int, bool, int, bool], unseen: list[tuple[int, int]]) -> int:
    """Most points one tile from ``unseen`` could score on a line (of 2+ tiles) with these ends."""
    left, left_double, right, right_double = ends
    best = 0
    for a, b in unseen:
        for side in ("left", "right"):
            value = left if side == "left" else right
            if value not in (a, b):
                continue
            new = b if a == value else a
            if side == "left":
                count = end_value(new, a == b) + end_value(right, right_double)
            else:
                count = end_value(left, left_double) + end_value(new, a == b)
            if count % 5 == 0 and count > best:
                best = count
    return best


def choose(obs: dict[str, Any], actions: list[dict[str, Any]]) -> int:
    """Index of the greedy choice among ``actions``."""
    plays = [i for i, a in enumerate(actions) if a.get("type") == "play"]
    if not plays:
        return 0
    hand = obs.get("hand", [])
    seen = {tuple(t) for t in hand} | {tuple(sorted(t, reverse=True)) for t in obs.get("line", [])}
    unseen = [t for t in ALL_TILES if t not in seen]
    best_index, best_key = plays[0], None
    for i in plays:
        action = actions[i]
        tile = action["tile"]
        count, ends = count_after(obs, tile, action.get("end"))
        points = count if count % 5 == 0 else 0
        domino = len(hand) == 1
        threat = best_reply(ends, unseen)
        key = (domino, points - threat // 2, tile[0] + tile[1] + (3 if tile[0] == tile[1] else 0), -i)
        if best_key is None or key > best_key:
            best_index, best_key = i, key
    return best_index


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
    name = bot_name(sys.argv[1:], "dominoes-greedy-py", "Greedy All-Fives Dominoes bot (protocol v1).")
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        kind = msg.get("type")
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
