"""All-Fives Dominoes: drawing a full state consistent with one seat's observation and the events.

What a seat knows: its own hand, the line, every hand size and the graveyard size, and what
draws and passes say: a player who draws or passes holds no tile matching either open end at
that moment. Each other player's hand is tracked as *slots*, one per tile held, each with the
set of numbers it cannot carry: a draw or a pass adds the open ends to every slot then held, a
drawn tile opens a fresh slot, and a play removes the oldest slot that could have held the tile
(slots are nested, older ones at least as constrained, so this keeps the loosest consistent
reading: no consistent arrangement is ever excluded). Hidden tiles are then dealt slot by slot,
most constrained first, each uniformly among the tiles it may hold, restarting on a dead end;
the rest is the graveyard, shuffled.

Design choice: constrained dealing with restarts rather than rejection of whole deals: after a
few draws almost no unconstrained deal fits, while a restart is rare. Deals conditioned this way
are close to, not exactly, uniform over the consistent arrangements (the exact posterior weighs
each by the other players' play, which no sampler without a model of them can know).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from ..base import InvalidSnapshot
from .state import ALL_TILES, DominoesState, Tile

_RESTARTS = 200


def hand_slots(events: Sequence[Mapping[str, Any]], players: int) -> list[list[frozenset[int]]]:
    """For each seat, one set of forbidden numbers per tile it holds now (oldest slot first)."""
    slots: list[list[frozenset[int]]] = [[] for _ in range(players)]
    ends: frozenset[int] = frozenset()
    for e in events:
        kind = e.get("type")
        if kind == "hand_start":
            slots = [[frozenset()] * n for n in e["hand_sizes"]]
            ends = frozenset()
        elif kind == "play":
            seat, (a, b) = e["seat"], e["tile"]
            own = slots[seat]
            for i, forbidden in enumerate(own):
                if a not in forbidden and b not in forbidden:
                    del own[i]
                    break
            else:  # inconsistent record (cannot happen with the engine's events): forget the constraints
                del own[-1]
                slots[seat] = [frozenset()] * len(own)
            ends = frozenset(e["ends"])
        elif kind in ("draw", "pass"):
            seat = e["seat"]
            slots[seat] = [f | ends for f in slots[seat]]
            if kind == "draw":
                slots[seat].append(frozenset())
    return slots


def resample(options: dict[str, Any], obs: Mapping[str, Any], events: Sequence[Mapping[str, Any]],
             rng: random.Random) -> DominoesState:
    """A :class:`DominoesState` whose observation for ``obs["seat"]`` is ``obs``; hidden tiles at random."""
    players = obs["players"]
    seat = obs["seat"]
    mine: list[Tile] = [(a, b) for a, b in obs["hand"]]
    line: list[Tile] = [(a, b) for a, b in obs["line"]]
    seen = set(mine) | {(max(t), min(t)) for t in line}
    hidden = [t for t in ALL_TILES if t not in seen]
    sizes = obs["hand_sizes"]
    slots = hand_slots(events, players)
    wanted: list[tuple[int, frozenset[int]]] = []
    for s in range(players):
        if s == seat:
            continue
        own = slots[s] if len(slots[s]) == sizes[s] else [frozenset()] * sizes[s]
        wanted += [(s, f) for f in own]
    # The first hand is led with a known tile by its holder: deal it to him before the rest.
    lead = obs["lead_tile"]
    lead_tile = None if lead is None else (lead[0], lead[1])
    lead_seat = obs["current_player"]
    if lead_tile is not None and lead_seat != seat and lead_tile in hidden:
        hidden.remove(lead_tile)
        wanted.remove(next(sf for sf in wanted if sf[0] == lead_seat))
    else:
        lead_tile = None
    wanted.sort(key=lambda sf: -len(sf[1]))
    if sum(sizes) - len(mine) + obs["graveyard"] != len(hidden) + (lead_tile is not None):
        raise InvalidSnapshot("observation does not add up to 28 tiles")
    for attempt in range(_RESTARTS + 1):
        if attempt == _RESTARTS:  # constraints that cannot be met: deal without them
            wanted = [(s, frozenset()) for s, _ in wanted]
        pool = hidden[:]
        rng.shuffle(pool)
        hands: list[list[Tile]] = [[] for _ in range(players)]
        hands[seat] = list(mine)
        if lead_tile is not None:
            hands[lead_seat].append(lead_tile)
        for s, forbidden in wanted:
            for i, (a, b) in enumerate(pool):
                if a not in forbidden and b not in forbidden:
                    hands[s].append(pool.pop(i))
                    break
            else:
                break
        else:
            break
    state = DominoesState(players, options, random.Random(rng.getrandbits(64)))
    state.hands = [sorted(h, reverse=True) for h in hands]
    state.graveyard = pool
    state.line = line
    if line:
        state.left, state.right = line[0][0], line[-1][1]
        state.left_double = line[0][0] == line[0][1]
        state.right_double = line[-1][0] == line[-1][1]
    state.scores = list(obs["scores"])
    state.hand_number = obs["hand_number"]
    state.turns = obs["turn"]
    state.leader = obs["leader"]
    state.current_player = obs["current_player"]
    state.lead_tile = None if obs["lead_tile"] is None else (obs["lead_tile"][0], obs["lead_tile"][1])
    state.playoff_hands_left = obs["playoff_hands_left"]
    state.events = []
    return state
