"""Epizodiak: drawing a full state consistent with one seat's observation and the public events.

What a seat knows: its own hand, the dial, the sets discarded or contested this round (three
tiles each, out of play), every hand size and the pile size, and which tiles the others took
in the open this round: a picked-up tile (event ``pickup``) or the tile a contester keeps
(event ``contest``) stays known in his hand until he places or discards that value. The rest
of the other hands and the pile's order are dealt uniformly at random from the tiles left.
Draws, voluntary passes and forced passes are not used as constraints (a draw is a choice; a
forced pass says the player could neither place nor contest, which this sampler ignores: the
samples are then drawn from a slightly larger set than the exact one).

Design choice: the state is built directly from the observation (no snapshot, no JSON): a
sample costs tens of microseconds, small beside a playout.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import InvalidSnapshot
from .dial import PLAYERS, VALUES, hand_counts
from .state import EpizodiakState


def known_other_tiles(events: Sequence[Mapping[str, Any]], seat: int) -> list[list[int]]:
    """For each seat, counts by value of the tiles it surely holds (taken in the open this round)."""
    known = [[0] * 13 for _ in range(PLAYERS)]
    start = len(events)
    while start > 0 and events[start - 1].get("type") != "round_start":
        start -= 1  # only this round's events count: a search samples thousands of times a game
    for i in range(start, len(events)):
        e = events[i]
        kind = e.get("type")
        s = e.get("seat")
        if s is None or s == seat:
            continue
        if kind == "pickup":
            known[s][e["value"]] += 1
        elif kind == "contest":
            known[s][e["value"]] = 1
        elif kind == "place":
            for v in e["tiles"]:
                if known[s][v]:
                    known[s][v] -= 1
        elif kind == "discard":
            known[s][e["value"]] = 0
    return known


def resample(options: dict[str, Any], obs: Mapping[str, Any], events: Sequence[Mapping[str, Any]],
             rng: random.Random) -> EpizodiakState:
    """An :class:`EpizodiakState` whose observation for ``obs["seat"]`` is ``obs``; hidden tiles at random."""
    seat = obs["seat"]
    mine = hand_counts(list(obs["hand"]))
    known = known_other_tiles(events, seat)
    pool = [0] + [4] * 12
    for v in obs["dial"]:
        pool[v] -= 1
    for sets in obs["sets"]:
        for v in sets:
            pool[v] -= 3
    for v in VALUES:
        pool[v] -= mine[v] + sum(known[s][v] for s in range(PLAYERS) if s != seat)
        if pool[v] < 0:
            raise InvalidSnapshot(f"observation and events hold more than four tiles of value {v}")
    tiles = [v for v in VALUES for _ in range(pool[v])]
    rng.shuffle(tiles)
    sizes = list(obs["hand_sizes"])
    hands = []
    at = 0
    for s in range(PLAYERS):
        if s == seat:
            hands.append(mine)
            continue
        need = sizes[s] - sum(known[s])
        if need < 0:
            raise InvalidSnapshot(f"seat {s} holds fewer tiles than it took in the open")
        counts = list(known[s])
        for v in tiles[at:at + need]:
            counts[v] += 1
        at += need
        hands.append(counts)
    if len(tiles) - at != obs["pile"]:
        raise InvalidSnapshot("observation does not add up to 48 tiles")
    state = EpizodiakState(options)
    state.rng = random.Random(rng.getrandbits(64))
    state.hands = hands
    state.tiles = [sorted(v for v in VALUES for _ in range(h[v])) for h in hands]
    state.sizes = sizes
    state.pile = tiles[at:]
    state.ccw = obs["ends"]["ccw"]
    state.length = len(obs["dial"])
    state.sets = [list(s) for s in obs["sets"]]
    state.contested = [list(c) for c in obs["contested"]]
    single = [False] * 13
    for v in obs["singles"]:
        single[v] = True
    state.single = single
    state.scores = list(obs["scores"])
    state.round = obs["round"]
    state.turns = obs["turns"]
    state.current_player = obs["turn"]
    state.phase = obs["phase"]
    state.passes = obs["passes"]
    ll = obs["last_laid"]
    state.last_laid = None if ll is None else (ll["seat"], ll["end"], ll["value"])
    state.picked_end = obs["picked_end"]
    state.events = []
    state._legal = None
    return state
