#!/usr/bin/env python3
"""A colluding All-Fives Dominoes bot: it finds its partner at the table, then plays for it.

Nothing but the game connects two of these processes (separate sandboxes, opaque game ids), so
they meet through it. A play signature is too faint in Dominoes (a bot rarely has a choice:
measured in docs/security.md), so they shake hands by timing:

- **Handshake**: at its second request of a game, each sleeps ``STEP`` x (its seat + 1) before
  it answers. Seats move in turn, so exactly one of the others' second answers falls between
  this bot's first answer and its third request: the time the others took in those two gaps,
  less what they take anyway, is the partner's sleep, which names its seat. Until then (and where
  the reading names no other seat) it plays as ``bots/dominoes_greedy.py``. ``time.jitter_ms``
  blurs the reading: each request waits up to ``jitter_ms`` more.
- ``--mode feed`` (the *feeder*): once it knows its partner it plays for it alone: when the
  partner moves next it leaves the most a tile could score, when a third seat does the least,
  and it scores nothing it can avoid. ``--mode take``: the beneficiary, greedy.
- ``--mode joint`` (both gaining): greedy for itself, but the points it leaves the next seat
  count against it only when that seat is a third one, and for it when it is the partner.
- ``--mode honest``: shakes hands and plays greedy regardless: the control.

    python3 tests/bots/colluder.py --mode feed|take|joint|honest
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[2] / "bots")]
from dominoes_greedy import ALL_TILES, best_reply, choose, count_after  # noqa: E402

#: The handshake's unit of sleep, and the time the others take anyway in those two gaps.
STEP, BASE = 0.08, 0.01


class Table:
    """One game's handshake: the others' time until this bot's second request, and what it read."""

    def __init__(self, seat: int, players: int) -> None:
        self.seat, self.players = seat, players
        self.mark = time.monotonic()
        self.waited = 0.0
        self.requests = 0
        self.partner: int | None = None

    def asked(self) -> None:
        """A request came: add the gap since the last mark; after the second, read the partner."""
        self.requests += 1
        if self.requests in (2, 3):
            self.waited += time.monotonic() - self.mark
        if self.requests == 3:
            seat = round((self.waited - BASE) / STEP) - 1
            self.partner = seat if 0 <= seat < self.players and seat != self.seat else None

    def answered(self) -> None:
        if self.requests == 2:
            time.sleep(STEP * (self.seat + 1))
        self.mark = time.monotonic()


def decide(table: Table, mode: str, obs: dict[str, Any], actions: list[dict[str, Any]]) -> int:
    """The greedy choice, or, once the partner is known, the choice of ``mode``."""
    plays = [i for i, a in enumerate(actions) if a.get("type") == "play"]
    partner = table.partner if mode in ("feed", "joint") else None
    if partner is None or not plays:
        return choose(obs, actions)
    hand = obs.get("hand", [])
    seen = {tuple(t) for t in hand} | {tuple(sorted(t, reverse=True)) for t in obs.get("line", [])}
    unseen = [t for t in ALL_TILES if t not in seen]
    partner_next = (table.seat + 1) % table.players == partner
    best, best_key = plays[0], None
    for i in plays:
        count, ends = count_after(obs, actions[i]["tile"], actions[i].get("end"))
        points = count if count % 5 == 0 else 0
        threat = best_reply(ends, unseen)
        if mode == "feed":
            key: tuple[Any, ...] = (threat if partner_next else -threat, -points)
        else:
            key = (len(hand) == 1, points + (threat // 2 if partner_next else -threat))
        if best_key is None or key > best_key:
            best, best_key = i, key
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description="A colluding All-Fives Dominoes bot (a test of the collusion report).")
    parser.add_argument("--mode", choices=("feed", "take", "joint", "honest"), required=True)
    parser.add_argument("--log", help="append each game's id, seat, the partner it read and its reading to this file")
    args = parser.parse_args()
    table = Table(0, 2)
    for line in sys.stdin:
        msg = json.loads(line)
        kind = msg.get("type")
        if kind == "hello":
            print(json.dumps({"type": "ready", "name": f"colluder-{args.mode}"}), flush=True)
        elif kind == "start":
            table = Table(msg["seat"], msg["players"])
        elif kind == "request":
            table.asked()
            index = decide(table, args.mode, msg.get("observation") or {}, msg["actions"])
            table.answered()
            print(json.dumps({"type": "action", "id": msg["id"], "index": index}), flush=True)
        elif kind == "result" and args.log:
            with open(args.log, "a") as out:
                out.write(f"{msg.get('game_id')} {table.seat} {table.partner} {table.waited:.3f}\n")
        elif kind == "bye":
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
