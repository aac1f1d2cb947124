"""Epizodiak's fixed vocabulary: tile values, the dial's arithmetic, phases, and hands as counts.

The dial is circular (12 is followed by 1); an arc is given by its counter-clockwise end and
its length, and ``ARCS`` precomputes every arc's values so the hot path never does modular
arithmetic. A hand is a list of 13 counts (index = value, index 0 unused).
"""

from __future__ import annotations

PLAYERS = 3
VALUES = range(1, 13)
TILES = 48
SNAPSHOT_VERSION = 1

# Phases of a decision (what the current player is in the middle of).
START = "start"          # beginning of a turn
DRAWN = "drawn"          # drew a tile: place, discard or pass (E6)
PICKED = "picked"        # picked up a tile: place on the other side or discard (E7)
CONTESTED = "contested"  # contested a value: place or discard (E11)
OVER = "over"            # game over
PHASES = (START, DRAWN, PICKED, CONTESTED, OVER)

CW, CCW = "cw", "ccw"
OTHER_END = {CW: CCW, CCW: CW}
ACTION_TYPES = ("place", "discard", "draw", "pickup", "pass", "contest")


def nxt(v: int) -> int:
    """The value after ``v`` clockwise (12 -> 1)."""
    return 1 if v == 12 else v + 1


def prv(v: int) -> int:
    """The value before ``v``, i.e. after it counter-clockwise (1 -> 12)."""
    return 12 if v == 1 else v - 1


NXT = (0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1)   # NXT[v]: the value after v clockwise
PRV = (0, 12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)   # PRV[v]: the value after v counter-clockwise

# ARCS[ccw][length]: the dial's values from its ccw end, for every arc (an immutable lookup table).
ARCS: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(tuple((c - 1 + i) % 12 + 1 for i in range(n)) for n in range(13)) for c in range(13))


def hand_list(counts: list[int]) -> list[int]:
    """Counts per value -> sorted list of tiles."""
    out: list[int] = []
    for v in VALUES:
        c = counts[v]
        if c:
            out.extend([v] * c)
    return out


def hand_counts(tiles: list[int]) -> list[int]:
    counts = [0] * 13
    for t in tiles:
        counts[t] += 1
    return counts
