#!/usr/bin/env python3
"""Greedy heuristic bot for Crisps (protocol v1, stdlib only).

Strategy, decided from the observation and the offered actions only:
- a play that empties the hand is always made;
- leading: the ordinary play that leaves the hand in the fewest plays, then the longest, then
  the lowest (three and four of a kind are kept for when a Queen/Jack shows up);
- following: the cheapest (lowest) beating ordinary play that does not break up the rest of
  the hand; a special only when the opponent is close to going out; otherwise pass;
- after a pass: take the face-up offer when it pairs with or extends the hand, else blind.

    python3 bots/crisps_greedy.py [--name NAME]
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # (annotations only: importing typing costs every start ~5 ms)
    from typing import Any

RANK = {str(r): r for r in range(2, 11)}
RANK.update({"Q": 11, "J": 11})
SPECIALS = ("triple", "quad")


def counts_of(cards: list[str]) -> list[int]:
    counts = [0] * 12
    for c in cards:
        counts[RANK[c]] += 1
    return counts


def plays_needed(counts: list[int], jacks: bool) -> int:
    """Rough number of plays to empty a hand: repeatedly remove its largest play."""
    counts = list(counts)
    top = 11 if jacks else 10
    steps = 0
    while any(counts):
        best_len, best = 0, None
        for need, min_len in ((2, 2), (1, 3)):  # runs of pairs, runs
            r = 2
            while r <= top:
                if counts[r] < need:
                    r += 1
                    continue
                end = r
                while end + 1 <= top and counts[end + 1] >= need:
                    end += 1
                length = end - r + 1
                if length >= min_len and length * need > best_len:
                    best_len, best = length * need, [x for x in range(r, end + 1) for _ in range(need)]
                r = end + 1
        for r in range(2, 12):
            if counts[r] > best_len:
                best_len, best = counts[r], [r] * counts[r]
        for r in best or ():
            counts[r] -= 1
        steps += 1
    return steps


def kind_of(cards: list[str]) -> str:
    ranks = [RANK[c] for c in cards]
    if len(set(ranks)) == 1:
        return ("single", "pair", "triple", "quad")[len(ranks) - 1]
    return "run"


def choose(obs: dict[str, Any], actions: list[dict[str, Any]], jacks: bool = False) -> dict[str, Any]:
    """The greedy choice among ``actions`` given the observation ``obs`` (``jacks``: the game option)."""
    if actions[0]["type"] == "take":
        hand = counts_of(obs["hand"])
        offer = obs.get("offer")
        if offer is not None:
            r = RANK[offer]
            useful = hand[r] >= 1 or (r <= 10 and ((r > 2 and hand[r - 1]) or (r < 10 and hand[r + 1])))
            return {"type": "take", "source": "offer" if useful else "blind"}
        return actions[0]
    plays = [a for a in actions if a["type"] == "play"]
    seat = obs["seat"]
    hand_cards = obs["hand"]
    for a in plays:
        if len(a["cards"]) == len(hand_cards):
            return a
    hand = counts_of(hand_cards)
    base = plays_needed(hand, jacks)
    opponent_cards = obs["hand_sizes"][1 - seat]

    def after(a: dict[str, Any]) -> int:
        rest = list(hand)
        for c in a["cards"]:
            rest[RANK[c]] -= 1
        return plays_needed(rest, jacks)

    ordinary = [a for a in plays if kind_of(a["cards"]) not in SPECIALS]
    special = [a for a in plays if kind_of(a["cards"]) in SPECIALS]
    if obs["table"] is None:
        pool = ordinary or special
        return min(pool, key=lambda a: (after(a), -len(a["cards"]), RANK[a["cards"][-1]]))
    keep_shape = [a for a in ordinary if after(a) < base]
    if keep_shape:
        return min(keep_shape, key=lambda a: (RANK[a["cards"][-1]], after(a)))
    if special and opponent_cards <= 4:
        return min(special, key=lambda a: (len(a["cards"]), RANK[a["cards"][-1]]))
    if ordinary and opponent_cards <= 2:
        return min(ordinary, key=lambda a: RANK[a["cards"][-1]])
    return {"type": "pass"} if {"type": "pass"} in actions else actions[0]


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
    name = bot_name(sys.argv[1:], "crisps-greedy-py", "Greedy Crisps bot (JSON lines on stdin/stdout).")
    out = sys.stdout
    jacks = False
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        kind = msg.get("type")
        if kind == "hello":
            jacks = bool((msg.get("options") or {}).get("jacks", False))
            out.write(json.dumps({"type": "ready", "name": name}) + "\n")
            out.flush()
        elif kind == "request":
            action = choose(msg["observation"], msg["actions"], jacks)
            out.write(json.dumps({"type": "action", "id": msg["id"], "action": action}) + "\n")
            out.flush()
        elif kind == "bye":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
